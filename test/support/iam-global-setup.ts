/**
 * Vitest global setup: the IAM policies the functions' proof (`iam/recorder.ts`) checks
 * against, taken from the synthesized template — once per run, since loading aws-cdk-lib
 * takes seconds. The variant is the default stack with a payload key (`kmsKey=create`) and
 * tracing (`tracing=true`), whose roles are the default ones plus the key grants and the X-Ray
 * statement (on X-Ray actions alone, so it allows no request of the code that the default roles
 * deny), and whose platform uses include the trace uploads; the token authorizer's role comes
 * from the `auth=tokens` variant, traced too. Tokens resolve with the example account and
 * region `synthStack` uses.
 */
import type { CfnResource } from 'aws-cdk-lib';
import type { TestProject } from 'vitest/node';
import { FUNCTIONS, platformUsesOf, TRACING_ACTIONS } from '../../lib/access.js';
import type { SluiceStack } from '../../lib/sluice-stack.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { synthStack } from './cdk.js';
import type { IamRequest, PolicyDocument } from './iam/evaluate.js';
import type { FunctionRole, IamUnderTest } from './iam/recorder.js';
import {
  functionRoleId,
  resolveTemplate,
  resourcesOfType,
  rolePolicies,
  type Environment,
  type Template,
} from './iam/template.js';

/** The example environment `synthStack` pins (test/support/cdk.ts). */
export const IAM_TEST_ENV: Environment = { account: '111122223333', region: 'eu-west-1', partition: 'aws' };

/** Each role's resolved policy documents and the deployed ARNs of one synthesized stack. */
export function iamUnderTest(): IamUnderTest {
  const main = synthStack({ payloadKey: { create: true }, tracing: true });
  const tokens = synthStack({ auth: { type: 'tokens' }, tracing: true });
  const { account, region, partition } = IAM_TEST_ENV;
  const resolvedMain = resolveTemplate(main.template.toJSON() as Template, IAM_TEST_ENV);
  const resolvedTokens = resolveTemplate(tokens.template.toJSON() as Template, IAM_TEST_ENV);
  const id = (stack: SluiceStack, c: { node: { defaultChild?: unknown } }): string =>
    stack.getLogicalId(c.node.defaultChild as CfnResource);
  const platformOf = (
    resolved: typeof resolvedMain,
    stack: SluiceStack,
    role: FunctionRole,
    fn: { node: { defaultChild?: unknown } },
  ): IamRequest[] => {
    const props = resolved.Resources[id(stack, fn)]!.Properties!;
    const group = (props['LoggingConfig'] as { LogGroup?: string } | undefined)?.LogGroup;
    return platformUsesOf(role, { tracing: true }).flatMap((use): IamRequest[] => {
      // Lambda's X-Ray integration uploads each sampled invocation's segments; the actions take only "*".
      if (use === 'traces') return TRACING_ACTIONS.map((action) => ({ action, resource: '*' }));
      if (use === 'logs') {
        if (!group) throw new Error(`${role}: the function names no log group`);
        // Lambda names a stream per execution environment: date/[version]id.
        const stream = `arn:${partition}:logs:${region}:${account}:log-group:${group}:log-stream:2026/12/03/[$LATEST]0123456789abcdef0123456789abcdef`;
        return [
          { action: 'logs:CreateLogStream', resource: stream },
          { action: 'logs:PutLogEvents', resource: stream },
        ];
      }
      const mappings = resourcesOfType(resolved, 'AWS::Lambda::EventSourceMapping').filter(
        (m) => resolved.Resources[m]!.Properties!['FunctionName'] === resolved.refs[id(stack, fn)],
      );
      if (mappings.length === 0) throw new Error(`${role}: no event-source mapping reads for the function`);
      if (use === 'failureDestination')
        return mappings.map((m) => {
          const config = resolved.Resources[m]!.Properties!['DestinationConfig'] as
            { OnFailure?: { Destination?: string } } | undefined;
          const destination = config?.OnFailure?.Destination;
          if (!destination) throw new Error(`${role}: an event-source mapping has no on-failure destination`);
          return { action: 'sqs:SendMessage', resource: destination };
        });
      return mappings.flatMap((m) => {
        const streamArn = String(resolved.Resources[m]!.Properties!['EventSourceArn']);
        return [
          ...['DescribeStream', 'GetRecords', 'GetShardIterator'].map((a) => ({
            action: `dynamodb:${a}`,
            resource: streamArn,
          })),
          { action: 'dynamodb:ListStreams', resource: '*' },
        ];
      });
    });
  };
  const docsOf = (
    stack: SluiceStack,
    raw: Template,
    resolved: typeof resolvedMain,
    fn: { node: { defaultChild?: unknown } },
  ): PolicyDocument[] => rolePolicies(resolved, functionRoleId(raw, id(stack, fn))).documents;
  const s = main.stack.service;
  const rawMain = main.template.toJSON() as Template;
  const roles = Object.fromEntries(
    FUNCTIONS.map((f) => [f, docsOf(main.stack, rawMain, resolvedMain, s.functions[f])]),
  ) as Record<FunctionRole, PolicyDocument[]>;
  if (!s.notifications) throw new Error('the default stack has no notifications construct');
  roles.notifications = docsOf(main.stack, rawMain, resolvedMain, s.notifications.function);
  const authorizer = tokens.stack.service.authorizerFunction;
  if (!authorizer) throw new Error('the tokens variant has no authorizer function');
  roles.authorizer = docsOf(tokens.stack, tokens.template.toJSON() as Template, resolvedTokens, authorizer);
  const platform = Object.fromEntries(
    FUNCTIONS.map((f) => [f, platformOf(resolvedMain, main.stack, f, s.functions[f])]),
  ) as Record<FunctionRole, IamRequest[]>;
  platform.notifications = platformOf(resolvedMain, main.stack, 'notifications', s.notifications.function);
  platform.authorizer = platformOf(resolvedTokens, tokens.stack, 'authorizer', authorizer);

  const ref = (c: { node: { defaultChild?: unknown } }): string => resolvedMain.refs[id(main.stack, c)]!;
  const tables = Object.fromEntries(
    TABLES.map((t) => [t, `arn:${partition}:dynamodb:${region}:${account}:table/${ref(s.tables[t])}`]),
  ) as Record<TableName, string>;
  return {
    roles,
    platform,
    arns: {
      tables,
      bucket: `arn:${partition}:s3:::${ref(s.bucket)}`,
      kmsKey: s.payloadKey ? `arn:${partition}:kms:${region}:${account}:key/${ref(s.payloadKey)}` : undefined,
      connections: `arn:${partition}:execute-api:${region}:${account}:${ref(s.notifications.api)}/${s.notifications.stage.stageName}`,
    },
  };
}

export default function setup(project: TestProject): void {
  project.provide('iamUnderTest', iamUnderTest());
}
