/**
 * The data behind Queen's status routes (docs/QUEEN-COMPAT.md): the cluster status (throughput
 * per bucket, message counters, leases out, dead letters) of the queues a caller may see, and
 * messages pushed per minute, hour or day. Counters come from the items each queue keeps,
 * series from the activity of every process; Queen's JSON shapes are written from it in
 * http/answers/status.ts.
 *
 * @example
 * ```ts
 * const report = await clusterStatus(services, { namespace: 'billing' }, (q) => allowed(q));
 * report.counters.pending; // over every visible queue of the namespace
 * ```
 */
import { bucketMinutes, sumCounters, windowOf, type MessageCounters, type Window } from '../../core/queue-stats.js';
import type { Services } from '../runtime.js';
import { addRow, emptyRow, type ActivityRow } from './activity.js';
import type { PartitionStats, QueueStatsView, Visible } from './queue-stats.js';
import { bucketsOf, visibleQueueViews } from './views.js';

/** What the status routes filter by: a window (default the last hour), and queue, namespace, task. */
export interface StatusFilter {
  from?: number | undefined;
  to?: number | undefined;
  queue?: string | undefined;
  namespace?: string | undefined;
  task?: string | undefined;
}

/** The cluster status of the queues in scope. */
export interface ClusterStatus {
  now: number;
  window: Window;
  minutes: number;
  /** Bucket starts, oldest first, and the queues' activity summed in each. */
  starts: number[];
  rows: ActivityRow[];
  /** The sum of `rows`. */
  total: ActivityRow;
  /** The queues in scope, with dead-letter counts. */
  views: QueueStatsView[];
  /** Message counters summed over the queues in scope. */
  counters: MessageCounters;
  leases: {
    /** Partition leases out now. */
    active: number;
    partitionsWithLeases: number;
    /** Messages under those leases. */
    totalBatchSize: number;
  };
  /** Partitions holding dead letters. */
  deadLetterPartitions: number;
}

/** Whether a partition has a partition lease out now. */
const leased = (p: PartitionStats): boolean => p.lanes.some((l) => l.kind === 'lease' && l.out !== null);

/**
 * The cluster status of the visible queues the filter selects.
 *
 * @example
 * ```ts
 * const { leases } = await clusterStatus(services, {}, (q) => allowed(q));
 * ```
 */
export async function clusterStatus(
  services: Pick<Services, 'clock' | 'admin' | 'activity'>,
  f: StatusFilter,
  visible: Visible,
): Promise<ClusterStatus> {
  const now = services.clock();
  const window = windowOf(f, now);
  const minutes = bucketMinutes(window);
  const views = await visibleQueueViews(
    services,
    (q) => visible(q) && (f.queue === undefined || q === f.queue),
    { namespace: f.namespace, task: f.task },
    { withDeadLetters: true },
  );
  const inScope = new Set(views.map((v) => v.queue.name));
  const { starts, rows } = await bucketsOf(services, window, minutes, (q) => inScope.has(q));
  const total = emptyRow();
  for (const r of rows) addRow(total, r);
  const counters = sumCounters(views.map((v) => v.totals));
  const parts = views.flatMap((v) => v.partitions);
  const leaseLanes = parts.flatMap((p) => p.lanes.filter((l) => l.kind === 'lease' && l.out !== null));
  return {
    now,
    window,
    minutes,
    starts,
    rows,
    total,
    views,
    counters,
    leases: {
      active: leaseLanes.length,
      partitionsWithLeases: parts.filter(leased).length,
      totalBatchSize: leaseLanes.reduce((n, l) => n + (l.out ? l.out.to - l.out.from : 0), 0),
    },
    deadLetterPartitions: parts.filter((p) => p.counters.deadLetter > 0).length,
  };
}

/** The bucket widths `GET /api/v1/status/analytics` offers, in minutes. */
export const PUSH_INTERVALS = { minute: 1, hour: 60, day: 1440 } as const;
export type PushInterval = keyof typeof PUSH_INTERVALS;

/**
 * Messages pushed to the visible queues the filter selects, per interval, over the window
 * (default: the 24 hours before `to`).
 *
 * @example
 * ```ts
 * const { starts, pushed } = await pushesPerInterval(services, {}, 'hour', (q) => allowed(q));
 * ```
 */
export async function pushesPerInterval(
  services: Pick<Services, 'clock' | 'admin' | 'activity'>,
  f: StatusFilter,
  interval: PushInterval,
  visible: Visible,
): Promise<{ window: Window; starts: number[]; pushed: number[] }> {
  const now = services.clock();
  const to = f.to ?? now;
  const window = windowOf({ from: f.from ?? to - 86_400_000, to }, now);
  const queues = await services.admin.stats.listQueues({
    visible: (q) => visible(q) && (f.queue === undefined || q === f.queue),
    namespace: f.namespace,
    task: f.task,
  });
  const names = new Set(queues.map((q) => q.name));
  const { starts, rows } = await bucketsOf(services, window, PUSH_INTERVALS[interval], (q) => names.has(q));
  return { window, starts, pushed: rows.map((r) => r.pushMessages) };
}
