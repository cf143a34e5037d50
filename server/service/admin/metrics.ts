/**
 * What the local server's `/metrics` reports (the list of metrics: http/handlers/metrics.ts),
 * read in one go: this process's CPU and memory, the activity counters (lifetime and the
 * latest finished minute), cost counters, dead letters per queue, consumer lag and route
 * latencies. Counters of every queue make the cluster totals; per-queue figures are of the
 * queues the caller `sees` only. The Prometheus text is written from it in http/answers/metrics.ts.
 *
 * @example
 * ```ts
 * const snap = await metricsSnapshot(services, (q) => allowed(q, 'manage'));
 * snap.deadLetters.depth; // every queue's dead letters, whatever the caller sees
 * ```
 */
import { mapBounded } from '../../core/map-bounded.js';
import type { TargetCounts } from '../targets/target-stats.js';
import type { Services } from '../runtime.js';
import type { UsageTotals } from '../usage.js';
import { addRow, emptyRow, type ActivityRow, type Histogram } from './activity.js';
import type { GroupQueueRow } from './group-lag.js';
import type { Visible } from './queue-stats.js';

/**
 * Dead-letter counts read at once: each pages through a queue's dead-letter list (up to
 * 10,000 rows), and a scrape counts every queue, so a bound keeps a scrape from bursting the table.
 */
const DEAD_LETTER_COUNT_CONCURRENCY = 4;

/** A queue with one row of its activity. */
export interface QueueRow {
  queue: string;
  row: ActivityRow;
}

export interface MetricsSnapshot {
  process: { uptimeSeconds: number; cpu: NodeJS.CpuUsage; memory: NodeJS.MemoryUsage };
  /** Lifetime counters summed over every queue this process has seen. */
  cluster: ActivityRow;
  /** Each visible queue's lifetime counters, in name order. */
  queues: QueueRow[];
  /** What this process's requests cost (requests, Lambda time, storage units). */
  usage: UsageTotals;
  /** Queen's per-queue gauges: the latest finished minute, per visible queue in name order. */
  latestMinute: { ageSeconds: number; queues: QueueRow[] };
  /** Dead letters listed (counted up to the cap per queue): in every queue, and per visible queue with some. */
  deadLetters: { depth: number; queues: { queue: string; count: number }[] };
  /** Consumer lag per group and visible queue that exists. */
  lag: GroupQueueRow[];
  latencies: { route: string; statusClass: string; histogram: Histogram }[];
  /** Each visible queue's targets, with what this process's dispatcher counted (docs/TARGETS.md). */
  targets: { queue: string; group: string; counts: TargetCounts; oldestAgeSeconds: number }[];
}

/**
 * Everything `/metrics` reports, for a caller who sees the queues `sees` admits.
 *
 * @example
 * ```ts
 * const { cluster, queues } = await metricsSnapshot(services, () => true);
 * ```
 */
export async function metricsSnapshot(
  services: Pick<Services, 'clock' | 'activity' | 'usage' | 'admin' | 'targets' | 'targetStats'>,
  sees: Visible,
): Promise<MetricsSnapshot> {
  const self = { uptimeSeconds: process.uptime(), cpu: process.cpuUsage(), memory: process.memoryUsage() };
  const totals = services.activity.queueTotals();
  const cluster = emptyRow();
  for (const r of totals.values()) addRow(cluster, r);
  const queues = [...totals.keys()]
    .filter(sees)
    .sort()
    .map((queue) => ({ queue, row: totals.get(queue)! }));
  // Before the reads below, as a scrape always read it: the cost of this scrape shows in the next.
  const usage = services.usage.totals();

  // Queen's `queue_lag_metrics` bucket: the latest finished minute.
  const now = services.clock();
  const lastMinute = (Math.floor(now / 60_000) - 1) * 60_000;
  const latest = services.activity.series([lastMinute], 1);
  const latestQueues = [...latest.keys()]
    .filter(sees)
    .sort()
    .map((queue) => ({ queue, row: latest.get(queue)![0]! }));
  // Whole seconds, floored: rounding said 60 in a minute's last half second, an age that never is.
  const ageSeconds = Math.max(0, Math.floor((now - lastMinute - 60_000) / 1000));

  const names = await services.admin.stats.names(() => true);
  const [counts, groupRows, targets] = await Promise.all([
    mapBounded(
      names,
      DEAD_LETTER_COUNT_CONCURRENCY,
      async (q) => (await services.admin.deadLetters.countByPartition(q)).total,
    ),
    services.admin.groupLag.rows(sees),
    services.targets.list(),
  ]);
  // Group registrations outlive a deleted queue; its lag series do not.
  const existing = new Set(names);
  return {
    process: self,
    cluster,
    queues,
    usage,
    latestMinute: { ageSeconds, queues: latestQueues },
    deadLetters: {
      depth: counts.reduce((n, c) => n + c, 0),
      queues: names.map((queue, i) => ({ queue, count: counts[i]! })).filter((d) => sees(d.queue) && d.count > 0),
    },
    lag: groupRows.filter((r) => existing.has(r.queue)),
    latencies: services.activity.latencies(),
    targets: targets
      .filter((t) => sees(t.queue))
      .map((t) => {
        const counts = services.targetStats.snapshot(t.queue, t.group);
        const oldest = counts.oldestUndeliveredAt;
        return {
          queue: t.queue,
          group: t.group,
          counts,
          oldestAgeSeconds: oldest === null ? 0 : Math.max(0, Math.floor((now - oldest) / 1000)),
        };
      }),
  };
}
