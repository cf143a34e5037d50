// Operators' basics (docs/DEPLOYING.md, "Tracing" and `bucketVersioning`): X-Ray tracing on every
// function with the grant it needs, and a versioned segment bucket whose noncurrent versions
// expire, next to the rules it already has. One synth with every option on; the defaults (off) are
// checked in test/cdk/stack.test.ts, as is deletion protection (on retained tables, off with
// removalPolicy=destroy).
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { FUNCTIONS, platformUsesOf, TRACING_ACTIONS, type PlatformRole } from '../../lib/access.js';
import { MAX_NONCURRENT_DAYS, tableDeletionProtection } from '../../lib/recovery.js';
import { nagViolations, refId, resourcesOf, synthStack } from '../support/cdk.js';

type Synth = ReturnType<typeof synthStack>;
let all: Synth;
beforeAll(() => {
  all = synthStack({
    tracing: true,
    bucketVersioning: { noncurrentVersionExpiration: Duration.days(35) },
    segmentExpiration: Duration.days(30),
    // The token authorizer is a function too.
    auth: { type: 'tokens' },
  });
});
const logicalId = (c: IConstruct): string => Stack.of(c).getLogicalId(c.node.defaultChild as never);

/** Every function Sluice deploys in `s`, by the role it runs as. */
const functionsOf = (s: Synth): [PlatformRole, IConstruct][] => [
  ...FUNCTIONS.map((f): [PlatformRole, IConstruct] => [f, s.stack.service.functions[f]]),
  ['notifications', s.stack.service.notifications!.function],
  ['authorizer', s.stack.service.authorizerFunction!],
];

describe('cdk: tracing=true', () => {
  it('traces every function actively, and every Lambda function in the stack is one of them', () => {
    const fns = resourcesOf(all.template, 'AWS::Lambda::Function');
    const ours = functionsOf(all).map(([, fn]) => logicalId(fn));
    expect(Object.keys(fns).sort()).toEqual([...ours].sort());
    for (const id of ours) expect(fns[id]!.Properties['TracingConfig'], `${id}`).toEqual({ Mode: 'Active' });
  });

  it("grants each function's role the two X-Ray actions, on * (the only resource they take)", () => {
    const fns = resourcesOf(all.template, 'AWS::Lambda::Function');
    const policies = Object.values(resourcesOf(all.template, 'AWS::IAM::Policy'));
    for (const [role, fn] of functionsOf(all)) {
      const roleId = refId(fns[logicalId(fn)]!.Properties['Role']);
      const statements = policies
        .filter((p) => (p.Properties['Roles'] as unknown[]).some((r) => refId(r) === roleId))
        .flatMap((p) => (p.Properties['PolicyDocument'] as { Statement: Record<string, unknown>[] }).Statement);
      const xray = statements.filter((s) => JSON.stringify(s['Action']).includes('xray:'));
      expect(xray, `${role}`).toEqual([{ Effect: 'Allow', Action: [...TRACING_ACTIONS], Resource: '*' }]);
      // The IAM proof checks the platform's trace uploads against this role (test/support/iam-global-setup.ts).
      expect(platformUsesOf(role, { tracing: true }), `${role}`).toContain('traces');
      expect(platformUsesOf(role, {}), `${role}`).not.toContain('traces');
    }
  });

  it('passes cdk-nag: the "*" of the X-Ray actions is acknowledged with its reason, nothing more', () => {
    expect(nagViolations(all.stack)).toEqual([]);
  });
});

describe('cdk: bucketVersioning', () => {
  const bucketOf = (s: Synth) => resourcesOf(s.template, 'AWS::S3::Bucket')[logicalId(s.stack.service.bucket)]!;

  it('versions the bucket, expires noncurrent versions and bare delete markers, and keeps the other rules', () => {
    const p = bucketOf(all).Properties;
    expect(p['VersioningConfiguration']).toEqual({ Status: 'Enabled' });
    expect((p['LifecycleConfiguration'] as { Rules: unknown[] }).Rules).toEqual([
      { Id: 'abort-incomplete-uploads', AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' },
      { Id: 'expire-old-segments', Prefix: 'segments/', ExpirationInDays: 30, Status: 'Enabled' },
      {
        Id: 'expire-noncurrent-versions',
        NoncurrentVersionExpiration: { NoncurrentDays: 35 },
        ExpiredObjectDeleteMarker: true,
        Status: 'Enabled',
      },
    ]);
  });

  it('refuses anything but whole days from 1 to the maximum, naming the option', () => {
    for (const d of [Duration.hours(36), Duration.days(0), Duration.days(MAX_NONCURRENT_DAYS + 1)])
      expect(() =>
        synthStack({ bucketVersioning: { noncurrentVersionExpiration: d } }, `Bad${d.toMilliseconds()}`),
      ).toThrow(/\/Sluice: bucketVersioning must keep noncurrent versions for whole days from 1 to 365/);
  });
});

describe('deletion protection follows the removal policy', () => {
  it('protects the tables a stack keeps, never the ones it deletes', () => {
    expect(tableDeletionProtection(RemovalPolicy.RETAIN)).toBe(true);
    expect(tableDeletionProtection(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)).toBe(true);
    expect(tableDeletionProtection(RemovalPolicy.DESTROY)).toBe(false);
    expect(tableDeletionProtection(RemovalPolicy.SNAPSHOT)).toBe(false);
    for (const t of Object.values(resourcesOf(all.template, 'AWS::DynamoDB::Table')))
      expect(t.Properties['DeletionProtectionEnabled']).toBe(true);
  });
});
