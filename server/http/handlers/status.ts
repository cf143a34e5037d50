/**
 * Queen's status routes (docs/QUEEN-COMPAT.md): the cluster status with its throughput series,
 * the queue list with counters, one queue with its config and partitions, and messages created
 * per interval. Counters come from the items the queue keeps; series from this process's
 * activity; worker-thread and PostgreSQL fields answer their neutral values.
 */
import { z } from 'zod';
import { clusterStatus, pushesPerInterval } from '../../service/admin/status.js';
import { queueView, visibleQueueViews } from '../../service/admin/views.js';
import { defineRoute, type RouteDef } from '../route.js';
import { lenientInteger, optionalFilter, optionalInstant } from '../admin-query.js';
import { statusAnalyticsJson, statusJson, statusQueueJson, statusQueuesJson } from '../answers/status.js';
import { nameSchema } from '../schemas.js';

const StatusQuery = z.object({
  from: optionalInstant,
  to: optionalInstant,
  queue: optionalFilter,
  namespace: optionalFilter,
  task: optionalFilter,
});

export const status = defineRoute({
  method: 'GET',
  path: '/api/v1/status',
  group: 'admin',
  summary:
    'Throughput per bucket (newest first), message counters, leases and dead letters of the queues the caller may see.',
  query: StatusQuery,
  access: { action: 'consume' },
  async run({ query, services, allowed }) {
    return { statusCode: 200, body: statusJson(await clusterStatus(services, query, (q) => allowed(q))) };
  },
});

export const statusQueues = defineRoute({
  method: 'GET',
  path: '/api/v1/status/queues',
  group: 'admin',
  summary: 'Queues the caller may see with counters (pending includes messages under lease), one page.',
  query: z.object({
    namespace: optionalFilter,
    task: optionalFilter,
    // Sent by Queen's Analytics view; like Queen, it selects nothing.
    queue: z.string().optional(),
    limit: lenientInteger(1, 10_000, 100),
    offset: lenientInteger(0, 1_000_000, 0),
  }),
  access: { action: 'consume' },
  async run({ query, services, allowed }) {
    return {
      statusCode: 200,
      body: statusQueuesJson(await visibleQueueViews(services, (q) => allowed(q), query), query),
    };
  },
});

export const statusQueue = defineRoute({
  method: 'GET',
  path: '/api/v1/status/queues/{queue}',
  group: 'admin',
  summary: "One queue's config, partitions (counters, cursor totals, activity times) and totals.",
  params: z.object({ queue: nameSchema('queue') }),
  // Sent by queenctl; partitions are always included, as in Queen.
  query: z.object({ includePartitions: z.string().optional() }),
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  async run({ params, services }) {
    return { statusCode: 200, body: statusQueueJson(await queueView(services, params.queue)) };
  },
});

export const statusAnalytics = defineRoute({
  method: 'GET',
  path: '/api/v1/status/analytics',
  group: 'admin',
  summary: 'Messages pushed per minute, hour or day (default: per hour over the last 24 hours).',
  query: StatusQuery.extend({
    interval: z
      .string()
      .optional()
      .transform((v) => (v === 'minute' || v === 'day' ? v : 'hour')),
  }),
  access: { action: 'consume' },
  async run({ query, services, allowed }) {
    const pushed = await pushesPerInterval(services, query, query.interval, (q) => allowed(q));
    return { statusCode: 200, body: statusAnalyticsJson(pushed, query.interval) };
  },
});

export const statusRoutes: RouteDef[] = [status, statusQueues, statusQueue, statusAnalytics];
