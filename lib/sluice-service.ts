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
 *
 * This file holds the props and a constructor that composes one room per concern:
 * lib/service/storage.ts (tables, bucket, payload key), lib/service/functions.ts (functions,
 * roles, schedules), lib/notifications.ts (the idle consumers' WebSocket channel),
 * lib/service/http-api.ts (grants, API, authorizers, routes, caller policies) and
 * lib/service/alarms.ts (alarms, dashboard). The rooms build in this construct's own scope, so
 * every resource keeps its construct path and logical id (lib/service/rooms.ts).
 */
import { RemovalPolicy, Stack, type CfnResource, type Duration } from 'aws-cdk-lib';
import type { HttpApi, HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import type { Grant } from '../server/http/grants.js';
import type { TableName } from '../server/storage/port.js';
import type { FunctionName } from './access.js';
import type { ApiRole } from './api-access.js';
import { functionLogging } from './function-logging.js';
import { DEFAULT_THROTTLE } from './limits.js';
import { acknowledgeNagFindings, logicalIdOf } from './nag.js';
import { Notifications } from './notifications.js';
import type { BucketVersioningOptions } from './recovery.js';
import { createAlarms, sluiceMetric, type SluiceAlarmOptions } from './service/alarms.js';
import { BUNDLING, createFunctions, functionEnvironments, REPO_ROOT } from './service/functions.js';
import { createHttpApi, grantsJsonOf, type AuthOptions } from './service/http-api.js';
import { createStorage, type PayloadKeyOption } from './service/storage.js';

// The construct's public surface from before the split, where callers import it.
export { TABLE_ENV } from '../server/storage/aws/schema.js';
export {
  ACCOUNT_CONCURRENCY_ACTION,
  API_FUNCTION_TIMEOUT,
  API_GATEWAY_TIMEOUT,
  BUNDLING,
  checkLongPollBudget,
  checkMaxWaiters,
  LONG_POLL_HEADROOM,
  MAX_MAINTENANCE_RESERVATION,
  MAX_WAITERS_OPTION,
  MEMORY_RANGE,
} from './service/functions.js';
export {
  ALLOW_ALL_AUTHENTICATED,
  MAX_GRANTS_ENV_BYTES,
  TOKEN_CACHE_TTL,
  type AuthOptions,
} from './service/http-api.js';
export { checkKmsKeyArn, type PayloadKeyOption } from './service/storage.js';
export { checkAlarmOptions, NOTIFIER_ITERATOR_AGE_ALARM_MS, type SluiceAlarmOptions } from './service/alarms.js';

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
   * action each needs (`PAYLOAD_KEY_ACCESS` in lib/access.ts).
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
   * `AWS_DEFAULT_MAX_BODY_BYTES` in lib/limits.ts: every body up to it reaches the function however
   * it escapes, so Sluice answers larger ones with its own 413). At most `AWS_MAX_BODY_BYTES`.
   */
  maxBodyBytes?: number;
  /** Most messages one push may carry (default `AWS_DEFAULT_MAX_PUSH_ITEMS`, lib/limits.ts). */
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

/**
 * Sluice in one construct: its props above, its rooms in lib/service/.
 *
 * @example
 * ```ts
 * const sluice = new SluiceService(this, 'Queue', { auth: { type: 'tokens' }, alarms: { email: 'ops@example.com' } });
 * new CfnOutput(this, 'Url', { value: sluice.apiUrl });
 * ```
 */
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
  readonly alarms: cloudwatch.Alarm[];
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

    // Checked first: a refused grant stops the synth before anything is built.
    const grantsJson = grantsJsonOf(this, auth, props.grants);

    ({
      tables: this.tables,
      bucket: this.bucket,
      payloadKey: this.payloadKey,
    } = createStorage(this, {
      removalPolicy,
      notifications: props.notifications !== false,
      bucketVersioning: props.bucketVersioning,
      segmentExpiration: props.segmentExpiration,
      accessLogsBucket: props.accessLogsBucket,
      payloadKey: props.payloadKey,
      environment: props.environment,
    }));

    const env = functionEnvironments(this, {
      tables: this.tables,
      bucket: this.bucket,
      grantsJson,
      metricsService: this.metricsService,
      metricsNamespace: this.metricsNamespace,
      sourceMaps: props.sourceMaps,
      environment: props.environment,
      maxWaiters: props.maxWaiters,
      maxBodyBytes: props.maxBodyBytes,
      maxPushItems: props.maxPushItems,
      tracing: props.tracing,
    });
    if (props.notifications !== false) {
      this.notifications = new Notifications(this, 'Notifications', {
        tracing: env.tracing,
        logTable: this.tables.log,
        metaTable: this.tables.meta,
        environment: env.environment,
        repoRoot: REPO_ROOT,
        bundling: BUNDLING,
        logRetention,
        removalPolicy,
        throttle: props.throttle ?? DEFAULT_THROTTLE,
        cloudWatchRole: props.apiGatewayCloudWatchRole ?? true,
        logging: functionLogging(env.environment),
      });
      env.apiEnvironment['SLUICE_NOTIFY_URL'] = this.notifications.url;
    }
    const { functions, lagInterval } = createFunctions(this, {
      ...env,
      tables: this.tables,
      bucket: this.bucket,
      payloadKey: this.payloadKey,
      logRetention,
      removalPolicy,
      memorySize: props.memorySize,
      maintenanceMemorySize: props.maintenanceMemorySize,
      maintenanceReservedConcurrency: props.maintenanceReservedConcurrency,
      maintenanceInterval: props.maintenanceInterval,
      lagInterval: props.lagInterval,
      throttle: props.throttle,
    });
    this.functions = functions;

    ({
      api: this.api,
      stage: this.stage,
      apiUrl: this.apiUrl,
      policies: this.policies,
      authorizerFunction: this.authorizerFunction,
    } = createHttpApi(this, {
      auth,
      functions: this.functions,
      tables: this.tables,
      bucket: this.bucket,
      logRetention,
      removalPolicy,
      sourceMaps: props.sourceMaps,
      tracing: env.tracing,
      throttle: props.throttle,
    }));

    ({
      topic: this.alarmTopic,
      alarms: this.alarms,
      dashboard: this.dashboard,
    } = createAlarms(this, {
      opts: props.alarms ?? {},
      lagInterval,
      api: this.api,
      functions: this.functions,
      authorizerFunction: this.authorizerFunction,
      notifications: this.notifications,
      tables: this.tables,
      metric: (name, metricProps) => this.metric(name, metricProps),
    }));

    acknowledgeNagFindings(this, {
      bucket: this.bucket,
      apiLogicalId: () => logicalIdOf(this.api.node.defaultChild as CfnResource),
      hasAccessLogs: props.accessLogsBucket !== undefined,
    });
  }

  /**
   * A CloudWatch metric this instance's functions publish (EMF, namespace/service).
   *
   * @example
   * ```ts
   * new cloudwatch.Alarm(this, 'Backlog', { metric: sluice.metric('ConsumerLag', { statistic: 'Maximum' }), threshold: 1000, evaluationPeriods: 1 });
   * ```
   */
  metric(name: string, props: cloudwatch.MetricOptions = {}): cloudwatch.Metric {
    return sluiceMetric(this.metricsNamespace, this.metricsService, name, props);
  }
}
