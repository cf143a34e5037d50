/**
 * The admin reads more than one admin route answers from: the queues a caller may see as detail
 * views, one queue by name (its record or its detail view), and every queue's activity summed
 * per bucket. Here, not in a handler, so no handler imports another.
 */
import { notFound } from '../../core/errors.js';
import { mapBounded } from '../../core/map-bounded.js';
import { bucketStarts, type Window } from '../../core/queue-stats.js';
import type { Services } from '../runtime.js';
import { addRow, emptyRow, type ActivityRow } from './activity.js';
import type { QueueStatsView } from './queue-stats.js';

/**
 * How many queues a listing reads at once: each reads 8 partitions at once (queue-stats.ts), so
 * one listing keeps some 32 partitions' reads in flight, not one per partition of every queue.
 */
const QUEUE_CONCURRENCY = 4;

/**
 * The queues a caller may see, as detail views (counters, no dead-letter counts unless asked),
 * one page, read QUEUE_CONCURRENCY at a time.
 *
 * @example
 * const views = await visibleQueueViews(services, (q) => allowed(q), { limit: 100 });
 */
export async function visibleQueueViews(
  services: Pick<Services, 'admin'>,
  allowed: (queue: string) => boolean,
  q: { namespace?: string | undefined; task?: string | undefined; limit?: number; offset?: number },
  opts: { withDeadLetters?: boolean } = {},
) {
  const records = await services.admin.stats.listQueues({ visible: allowed, ...q });
  return mapBounded(records, QUEUE_CONCURRENCY, (r) => services.admin.stats.queueDetail(r, opts));
}

/**
 * The queue, or Queen's 404 (`Queue not found`) when it does not exist.
 *
 * @example
 * const record = await visibleQueue(services, 'orders');
 */
export async function visibleQueue(services: Pick<Services, 'admin'>, name: string) {
  const q = await services.admin.stats.getQueue(name);
  if (!q) throw notFound('Queue not found');
  return q;
}

/**
 * One queue with every partition's counters and its dead letters counted, or Queen's 404.
 *
 * @example
 * const { queue, partitions, totals } = await queueView(services, 'orders');
 */
export async function queueView(services: Pick<Services, 'admin'>, name: string): Promise<QueueStatsView> {
  return services.admin.stats.queueDetail(await visibleQueue(services, name), { withDeadLetters: true });
}

/**
 * Every queue's activity rows summed per bucket, for the queues `include` admits.
 *
 * @example
 * const { starts, rows } = await bucketsOf(services, window, 5, (q) => allowed(q));
 */
export async function bucketsOf(
  services: Pick<Services, 'activity'>,
  w: Window,
  minutes: number,
  include: (queue: string) => boolean,
): Promise<{ starts: number[]; rows: ActivityRow[] }> {
  const starts = bucketStarts(w, minutes);
  const rows = starts.map(() => emptyRow());
  for (const [q, series] of await services.activity.seriesEverywhere(starts, minutes)) {
    if (!include(q)) continue;
    series.forEach((r, i) => addRow(rows[i]!, r));
  }
  return { starts, rows };
}
