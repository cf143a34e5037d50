/**
 * Queen's JSON shapes of the resource routes (docs/QUEEN-COMPAT.md) that have their own: one
 * queue with its partitions, the overview, and the namespace and task listings, written from
 * the reads in service/admin/resources.ts and views.ts.
 */
import { OVERVIEW_MINUTES, type Overview, type QueueGroup } from '../../service/admin/resources.js';
import type { QueueStatsView } from '../../service/admin/queue-stats.js';
import { countersJson, partitionJson, perSecond, queueIdentity } from './admin-views.js';

/**
 * `GET /api/v1/resources/queues/{queue}`: the queue, its partitions and totals.
 *
 * @example
 * ```ts
 * const body = describeQueueJson(await queueView(services, 'orders'));
 * ```
 */
export function describeQueueJson(view: QueueStatsView): Record<string, unknown> {
  return {
    ...queueIdentity(view.queue),
    priority: view.queue.options.priority,
    partitions: view.partitions.map(partitionJson),
    totals: countersJson(view.totals),
  };
}

/**
 * `GET /api/v1/resources/overview`: throughput per second over the overview's minutes.
 *
 * @example
 * ```ts
 * const body = overviewJson(await clusterOverview(services, (q) => allowed(q)));
 * ```
 */
export function overviewJson(o: Overview): Record<string, unknown> {
  return {
    queues: o.queues,
    partitions: o.partitions,
    namespaces: o.namespaces,
    tasks: o.tasks,
    messages: countersJson(o.messages),
    lag: o.lag,
    throughput: {
      ingestedPerSecond: perSecond(o.pushed, OVERVIEW_MINUTES),
      processedPerSecond: perSecond(o.processed, OVERVIEW_MINUTES),
    },
    timestamp: new Date(o.now).toISOString(),
    statsAge: 0,
  };
}

/**
 * A namespace or task listing's rows: the name under its own key and as `name`, counts under
 * Queen's two names.
 *
 * @example
 * ```ts
 * const body = { tasks: groupedJson(await queuesGroupedBy(services, see, 'task'), 'task') };
 * ```
 */
export function groupedJson(groups: readonly QueueGroup[], by: 'namespace' | 'task'): Record<string, unknown>[] {
  return groups.map((g) => ({
    [by]: g.name,
    name: g.name,
    queues: g.queues,
    queueCount: g.queues,
    partitions: g.partitions,
    messages: { total: g.total, pending: g.pending },
  }));
}
