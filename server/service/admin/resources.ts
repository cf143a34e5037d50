/**
 * The data behind Queen's resource overview and its namespace and task listings
 * (docs/QUEEN-COMPAT.md): counts over the queues a caller may see, their consumer lag now, and
 * throughput over the last minutes. Queen's JSON shapes are written from it in
 * http/answers/resources.ts.
 *
 * @example
 * ```ts
 * const o = await clusterOverview(services, (q) => allowed(q));
 * const byTask = await queuesGroupedBy(services, (q) => allowed(q), 'task');
 * ```
 */
import { sumCounters, type MessageCounters } from '../../core/queue-stats.js';
import type { Services } from '../runtime.js';
import type { Visible } from './queue-stats.js';
import { visibleQueueViews } from './views.js';

/** The window Queen's overview averages throughput over. */
export const OVERVIEW_MINUTES = 5;

/** Mean (to two decimals), median, min and max of some numbers. */
export interface Spread {
  avg: number;
  median: number;
  min: number;
  max: number;
}

/** Mean, median, min and max of some numbers (0 for none). */
function spread(xs: number[]): Spread {
  if (xs.length === 0) return { avg: 0, median: 0, min: 0, max: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return {
    avg: Math.round((s.reduce((n, x) => n + x, 0) / s.length) * 100) / 100,
    median: s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2,
    min: s[0]!,
    max: s[s.length - 1]!,
  };
}

/** The visible queues at a glance. */
export interface Overview {
  now: number;
  queues: number;
  partitions: number;
  namespaces: number;
  tasks: number;
  messages: MessageCounters;
  /** Over the (group, queue) pairs with lag: seconds and messages behind. */
  lag: { time: Spread; offset: Spread };
  /** Messages pushed and finished over the last {@link OVERVIEW_MINUTES} minutes (the one under way included). */
  pushed: number;
  processed: number;
}

/**
 * Counts, lag and recent throughput of the queues a caller may see.
 *
 * @example
 * ```ts
 * const { queues, lag } = await clusterOverview(services, (q) => allowed(q));
 * ```
 */
export async function clusterOverview(
  services: Pick<Services, 'clock' | 'admin' | 'activity'>,
  visible: Visible,
): Promise<Overview> {
  const [views, groups] = await Promise.all([
    visibleQueueViews(services, visible, {}, { withDeadLetters: true }),
    services.admin.groupLag.rows(visible),
  ]);
  const now = services.clock();
  const start = Math.floor(now / 60_000) * 60_000 - (OVERVIEW_MINUTES - 1) * 60_000;
  const recent = await services.activity.seriesEverywhere([start], OVERVIEW_MINUTES);
  let pushed = 0;
  let processed = 0;
  for (const [q, [row]] of recent)
    if (visible(q) && row) {
      pushed += row.pushMessages;
      processed += row.ackSuccess + row.claimAcks;
    }
  const withLag = groups.filter((g) => g.lagMessages > 0);
  return {
    now,
    queues: views.length,
    partitions: views.reduce((n, v) => n + v.partitions.length, 0),
    namespaces: new Set(views.map((v) => v.queue.namespace).filter(Boolean)).size,
    tasks: new Set(views.map((v) => v.queue.task).filter(Boolean)).size,
    messages: sumCounters(views.map((v) => v.totals)),
    lag: { time: spread(withLag.map((g) => g.lagSeconds)), offset: spread(withLag.map((g) => g.lagMessages)) },
    pushed,
    processed,
  };
}

/** The visible queues of one namespace or task, counted. */
export interface QueueGroup {
  name: string;
  queues: number;
  partitions: number;
  /** Messages stored, and pending (not under lease), over its queues. */
  total: number;
  pending: number;
}

/**
 * The visible queues grouped by namespace or task, in name order; queues without one are left out.
 *
 * @example
 * ```ts
 * const [first] = await queuesGroupedBy(services, (q) => allowed(q), 'namespace');
 * ```
 */
export async function queuesGroupedBy(
  services: Pick<Services, 'admin'>,
  visible: Visible,
  by: 'namespace' | 'task',
): Promise<QueueGroup[]> {
  const views = await visibleQueueViews(services, visible, {});
  const out = new Map<string, QueueGroup>();
  for (const v of views) {
    const key = v.queue[by];
    if (!key) continue;
    const g = out.get(key) ?? { name: key, queues: 0, partitions: 0, total: 0, pending: 0 };
    g.queues++;
    g.partitions += v.partitions.length;
    g.total += v.totals.total;
    g.pending += v.totals.pending;
    out.set(key, g);
  }
  return [...out.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
}
