import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackOptionsFromContext } from '../../lib/context.js';

const KEY_ARN = 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const from = (values: Record<string, string>) => stackOptionsFromContext((k) => values[k]);

describe('cdk app: cdk.json', () => {
  it('runs the app with tsx and keeps the CLI offline: no notices, no telemetry', () => {
    const cdk = JSON.parse(readFileSync('cdk.json', 'utf8')) as {
      app: string;
      notices?: boolean;
      context?: Record<string, unknown>;
    };
    expect(cdk.app).toBe('npx tsx bin/sluice.ts');
    expect(cdk.notices).toBe(false);
    expect(cdk.context?.['cli-telemetry']).toBe(false);
    // The version check is the third call home; the scripts turn it off.
    const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const s of ['synth', 'deploy', 'deploy:local', 'destroy:local'])
      expect(scripts[s], `npm run ${s}`).toMatch(/CDK_DISABLE_VERSION_CHECK=1 cdk(local)? /);
  });
});

describe('cdk app: options from context (-c key=value)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-context-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('defaults: stack Sluice, IAM auth, data retained, default grants, memory and log retention', () => {
    expect(from({})).toEqual({ stackName: 'Sluice', props: { removalPolicy: RemovalPolicy.RETAIN } });
  });

  it('reads every option', async () => {
    const grantsFile = join(dir, 'grants.json');
    const grants = [{ principal: 'arn:aws:iam::111122223333:role/writer', actions: ['push'], queues: ['orders-*'] }];
    await writeFile(grantsFile, JSON.stringify({ grants }));
    expect(
      from({
        stackName: 'SluiceProd',
        grantsFile,
        auth: 'jwt',
        jwtIssuer: 'https://id.example.com/',
        jwtAudience: 'sluice, ops ,',
        removalPolicy: 'destroy',
        memorySize: '2048',
        logRetentionDays: '7',
        maintenanceReservedConcurrency: '2',
      }),
    ).toEqual({
      stackName: 'SluiceProd',
      props: {
        grants,
        auth: { type: 'jwt', issuer: 'https://id.example.com/', audience: ['sluice', 'ops'] },
        removalPolicy: RemovalPolicy.DESTROY,
        memorySize: 2048,
        logRetention: RetentionDays.ONE_WEEK,
        maintenanceReservedConcurrency: 2,
      },
    });
  });

  it('the wait cap: auto (a share of the account concurrency), a number, or 0 for none', () => {
    expect(from({}).props.maxWaiters).toBeUndefined();
    expect(from({ maxWaiters: 'auto' }).props.maxWaiters).toBe('auto');
    expect(from({ maxWaiters: '4' }).props.maxWaiters).toBe(4);
    expect(from({ maxWaiters: '0' }).props.maxWaiters).toBe(0);
  });

  it('notifications: on unless false; anything else is refused', () => {
    expect(from({}).props.notifications).toBeUndefined();
    expect(from({ notifications: 'true' }).props.notifications).toBeUndefined();
    expect(from({ notifications: 'false' }).props.notifications).toBe(false);
    expect(() => from({ notifications: 'off' })).toThrow(/notifications must be true or false \(got off\)/);
  });

  it("apiGatewayCloudWatchRole: the stack sets the account's role unless false; anything else is refused", () => {
    expect(from({}).props.apiGatewayCloudWatchRole).toBeUndefined();
    expect(from({ apiGatewayCloudWatchRole: 'true' }).props.apiGatewayCloudWatchRole).toBeUndefined();
    expect(from({ apiGatewayCloudWatchRole: 'false' }).props.apiGatewayCloudWatchRole).toBe(false);
    expect(() => from({ apiGatewayCloudWatchRole: 'no' })).toThrow(
      /apiGatewayCloudWatchRole must be true or false \(got no\)/,
    );
  });

  it('sourceMaps: off unless true; anything else is refused', () => {
    expect(from({}).props.sourceMaps).toBeUndefined();
    expect(from({ sourceMaps: 'false' }).props.sourceMaps).toBeUndefined();
    expect(from({ sourceMaps: 'true' }).props.sourceMaps).toBe(true);
    expect(() => from({ sourceMaps: 'yes' })).toThrow(/sourceMaps must be true or false \(got yes\)/);
  });

  it('tracing: off unless true; anything else is refused', () => {
    expect(from({}).props.tracing).toBeUndefined();
    expect(from({ tracing: 'false' }).props.tracing).toBeUndefined();
    expect(from({ tracing: 'true' }).props.tracing).toBe(true);
    expect(() => from({ tracing: 'on' })).toThrow(/tracing must be true or false \(got on\)/);
  });

  it('bucketVersioning: the days deleted blobs stay as noncurrent versions, 1 to 365', () => {
    expect(from({}).props.bucketVersioning).toBeUndefined();
    expect(from({ bucketVersioning: '35' }).props.bucketVersioning?.noncurrentVersionExpiration.toDays()).toBe(35);
    for (const bucketVersioning of ['0', '366', 'true', '1.5', '-3'])
      expect(() => from({ bucketVersioning }), `bucketVersioning=${bucketVersioning}`).toThrow(
        /bucketVersioning must be the days deleted blobs are kept as noncurrent versions, a whole number from 1 to 365/,
      );
  });

  it('every key read here is in the context table of lib/context.ts and of docs/DEPLOYING.md', () => {
    const source = readFileSync('lib/context.ts', 'utf8');
    const keys = [
      ...new Set([...source.matchAll(/\bctx\('(\w+)'\)|wholeNumber\(ctx, '(\w+)'/g)].map((m) => m[1] ?? m[2]!)),
    ];
    expect(keys).toContain('bucketVersioning');
    const header = source.slice(0, source.indexOf('*/'));
    const deploying = readFileSync('docs/DEPLOYING.md', 'utf8');
    const table = deploying.slice(deploying.indexOf('| context | default | meaning |'));
    const listed = (doc: string, key: string): boolean => new RegExp(`^\\|[^\\n]*\`${key}[\`=]`, 'm').test(doc);
    expect(keys.filter((k) => !listed(header.replace(/^ \* /gm, ''), k))).toEqual([]);
    expect(keys.filter((k) => !listed(table.slice(0, table.indexOf('\n\n')), k))).toEqual([]);
  });

  it('auth=tokens: stored bearer tokens', () => {
    expect(from({ auth: 'tokens' }).props.auth).toEqual({ type: 'tokens' });
  });

  it('payload key: an existing key by ARN, or one the stack creates', () => {
    expect(from({ kmsKeyArn: KEY_ARN }).props.payloadKey).toEqual({ keyArn: KEY_ARN });
    expect(from({ kmsKey: 'create' }).props.payloadKey).toEqual({ create: true });
  });

  it('alarm notifications: an email address, an existing topic, or both', () => {
    const topicArn = 'arn:aws:sns:eu-west-1:111122223333:ops';
    expect(from({ alarmEmail: 'ops@example.com' }).props.alarms).toEqual({ email: 'ops@example.com' });
    expect(from({ alarmTopicArn: topicArn }).props.alarms).toEqual({ topicArn });
    expect(from({ alarmTopicArn: topicArn, alarmEmail: 'a@b.io' }).props.alarms).toEqual({ topicArn, email: 'a@b.io' });
    expect(() => from({ alarmEmail: 'ops' })).toThrow(/alarmEmail must be an email address/);
    expect(() => from({ alarmTopicArn: 'ops' })).toThrow(/alarmTopicArn must be a standard SNS topic ARN/);
  });

  it('request limits: stage throttling (a missing half takes its default), body and push limits', () => {
    expect(from({ throttleRps: '50', throttleBurst: '100' }).props.throttle).toEqual({
      rateLimit: 50,
      burstLimit: 100,
    });
    expect(from({ throttleRps: '2.5' }).props.throttle).toEqual({ rateLimit: 2.5, burstLimit: 500 });
    expect(from({ throttleBurst: '20' }).props.throttle).toEqual({ rateLimit: 1000, burstLimit: 20 });
    expect(from({ maxBodyBytes: '3000000', maxPushItems: '200' }).props).toMatchObject({
      maxBodyBytes: 3_000_000,
      maxPushItems: 200,
    });
    expect(() => from({ throttleRps: '0' })).toThrow(/throttleRps must be a number of requests per second above 0/);
    expect(() => from({ throttleRps: 'fast' })).toThrow(/throttleRps must be/);
    expect(() => from({ throttleBurst: '0' })).toThrow(/throttleBurst must be a whole number/);
    expect(() => from({ maxBodyBytes: '7000000' })).toThrow(/maxBodyBytes must be a whole number from 1024 to 6160383/);
    expect(() => from({ maxPushItems: '0' })).toThrow(/maxPushItems must be a whole number from 1 to 10000/);
  });

  it('refuses bad values with a message naming the key', () => {
    expect(() => from({ auth: 'cognito' })).toThrow(/auth must be iam, jwt or tokens \(got cognito\)/);
    expect(() => from({ auth: 'jwt', jwtIssuer: 'https://id.example.com/' })).toThrow(
      /auth=jwt needs -c jwtIssuer=.* and -c jwtAudience=/,
    );
    expect(() => from({ auth: 'jwt', jwtAudience: 'sluice' })).toThrow(/auth=jwt needs/);
    expect(() => from({ removalPolicy: 'snapshot' })).toThrow(/removalPolicy must be retain or destroy/);
    for (const memorySize of ['lots', '64', '1024.5', '20000'])
      expect(() => from({ memorySize }), `memorySize=${memorySize}`).toThrow(
        /memorySize must be a whole number of MB from 128 to 10240/,
      );
    expect(() => from({ logRetentionDays: '10' })).toThrow(/logRetentionDays must be one CloudWatch accepts/);
    expect(() => from({ grantsFile: join(dir, 'missing.json') })).toThrow(/cannot read grants file/);
    for (const maintenanceReservedConcurrency of ['0', 'one', '1.5', '11'])
      expect(() => from({ maintenanceReservedConcurrency })).toThrow(
        /maintenanceReservedConcurrency must be a whole number from 1 to 10/,
      );
    for (const maxWaiters of ['-1', 'many', '2.5', '1000000', 'AUTO'])
      expect(() => from({ maxWaiters }), `maxWaiters=${maxWaiters}`).toThrow(
        /maxWaiters must be auto or a whole number from 0 \(no cap\) to 999999/,
      );
    expect(() => from({ kmsKeyArn: 'alias/sluice' })).toThrow(/kmsKeyArn must be a KMS key ARN/);
    expect(() => from({ kmsKey: 'yes' })).toThrow(/kmsKey must be create/);
    expect(() => from({ kmsKey: 'create', kmsKeyArn: KEY_ARN })).toThrow(/not both/);
  });
});
