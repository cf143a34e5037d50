/**
 * The cdk-nag AwsSolutions findings `SluiceService` accepts, each with its reason. Everything
 * else must pass: `test/cdk/stack.test.ts` ("cdk-nag AwsSolutions") fails on any
 * unacknowledged finding, and so does `npm run synth`.
 *
 * Wildcard resources (AwsSolutions-IAM5) are acknowledged finding by finding, and only when
 * they have one of the shapes justified below; any other wildcard stays a finding.
 */
import { Aspects, Stack, Validations, type CfnResource, type IAspect } from 'aws-cdk-lib';
import { CfnManagedPolicy, CfnPolicy } from 'aws-cdk-lib/aws-iam';
import { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { rules } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { BLOB_PREFIXES, TRACING_ACTIONS } from './access.js';

/** Why each accepted kind of finding is fine, keyed by what it applies to. */
export const NAG_REASONS = {
  blobObjects:
    `Blob keys are minted at run time under fixed prefixes (${BLOB_PREFIXES.join(', ')}: ` +
    `segments/<partitionId>/<pushId>.zst, dlq/<partitionId>/<blobId>.bin), so object permissions ` +
    `are scoped to those prefixes of this one bucket (the narrowest fixed scope), with only the ` +
    `object actions the function uses.`,
  invokeRoutes:
    'execute-api:Invoke on this API only, on the routes of the role: "*" stands for path ' +
    'parameters (queue, partition, group, ids), chosen by callers at run time, and for path ' +
    "prefixes under which every route is the role's (lib/api-access.ts derives them from the route " +
    "table; test/cdk/api-access.test.ts proves no other route matches); Admin's */* is every route. " +
    'Per-queue limits are the grants, enforced in the handlers.',
  runtime:
    'nodejs22.x is the runtime Sluice is built and tested for (zstd in node:zlib since 22.15, ' +
    'bundles targeting node22); move to a newer runtime deliberately, together with the bundle ' +
    'target and the tests.',
  accountConcurrency:
    'lambda:GetAccountSettings acts on no resource, so IAM accepts only "*" for it. It reads the ' +
    "account's Lambda concurrency limits (no data, no function); the waiting functions size the " +
    'default wait cap from it (SLUICE_MAX_WAITERS=auto, docs/DEPLOYING.md#quotas). Nothing else in ' +
    'the policy has a "*" resource save actions like this one, which act on none.',
  listStreams:
    'dynamodb:ListStreams acts on no resource, so IAM accepts only "*" for it (CDK adds it with the ' +
    "DynamoDB Streams event source). It lists stream ARNs, no data; reading the log table's stream " +
    'is granted on that stream only. Nothing else in the policy has a "*" resource save actions like ' +
    'this one, which act on none.',
  tracing:
    'xray:PutTraceSegments and xray:PutTelemetryRecords act on no resource, so IAM accepts only "*" ' +
    "for them (CDK adds them with the function's active tracing, `tracing=true`). They send the " +
    'function\'s trace segments to X-Ray and read nothing. Nothing else in the policy has a "*" ' +
    'resource save actions like these, which act on none.',
  manageConnections:
    'execute-api:ManageConnections on this stack\'s WebSocket stage only: "*" stands for the ' +
    'connection ids, which API Gateway mints at run time. The notifier posts wake-ups to them.',
  apiGatewayLogsRole:
    "The account-level role API Gateway writes REST and WebSocket logs with holds AWS's own policy for " +
    'that (AmazonAPIGatewayPushToCloudWatchLogs), as API Gateway documents; AWS maintains it as log ' +
    'actions change, and the role can be assumed by API Gateway only.',
  accessLogs:
    'Only Sluice functions touch this bucket, through their own least-privilege roles; requests are ' +
    "traceable in the functions' structured logs and API access logs. Pass `accessLogsBucket` to " +
    'add S3 server access logs (or enable CloudTrail S3 data events).',
} as const;

const IAM5 = 'AwsSolutions-IAM5';

/**
 * Records the accepted findings on `service`'s resources. Runs as an aspect, after every
 * statement has been added, so the acknowledged wildcards are exactly those synthesised.
 */
export function acknowledgeNagFindings(
  service: IConstruct,
  opts: { bucket: IConstruct; apiLogicalId: () => string; hasAccessLogs: boolean },
): void {
  if (!opts.hasAccessLogs)
    Validations.of(opts.bucket).acknowledge({ id: 'AwsSolutions-S1', reason: NAG_REASONS.accessLogs });
  const aspect: IAspect = {
    visit(node: IConstruct): void {
      if (node instanceof CfnFunction) {
        Validations.of(node).acknowledge({ id: 'AwsSolutions-L1', reason: NAG_REASONS.runtime });
        return;
      }
      if (!(node instanceof CfnPolicy || node instanceof CfnManagedPolicy)) return;
      const findings = rules.iam.IAMNoWildcardPermissions(node);
      if (!Array.isArray(findings)) return;
      const api = `<${opts.apiLogicalId()}>`;
      const doc = Stack.of(node).resolve(node.policyDocument) as PolicyDocumentJson;
      for (const finding of findings) {
        const reason = wildcardReason(finding, api, doc);
        if (reason) Validations.of(node).acknowledge({ id: `${IAM5}[${finding}]`, reason });
      }
    },
  };
  Aspects.of(service).add(aspect);
}

// Routes of an API in this stack (lib/api-access.ts): Resource::arn:<AWS::Partition>:execute-api:<region>:<account>:<ApiXXXX>/$default/METHOD/path-or-prefix*, or …/*/* (Admin)
const API_ROUTE_RESOURCE = new RegExp(
  String.raw`^Resource::arn:<AWS::Partition>:execute-api:(?:<AWS::Region>|[a-z0-9-]+):(?:<AWS::AccountId>|\d{12}):` +
    String.raw`(<[A-Za-z0-9]+>)\/(?:\*\/\*|(?:\*|\$default)\/(GET|POST|PUT|PATCH|DELETE)\/[A-Za-z0-9/_*.-]*)$`,
);

/** A resolved IAM policy document, as far as the checks below read it. */
interface PolicyDocumentJson {
  Statement?: { Effect?: string; Action?: string | string[]; Resource?: unknown }[];
}

/** Actions that act on no resource (IAM accepts only "*" for them) and that a Sluice function may hold. */
const RESOURCELESS_ACTIONS: Readonly<Record<string, string>> = {
  'lambda:GetAccountSettings': NAG_REASONS.accountConcurrency,
  'dynamodb:ListStreams': NAG_REASONS.listStreams,
  ...Object.fromEntries(TRACING_ACTIONS.map((a) => [a, NAG_REASONS.tracing])),
};

// PostToConnection on a WebSocket stage of this stack: Resource::arn:…:execute-api:<region>:<account>:<ApiXXXX>/<stage>/*/@connections/*
const CONNECTIONS_RESOURCE = new RegExp(
  String.raw`^Resource::arn:<AWS::Partition>:execute-api:(?:<AWS::Region>|[a-z0-9-]+):(?:<AWS::AccountId>|\d{12}):` +
    String.raw`<[A-Za-z0-9]+>\/[A-Za-z0-9_-]+\/\*\/@connections\/\*$`,
);

/**
 * The reason a wildcard finding is accepted, or undefined when it is not. A bare `*` resource
 * is accepted only when every statement of `policy` granting it holds nothing but
 * {@link RESOURCELESS_ACTIONS}.
 */
export function wildcardReason(finding: string, apiRef: string, policy?: PolicyDocumentJson): string | undefined {
  if (finding === 'Resource::*') {
    const star = (policy?.Statement ?? []).filter((s) => [s.Resource].flat().includes('*'));
    const actions = star.flatMap((s) => [s.Action ?? []].flat());
    const ok = actions.length > 0 && actions.every((a) => a in RESOURCELESS_ACTIONS);
    return ok ? [...new Set(actions.map((a) => RESOURCELESS_ACTIONS[a]))].join(' ') : undefined;
  }
  if (CONNECTIONS_RESOURCE.test(finding)) return NAG_REASONS.manageConnections;
  // Objects under a blob prefix of a bucket in this stack: Resource::<BucketXXXX.Arn>/segments/*
  const objects = /^Resource::<[A-Za-z0-9]+\.Arn>\/(.+)\*$/.exec(finding);
  if (objects && BLOB_PREFIXES.includes(objects[1] as string)) return NAG_REASONS.blobObjects;
  // Routes of this API.
  const m = API_ROUTE_RESOURCE.exec(finding);
  if (m && m[1] === apiRef) return NAG_REASONS.invokeRoutes;
  return undefined;
}

/** The logical id CloudFormation sees for a resource (what nag prints as `<Id>`). */
export const logicalIdOf = (resource: CfnResource): string => Stack.of(resource).getLogicalId(resource);
