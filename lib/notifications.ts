/**
 * The notification channel idle consumers wait on (docs/DEPLOYING.md, "Idle consumers"): an API
 * Gateway WebSocket API whose routes and notifier are one small function, fed by DynamoDB
 * Streams on the `log` table.
 *
 * - The stream is KEYS_ONLY and the event-source filter passes only writes of a partition's
 *   offset sequencer (pk `SEQ#…`, which every push moves), so the notifier runs once per batch
 *   of pushes, never for segments, markers or deletes. Lambda's polling of the stream is free.
 * - `$connect` carries no AWS credentials: it needs a one-use ticket from the HTTPS API's
 *   ticket route, which has the stack's auth (IAM, JWT or tokens) and grants. So the WebSocket
 *   routes themselves have no authorizer, and the function checks the ticket.
 * - The function reads and writes `meta` (tickets, connections, waits; partition → queue) and
 *   may post to the stage's connections (`execute-api:ManageConnections`), nothing else.
 * - A batch that still fails after two retries (or is older than a minute) is not retried
 *   forever: its description (shard, sequence numbers) goes to the {@link Notifications.failures}
 *   queue, and the stack alarms on it. This mapping is the only reader of the `log` table's stream:
 *   DynamoDB Streams allows two per shard, and Lambda consumers will hang their dispatch on this
 *   same mapping rather than take the second.
 *
 * @example
 * ```ts
 * const n = new Notifications(this, 'Notifications', { logTable, metaTable, environment, ... });
 * apiEnvironment.SLUICE_NOTIFY_URL = n.url;
 * ```
 */
import { join } from 'node:path';
import { Duration, Validations, type RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { LogGroupLogDestination, WebSocketApi, WebSocketStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { SEQUENCER_PK_PREFIX } from '../server/core/notifications.js';
import { ITEM_TABLE_SCHEMA } from '../server/storage/aws/schema.js';
import { NOTIFIER_MEMORY_MB, TABLE_ACTIONS } from './access.js';
import { requireCloudWatchRole } from './api-gateway-account.js';
import type { functionLogging } from './function-logging.js';

/**
 * The event-source filter: sequencer writes (a push) only. New or updated sequencer items; a
 * removed one (a retired partition) announces nothing.
 */
export const SEQUENCER_FILTER = {
  eventName: lambda.FilterRule.or('INSERT', 'MODIFY'),
  dynamodb: {
    Keys: { [ITEM_TABLE_SCHEMA.partitionKey.name]: { S: lambda.FilterRule.beginsWith(SEQUENCER_PK_PREFIX) } },
  },
};

export interface NotificationsProps {
  /** The `log` table; the construct turns on nothing: the table must have a KEYS_ONLY stream. */
  logTable: dynamodb.Table;
  metaTable: dynamodb.Table;
  /** The functions' common environment (table names, Powertools settings). */
  environment: Record<string, string>;
  repoRoot: string;
  bundling: BundlingOptions;
  logRetention: logs.RetentionDays;
  removalPolicy: RemovalPolicy;
  /** The WebSocket stage's throttle (the HTTP API's by default). */
  throttle: { rateLimit: number; burstLimit: number };
  /**
   * Whether the stack sets the account's API Gateway CloudWatch role, which the stage's access
   * logs need (lib/api-gateway-account.ts); false: the account already has one.
   */
  cloudWatchRole: boolean;
  /** The function's log format and levels (lib/function-logging.ts), as the stack's other functions'. */
  logging: ReturnType<typeof functionLogging>;
  /** The function's X-Ray tracing (`tracing` of the service; unset: none). */
  tracing?: lambda.Tracing | undefined;
}

export class Notifications extends Construct {
  readonly api: WebSocketApi;
  readonly stage: WebSocketStage;
  readonly function: NodejsFunction;
  /** `wss://…/live`: what consumers connect to (SLUICE_NOTIFY_URL). */
  readonly url: string;
  /** `https://…/live`: where the notifier posts (SLUICE_NOTIFY_CALLBACK_URL). */
  readonly callbackUrl: string;
  /** The stream batches the notifier gave up on (the event-source mapping's on-failure destination). */
  readonly failures: sqs.Queue;
  /** The one event-source mapping on the `log` table's stream (its IteratorAge is the function's). */
  readonly streamSource: DynamoEventSource;

  constructor(scope: Construct, id: string, props: NotificationsProps) {
    super(scope, id);
    const logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Sluice notifications (${this.node.path})`,
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
        sid: 'ReadWriteTables',
        actions: TABLE_ACTIONS.readwrite,
        resources: [props.metaTable.tableArn],
      }),
    );
    this.api = new WebSocketApi(this, 'Api', {
      description: `Sluice idle-consumer notifications (${this.node.path})`,
    });
    const accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: 'live',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            ip: '$context.identity.sourceIp',
            routeKey: '$context.routeKey',
            eventType: '$context.eventType',
            connectionId: '$context.connectionId',
            status: '$context.status',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    // WebSocket stages log only once the account has its API Gateway CloudWatch role.
    requireCloudWatchRole(this.stage, props.cloudWatchRole);
    this.url = this.stage.url;
    this.callbackUrl = this.stage.callbackUrl;
    this.function = new NodejsFunction(this, 'Function', {
      entry: join(props.repoRoot, 'server', 'entry', 'notifications.ts'),
      handler: 'handler',
      projectRoot: props.repoRoot,
      depsLockFilePath: join(props.repoRoot, 'package-lock.json'),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: NOTIFIER_MEMORY_MB,
      timeout: Duration.seconds(10),
      description: `Sluice notifications: WebSocket routes and the push notifier (${this.node.path})`,
      role,
      logGroup,
      ...props.logging,
      environment: { ...props.environment, SLUICE_NOTIFY_CALLBACK_URL: this.callbackUrl },
      bundling: props.bundling,
      tracing: props.tracing,
    });
    const integration = new WebSocketLambdaIntegration('Integration', this.function);
    const routes = [
      this.api.addRoute('$connect', { integration }),
      this.api.addRoute('$disconnect', { integration }),
      // The answer to a wait registration goes back to the client: it pops once more after it.
      this.api.addRoute('$default', { integration, returnResponse: true }),
    ];
    for (const route of routes)
      Validations.of(route.node.defaultChild as Construct).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason:
          "$connect needs a one-use ticket (60 s) from the HTTPS API, whose routes have the stack's " +
          'authorizer and grants; the function refuses a connect without one, and a connection may ' +
          'only wait on the queues its ticket named (docs/DEPLOYING.md, "Idle consumers").',
      });
    this.stage.grantManagementApiAccess(role);
    this.failures = new sqs.Queue(this, 'Failures', {
      // What arrives names stream positions, no payload; kept as long as SQS keeps anything, for the post-mortem.
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
    });
    Validations.of(this.failures.node.defaultChild as Construct).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "This queue is a dead-letter queue: the notifier's event-source mapping sends it the batches it gave " +
        'up on (its on-failure destination). Nothing reads it but an operator, so it needs none of its own.',
    });
    this.streamSource = new DynamoEventSource(props.logTable, {
      startingPosition: lambda.StartingPosition.LATEST,
      batchSize: 100,
      // A wake-up is worth little late, and a waiting consumer's safety poll finds the work anyway.
      maxRecordAge: Duration.minutes(1),
      retryAttempts: 2,
      // A batch mixes queues: a failure one queue causes (a store error on its waits) is halved
      // away from the others' wake-ups instead of dropping them all after the retries.
      bisectBatchOnError: true,
      // The platform sends there with the function's role (sqs:SendMessage; lib/access.ts PLATFORM_USES).
      onFailure: new SqsDlq(this.failures),
      filters: [lambda.FilterCriteria.filter(SEQUENCER_FILTER)],
    });
    this.function.addEventSource(this.streamSource);
  }
}
