/**
 * The CDK app's options, read from context (`-c key=value`, or `cdk.json` "context"):
 *
 * | key | default | meaning |
 * |---|---|---|
 * | `stackName` | `Sluice` | stack name |
 * | `grantsFile` | none | grants JSON file (docs/DEPLOYING.md#grants); default: every authenticated caller |
 * | `auth` | `iam` | `iam` (SigV4), `jwt` (with `jwtIssuer`, `jwtAudience` comma-separated) or `tokens` (stored bearer tokens) |
 * | `removalPolicy` | `retain` | `destroy` deletes tables, bucket and logs with the stack |
 * | `memorySize` | 1024 | MB per API function |
 * | `logRetentionDays` | 30 | days CloudWatch keeps function and access logs |
 * | `maintenanceReservedConcurrency` | none | executions reserved for maintenance (needs quota room) |
 * | `throttleRps`, `throttleBurst` | 1000, 500 | API stage throttling: steady requests per second, burst |
 * | `maxBodyBytes` | 1000000 | largest request body (at most 6160383; above 1000000 some bodies get API Gateway's 413) |
 * | `maxPushItems` | 1000 | most messages per push (1 to 10000) |
 * | `maxWaiters` | `auto` | most long polls waiting at once: `auto` (40% of the account's unreserved Lambda concurrency), or 0 (no cap) to 999999 |
 * | `alarmEmail` | none | address notified of alarms (a topic is created unless `alarmTopicArn` names one) |
 * | `alarmTopicArn` | none | existing SNS topic the alarms notify |
 * | `kmsKeyArn` | none | KMS key ARN sealing `encryptionEnabled` queues; or `kmsKey=create` for a new key |
 * | `notifications` | `true` | `false` leaves out the WebSocket channel idle consumers wait on (they long-poll) |
 * | `apiGatewayCloudWatchRole` | `true` | `false` leaves the account's API Gateway CloudWatch role setting alone (it must exist: the WebSocket stage logs) |
 * | `sourceMaps` | `false` | `true` runs the functions with `--enable-source-maps` (longer cold starts, CPU per error) |
 * | `tracing` | `false` | `true`: X-Ray active tracing on every function ($5 per million traces past 100,000 a month) |
 * | `bucketVersioning` | none | days (1 to 365) deleted segment blobs stay as noncurrent versions, for table restores (billed as S3 storage meanwhile) |
 *
 * Bad values stop the synth with a message naming the key, before anything is built.
 *
 * @example
 * ```ts
 * const { stackName, props } = stackOptionsFromContext((k) => ({ auth: 'jwt', jwtIssuer: 'https://id.example.com/', jwtAudience: 'sluice' })[k]);
 * ```
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { readGrantsFile } from '../server/http/grants.js';
import { AWS_MAX_BODY_BYTES, AWS_MAX_PUSH_ITEMS, checkThrottle, DEFAULT_THROTTLE } from './limits.js';
import {
  checkAlarmOptions,
  checkKmsKeyArn,
  MAX_MAINTENANCE_RESERVATION,
  MAX_WAITERS_OPTION,
  MEMORY_RANGE,
} from './sluice-service.js';
import { MAX_NONCURRENT_DAYS } from './recovery.js';
import type { SluiceStackProps } from './sluice-stack.js';

/** Reads one context value; undefined when unset or empty. */
export type ContextReader = (key: string) => string | undefined;

export function stackOptionsFromContext(ctx: ContextReader): { stackName: string; props: SluiceStackProps } {
  const props: SluiceStackProps = {};
  const grantsFile = ctx('grantsFile');
  if (grantsFile) props.grants = readGrantsFile(grantsFile).grants;

  const auth = ctx('auth') ?? 'iam';
  if (auth === 'jwt') {
    const issuer = ctx('jwtIssuer');
    const audience =
      ctx('jwtAudience')
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean) ?? [];
    if (!issuer || audience.length === 0)
      throw new Error('auth=jwt needs -c jwtIssuer=https://... and -c jwtAudience=aud1[,aud2]');
    props.auth = { type: 'jwt', issuer, audience };
  } else if (auth === 'tokens') {
    props.auth = { type: 'tokens' };
  } else if (auth !== 'iam') {
    throw new Error(`auth must be iam, jwt or tokens (got ${auth})`);
  }

  const removal = ctx('removalPolicy') ?? 'retain';
  if (removal !== 'retain' && removal !== 'destroy')
    throw new Error(`removalPolicy must be retain or destroy (got ${removal})`);
  props.removalPolicy = removal === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;

  const memory = ctx('memorySize');
  if (memory !== undefined) {
    const mb = Number(memory);
    if (!Number.isInteger(mb) || mb < MEMORY_RANGE.min || mb > MEMORY_RANGE.max)
      throw new Error(
        `memorySize must be a whole number of MB from ${MEMORY_RANGE.min} to ${MEMORY_RANGE.max} (got ${memory})`,
      );
    props.memorySize = mb;
  }

  const days = ctx('logRetentionDays');
  if (days !== undefined) {
    const retention = Object.values(RetentionDays).find((v) => Number(v) === Number(days));
    if (retention === undefined)
      throw new Error(`logRetentionDays must be one CloudWatch accepts (1, 3, 5, 7, 14, 30, 60, 90, ...); got ${days}`);
    props.logRetention = retention as RetentionDays;
  }

  const notifications = ctx('notifications');
  if (notifications !== undefined && notifications !== 'true' && notifications !== 'false')
    throw new Error(`notifications must be true or false (got ${notifications})`);
  if (notifications === 'false') props.notifications = false;
  const cloudWatchRole = ctx('apiGatewayCloudWatchRole');
  if (cloudWatchRole !== undefined && cloudWatchRole !== 'true' && cloudWatchRole !== 'false')
    throw new Error(`apiGatewayCloudWatchRole must be true or false (got ${cloudWatchRole})`);
  if (cloudWatchRole === 'false') props.apiGatewayCloudWatchRole = false;
  const tracing = ctx('tracing');
  if (tracing !== undefined && tracing !== 'true' && tracing !== 'false')
    throw new Error(`tracing must be true or false (got ${tracing})`);
  if (tracing === 'true') props.tracing = true;
  const versionDays = ctx('bucketVersioning');
  if (versionDays !== undefined) {
    const days = Number(versionDays);
    if (!/^\d+$/.test(versionDays.trim()) || days < 1 || days > MAX_NONCURRENT_DAYS)
      throw new Error(
        `bucketVersioning must be the days deleted blobs are kept as noncurrent versions, a whole number from 1 to ${MAX_NONCURRENT_DAYS} (got ${versionDays})`,
      );
    props.bucketVersioning = { noncurrentVersionExpiration: Duration.days(days) };
  }

  const sourceMaps = ctx('sourceMaps');
  if (sourceMaps !== undefined && sourceMaps !== 'true' && sourceMaps !== 'false')
    throw new Error(`sourceMaps must be true or false (got ${sourceMaps})`);
  if (sourceMaps === 'true') props.sourceMaps = true;

  const reserved = wholeNumber(ctx, 'maintenanceReservedConcurrency', 1, MAX_MAINTENANCE_RESERVATION);
  if (reserved !== undefined) props.maintenanceReservedConcurrency = reserved;

  const kmsKeyArn = ctx('kmsKeyArn');
  const kmsKey = ctx('kmsKey');
  if (kmsKey !== undefined && kmsKey !== 'create')
    throw new Error(`kmsKey must be create (got ${kmsKey}); name an existing key with -c kmsKeyArn=arn:aws:kms:...`);
  if (kmsKey && kmsKeyArn) throw new Error('pass -c kmsKey=create or -c kmsKeyArn=..., not both');
  if (kmsKeyArn) {
    checkKmsKeyArn(kmsKeyArn);
    props.payloadKey = { keyArn: kmsKeyArn };
  } else if (kmsKey) props.payloadKey = { create: true };

  const rps = ctx('throttleRps');
  const burst = ctx('throttleBurst');
  if (rps !== undefined || burst !== undefined) {
    const rateLimit = rps === undefined ? DEFAULT_THROTTLE.rateLimit : Number(rps);
    if (rps !== undefined && (!/^\d+(\.\d+)?$/.test(rps.trim()) || rateLimit <= 0))
      throw new Error(`throttleRps must be a number of requests per second above 0 (got ${rps})`);
    const burstLimit = wholeNumber(ctx, 'throttleBurst', 1, Number.MAX_SAFE_INTEGER) ?? DEFAULT_THROTTLE.burstLimit;
    props.throttle = { rateLimit, burstLimit };
    checkThrottle(props.throttle);
  }
  const maxBodyBytes = wholeNumber(ctx, 'maxBodyBytes', 1024, AWS_MAX_BODY_BYTES);
  if (maxBodyBytes !== undefined) props.maxBodyBytes = maxBodyBytes;
  const maxPushItems = wholeNumber(ctx, 'maxPushItems', 1, AWS_MAX_PUSH_ITEMS);
  if (maxPushItems !== undefined) props.maxPushItems = maxPushItems;
  const waiters = ctx('maxWaiters')?.trim();
  if (waiters !== undefined) {
    if (waiters !== 'auto' && !(/^\d+$/.test(waiters) && Number(waiters) <= MAX_WAITERS_OPTION))
      throw new Error(
        `maxWaiters must be auto or a whole number from 0 (no cap) to ${MAX_WAITERS_OPTION} (got ${waiters})`,
      );
    props.maxWaiters = waiters === 'auto' ? 'auto' : Number(waiters);
  }

  const email = ctx('alarmEmail');
  const topicArn = ctx('alarmTopicArn');
  if (email !== undefined || topicArn !== undefined) {
    props.alarms = { ...(email !== undefined ? { email } : {}), ...(topicArn !== undefined ? { topicArn } : {}) };
    checkAlarmOptions(props.alarms);
  }
  return { stackName: ctx('stackName') ?? 'Sluice', props };
}

/** A whole-number option from `min` to `max`, or undefined when unset. */
function wholeNumber(ctx: ContextReader, key: string, min: number, max: number): number | undefined {
  const raw = ctx(key);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < min || n > max)
    throw new Error(`${key} must be a whole number from ${min} to ${max} (got ${raw})`);
  return n;
}
