/**
 * `SluiceService`'s functions room: one Lambda function per route group plus scheduled
 * maintenance ({@link FUNCTIONS}), their bundling, environment, log groups and least-privilege
 * roles ({@link FUNCTION_ACCESS}), the maintenance and lag schedules, and the checks on the
 * options they run with. A new function, and what its role may do, lands here and in
 * lib/access.ts. Built in the service's own scope, as every room is (lib/service/rooms.ts).
 *
 * @example
 * ```ts
 * const env = functionEnvironments(this, { tables, bucket, grantsJson, metricsService, metricsNamespace });
 * const { functions, lagInterval } = createFunctions(this, { ...env, tables, bucket, payloadKey, logRetention, removalPolicy });
 * ```
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotations, Duration, type RemovalPolicy } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { loadConfig } from '../../server/config.js';
import { LAG_TASK_EVENT } from '../../server/entry/maintenance-event.js';
import { MAX_WAITERS } from '../../server/core/holds.js';
import { BUCKET_ENV, TABLE_ENV } from '../../server/storage/aws/schema.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import {
  BLOB_PREFIXES,
  BUCKET_ACTIONS,
  FUNCTION_ACCESS,
  FUNCTIONS,
  LIST_PREFIXES,
  PAYLOAD_KEY_ACCESS,
  PAYLOAD_KEY_ACTIONS,
  TABLE_ACTIONS,
  TAKE_ACTION,
  TAKE_KEY_PATTERN,
  WAITING_FUNCTIONS,
  type FunctionName,
} from '../access.js';
import { functionLogging, nodeOptions } from '../function-logging.js';
import {
  AWS_DEFAULT_MAX_BODY_BYTES,
  AWS_DEFAULT_MAX_PUSH_ITEMS,
  checkBodyLimit,
  checkPushItems,
  checkThrottle,
} from '../limits.js';
import { capitalise } from './rooms.js';

/** The repository root: function entries are `server/entry/<name>.ts` under it. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Long polls are capped at 25 s in the services; API Gateway's integration timeout is 30 s. */
export const API_FUNCTION_TIMEOUT = Duration.seconds(29);
/** API Gateway HTTP APIs end every integration at 30 s: an API function must answer before. */
export const API_GATEWAY_TIMEOUT = Duration.seconds(30);
/**
 * What an API function needs between the end of its longest wait and its own timeout: the
 * handler stops 1 s early (middy's `timeoutEarlyInMillis`), and the empty answer must still
 * be written.
 */
export const LONG_POLL_HEADROOM = Duration.seconds(2);

/**
 * Checks that the long-poll caps the functions will run with (SLUICE_MAX_POP_WAIT_MS,
 * SLUICE_CLAIM_MAX_WAIT_MS, from `environment` or their defaults) end with
 * {@link LONG_POLL_HEADROOM} to spare before `timeout`, and that `timeout` ends before API
 * Gateway's: otherwise a waiting client gets a 504 (which Queen's client retries and then
 * fails on) instead of an empty 204. Throws with what to change; answers the caps.
 *
 * @example
 * ```ts
 * checkLongPollBudget({ SLUICE_MAX_POP_WAIT_MS: '20000' }); // { maxPopWaitMs: 20000, claimMaxWaitMs: 25000 }
 * checkLongPollBudget({ SLUICE_MAX_POP_WAIT_MS: '29000' }); // throws
 * ```
 */
export function checkLongPollBudget(
  environment: Record<string, string | undefined>,
  timeout: Duration = API_FUNCTION_TIMEOUT,
): { maxPopWaitMs: number; claimMaxWaitMs: number } {
  const { maxPopWaitMs, claimMaxWaitMs } = loadConfig(environment);
  const timeoutMs = timeout.toMilliseconds();
  if (timeoutMs >= API_GATEWAY_TIMEOUT.toMilliseconds()) {
    throw new Error(
      `the API functions' timeout (${timeoutMs} ms) must be below API Gateway's ${API_GATEWAY_TIMEOUT.toMilliseconds()} ms integration timeout`,
    );
  }
  const budget = timeoutMs - LONG_POLL_HEADROOM.toMilliseconds();
  for (const [key, ms] of [
    ['SLUICE_MAX_POP_WAIT_MS', maxPopWaitMs],
    ['SLUICE_CLAIM_MAX_WAIT_MS', claimMaxWaitMs],
  ] as const) {
    if (ms > budget) {
      throw new Error(
        `${key} is ${ms} ms, but the API functions time out after ${timeoutMs} ms and need ` +
          `${LONG_POLL_HEADROOM.toMilliseconds()} ms of that to answer: set it to at most ${budget} ms ` +
          `(API Gateway ends every request at 30 s)`,
      );
    }
  }
  return { maxPopWaitMs, claimMaxWaitMs };
}

/** What the default wait cap (`SLUICE_MAX_WAITERS=auto`) needs: the account's unreserved concurrency. */
export const ACCOUNT_CONCURRENCY_ACTION = 'lambda:GetAccountSettings';

/** Largest `maxWaiters` (SLUICE_MAX_WAITERS): what the wait slots' keys express. */
export const MAX_WAITERS_OPTION = MAX_WAITERS;

/**
 * Throws unless `n` is `auto` or a whole number of waiters from 0 (no cap) to
 * {@link MAX_WAITERS_OPTION}.
 *
 * @example
 * ```ts
 * checkMaxWaiters('maxWaiters', 4); // ok
 * checkMaxWaiters('maxWaiters', -1); // throws
 * ```
 */
export function checkMaxWaiters(what: string, n: number | 'auto' | undefined): void {
  if (n === undefined || n === 'auto') return;
  if (!Number.isInteger(n) || n < 0 || n > MAX_WAITERS_OPTION)
    throw new Error(`${what} must be auto or a whole number from 0 (no cap) to ${MAX_WAITERS_OPTION} (got ${n})`);
}

/** Lambda's memory range (MB). */
export const MEMORY_RANGE = { min: 128, max: 10_240 } as const;
const checkMemory = (what: string, mb: number | undefined): void => {
  if (mb === undefined) return;
  if (!Number.isInteger(mb) || mb < MEMORY_RANGE.min || mb > MEMORY_RANGE.max)
    throw new Error(`${what} must be a whole number of MB from ${MEMORY_RANGE.min} to ${MEMORY_RANGE.max} (got ${mb})`);
};

/** Most executions `maintenanceReservedConcurrency` may reserve (more would only be idle). */
export const MAX_MAINTENANCE_RESERVATION = 10;
const checkReservedConcurrency = (what: string, n: number | undefined): void => {
  if (n === undefined) return;
  if (!Number.isInteger(n) || n < 1 || n > MAX_MAINTENANCE_RESERVATION)
    throw new Error(`${what} must be a whole number from 1 to ${MAX_MAINTENANCE_RESERVATION} (got ${n})`);
};

const checkLagInterval = (what: string, d: Duration): void => {
  const minutes = d.toSeconds() / 60;
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 15)
    throw new Error(`${what} must be whole minutes from 1 to 15 (got ${d.toHumanString()})`);
};

/**
 * esbuild settings for every function: one ESM file, no native modules (zstd comes from
 * `node:zlib` on nodejs22.x, SQLite is never used on Lambda), the AWS SDK bundled at the
 * version the adapter is tested with.
 */
export const BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: 'node22',
  platform: 'node',
  mainFields: ['module', 'main'],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  // CommonJS dependencies inside an ES module still call require() for Node built-ins.
  banner:
    "import{createRequire as __sluiceCreateRequire}from'node:module';const require=__sluiceCreateRequire(import.meta.url);",
  externalModules: ['@mongodb-js/zstd', 'better-sqlite3'],
  forceDockerBundling: false,
};

/** The functions' environments: what every function gets, what the API functions add, and tracing. */
export interface FunctionEnvironments {
  /** Every function's (the notifier's too): table and bucket names, grants, Powertools, `environment`. */
  environment: Record<string, string>;
  /** The API functions': the request limits, then {@link environment}; the service adds SLUICE_NOTIFY_URL. */
  apiEnvironment: Record<string, string>;
  /** ACTIVE with `tracing`, else unset (not DISABLED). */
  tracing: lambda.Tracing | undefined;
}

/**
 * The environments {@link createFunctions} and the notifications construct give their
 * functions; checks `maxWaiters`.
 *
 * @example
 * ```ts
 * const env = functionEnvironments(this, { tables, bucket, grantsJson, metricsService: 'Sluice-Queue', metricsNamespace: 'Sluice' });
 * env.apiEnvironment['SLUICE_NOTIFY_URL'] = notifications.url;
 * ```
 */
export function functionEnvironments(
  scope: Construct,
  props: {
    tables: Record<TableName, dynamodb.Table>;
    bucket: s3.Bucket;
    grantsJson: string;
    metricsService: string;
    metricsNamespace: string;
    sourceMaps?: boolean;
    environment?: Record<string, string>;
    maxWaiters?: number | 'auto';
    maxBodyBytes?: number;
    maxPushItems?: number;
    tracing?: boolean;
  },
): FunctionEnvironments {
  const environment: Record<string, string> = {
    ...Object.fromEntries(TABLES.map((t) => [TABLE_ENV[t], props.tables[t].tableName])),
    [BUCKET_ENV]: props.bucket.bucketName,
    SLUICE_GRANTS: props.grantsJson,
    POWERTOOLS_SERVICE_NAME: props.metricsService,
    POWERTOOLS_METRICS_NAMESPACE: props.metricsNamespace,
    POWERTOOLS_LOG_LEVEL: 'INFO',
    ...nodeOptions(props.sourceMaps),
    ...props.environment,
  };
  // What a request may carry on AWS (lib/limits.ts); `environment` may still set them.
  checkMaxWaiters(`${scope.node.path}: maxWaiters`, props.maxWaiters);
  const apiEnvironment: Record<string, string> = {
    SLUICE_MAX_BODY_BYTES: String(props.maxBodyBytes ?? AWS_DEFAULT_MAX_BODY_BYTES),
    SLUICE_MAX_PUSH_ITEMS: String(props.maxPushItems ?? AWS_DEFAULT_MAX_PUSH_ITEMS),
    SLUICE_MAX_WAITERS: String(props.maxWaiters ?? 'auto'),
    ...environment,
  };
  // Unset, not DISABLED, when off: a deployment without tracing synthesizes as it did before.
  const tracing = props.tracing ? lambda.Tracing.ACTIVE : undefined;
  return { environment, apiEnvironment, tracing };
}

/** What {@link createFunctions} reads: the environments, the storage it grants, and the service's options. */
export interface FunctionsProps extends FunctionEnvironments {
  tables: Record<TableName, dynamodb.Table>;
  bucket: s3.Bucket;
  payloadKey: kms.IKey | undefined;
  logRetention: logs.RetentionDays;
  removalPolicy: RemovalPolicy;
  memorySize?: number;
  maintenanceMemorySize?: number;
  maintenanceReservedConcurrency?: number;
  maintenanceInterval?: Duration;
  lagInterval?: Duration;
  /** The API stage's throttle: only checked here, with the other options, before any function is built. */
  throttle?: { rateLimit: number; burstLimit: number };
}

/**
 * Checks the options, then builds {@link FUNCTIONS} (each with its log group and a role holding
 * only its {@link FUNCTION_ACCESS}) and the maintenance and lag schedules. Answers the functions
 * and the lag interval (the lag alarm's period).
 *
 * @example
 * ```ts
 * const { functions, lagInterval } = createFunctions(this, { ...env, tables, bucket, payloadKey, logRetention, removalPolicy });
 * functions.maintenance.functionArn;
 * ```
 */
export function createFunctions(
  scope: Construct,
  props: FunctionsProps,
): { functions: Record<FunctionName, NodejsFunction>; lagInterval: Duration } {
  const { environment, apiEnvironment, tracing, logRetention, removalPolicy, payloadKey } = props;
  const path = scope.node.path;
  const { maxBodyBytes, maxPushItems, maxWaiters } = loadConfig(apiEnvironment);
  checkBodyLimit(maxBodyBytes, `${path}: maxBodyBytes (SLUICE_MAX_BODY_BYTES)`);
  checkPushItems(maxPushItems, `${path}: maxPushItems (SLUICE_MAX_PUSH_ITEMS)`);
  // Long polls must end (with an empty 204) before the function and API Gateway time out.
  checkLongPollBudget(environment, API_FUNCTION_TIMEOUT);
  checkMemory(`${path}: memorySize`, props.memorySize);
  checkMemory(`${path}: maintenanceMemorySize`, props.maintenanceMemorySize);
  checkReservedConcurrency(`${path}: maintenanceReservedConcurrency`, props.maintenanceReservedConcurrency);
  if (props.throttle) checkThrottle(props.throttle, `${path}: throttle`);
  const entry = (name: FunctionName): string => {
    const file = join(REPO_ROOT, 'server', 'entry', `${name}.ts`);
    if (!existsSync(file)) throw new Error(`no Lambda entry for function ${name}: ${file}`);
    return file;
  };
  const makeFunction = (name: FunctionName): NodejsFunction => {
    const logGroup = new logs.LogGroup(scope, `${capitalise(name)}Logs`, { retention: logRetention, removalPolicy });
    // An explicit role with only this function's grants (no AWS managed policy).
    const role = new iam.Role(scope, `${capitalise(name)}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Sluice ${name} function (${path})`,
    });
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'WriteOwnLogs',
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [logGroup.logGroupArn],
      }),
    );
    grantAccess(role, name, props.tables, props.bucket);
    if (maxWaiters === 'auto' && WAITING_FUNCTIONS.includes(name))
      role.addToPolicy(
        new iam.PolicyStatement({
          sid: 'ReadAccountConcurrency',
          actions: [ACCOUNT_CONCURRENCY_ACTION],
          // GetAccountSettings acts on no resource: IAM accepts only "*" for it.
          resources: ['*'],
        }),
      );
    const keyUses = payloadKey ? PAYLOAD_KEY_ACCESS[name] : [];
    if (payloadKey && keyUses.length > 0)
      role.addToPolicy(
        new iam.PolicyStatement({
          sid: 'PayloadKey',
          actions: keyUses.map((u) => PAYLOAD_KEY_ACTIONS[u]),
          resources: [payloadKey.keyArn],
        }),
      );
    const isApi = name !== 'maintenance';
    return new NodejsFunction(scope, `${capitalise(name)}Function`, {
      entry: entry(name),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: isApi ? (props.memorySize ?? 1024) : (props.maintenanceMemorySize ?? 512),
      timeout: isApi ? API_FUNCTION_TIMEOUT : Duration.minutes(5),
      description: `Sluice ${name} (${path})`,
      role,
      logGroup,
      ...functionLogging(environment),
      environment: {
        ...(isApi ? apiEnvironment : environment),
        ...(payloadKey && keyUses.length > 0 ? { SLUICE_KMS_KEY_ID: payloadKey.keyArn } : {}),
      },
      bundling: BUNDLING,
      tracing,
      // Opt-in only: a reservation makes the deploy fail on accounts with a small quota.
      ...(isApi || props.maintenanceReservedConcurrency === undefined
        ? {}
        : { reservedConcurrentExecutions: props.maintenanceReservedConcurrency }),
    });
  };
  const functions = Object.fromEntries(FUNCTIONS.map((f) => [f, makeFunction(f)])) as Record<
    FunctionName,
    NodejsFunction
  >;

  new events.Rule(scope, 'MaintenanceSchedule', {
    description: `Sluice maintenance (${path})`,
    schedule: events.Schedule.rate(props.maintenanceInterval ?? Duration.minutes(15)),
    targets: [new targets.LambdaFunction(functions.maintenance, { retryAttempts: 0 })],
  });
  // Lag alone, more often: the lag alarm must not wait for a 15-minute pass, and it breaches
  // when these reports stop.
  const lagInterval = props.lagInterval ?? Duration.minutes(5);
  checkLagInterval(`${path}: lagInterval`, lagInterval);
  new events.Rule(scope, 'LagSchedule', {
    description: `Sluice consumer lag (${path})`,
    schedule: events.Schedule.rate(lagInterval),
    targets: [
      new targets.LambdaFunction(functions.maintenance, {
        event: events.RuleTargetInput.fromObject(LAG_TASK_EVENT),
        retryAttempts: 0,
      }),
    ],
  });
  if (props.maintenanceReservedConcurrency === 1)
    Annotations.of(scope).addWarningV2(
      'sluice:maintenanceReservation1',
      'maintenanceReservedConcurrency=1: a lag report that starts while a maintenance pass runs is ' +
        'throttled (Lambda retries it later) and counts in the Lambda throttles alarm. Reserve 2.',
    );
  return { functions, lagInterval };
}

/** Adds the statements {@link FUNCTION_ACCESS} declares for `name` to `role`, and nothing else. */
function grantAccess(
  role: iam.Role,
  name: FunctionName,
  tables: Record<TableName, dynamodb.Table>,
  bucket: s3.Bucket,
): void {
  const access = FUNCTION_ACCESS[name];
  for (const mode of ['read', 'readwrite'] as const) {
    const names = TABLES.filter((t) => access.tables[t] === mode);
    if (names.length === 0) continue;
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: mode === 'read' ? 'ReadTables' : 'ReadWriteTables',
        actions: TABLE_ACTIONS[mode],
        resources: names.map((t) => tables[t].tableArn),
      }),
    );
  }
  if (access.takesOffsets)
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'TakeOffsets',
        actions: [TAKE_ACTION],
        resources: [tables.log.tableArn],
        // Only the partition sequencers: no other item is ever updated in place.
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [TAKE_KEY_PATTERN] } },
      }),
    );
  const objectOps = access.bucket.filter((op) => op !== 'list');
  if (objectOps.length > 0) {
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'BlobObjects',
        actions: objectOps.map((op) => BUCKET_ACTIONS[op]),
        resources: BLOB_PREFIXES.map((p) => bucket.arnForObjects(`${p}*`)),
      }),
    );
  }
  if (access.bucket.includes('list')) {
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ListBlobs',
        actions: [BUCKET_ACTIONS.list],
        resources: [bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': LIST_PREFIXES.map((p) => `${p}*`) } },
      }),
    );
  }
}
