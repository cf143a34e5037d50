/**
 * AWS's deploy-time limits (test/support/aws-limits.ts) on the stack of every deploy option
 * lib/context.ts reads, resolved for the longest region of each partition Sluice supports:
 * a limit IAM, CloudFormation, Lambda or API Gateway enforces only at deploy time fails here.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Grant } from '../../server/http/grants.js';
import { stackOptionsFromContext } from '../../lib/context.js';
import { MAX_GRANTS_ENV_BYTES } from '../../lib/sluice-service.js';
import {
  alarmActionFindings,
  environmentFindings,
  logRetentionFindings,
  managedPolicyFindings,
  rolePolicyFindings,
  stageLoggingFindings,
  templateFindings,
  timeoutFindings,
} from '../support/aws-limits.js';
import { synthEnvAgnostic } from '../support/cdk.js';
import { resolveTemplate, type Environment, type ResolvedTemplate, type Template } from '../support/iam/template.js';

/**
 * Where ARNs are longest: the partition and region names go into every ARN a policy lists. The
 * commercial partition's longest region names have 14 characters (ap-southeast-2 and its
 * kind), China's cn-northwest-1 too, GovCloud's us-gov-west-1 13 behind the longest partition
 * name: `aws-us-gov` + `us-gov-west-1` is the worst combination. us-east-1 is the baseline.
 */
export const REGIONS: Environment[] = [
  { partition: 'aws', region: 'us-east-1', account: '111122223333' },
  { partition: 'aws', region: 'ap-southeast-2', account: '111122223333' },
  { partition: 'aws-cn', region: 'cn-northwest-1', account: '111122223333' },
  { partition: 'aws-us-gov', region: 'us-gov-west-1', account: '111122223333' },
];
/** A stack name longer than most (it is in every generated name and in the environment). */
const STACK_NAME = 'SluiceProductionOrdersEuCentral1';

/** Grants as large as the stack accepts (MAX_GRANTS_ENV_BYTES of JSON): the largest environment. */
function grantsAtTheCap(): string {
  const grants: Grant[] = [];
  const json = (): string => JSON.stringify({ grants });
  for (let i = 0; ; i++) {
    const next = {
      principal: `arn:aws:sts::111122223333:assumed-role/service-${i}/*`,
      actions: ['push', 'consume'],
      queues: [`orders-${i}-*`],
    } as Grant;
    grants.push(next);
    if (Buffer.byteLength(json()) > MAX_GRANTS_ENV_BYTES) {
      grants.pop();
      return json();
    }
  }
}

/** Every deploy option that changes the template's shape, as `-c key=value` pairs. */
const VARIANTS: Record<string, Record<string, string>> = {
  default: {},
  'notifications=false': { notifications: 'false' },
  'auth=tokens': { auth: 'tokens' },
  'auth=jwt': { auth: 'jwt', jwtIssuer: 'https://login.example.com/tenants/orders/', jwtAudience: 'sluice,ops' },
  'kmsKey=create': { kmsKey: 'create' },
  kmsKeyArn: { kmsKeyArn: 'arn:aws:kms:ap-southeast-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab' },
  alarmEmail: { alarmEmail: 'ops@example.com' },
  alarmTopicArn: { alarmTopicArn: 'arn:aws:sns:ap-southeast-2:111122223333:ops-alerts' },
  'grants at the cap': { grantsFile: '(grants at the cap)' },
  'apiGatewayCloudWatchRole=false': { apiGatewayCloudWatchRole: 'false' },
  // Two options in one synth: tracing adds a statement to every role, versioning a bucket rule.
  'tracing=true bucketVersioning=35': { tracing: 'true', bucketVersioning: '35' },
};

const grantsAtCap = grantsAtTheCap();

for (const [name, values] of Object.entries(VARIANTS)) {
  describe(`AWS limits at synth: ${name}`, () => {
    let raw: Template;
    let resolved: ResolvedTemplate[];
    let alarmTarget: boolean;
    beforeAll(() => {
      const { props } = stackOptionsFromContext((k) => (k === 'grantsFile' ? undefined : values[k]));
      if (values['grantsFile']) props.grants = (JSON.parse(grantsAtCap) as { grants: Grant[] }).grants;
      alarmTarget = props.alarms !== undefined;
      raw = synthEnvAgnostic(props, STACK_NAME);
      resolved = REGIONS.map((env) => resolveTemplate(raw, { ...env, stackName: STACK_NAME }));
    });

    it("IAM: each managed policy ≤ 6,144 characters, each role's inline policies ≤ 10,240, trust ≤ 2,048", () => {
      for (const t of resolved) {
        expect(managedPolicyFindings(t), `${t.env.partition} ${t.env.region}`).toEqual([]);
        expect(rolePolicyFindings(t), `${t.env.partition} ${t.env.region}`).toEqual([]);
      }
    });

    it('CloudFormation: ≤ 500 resources, a template ≤ 1 MB', () => {
      expect(templateFindings(raw)).toEqual([]);
    });

    it("Lambda: each function's environment ≤ 4 KB, resolved", () => {
      for (const t of resolved) expect(environmentFindings(t), `${t.env.partition} ${t.env.region}`).toEqual([]);
    });

    it('timeouts fit what invokes each function (HTTP API 30 s, WebSocket 29 s, stream retries, schedules)', () => {
      expect(timeoutFindings(raw)).toEqual([]);
    });

    it('every log group has a retention, and every function logs to one of them', () => {
      expect(logRetentionFindings(raw)).toEqual([]);
    });

    it('with an alarm target, every alarm notifies it', () => {
      expect(alarmActionFindings(raw, alarmTarget)).toEqual([]);
    });

    it("a WebSocket or REST stage logs only with the account's CloudWatch role in place", () => {
      expect(stageLoggingFindings(raw)).toEqual([]);
    });
  });
}
