// One construct past 500 lines: the stack's wiring (API, functions, tables, bucket, roles, alarms) in one
// place; the notifications construct lives in lib/notifications.ts.
/**
 * `SluiceService`: everything Sluice needs in one reusable construct — the HTTP API, one
 * Lambda function per route group plus scheduled maintenance, the DynamoDB tables, the segment
 * bucket, least-privilege roles, the policies callers attach, alarms and a dashboard.
 *
 * Embed it in any CDK app:
 * ```ts
 * const sluice = new SluiceService(this, 'Queue', { removalPolicy: RemovalPolicy.DESTROY });
 * new CfnOutput(this, 'Url', { value: sluice.apiUrl });
 * myRole.addManagedPolicy(sluice.policies.Producer);
 * ```
 * Nothing is named by hand: CloudFormation names every resource, so two instances can share
 * an account and region.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotations, ArnFormat, Duration, RemovalPolicy, Stack, type CfnResource } from 'aws-cdk-lib';
import {
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
  type IHttpRouteAuthorizer,
} from 'aws-cdk-lib/aws-apigatewayv2';
import {
  HttpIamAuthorizer,
  HttpJwtAuthorizer,
  HttpLambdaAuthorizer,
  HttpLambdaResponseType,
} from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { loadConfig } from '../server/config.js';
import { LAG_TASK_EVENT } from '../server/entry/maintenance-event.js';
import { GRANT_ACTIONS, parseGrants, type Grant } from '../server/http/grants.js';
import type { RouteDef } from '../server/http/route.js';
import { ALL_ROUTES } from '../server/http/routes.js';
import { SEGMENT_BLOB_PREFIX } from '../server/service/log/log-store.js';
import { MAX_WAITERS } from '../server/service/wait-slots.js';
import { BUCKET_ENV, ITEM_TABLE_SCHEMA, TABLE_ENV } from '../server/storage/aws/schema.js';
import { TABLES, type TableName } from '../server/storage/port.js';
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
} from './access.js';
import { API_ROLES, API_STAGE, invokeResources, type ApiRole } from './api-access.js';
import {
  AWS_DEFAULT_MAX_BODY_BYTES,
  AWS_DEFAULT_MAX_PUSH_ITEMS,
  checkBodyLimit,
  checkPushItems,
  checkThrottle,
  DEFAULT_THROTTLE,
} from './limits.js';
import { functionLogging, nodeOptions } from './function-logging.js';
import { acknowledgeNagFindings, logicalIdOf } from './nag.js';
import { Notifications } from './notifications.js';
import {
  bucketVersioningProps,
  checkBucketVersioning,
  tableDeletionProtection,
  type BucketVersioningOptions,
} from './recovery.js';

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Env var each table's physical name is passed in (read by `awsStorageConfigFromEnv`). */
export { TABLE_ENV };

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

export type AuthOptions =
  /** SigV4-signed requests; callers need `execute-api:Invoke` (attach the published policies). */
  | { type: 'iam' }
  /** `Authorization: Bearer <JWT>` checked by API Gateway against the issuer and audience. */
  | { type: 'jwt'; issuer: string; audience: string[] }
  /**
   * `Authorization: Bearer <token>` with opaque tokens stored (as SHA-256 hashes) in the `meta`
   * table, checked by a Lambda authorizer (server/auth/); each token maps to a principal the
   * grants apply to. Tokens are created and revoked without a deploy.
   */
  | { type: 'tokens' };

/**
 * How long API Gateway caches the token authorizer's answer per Authorization header: a revoked
 * token is refused within this. Kept at or under a minute.
 */
export const TOKEN_CACHE_TTL = Duration.seconds(30);

/**
 * The KMS key sealing payloads of queues with `encryptionEnabled` (each function process asks
 * it for a data key; see server/service/encryption.ts).
 *
 * @example
 * ```ts
 * new SluiceService(this, 'Queue', { payloadKey: { create: true } });
 * new SluiceService(this, 'Queue', { payloadKey: { keyArn: 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-...' } });
 * ```
 */
export type PayloadKeyOption =
  /** A key this construct creates: symmetric, yearly rotation, kept or deleted with the data. */
  | { create: true }
  /** An existing symmetric key, by ARN. Its key policy must let the account's IAM policies grant use. */
  | { keyArn: string }
  /** An existing key construct. */
  | { key: kms.IKey };

export interface SluiceAlarmOptions {
  /**
   * Where alarm notifications go (none by default: the alarms still show in the console).
   * With `email` and no topic, this construct creates one.
   */
  topic?: sns.ITopic;
  /** An existing standard SNS topic, by ARN (instead of `topic`). */
  topicArn?: string;
  /** An address subscribed to the alarm topic (AWS mails a confirmation link first). */
  email?: string;
  /** API 5xx responses per 5 minutes that raise the alarm (default 5). */
  serverErrorsPer5Minutes?: number;
  /** Oldest unconsumed message age, seconds, that raises the alarm (default 3600). */
  oldestUnconsumedAgeSeconds?: number;
}

export interface SluiceServiceProps {
  /** What happens to tables, bucket and logs when the stack is deleted (default RETAIN: data survives). */
  removalPolicy?: RemovalPolicy;
  /** How callers authenticate (default IAM/SigV4). */
  auth?: AuthOptions;
  /**
   * Who may do what on which queues (docs/DEPLOYING.md#grants). Default: every authenticated
   * caller may do everything, which with IAM auth leaves the decision to the IAM policies
   * callers hold (the published Producer/Consumer/Admin policies).
   */
  grants?: Grant[];
  /** Retention of function and access logs (default one month). */
  logRetention?: logs.RetentionDays;
  /** Memory of the API functions in MB (default 1024; CPU grows with it). */
  memorySize?: number;
  /** Memory of the maintenance function in MB (default 512). */
  maintenanceMemorySize?: number;
  /** How often maintenance runs (default every 15 minutes). */
  maintenanceInterval?: Duration;
  /**
   * How often consumer lag is measured for the dashboard and the lag alarm, by the maintenance
   * function with the event `{ "task": "lag" }` (default every 5 minutes; 1 to 15 minutes).
   */
  lagInterval?: Duration;
  /**
   * Concurrent executions reserved for the maintenance function (default: none). A reservation
   * is refused when it would leave the account fewer unreserved executions than Lambda's
   * minimum, which on a new account (a quota of 10 or 50) is the whole quota: set it only on
   * accounts whose quota has room (docs/DEPLOYING.md#quotas).
   */
  maintenanceReservedConcurrency?: number;
  /**
   * A KMS key for queues with `encryptionEnabled` (default: none, and `/configure` refuses
   * such queues). Only the functions that seal or open payloads get it, with only the KMS
   * action each needs ({@link PAYLOAD_KEY_ACCESS}).
   */
  payloadKey?: PayloadKeyOption;
  /** Extra environment for every function (SLUICE_* settings from `server/config.ts`). */
  environment?: Record<string, string>;
  /** CloudWatch namespace of the EMF metrics (default `Sluice`). */
  metricsNamespace?: string;
  /**
   * Steady-state requests per second and burst of the API stage (default
   * {@link DEFAULT_THROTTLE}: 1,000 and 500). Requests over it get API Gateway's 429.
   */
  throttle?: { rateLimit: number; burstLimit: number };
  /**
   * Largest request body the API functions accept, bytes (default
   * {@link AWS_DEFAULT_MAX_BODY_BYTES}: every body up to it reaches the function however it
   * escapes, so Sluice answers larger ones with its own 413). At most {@link AWS_MAX_BODY_BYTES}.
   */
  maxBodyBytes?: number;
  /** Most messages one push may carry (default {@link AWS_DEFAULT_MAX_PUSH_ITEMS}). */
  maxPushItems?: number;
  /**
   * Most long polls (waiting pops, claim polls) that wait at once across the deployment
   * (SLUICE_MAX_WAITERS; docs/DEPLOYING.md#quotas). Default `auto`: 40% of the account's
   * unreserved Lambda concurrency, which the waiting functions read once per process (they are
   * granted `lambda:GetAccountSettings` for it). A number sets the cap and grants nothing; 0
   * turns it off. Requests past the cap hold 1.5 s and answer empty.
   */
  maxWaiters?: number | 'auto';
  /**
   * Deletes segment blobs older than this, as a backstop for orphans the sweeper misses. Only
   * for deployments whose every queue keeps messages for less (default: never).
   */
  segmentExpiration?: Duration;
  /** A bucket for S3 server access logs of the segment bucket (default: none). */
  accessLogsBucket?: s3.IBucket;
  alarms?: SluiceAlarmOptions;
  /**
   * The WebSocket channel idle consumers wait on instead of long-polling (docs/DEPLOYING.md,
   * "Idle consumers"; default true). False: no WebSocket API, no stream on the `log` table;
   * consumers long-poll, and every wait bills a Lambda.
   */
  notifications?: boolean;
  /**
   * Whether the stack sets the account's API Gateway CloudWatch role (default true), which the
   * WebSocket stage's access logs need and new accounts lack (lib/api-gateway-account.ts: kept
   * when the stack is deleted). False leaves an existing setting alone; the account must then
   * have one (docs/DEPLOYING.md, Prerequisites). Without `notifications`, nothing needs it.
   */
  apiGatewayCloudWatchRole?: boolean;
  /**
   * Run the functions with Node's `--enable-source-maps` (default false): stack traces name the
   * TypeScript sources, at the price of a longer cold start and CPU time on every error
   * (docs/BENCHMARKS.md, "Source maps"). Each bundle ships its map either way.
   */
  sourceMaps?: boolean;
  /**
   * X-Ray active tracing on every function (default off): Lambda samples invocations and sends
   * their segments (init, invocation, overhead) with each function's role, which CDK grants the
   * two X-Ray actions it needs. The HTTP and WebSocket APIs cannot trace (API Gateway traces REST
   * APIs only), so a trace starts at the function. X-Ray bills $5 per million traces recorded
   * past 100,000 a month (docs/DEPLOYING.md, "Tracing").
   */
  tracing?: boolean;
  /**
   * Versions the segment bucket (default off): a blob deleted by retention, queue deletion or
   * the orphan sweep stays as a noncurrent version for `noncurrentVersionExpiration`, billed as
   * storage, so a table restored to an earlier point can find it again (docs/DEPLOYING.md,
   * "Restoring from a point in time").
   *
   * @example
   * ```ts
   * new SluiceService(this, 'Queue', { bucketVersioning: { noncurrentVersionExpiration: Duration.days(35) } });
   * ```
   */
  bucketVersioning?: BucketVersioningOptions;
}

/** Largest grants JSON passed in the environment (Lambda allows 4 KB for all variables). */
export const MAX_GRANTS_ENV_BYTES = 2500;

/** The default grants: every authenticated caller, every action, every queue. */
export const ALLOW_ALL_AUTHENTICATED: Grant[] = [
  {
    principal: '*',
    actions: [...GRANT_ACTIONS],
    queues: ['*'],
    description: 'every authenticated caller (IAM policies decide)',
  },
];

export class SluiceService extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  /** Base URL of the API (no trailing slash): what clients use as their base URL. */
  readonly apiUrl: string;
  readonly tables: Record<TableName, dynamodb.Table>;
  readonly bucket: s3.Bucket;
  readonly functions: Record<FunctionName, NodejsFunction>;
  /** The key sealing payloads of `encryptionEnabled` queues, when the deployment has one. */
  readonly payloadKey: kms.IKey | undefined;
  /** IAM managed policies allowing `execute-api:Invoke` per role (IAM auth only). */
  readonly policies: Partial<Record<ApiRole, iam.ManagedPolicy>>;
  readonly alarms: cloudwatch.Alarm[] = [];
  /** The idle consumers' WebSocket channel and its notifier (unless `notifications: false`). */
  readonly notifications: Notifications | undefined;
  /** The bearer-token authorizer's function (`auth: { type: 'tokens' }` only). */
  readonly authorizerFunction: NodejsFunction | undefined;
  /** Where alarms notify, when a topic or an email address was given. */
  readonly alarmTopic: sns.ITopic | undefined;
  readonly dashboard: cloudwatch.Dashboard;
  /** The service dimension of every Sluice metric of this instance. */
  readonly metricsService: string;
  readonly metricsNamespace: string;

  constructor(scope: Construct, id: string, props: SluiceServiceProps = {}) {
    super(scope, id);
    const stack = Stack.of(this);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const auth = props.auth ?? { type: 'iam' };
    this.metricsNamespace = props.metricsNamespace ?? 'Sluice';
    this.metricsService = `${stack.stackName}-${this.node.id}`;

    // ------------------------------------------------------------------ grants
    const grants = props.grants ?? ALLOW_ALL_AUTHENTICATED;
    parseGrants({ grants }, `${this.node.path} grants`);
    const grantsJson = JSON.stringify({ grants });
    if (Buffer.byteLength(grantsJson) > MAX_GRANTS_ENV_BYTES) {
      throw new Error(
        `${this.node.path}: the grants are ${Buffer.byteLength(grantsJson)} bytes as JSON; at most ` +
          `${MAX_GRANTS_ENV_BYTES} fit in the functions' environment. Use wider patterns.`,
      );
    }
    if (auth.type === 'jwt' && props.grants === undefined) {
      Annotations.of(this).addWarningV2(
        'sluice:jwtDefaultGrants',
        'JWT auth with the default grants: every token the issuer signs for the audience may use every queue. Pass `grants` to restrict.',
      );
    }
    if (auth.type === 'tokens' && props.grants === undefined) {
      Annotations.of(this).addWarningV2(
        'sluice:tokensDefaultGrants',
        'Token auth with the default grants: every stored token may use every queue. Pass `grants` (principals are the names tokens map to) to restrict.',
      );
    }

    // ------------------------------------------------------------------ storage
    this.tables = Object.fromEntries(
      TABLES.map((name) => [
        name,
        new dynamodb.Table(this, `${capitalise(name)}Table`, {
          partitionKey: { name: ITEM_TABLE_SCHEMA.partitionKey.name, type: dynamodb.AttributeType.STRING },
          sortKey: { name: ITEM_TABLE_SCHEMA.sortKey.name, type: dynamodb.AttributeType.STRING },
          billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
          timeToLiveAttribute: ITEM_TABLE_SCHEMA.timeToLiveAttribute,
          pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
          encryption: dynamodb.TableEncryption.AWS_MANAGED,
          // The notifier hears pushes from the log's stream (lib/notifications.ts); keys are all it reads.
          ...(name === 'log' && props.notifications !== false ? { stream: dynamodb.StreamViewType.KEYS_ONLY } : {}),
          removalPolicy,
          // A kept table must survive a stray delete-table too; a destroyed one must let the stack go.
          deletionProtection: tableDeletionProtection(removalPolicy),
        }),
      ]),
    ) as Record<TableName, dynamodb.Table>;

    checkBucketVersioning(`${this.node.path}: bucketVersioning`, props.bucketVersioning);
    const versioning = bucketVersioningProps(props.bucketVersioning);
    this.bucket = new s3.Bucket(this, 'SegmentBucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      encryption: s3.BucketEncryption.S3_MANAGED,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: versioning.versioned,
      lifecycleRules: [
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        ...(props.segmentExpiration
          ? [{ id: 'expire-old-segments', prefix: SEGMENT_BLOB_PREFIX, expiration: props.segmentExpiration }]
          : []),
        ...versioning.lifecycleRules,
      ],
      removalPolicy,
      autoDeleteObjects: removalPolicy === RemovalPolicy.DESTROY,
      ...(props.accessLogsBucket
        ? { serverAccessLogsBucket: props.accessLogsBucket, serverAccessLogsPrefix: 'sluice-segments/' }
        : {}),
    });

    // ------------------------------------------------------------- payload key
    this.payloadKey = payloadKeyOf(this, props.payloadKey, removalPolicy);
    if (this.payloadKey && props.environment?.['SLUICE_KMS_KEY_ID'] !== undefined)
      throw new Error(
        `${this.node.path}: set the payload key with \`payloadKey\` or with SLUICE_KMS_KEY_ID in \`environment\`, not both`,
      );
    if (!this.payloadKey && props.environment?.['SLUICE_KMS_KEY_ID'] !== undefined)
      Annotations.of(this).addWarningV2(
        'sluice:kmsKeyWithoutGrants',
        'SLUICE_KMS_KEY_ID is set in `environment`, so no function is granted the key: pass `payloadKey` instead.',
      );

    // ---------------------------------------------------------------- functions
    const environment: Record<string, string> = {
      ...Object.fromEntries(TABLES.map((t) => [TABLE_ENV[t], this.tables[t].tableName])),
      [BUCKET_ENV]: this.bucket.bucketName,
      SLUICE_GRANTS: grantsJson,
      POWERTOOLS_SERVICE_NAME: this.metricsService,
      POWERTOOLS_METRICS_NAMESPACE: this.metricsNamespace,
      POWERTOOLS_LOG_LEVEL: 'INFO',
      ...nodeOptions(props.sourceMaps),
      ...props.environment,
    };
    // What a request may carry on AWS (lib/limits.ts); `environment` may still set them.
    checkMaxWaiters(`${this.node.path}: maxWaiters`, props.maxWaiters);
    const apiEnvironment: Record<string, string> = {
      SLUICE_MAX_BODY_BYTES: String(props.maxBodyBytes ?? AWS_DEFAULT_MAX_BODY_BYTES),
      SLUICE_MAX_PUSH_ITEMS: String(props.maxPushItems ?? AWS_DEFAULT_MAX_PUSH_ITEMS),
      SLUICE_MAX_WAITERS: String(props.maxWaiters ?? 'auto'),
      ...environment,
    };
    // Unset, not DISABLED, when off: a deployment without tracing synthesizes as it did before.
    const tracing = props.tracing ? lambda.Tracing.ACTIVE : undefined;
    if (props.notifications !== false) {
      this.notifications = new Notifications(this, 'Notifications', {
        tracing,
        logTable: this.tables.log,
        metaTable: this.tables.meta,
        environment,
        repoRoot: REPO_ROOT,
        bundling: BUNDLING,
        logRetention,
        removalPolicy,
        throttle: props.throttle ?? DEFAULT_THROTTLE,
        cloudWatchRole: props.apiGatewayCloudWatchRole ?? true,
        logging: functionLogging(environment),
      });
      apiEnvironment['SLUICE_NOTIFY_URL'] = this.notifications.url;
    }
    const { maxBodyBytes, maxPushItems, maxWaiters } = loadConfig(apiEnvironment);
    checkBodyLimit(maxBodyBytes, `${this.node.path}: maxBodyBytes (SLUICE_MAX_BODY_BYTES)`);
    checkPushItems(maxPushItems, `${this.node.path}: maxPushItems (SLUICE_MAX_PUSH_ITEMS)`);
    // Long polls must end (with an empty 204) before the function and API Gateway time out.
    checkLongPollBudget(environment, API_FUNCTION_TIMEOUT);
    checkMemory(`${this.node.path}: memorySize`, props.memorySize);
    checkMemory(`${this.node.path}: maintenanceMemorySize`, props.maintenanceMemorySize);
    checkReservedConcurrency(`${this.node.path}: maintenanceReservedConcurrency`, props.maintenanceReservedConcurrency);
    if (props.throttle) checkThrottle(props.throttle, `${this.node.path}: throttle`);
    const entry = (name: FunctionName): string => {
      const file = join(REPO_ROOT, 'server', 'entry', `${name}.ts`);
      if (!existsSync(file)) throw new Error(`no Lambda entry for function ${name}: ${file}`);
      return file;
    };
    const makeFunction = (name: FunctionName): NodejsFunction => {
      const logGroup = new logs.LogGroup(this, `${capitalise(name)}Logs`, { retention: logRetention, removalPolicy });
      // An explicit role with only this function's grants (no AWS managed policy).
      const role = new iam.Role(this, `${capitalise(name)}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `Sluice ${name} function (${this.node.path})`,
      });
      role.addToPolicy(
        new iam.PolicyStatement({
          sid: 'WriteOwnLogs',
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [logGroup.logGroupArn],
        }),
      );
      grantAccess(role, name, this.tables, this.bucket);
      if (maxWaiters === 'auto' && WAITING_FUNCTIONS.includes(name))
        role.addToPolicy(
          new iam.PolicyStatement({
            sid: 'ReadAccountConcurrency',
            actions: [ACCOUNT_CONCURRENCY_ACTION],
            // GetAccountSettings acts on no resource: IAM accepts only "*" for it.
            resources: ['*'],
          }),
        );
      const keyUses = this.payloadKey ? PAYLOAD_KEY_ACCESS[name] : [];
      if (this.payloadKey && keyUses.length > 0)
        role.addToPolicy(
          new iam.PolicyStatement({
            sid: 'PayloadKey',
            actions: keyUses.map((u) => PAYLOAD_KEY_ACTIONS[u]),
            resources: [this.payloadKey.keyArn],
          }),
        );
      const isApi = name !== 'maintenance';
      return new NodejsFunction(this, `${capitalise(name)}Function`, {
        entry: entry(name),
        handler: 'handler',
        projectRoot: REPO_ROOT,
        depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture: lambda.Architecture.ARM_64,
        memorySize: isApi ? (props.memorySize ?? 1024) : (props.maintenanceMemorySize ?? 512),
        timeout: isApi ? API_FUNCTION_TIMEOUT : Duration.minutes(5),
        description: `Sluice ${name} (${this.node.path})`,
        role,
        logGroup,
        ...functionLogging(environment),
        environment: {
          ...(isApi ? apiEnvironment : environment),
          ...(this.payloadKey && keyUses.length > 0 ? { SLUICE_KMS_KEY_ID: this.payloadKey.keyArn } : {}),
        },
        bundling: BUNDLING,
        tracing,
        // Opt-in only: a reservation makes the deploy fail on accounts with a small quota.
        ...(isApi || props.maintenanceReservedConcurrency === undefined
          ? {}
          : { reservedConcurrentExecutions: props.maintenanceReservedConcurrency }),
      });
    };
    this.functions = Object.fromEntries(FUNCTIONS.map((f) => [f, makeFunction(f)])) as Record<
      FunctionName,
      NodejsFunction
    >;

    new events.Rule(this, 'MaintenanceSchedule', {
      description: `Sluice maintenance (${this.node.path})`,
      schedule: events.Schedule.rate(props.maintenanceInterval ?? Duration.minutes(15)),
      targets: [new targets.LambdaFunction(this.functions.maintenance, { retryAttempts: 0 })],
    });
    // Lag alone, more often: the lag alarm must not wait for a 15-minute pass, and it breaches
    // when these reports stop.
    const lagInterval = props.lagInterval ?? Duration.minutes(5);
    checkLagInterval(`${this.node.path}: lagInterval`, lagInterval);
    new events.Rule(this, 'LagSchedule', {
      description: `Sluice consumer lag (${this.node.path})`,
      schedule: events.Schedule.rate(lagInterval),
      targets: [
        new targets.LambdaFunction(this.functions.maintenance, {
          event: events.RuleTargetInput.fromObject(LAG_TASK_EVENT),
          retryAttempts: 0,
        }),
      ],
    });
    if (props.maintenanceReservedConcurrency === 1)
      Annotations.of(this).addWarningV2(
        'sluice:maintenanceReservation1',
        'maintenanceReservedConcurrency=1: a lag report that starts while a maintenance pass runs is ' +
          'throttled (Lambda retries it later) and counts in the Lambda throttles alarm. Reserve 2.',
      );

    // --------------------------------------------------------------------- API
    this.authorizerFunction =
      auth.type === 'tokens'
        ? this.makeTokenAuthorizerFunction(logRetention, removalPolicy, props.sourceMaps, tracing)
        : undefined;
    const authorizer: IHttpRouteAuthorizer =
      auth.type === 'jwt'
        ? new HttpJwtAuthorizer('JwtAuthorizer', auth.issuer, { jwtAudience: auth.audience })
        : this.authorizerFunction
          ? new HttpLambdaAuthorizer('TokenAuthorizer', this.authorizerFunction, {
              responseTypes: [HttpLambdaResponseType.SIMPLE],
              identitySource: ['$request.header.Authorization'],
              resultsCacheTtl: TOKEN_CACHE_TTL,
            })
          : new HttpIamAuthorizer();
    this.api = new HttpApi(this, 'Api', {
      // API names need not be unique; this one says which deployment it belongs to.
      apiName: `${stack.stackName}-${this.node.id}`,
      description: `Sluice (${this.node.path})`,
      createDefaultStage: false,
      defaultAuthorizer: authorizer,
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logRetention, removalPolicy });
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: API_STAGE,
      autoDeploy: true,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            ip: '$context.identity.sourceIp',
            method: '$context.httpMethod',
            path: '$context.path',
            routeKey: '$context.routeKey',
            status: '$context.status',
            bytes: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            principal:
              auth.type === 'jwt'
                ? '$context.authorizer.claims.sub'
                : auth.type === 'tokens'
                  ? '$context.authorizer.principal'
                  : '$context.identity.userArn',
            authError: '$context.authorizer.error',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
      // A runaway client must not take the account's API Gateway quota (shared by every API in the
      // region) or its Lambda concurrency: docs/DEPLOYING.md#quotas.
      throttle: props.throttle ?? DEFAULT_THROTTLE,
    });
    // The client appends paths to the base URL, which must not end in '/'.
    this.apiUrl = `https://${this.api.apiId}.execute-api.${stack.region}.${stack.urlSuffix}`;

    const integrations = Object.fromEntries(
      FUNCTIONS.filter((f) => f !== 'maintenance').map((f) => [
        f,
        // One API-scoped invoke permission per function instead of one per route.
        new HttpLambdaIntegration(`${capitalise(f)}Integration`, this.functions[f], { scopePermissionToRoute: false }),
      ]),
    ) as Record<Exclude<FunctionName, 'maintenance'>, HttpLambdaIntegration>;
    for (const route of ALL_ROUTES) {
      this.api.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: integrations[route.group],
        authorizer,
      });
    }

    // ---------------------------------------------------------------- policies
    this.policies = {};
    if (auth.type === 'iam') {
      for (const role of Object.keys(API_ROLES) as ApiRole[]) {
        this.policies[role] = new iam.ManagedPolicy(this, `${role}Policy`, {
          description: `Sluice ${role.toLowerCase()}: execute-api:Invoke on the ${API_ROLES[role].join('/')} routes of ${this.node.path}`,
          statements: invokeStatements(this.api, role, ALL_ROUTES),
        });
      }
    }

    // ------------------------------------------------------------------ alarms
    this.alarmTopic = alarmTopicOf(this, props.alarms ?? {});
    this.dashboard = this.buildObservability(props.alarms ?? {}, lagInterval);

    acknowledgeNagFindings(this, {
      bucket: this.bucket,
      apiLogicalId: () => logicalIdOf(this.api.node.defaultChild as CfnResource),
      hasAccessLogs: props.accessLogsBucket !== undefined,
    });
  }

  /**
   * The token authorizer: its own log group and a role holding nothing but GetItem on the
   * `meta` table, where the token items live (server/auth/token-store.ts).
   */
  private makeTokenAuthorizerFunction(
    logRetention: logs.RetentionDays,
    removalPolicy: RemovalPolicy,
    sourceMaps: boolean | undefined,
    tracing: lambda.Tracing | undefined,
  ): NodejsFunction {
    const logGroup = new logs.LogGroup(this, 'AuthorizerLogs', { retention: logRetention, removalPolicy });
    const role = new iam.Role(this, 'AuthorizerRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Sluice bearer-token authorizer (${this.node.path})`,
    });
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'WriteOwnLogs',
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [logGroup.logGroupArn],
      }),
    );
    role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'ReadTokens',
        actions: ['dynamodb:GetItem'],
        resources: [this.tables.meta.tableArn],
      }),
    );
    return new NodejsFunction(this, 'AuthorizerFunction', {
      entry: join(REPO_ROOT, 'server', 'entry', 'authorizer.ts'),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      // One GetItem per uncached token: little memory, and a short timeout.
      memorySize: 256,
      timeout: Duration.seconds(10),
      description: `Sluice bearer-token authorizer (${this.node.path})`,
      role,
      logGroup,
      ...functionLogging({}),
      // The storage adapter wants every name; the role allows only the meta table.
      environment: {
        ...Object.fromEntries(TABLES.map((t) => [TABLE_ENV[t], this.tables[t].tableName])),
        [BUCKET_ENV]: this.bucket.bucketName,
        ...nodeOptions(sourceMaps),
      },
      bundling: BUNDLING,
      tracing,
    });
  }

  /** A CloudWatch metric this instance's functions publish (EMF, namespace/service). */
  metric(name: string, props: cloudwatch.MetricOptions = {}): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: this.metricsNamespace,
      metricName: name,
      dimensionsMap: { service: this.metricsService },
      period: Duration.minutes(5),
      ...props,
    });
  }

  private buildObservability(opts: SluiceAlarmOptions, lagInterval: Duration): cloudwatch.Dashboard {
    const five = Duration.minutes(5);
    const notifier = this.notifications;
    const fns = [
      ...FUNCTIONS.map((f) => [f, this.functions[f]] as const),
      ...(this.authorizerFunction ? [['authorizer', this.authorizerFunction] as const] : []),
      ...(notifier ? [['notifications', notifier.function] as const] : []),
    ];
    // FILL: a function not invoked in a period (the notifier without pushes, maintenance between
    // passes) publishes nothing, and must not blank out the sum of the others.
    const sumOf = (label: string, metrics: Record<string, cloudwatch.IMetric>): cloudwatch.MathExpression =>
      new cloudwatch.MathExpression({
        expression: Object.keys(metrics)
          .map((m) => `FILL(${m}, 0)`)
          .join(' + '),
        usingMetrics: metrics,
        label,
        period: five,
      });

    const server5xx = this.api.metricServerError({ period: five, statistic: 'Sum' });
    const lambdaThrottles = sumOf(
      'Lambda throttles',
      Object.fromEntries(fns.map(([f, fn]) => [`t${f}`, fn.metricThrottles({ period: five, statistic: 'Sum' })])),
    );
    const lambdaErrors = sumOf(
      'Lambda errors',
      Object.fromEntries(fns.map(([f, fn]) => [`e${f}`, fn.metricErrors({ period: five, statistic: 'Sum' })])),
    );
    const tableMetric = (t: TableName, name: string): cloudwatch.Metric =>
      new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName: name,
        dimensionsMap: { TableName: this.tables[t].tableName },
        statistic: 'Sum',
        period: five,
      });
    const readThrottles = sumOf(
      'DynamoDB read throttles',
      Object.fromEntries(TABLES.map((t) => [`r${t}`, tableMetric(t, 'ReadThrottleEvents')])),
    );
    const writeThrottles = sumOf(
      'DynamoDB write throttles',
      Object.fromEntries(TABLES.map((t) => [`w${t}`, tableMetric(t, 'WriteThrottleEvents')])),
    );
    const deadLetters = sumOf('Messages dead-lettered', {
      dl: this.metric('DeadLettered', { statistic: 'Sum' }),
      cdl: this.metric('ClaimDeadLettered', { statistic: 'Sum' }),
    });
    // Lag is measured on the lag schedule: one datapoint per interval, so the alarm looks at one
    // interval at a time (a shorter period would mostly see no data).
    const oldestAge = this.metric('OldestUnconsumedAgeSeconds', { statistic: 'Maximum', period: lagInterval });
    // The notifier's one mapping reads the log stream: its iterator age is the function's.
    const iteratorAge = notifier?.function.metric('IteratorAge', { statistic: 'Maximum', period: five });
    const notifierFailures = notifier?.failures.metricApproximateNumberOfMessagesVisible({
      statistic: 'Maximum',
      period: five,
    });

    const alarm = (
      id: string,
      metric: cloudwatch.IMetric,
      threshold: number,
      description: string,
      more: { evaluationPeriods?: number; treatMissingData?: cloudwatch.TreatMissingData } = {},
    ): void => {
      const a = new cloudwatch.Alarm(this, id, {
        metric,
        threshold,
        evaluationPeriods: more.evaluationPeriods ?? 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: more.treatMissingData ?? cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `Sluice (${this.node.path}): ${description}`,
      });
      if (this.alarmTopic) {
        a.addAlarmAction(new SnsAction(this.alarmTopic));
        a.addOkAction(new SnsAction(this.alarmTopic));
      }
      this.alarms.push(a);
    };
    alarm(
      'ServerErrorsAlarm',
      server5xx,
      opts.serverErrorsPer5Minutes ?? 5,
      'the API answered 5xx (function errors, timeouts or storage failures)',
    );
    alarm('LambdaThrottlesAlarm', lambdaThrottles, 1, 'Lambda throttled invocations (concurrency limit reached)');
    alarm(
      'LambdaErrorsAlarm',
      lambdaErrors,
      1,
      'a function invocation failed (crash, timeout, or a failed maintenance pass)',
    );
    alarm('TableReadThrottlesAlarm', readThrottles, 1, 'DynamoDB throttled reads (a hot partition key)');
    alarm('TableWriteThrottlesAlarm', writeThrottles, 1, 'DynamoDB throttled writes (a hot partition key)');
    alarm('DeadLettersAlarm', deadLetters, 1, 'messages were moved to the dead-letter queue');
    alarm(
      'OldestUnconsumedAgeAlarm',
      oldestAge,
      opts.oldestUnconsumedAgeSeconds ?? 3600,
      'a consumer group is falling behind (oldest unconsumed message age), or lag is no longer measured (the maintenance function stopped running or fails)',
      // Missing data breaches: silence means lag is not measured. Two intervals, because a
      // report landing on a period boundary can leave one period empty.
      { evaluationPeriods: 2, treatMissingData: cloudwatch.TreatMissingData.BREACHING },
    );
    if (iteratorAge && notifierFailures) {
      alarm(
        'NotifierIteratorAgeAlarm',
        iteratorAge,
        NOTIFIER_ITERATOR_AGE_ALARM_MS,
        'the notifier is falling behind the log stream (IteratorAge): idle consumers are woken late, and records past a minute are dropped',
      );
      alarm(
        'NotifierFailuresAlarm',
        notifierFailures,
        1,
        'the notifier gave up on stream batches (its on-failure queue holds them): those pushes woke nobody, consumers found them at their safety poll',
      );
    }

    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    const graph = (title: string, left: cloudwatch.IMetric[], width = 8): cloudwatch.GraphWidget =>
      new cloudwatch.GraphWidget({ title, left, width, height: 6 });
    dashboard.addWidgets(
      graph('API requests', [this.api.metricCount({ period: five, statistic: 'Sum' })]),
      graph('API errors', [this.api.metricClientError({ period: five, statistic: 'Sum' }), server5xx]),
      graph('API latency (p50, p99)', [
        this.api.metricLatency({ period: five, statistic: 'p50' }),
        this.api.metricLatency({ period: five, statistic: 'p99' }),
      ]),
    );
    dashboard.addWidgets(
      graph(
        'Messages',
        ['MessagesPushed', 'MessagesDelivered', 'Acks', 'DuplicatesRejected', 'StampEvicted'].map((m) =>
          this.metric(m, { statistic: 'Sum' }),
        ),
      ),
      graph(
        'Polls',
        ['Pops', 'EmptyPops', 'ClaimPolls', 'ClaimPollsCapped', 'ClaimAcks', 'WaitsCapped'].map((m) =>
          this.metric(m, { statistic: 'Sum' }),
        ),
      ),
      graph('Dead letters and lag', [
        deadLetters,
        oldestAge,
        this.metric('ConsumerLag', { statistic: 'Maximum', period: lagInterval }),
      ]),
    );
    dashboard.addWidgets(
      graph(
        'Function duration (p99)',
        fns.map(([, fn]) => fn.metricDuration({ period: five, statistic: 'p99' })),
      ),
      graph('Function errors and throttles', [lambdaErrors, lambdaThrottles]),
      graph('DynamoDB throttles', [readThrottles, writeThrottles]),
    );
    if (iteratorAge && notifierFailures)
      dashboard.addWidgets(
        graph(
          'Notifier wake-ups',
          ['WakeUps', 'WakeUpsDropped'].map((m) => this.metric(m, { statistic: 'Sum' })),
        ),
        graph('Notifier iterator age (ms)', [iteratorAge]),
        graph('Notifier batches given up', [notifierFailures]),
      );
    dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24 }));
    return dashboard;
  }
}

/**
 * The notifier's IteratorAge (ms) that raises its alarm: half the mapping's one-minute record
 * age, past which wake-ups are dropped. Healthy is well under a second (Lambda polls a shard up
 * to four times a second).
 */
export const NOTIFIER_ITERATOR_AGE_ALARM_MS = 30_000;

const checkLagInterval = (what: string, d: Duration): void => {
  const minutes = d.toSeconds() / 60;
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 15)
    throw new Error(`${what} must be whole minutes from 1 to 15 (got ${d.toHumanString()})`);
};

/** An email address, loosely: something@domain.tld without spaces. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** A standard SNS topic ARN (CloudWatch alarms cannot publish to FIFO topics). */
const TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/;

/**
 * Throws unless the alarm options name at most one topic, a well-formed topic ARN and email.
 *
 * @example
 * ```ts
 * checkAlarmOptions({ email: 'ops@example.com' }); // ok
 * checkAlarmOptions({ topicArn: 'my-topic' });     // throws
 * ```
 */
export function checkAlarmOptions(opts: SluiceAlarmOptions): void {
  if (opts.topic && opts.topicArn) throw new Error('alarms: pass topic or topicArn, not both');
  if (opts.topicArn !== undefined && !TOPIC_ARN.test(opts.topicArn))
    throw new Error(
      `alarmTopicArn must be a standard SNS topic ARN, arn:aws:sns:REGION:ACCOUNT:NAME (got ${opts.topicArn})`,
    );
  if (opts.email !== undefined && !EMAIL.test(opts.email))
    throw new Error(`alarmEmail must be an email address (got ${opts.email})`);
}

/** The topic alarms notify: the one given, or a new one when only an email address is. */
function alarmTopicOf(scope: Construct, opts: SluiceAlarmOptions): sns.ITopic | undefined {
  checkAlarmOptions(opts);
  let topic = opts.topic ?? (opts.topicArn ? sns.Topic.fromTopicArn(scope, 'AlarmTopic', opts.topicArn) : undefined);
  if (opts.email) {
    topic ??= new sns.Topic(scope, 'AlarmTopic', {
      displayName: `Sluice alarms (${scope.node.path})`,
      // Publishers (CloudWatch) must use TLS.
      enforceSSL: true,
    });
    topic.addSubscription(new EmailSubscription(opts.email));
  }
  return topic;
}

/** The payload key `option` names (created here when asked), or undefined without one. */
function payloadKeyOf(
  scope: Construct,
  option: PayloadKeyOption | undefined,
  removalPolicy: RemovalPolicy,
): kms.IKey | undefined {
  if (!option) return undefined;
  if ('key' in option) return option.key;
  if ('keyArn' in option) {
    checkKmsKeyArn(option.keyArn);
    return kms.Key.fromKeyArn(scope, 'PayloadKey', option.keyArn);
  }
  return new kms.Key(scope, 'PayloadKey', {
    description: `Sluice payload sealing (${scope.node.path}): wraps the data keys of encryptionEnabled queues`,
    enableKeyRotation: true,
    // Sealed payloads are unreadable without it: it lives as long as the tables do.
    removalPolicy: removalPolicy === RemovalPolicy.DESTROY ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    pendingWindow: Duration.days(30),
  });
}

/**
 * Throws unless `arn` is a KMS key ARN (`arn:aws:kms:REGION:ACCOUNT:key/ID`). Aliases are
 * refused: IAM grants on an alias ARN do not cover the key it points at.
 *
 * @example
 * ```ts
 * checkKmsKeyArn('arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab'); // ok
 * checkKmsKeyArn('alias/sluice'); // throws
 * ```
 */
export function checkKmsKeyArn(arn: string, what = 'kmsKeyArn'): void {
  if (!/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/.test(arn))
    throw new Error(
      `${what} must be a KMS key ARN, arn:aws:kms:REGION:ACCOUNT:key/KEY-ID (got ${arn}); an alias will not do, since IAM grants name the key itself`,
    );
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
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

/**
 * `execute-api:Invoke` on the resources {@link invokeResources} derives for `role` from the
 * route table, and a Deny for the routes an allowed pattern would otherwise also cover.
 */
function invokeStatements(api: HttpApi, role: ApiRole, routes: RouteDef[]): iam.PolicyStatement[] {
  const stack = Stack.of(api);
  const arns = (names: string[]): string[] =>
    names.map((resourceName) =>
      stack.formatArn({
        service: 'execute-api',
        resource: api.apiId,
        resourceName,
        arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
      }),
    );
  const { allow, deny } = invokeResources(role, routes);
  return [
    new iam.PolicyStatement({ sid: `Invoke${role}Routes`, actions: ['execute-api:Invoke'], resources: arns(allow) }),
    ...(deny.length > 0
      ? [
          new iam.PolicyStatement({
            sid: `NotOther${role}Routes`,
            effect: iam.Effect.DENY,
            actions: ['execute-api:Invoke'],
            resources: arns(deny),
          }),
        ]
      : []),
  ];
}
