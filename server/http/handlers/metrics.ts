/**
 * `GET /metrics` and `GET /metrics/prometheus`: the local server's metrics in Prometheus text
 * format (on AWS, CloudWatch holds the metrics: these routes are not deployed). Queen's metric
 * names where Queen has one, Sluice's own (`sluice_*`) for the rest:
 *
 * - process: `queen_uptime_seconds`, `queen_cpu_{user,system}_microseconds_total`,
 *   `queen_process_{resident,heap}_memory_bytes`, `queen_maintenance_mode_enabled` (always 0);
 * - totals (`scope="cluster"`): `queen_cluster_{push,pop,ack}_{requests,messages}_total`,
 *   `queen_cluster_transactions_total`, `queen_cluster_ack_total{result}`,
 *   `queen_cluster_dlq_total`, `queen_cluster_db_errors_total`; `queen_dlq_depth`;
 * - per queue, the latest finished minute (Queen's gauges): `queen_queue_{push_requests,
 *   push_messages,pop_messages,pop_empty,transactions}_per_minute`, `queen_queue_ack_per_minute{result}`,
 *   `queen_queue_pop_lag_milliseconds{stat}`, `queen_queue_parked_consumers` (0),
 *   `queen_queue_metrics_age_seconds`;
 * - per queue: `queen_dlq_depth_by_queue`, `sluice_pushes_total`, `sluice_messages_pushed_total`,
 *   `sluice_duplicates_total`, `sluice_pops_total`, `sluice_messages_delivered_total`,
 *   `sluice_empty_pops_total`, `sluice_messages_expired_total`, `sluice_acks_total{result}`, `sluice_dead_letters_total`,
 *   `sluice_claim_polls_total`, `sluice_claim_polls_capped_total`, `sluice_claim_acks_total`,
 *   `sluice_transactions_total`;
 * - per group and queue: `sluice_consumer_lag_messages`, `sluice_consumer_lag_seconds` (age of
 *   the oldest unfinished message), with `kind` lease or claim;
 * - cost counters (`sluice cost` reads them; docs/CLI.md): `sluice_api_requests_total`,
 *   `sluice_lambda_gb_seconds_total`, `sluice_dynamodb_{requests,write_units,read_units}_total`,
 *   `sluice_s3_{puts,gets,lists,deletes}_total`: the storage requests as the AWS adapter would
 *   make them, with DynamoDB units estimated from item sizes (`storage/usage.ts`);
 * - per route: `sluice_http_request_duration_seconds` (histogram, `route` and `code` class).
 *
 * Counters count since the process started, and only for queues that exist: a pop, ack-and-pop
 * or claim poll naming a queue nobody made (204 or 404) adds no series, since its name is
 * whatever a client sent; deleting a queue drops its counters and lag series (in this process).
 * The route latency histograms still count every request. Open on the loopback server without grants; with
 * grants, `manage` on some queue, and series labelled by a queue only for queues the caller may
 * manage (http/access.ts).
 */
import { LATENCY_BUCKETS_S, type ActivityRow } from '../../service/admin/activity.js';
import type { Services } from '../../service/runtime.js';
import { USAGE_METRICS, USAGE_PROMETHEUS } from '../../service/usage.js';
import { PROMETHEUS_CONTENT_TYPE, PromText } from '../prometheus-text.js';
import { implement, type RouteDef, type RouteInput } from '../route.js';
import * as systemApi from '../../../contract/routes/admin/system.js';
import { seesMetricsOf } from '../access.js';

/** Queen's per-queue gauges of the latest finished minute: name, help, what each reads. */
const LATEST_MINUTE: readonly [string, string, (r: ActivityRow) => number][] = [
  ['queen_queue_push_requests_per_minute', 'Push requests in the latest minute.', (r) => r.pushRequests],
  ['queen_queue_push_messages_per_minute', 'Messages pushed in the latest minute.', (r) => r.pushMessages],
  [
    'queen_queue_pop_messages_per_minute',
    'Messages delivered in the latest minute (every group).',
    (r) => r.popMessages + r.claimMessages,
  ],
  ['queen_queue_pop_empty_per_minute', 'Empty pops in the latest minute.', (r) => r.popEmpty],
  ['queen_queue_transactions_per_minute', 'Transactions in the latest minute.', (r) => r.transactions],
  ['queen_queue_parked_consumers', 'Always 0: long polls are not parked consumers here.', () => 0],
];

/** Per-queue counters: metric name, help, and the activity counter each one reads. */
const PER_QUEUE: readonly [string, string, (r: ActivityRow) => number][] = [
  ['sluice_pushes_total', 'Push requests that reached the queue.', (r) => r.pushRequests],
  ['sluice_messages_pushed_total', 'Messages stored by pushes and transactions.', (r) => r.pushMessages],
  ['sluice_duplicates_total', 'Pushed messages refused as duplicates of a transactionId.', (r) => r.duplicates],
  ['sluice_pops_total', 'Partition-lease pop requests.', (r) => r.popRequests],
  [
    'sluice_messages_delivered_total',
    'Messages delivered by pops and claim polls.',
    (r) => r.popMessages + r.claimMessages,
  ],
  ['sluice_empty_pops_total', 'Pops that delivered nothing.', (r) => r.popEmpty],
  [
    'sluice_messages_expired_total',
    "Messages pops passed over because they outlived the queue's explicit ttl (once per group).",
    (r) => r.ttlExpired,
  ],
  ['sluice_dead_letters_total', 'Messages dead-lettered by acks and claim dead-letter calls.', (r) => r.deadLetters],
  ['sluice_claim_polls_total', 'Record-claim polls.', (r) => r.claimPolls],
  [
    'sluice_claim_polls_capped_total',
    'Claim polls answered while the group was at its in-flight cap.',
    (r) => r.claimPollsCapped,
  ],
  ['sluice_claim_acks_total', 'Records acked by claim acks.', (r) => r.claimAcks],
  ['sluice_transactions_total', 'Committed transactions that pushed to the queue.', (r) => r.transactions],
];

async function render(services: MetricsServices, sees: (queue: string) => boolean): Promise<string> {
  const w = new PromText();
  const cpu = process.cpuUsage();
  const mem = process.memoryUsage();
  w.family('queen_uptime_seconds', 'gauge', 'Seconds since the process started.').sample(
    'queen_uptime_seconds',
    {},
    Math.round(process.uptime() * 1000) / 1000,
  );
  w.family('queen_cpu_user_microseconds_total', 'counter', 'User CPU time of the process.').sample(
    'queen_cpu_user_microseconds_total',
    {},
    cpu.user,
  );
  w.family('queen_cpu_system_microseconds_total', 'counter', 'System CPU time of the process.').sample(
    'queen_cpu_system_microseconds_total',
    {},
    cpu.system,
  );
  w.family('queen_process_resident_memory_bytes', 'gauge', 'Resident memory of the process.').sample(
    'queen_process_resident_memory_bytes',
    {},
    mem.rss,
  );
  w.family('queen_process_heap_memory_bytes', 'gauge', 'V8 heap in use.').sample(
    'queen_process_heap_memory_bytes',
    {},
    mem.heapUsed,
  );
  w.family('queen_maintenance_mode_enabled', 'gauge', 'Always 0: Sluice has no maintenance mode.').sample(
    'queen_maintenance_mode_enabled',
    {},
    0,
  );

  const totals = services.activity.queueTotals();
  const sum = (f: (r: ActivityRow) => number): number => [...totals.values()].reduce((n, r) => n + f(r), 0);
  const cluster = { scope: 'cluster' };
  const clusterCounters: [string, string, number][] = [
    ['queen_cluster_push_requests_total', 'Push requests.', sum((r) => r.pushRequests)],
    ['queen_cluster_push_messages_total', 'Messages pushed.', sum((r) => r.pushMessages)],
    ['queen_cluster_pop_requests_total', 'Pop requests and claim polls.', sum((r) => r.popRequests + r.claimPolls)],
    ['queen_cluster_pop_messages_total', 'Messages delivered.', sum((r) => r.popMessages + r.claimMessages)],
    ['queen_cluster_ack_requests_total', 'Acked messages (one per ack item).', sum((r) => r.ackRequests)],
    ['queen_cluster_ack_messages_total', 'Messages finished by acks.', sum((r) => r.ackSuccess + r.claimAcks)],
    ['queen_cluster_transactions_total', 'Committed transactions (per queue pushed to).', sum((r) => r.transactions)],
    ['queen_cluster_dlq_total', 'Messages dead-lettered.', sum((r) => r.deadLetters)],
    ['queen_cluster_db_errors_total', 'Always 0: storage failures answer 503 and show in /health.', 0],
  ];
  for (const [name, help, v] of clusterCounters) w.family(name, 'counter', help).sample(name, cluster, v);
  w.family('queen_cluster_ack_total', 'counter', 'Ack items by result.')
    .sample(
      'queen_cluster_ack_total',
      { ...cluster, result: 'success' },
      sum((r) => r.ackSuccess + r.claimAcks),
    )
    .sample(
      'queen_cluster_ack_total',
      { ...cluster, result: 'failed' },
      sum((r) => r.ackFailed),
    );

  const usage = services.usage.totals();
  for (const m of USAGE_METRICS) {
    const [name, help] = USAGE_PROMETHEUS[m];
    w.family(name, 'counter', help).sample(name, {}, Math.round(usage[m] * 1e6) / 1e6);
  }

  const visible = [...totals.keys()].filter(sees).sort();
  for (const [name, help, f] of PER_QUEUE) {
    w.family(name, 'counter', help);
    for (const q of visible) w.sample(name, { queue: q }, f(totals.get(q)!));
  }
  w.family('sluice_acks_total', 'counter', 'Ack items by result.');
  for (const q of visible) {
    const r = totals.get(q)!;
    w.sample('sluice_acks_total', { queue: q, result: 'success' }, r.ackSuccess);
    w.sample('sluice_acks_total', { queue: q, result: 'failed' }, r.ackFailed);
  }

  // Queen's per-queue gauges of the latest finished minute (its `queue_lag_metrics` bucket).
  const lastMinute = (Math.floor(services.clock() / 60_000) - 1) * 60_000;
  const latest = services.activity.series([lastMinute], 1);
  const latestQueues = [...latest.keys()].filter(sees).sort();
  // Whole seconds, floored: rounding said 60 in a minute's last half second, an age that never is.
  const ageS = Math.max(0, Math.floor((services.clock() - lastMinute - 60_000) / 1000));
  for (const [name, help, f] of LATEST_MINUTE) {
    w.family(name, 'gauge', help);
    for (const q of latestQueues) w.sample(name, { queue: q }, f(latest.get(q)![0]!));
  }
  // Each family's samples follow its TYPE line (the text format groups them).
  w.family('queen_queue_pop_lag_milliseconds', 'gauge', 'Age of delivered messages over the latest minute, by stat.');
  for (const q of latestQueues) {
    const r = latest.get(q)![0]!;
    w.sample('queen_queue_pop_lag_milliseconds', { queue: q, stat: 'avg' }, r.avgLagMs);
    w.sample('queen_queue_pop_lag_milliseconds', { queue: q, stat: 'max' }, r.maxLagMs);
  }
  w.family('queen_queue_ack_per_minute', 'gauge', 'Acks in the latest minute, by result.');
  for (const q of latestQueues) {
    const r = latest.get(q)![0]!;
    w.sample('queen_queue_ack_per_minute', { queue: q, result: 'success' }, r.ackSuccess + r.claimAcks);
    w.sample('queen_queue_ack_per_minute', { queue: q, result: 'failed' }, r.ackFailed);
  }
  w.family('queen_queue_metrics_age_seconds', 'gauge', 'Seconds since the latest minute bucket ended.');
  for (const q of latestQueues) w.sample('queen_queue_metrics_age_seconds', { queue: q }, ageS);

  const queues = await services.admin.stats.names(() => true);
  let depth = 0;
  w.family(
    'queen_dlq_depth_by_queue',
    'gauge',
    'Dead letters listed per queue (partition leases; counted up to 10,000).',
  );
  for (const q of queues) {
    const n = (await services.admin.deadLetters.countByPartition(q)).total;
    depth += n;
    if (sees(q) && n > 0) w.sample('queen_dlq_depth_by_queue', { queue: q }, n);
  }
  w.family('queen_dlq_depth', 'gauge', 'Dead letters listed, every queue.').sample('queen_dlq_depth', cluster, depth);

  // Group registrations outlive a deleted queue; its lag series do not.
  const existing = new Set(queues);
  const rows = (await services.admin.groupLag.rows(sees)).filter((r) => existing.has(r.queue));
  w.family('sluice_consumer_lag_messages', 'gauge', 'Messages a consumer group has not finished, per queue.');
  for (const r of rows)
    w.sample('sluice_consumer_lag_messages', { group: r.group, queue: r.queue, kind: r.kind }, r.lagMessages);
  w.family('sluice_consumer_lag_seconds', 'gauge', 'Age of the oldest message a group has not finished, per queue.');
  for (const r of rows)
    w.sample('sluice_consumer_lag_seconds', { group: r.group, queue: r.queue, kind: r.kind }, r.lagSeconds);

  w.family('sluice_http_request_duration_seconds', 'histogram', 'Time to answer a request, by route and status class.');
  for (const { route, statusClass, histogram } of services.activity.latencies())
    w.histogram(
      'sluice_http_request_duration_seconds',
      { route, code: statusClass },
      {
        bounds: LATENCY_BUCKETS_S,
        counts: histogram.counts,
        sum: histogram.sum,
        count: histogram.count,
      },
    );
  return w.text();
}

/** What both metrics routes use. */
const METRICS_USES = ['activity', 'admin', 'clock', 'usage'] as const;
type MetricsServices = Pick<Services, (typeof METRICS_USES)[number]>;

const metricsRun = async ({ services, allowed }: RouteInput<undefined, unknown, unknown, MetricsServices>) => ({
  statusCode: 200,
  headers: { 'content-type': PROMETHEUS_CONTENT_TYPE },
  body: await render(services, seesMetricsOf(allowed)),
});

export const metrics = implement(systemApi.metrics, METRICS_USES, metricsRun);
export const metricsPrometheus = implement(systemApi.metricsPrometheus, METRICS_USES, metricsRun);

/** Routes the local server serves and the stack does not deploy. */
export const metricsRoutes: RouteDef[] = [metrics, metricsPrometheus];
