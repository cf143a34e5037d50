/**
 * Queen's resource routes (docs/QUEEN-COMPAT.md): queues with their counters, one queue with
 * its partitions, the cluster overview, namespaces and tasks. Reads only; a listing shows the
 * queues the caller may consume, and naming a queue it may not consume is refused (403).
 */
import * as resourcesApi from '../../../contract/routes/admin/resources.js';
import { sumCounters } from '../../core/queue-stats.js';
import { visibleQueue, visibleQueueViews } from '../../service/admin/views.js';
import type { Services } from '../../service/runtime.js';
import { implement, type RouteDef } from '../route.js';
import { countersJson, partitionJson, perSecond, queueIdentity, queueRowJson } from '../answers/admin-views.js';

export const listQueues = implement(resourcesApi.listQueues, ['admin'], async ({ query, services, allowed }) => {
  const views = await visibleQueueViews(services, (name) => allowed(name), query);
  return { statusCode: 200, body: { queues: views.map(queueRowJson) } };
});

export const describeQueue = implement(resourcesApi.describeQueue, ['admin'], async ({ params, services }) => {
  const view = await services.admin.stats.queueDetail(await visibleQueue(services, params.queue), {
    withDeadLetters: true,
  });
  return {
    statusCode: 200,
    body: {
      ...queueIdentity(view.queue),
      priority: view.queue.options.priority,
      partitions: view.partitions.map(partitionJson),
      totals: countersJson(view.totals),
    },
  };
});

/** Mean, median, min and max of some numbers (0 for none). */
function spread(xs: number[]): { avg: number; median: number; min: number; max: number } {
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

/** The window Queen's overview averages throughput over. */
const OVERVIEW_MINUTES = 5;

export const overview = implement(
  resourcesApi.overview,
  ['activity', 'admin', 'clock'],
  async ({ services, allowed }) => {
    const see = (q: string) => allowed(q);
    const [views, groups] = await Promise.all([
      visibleQueueViews(services, see, {}, { withDeadLetters: true }),
      services.admin.groupLag.rows(see),
    ]);
    const now = services.clock();
    const start = Math.floor(now / 60_000) * 60_000 - (OVERVIEW_MINUTES - 1) * 60_000;
    const recent = await services.activity.seriesEverywhere([start], OVERVIEW_MINUTES);
    let pushed = 0;
    let processed = 0;
    for (const [q, [row]] of recent)
      if (see(q) && row) {
        pushed += row.pushMessages;
        processed += row.ackSuccess + row.claimAcks;
      }
    const withLag = groups.filter((g) => g.lagMessages > 0);
    return {
      statusCode: 200,
      body: {
        queues: views.length,
        partitions: views.reduce((n, v) => n + v.partitions.length, 0),
        namespaces: new Set(views.map((v) => v.queue.namespace).filter(Boolean)).size,
        tasks: new Set(views.map((v) => v.queue.task).filter(Boolean)).size,
        messages: countersJson(sumCounters(views.map((v) => v.totals))),
        lag: {
          time: spread(withLag.map((g) => g.lagSeconds)),
          offset: spread(withLag.map((g) => g.lagMessages)),
        },
        throughput: {
          ingestedPerSecond: perSecond(pushed, OVERVIEW_MINUTES),
          processedPerSecond: perSecond(processed, OVERVIEW_MINUTES),
        },
        timestamp: new Date(now).toISOString(),
        statsAge: 0,
      },
    };
  },
);

/** Queues grouped by namespace or task: queue and partition counts, message totals. */
async function grouped(services: Pick<Services, 'admin'>, allowed: (q: string) => boolean, by: 'namespace' | 'task') {
  const views = await visibleQueueViews(services, allowed, {});
  const out = new Map<string, { queues: number; partitions: number; total: number; pending: number }>();
  for (const v of views) {
    const key = v.queue[by];
    if (!key) continue;
    const g = out.get(key) ?? { queues: 0, partitions: 0, total: 0, pending: 0 };
    g.queues++;
    g.partitions += v.partitions.length;
    g.total += v.totals.total;
    g.pending += v.totals.pending;
    out.set(key, g);
  }
  return [...out.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, g]) => ({
      [by]: name,
      name,
      queues: g.queues,
      queueCount: g.queues,
      partitions: g.partitions,
      messages: { total: g.total, pending: g.pending },
    }));
}

export const namespaces = implement(resourcesApi.namespaces, ['admin'], async ({ services, allowed }) => {
  return { statusCode: 200, body: { namespaces: await grouped(services, (q) => allowed(q), 'namespace') } };
});

export const tasks = implement(resourcesApi.tasks, ['admin'], async ({ services, allowed }) => {
  return { statusCode: 200, body: { tasks: await grouped(services, (q) => allowed(q), 'task') } };
});

export const resourceRoutes: RouteDef[] = [listQueues, describeQueue, overview, namespaces, tasks];
