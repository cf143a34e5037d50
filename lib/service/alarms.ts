/**
 * `SluiceService`'s alarms room: the topic alarms notify, the alarms (API 5xx, Lambda errors and
 * throttles, DynamoDB throttles, dead letters, consumer lag, the notifier's) and the dashboard,
 * over the EMF metrics the functions publish and the AWS services' own metrics. Built in the
 * service's own scope, as every room is (lib/service/rooms.ts says why).
 *
 * @example
 * ```ts
 * const { topic, alarms, dashboard } = createAlarms(this, { opts: props.alarms ?? {}, lagInterval, api, functions, ... });
 * ```
 */
import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { FUNCTIONS, type FunctionName } from '../access.js';
import type { Notifications } from '../notifications.js';

/** Where alarms notify and what raises two of them (`alarms` of `SluiceServiceProps`). */
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

/**
 * The notifier's IteratorAge (ms) that raises its alarm: half the mapping's one-minute record
 * age, past which wake-ups are dropped. Healthy is well under a second (Lambda polls a shard up
 * to four times a second).
 */
export const NOTIFIER_ITERATOR_AGE_ALARM_MS = 30_000;

/**
 * A CloudWatch metric a Sluice instance's functions publish (EMF, namespace/service).
 *
 * @example
 * ```ts
 * sluiceMetric('Sluice', 'Sluice-Queue', 'MessagesPushed', { statistic: 'Sum' });
 * ```
 */
export function sluiceMetric(
  namespace: string,
  service: string,
  name: string,
  props: cloudwatch.MetricOptions = {},
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace,
    metricName: name,
    dimensionsMap: { service },
    period: Duration.minutes(5),
    ...props,
  });
}

/** What {@link createAlarms} watches: the service's API, functions, notifier and tables. */
export interface AlarmsProps {
  opts: SluiceAlarmOptions;
  /** The lag schedule's interval: the lag metrics' period. */
  lagInterval: Duration;
  api: HttpApi;
  functions: Record<FunctionName, NodejsFunction>;
  authorizerFunction: NodejsFunction | undefined;
  notifications: Notifications | undefined;
  tables: Record<TableName, dynamodb.Table>;
  /** This instance's metric of that name ({@link sluiceMetric} with its namespace and service). */
  metric: (name: string, props?: cloudwatch.MetricOptions) => cloudwatch.Metric;
}

/** What the alarms room built. */
export interface SluiceAlarms {
  /** Where alarms notify, when a topic or an email address was given. */
  topic: sns.ITopic | undefined;
  alarms: cloudwatch.Alarm[];
  dashboard: cloudwatch.Dashboard;
}

/**
 * The alarm topic (given, imported, or created for `opts.email`), every alarm, and the dashboard.
 * Throws on a malformed topic ARN or email address, or both a topic and a topic ARN.
 *
 * @example
 * ```ts
 * const { topic, alarms, dashboard } = createAlarms(this, {
 *   opts: { email: 'ops@example.com' }, lagInterval: Duration.minutes(5), api, functions,
 *   authorizerFunction: undefined, notifications, tables, metric: (name, p) => this.metric(name, p),
 * });
 * ```
 */
export function createAlarms(scope: Construct, props: AlarmsProps): SluiceAlarms {
  const { opts, lagInterval, api, metric } = props;
  const topic = alarmTopicOf(scope, opts);
  const alarms: cloudwatch.Alarm[] = [];
  const five = Duration.minutes(5);
  const notifier = props.notifications;
  const fns = [
    ...FUNCTIONS.map((f) => [f, props.functions[f]] as const),
    ...(props.authorizerFunction ? [['authorizer', props.authorizerFunction] as const] : []),
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

  const server5xx = api.metricServerError({ period: five, statistic: 'Sum' });
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
      dimensionsMap: { TableName: props.tables[t].tableName },
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
    dl: metric('DeadLettered', { statistic: 'Sum' }),
    cdl: metric('ClaimDeadLettered', { statistic: 'Sum' }),
  });
  // Lag is measured on the lag schedule: one datapoint per interval, so the alarm looks at one
  // interval at a time (a shorter period would mostly see no data).
  const oldestAge = metric('OldestUnconsumedAgeSeconds', { statistic: 'Maximum', period: lagInterval });
  // The notifier's one mapping reads the log stream: its iterator age is the function's.
  const iteratorAge = notifier?.function.metric('IteratorAge', { statistic: 'Maximum', period: five });
  const notifierFailures = notifier?.failures.metricApproximateNumberOfMessagesVisible({
    statistic: 'Maximum',
    period: five,
  });

  const alarm = (
    id: string,
    watched: cloudwatch.IMetric,
    threshold: number,
    description: string,
    more: { evaluationPeriods?: number; treatMissingData?: cloudwatch.TreatMissingData } = {},
  ): void => {
    const a = new cloudwatch.Alarm(scope, id, {
      metric: watched,
      threshold,
      evaluationPeriods: more.evaluationPeriods ?? 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: more.treatMissingData ?? cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: `Sluice (${scope.node.path}): ${description}`,
    });
    if (topic) {
      a.addAlarmAction(new SnsAction(topic));
      a.addOkAction(new SnsAction(topic));
    }
    alarms.push(a);
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

  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', { defaultInterval: Duration.hours(3) });
  const graph = (title: string, left: cloudwatch.IMetric[], width = 8): cloudwatch.GraphWidget =>
    new cloudwatch.GraphWidget({ title, left, width, height: 6 });
  dashboard.addWidgets(
    graph('API requests', [api.metricCount({ period: five, statistic: 'Sum' })]),
    graph('API errors', [api.metricClientError({ period: five, statistic: 'Sum' }), server5xx]),
    graph('API latency (p50, p99)', [
      api.metricLatency({ period: five, statistic: 'p50' }),
      api.metricLatency({ period: five, statistic: 'p99' }),
    ]),
  );
  dashboard.addWidgets(
    graph(
      'Messages',
      ['MessagesPushed', 'MessagesDelivered', 'Acks', 'DuplicatesRejected', 'StampEvicted'].map((m) =>
        metric(m, { statistic: 'Sum' }),
      ),
    ),
    graph(
      'Polls',
      ['Pops', 'EmptyPops', 'ClaimPolls', 'ClaimPollsCapped', 'ClaimAcks', 'WaitsCapped'].map((m) =>
        metric(m, { statistic: 'Sum' }),
      ),
    ),
    graph('Dead letters and lag', [
      deadLetters,
      oldestAge,
      metric('ConsumerLag', { statistic: 'Maximum', period: lagInterval }),
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
        ['WakeUps', 'WakeUpsDropped'].map((m) => metric(m, { statistic: 'Sum' })),
      ),
      graph('Notifier iterator age (ms)', [iteratorAge]),
      graph('Notifier batches given up', [notifierFailures]),
    );
  dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms, width: 24 }));
  return { topic, alarms, dashboard };
}

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
