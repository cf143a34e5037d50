/**
 * The Prometheus text of `/metrics` (which families, and what each counts: the header of
 * http/handlers/metrics.ts), written from the snapshot service/admin/metrics.ts reads. Each
 * family's samples follow its TYPE line, as the text format groups them.
 */
import { LATENCY_BUCKETS_S, type ActivityRow } from '../../service/admin/activity.js';
import type { MetricsSnapshot } from '../../service/admin/metrics.js';
import { USAGE_METRICS, USAGE_PROMETHEUS } from '../../service/usage.js';
import { PromText } from '../prometheus-text.js';

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

/**
 * The metrics a snapshot holds, in Prometheus text format 0.0.4.
 *
 * @example
 * ```ts
 * const text = metricsText(await metricsSnapshot(services, seesMetricsOf(allowed)));
 * ```
 */
export function metricsText(s: MetricsSnapshot): string {
  const w = new PromText();
  const { cpu, memory: mem } = s.process;
  const processGauges: [string, 'counter' | 'gauge', string, number][] = [
    [
      'queen_uptime_seconds',
      'gauge',
      'Seconds since the process started.',
      Math.round(s.process.uptimeSeconds * 1000) / 1000,
    ],
    ['queen_cpu_user_microseconds_total', 'counter', 'User CPU time of the process.', cpu.user],
    ['queen_cpu_system_microseconds_total', 'counter', 'System CPU time of the process.', cpu.system],
    ['queen_process_resident_memory_bytes', 'gauge', 'Resident memory of the process.', mem.rss],
    ['queen_process_heap_memory_bytes', 'gauge', 'V8 heap in use.', mem.heapUsed],
    ['queen_maintenance_mode_enabled', 'gauge', 'Always 0: Sluice has no maintenance mode.', 0],
  ];
  for (const [name, type, help, v] of processGauges) w.one(name, type, help, {}, v);

  const c = s.cluster;
  const cluster = { scope: 'cluster' };
  const clusterCounters: [string, string, number][] = [
    ['queen_cluster_push_requests_total', 'Push requests.', c.pushRequests],
    ['queen_cluster_push_messages_total', 'Messages pushed.', c.pushMessages],
    ['queen_cluster_pop_requests_total', 'Pop requests and claim polls.', c.popRequests + c.claimPolls],
    ['queen_cluster_pop_messages_total', 'Messages delivered.', c.popMessages + c.claimMessages],
    ['queen_cluster_ack_requests_total', 'Acked messages (one per ack item).', c.ackRequests],
    ['queen_cluster_ack_messages_total', 'Messages finished by acks.', c.ackSuccess + c.claimAcks],
    ['queen_cluster_transactions_total', 'Committed transactions (per queue pushed to).', c.transactions],
    ['queen_cluster_dlq_total', 'Messages dead-lettered.', c.deadLetters],
    ['queen_cluster_db_errors_total', 'Always 0: storage failures answer 503 and show in /health.', 0],
  ];
  for (const [name, help, v] of clusterCounters) w.one(name, 'counter', help, cluster, v);
  w.family('queen_cluster_ack_total', 'counter', 'Ack items by result.')
    .sample('queen_cluster_ack_total', { ...cluster, result: 'success' }, c.ackSuccess + c.claimAcks)
    .sample('queen_cluster_ack_total', { ...cluster, result: 'failed' }, c.ackFailed);

  for (const m of USAGE_METRICS) {
    const [name, help] = USAGE_PROMETHEUS[m];
    w.one(name, 'counter', help, {}, Math.round(s.usage[m] * 1e6) / 1e6);
  }

  for (const [name, help, f] of PER_QUEUE) {
    w.family(name, 'counter', help);
    for (const { queue, row } of s.queues) w.sample(name, { queue }, f(row));
  }
  w.family('sluice_acks_total', 'counter', 'Ack items by result.');
  for (const { queue, row } of s.queues) {
    w.sample('sluice_acks_total', { queue, result: 'success' }, row.ackSuccess);
    w.sample('sluice_acks_total', { queue, result: 'failed' }, row.ackFailed);
  }

  const latest = s.latestMinute.queues;
  for (const [name, help, f] of LATEST_MINUTE) {
    w.family(name, 'gauge', help);
    for (const { queue, row } of latest) w.sample(name, { queue }, f(row));
  }
  w.family('queen_queue_pop_lag_milliseconds', 'gauge', 'Age of delivered messages over the latest minute, by stat.');
  for (const { queue, row } of latest) {
    w.sample('queen_queue_pop_lag_milliseconds', { queue, stat: 'avg' }, row.avgLagMs);
    w.sample('queen_queue_pop_lag_milliseconds', { queue, stat: 'max' }, row.maxLagMs);
  }
  w.family('queen_queue_ack_per_minute', 'gauge', 'Acks in the latest minute, by result.');
  for (const { queue, row } of latest) {
    w.sample('queen_queue_ack_per_minute', { queue, result: 'success' }, row.ackSuccess + row.claimAcks);
    w.sample('queen_queue_ack_per_minute', { queue, result: 'failed' }, row.ackFailed);
  }
  w.family('queen_queue_metrics_age_seconds', 'gauge', 'Seconds since the latest minute bucket ended.');
  for (const { queue } of latest) w.sample('queen_queue_metrics_age_seconds', { queue }, s.latestMinute.ageSeconds);

  w.family(
    'queen_dlq_depth_by_queue',
    'gauge',
    'Dead letters listed per queue (partition leases; counted up to 10,000).',
  );
  for (const { queue, count } of s.deadLetters.queues) w.sample('queen_dlq_depth_by_queue', { queue }, count);
  w.one('queen_dlq_depth', 'gauge', 'Dead letters listed, every queue.', cluster, s.deadLetters.depth);

  w.family('sluice_consumer_lag_messages', 'gauge', 'Messages a consumer group has not finished, per queue.');
  for (const r of s.lag)
    w.sample('sluice_consumer_lag_messages', { group: r.group, queue: r.queue, kind: r.kind }, r.lagMessages);
  w.family('sluice_consumer_lag_seconds', 'gauge', 'Age of the oldest message a group has not finished, per queue.');
  for (const r of s.lag)
    w.sample('sluice_consumer_lag_seconds', { group: r.group, queue: r.queue, kind: r.kind }, r.lagSeconds);

  w.family('sluice_http_request_duration_seconds', 'histogram', 'Time to answer a request, by route and status class.');
  for (const { route, statusClass, histogram } of s.latencies)
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
  type TargetRow = MetricsSnapshot['targets'][number];
  const perTarget: [string, 'counter' | 'gauge', string, (t: TargetRow) => number][] = [
    ['sluice_target_invocations_total', 'counter', 'Events sent to the target.', (t) => t.counts.invocations],
    [
      'sluice_target_errors_total',
      'counter',
      'Events the target failed or could not be reached for.',
      (t) => t.counts.errors,
    ],
    [
      'sluice_target_throttles_total',
      'counter',
      'Events the target refused to run (429, 503).',
      (t) => t.counts.throttles,
    ],
    ['sluice_target_retries_total', 'counter', 'Charged failures: a record comes again.', (t) => t.counts.retries],
    [
      'sluice_target_dead_letters_total',
      'counter',
      'Records the target sent to dead letters.',
      (t) => t.counts.deadLettered,
    ],
    ['sluice_target_batches_in_flight', 'gauge', 'Events being delivered now.', (t) => t.counts.inFlight],
    [
      'sluice_target_oldest_record_age_seconds',
      'gauge',
      'Age of the oldest record the last look found undelivered (0: none waits).',
      (t) => t.oldestAgeSeconds,
    ],
  ];
  for (const [name, type, help, f] of perTarget) {
    w.family(name, type, help);
    for (const t of s.targets) w.sample(name, { queue: t.queue, group: t.group }, f(t));
  }
  return w.text();
}
