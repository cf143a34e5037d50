/**
 * Queen's resource routes (docs/QUEEN-COMPAT.md): queues with their counters, one queue with
 * its partitions, the cluster overview, namespaces and tasks. Reads only; a listing shows the
 * queues the caller may consume, and naming a queue it may not consume is refused (403).
 */
import { z } from 'zod';
import { clusterOverview, queuesGroupedBy } from '../../service/admin/resources.js';
import { queueView, visibleQueueViews } from '../../service/admin/views.js';
import { defineRoute, type RouteDef } from '../route.js';
import { lenientInteger, optionalFilter } from '../admin-query.js';
import { queueRowJson } from '../answers/admin-views.js';
import { describeQueueJson, groupedJson, overviewJson } from '../answers/resources.js';
import { nameSchema } from '../schemas.js';

export const listQueues = defineRoute({
  method: 'GET',
  path: '/api/v1/resources/queues',
  group: 'admin',
  summary: 'Queues the caller may consume, newest first, with partition count and message counters.',
  query: z.object({
    namespace: optionalFilter,
    task: optionalFilter,
    limit: lenientInteger(1, 10_000, 1000),
    offset: lenientInteger(0, 1_000_000, 0),
  }),
  access: { action: 'consume' },
  async run({ query, services, allowed }) {
    const views = await visibleQueueViews(services, (name) => allowed(name), query);
    return { statusCode: 200, body: { queues: views.map(queueRowJson) } };
  },
});

const QueueParams = z.object({ queue: nameSchema('queue') });

export const describeQueue = defineRoute({
  method: 'GET',
  path: '/api/v1/resources/queues/{queue}',
  group: 'admin',
  summary: 'One queue: its partitions with counters, offsets and each consumer group position; totals.',
  params: QueueParams,
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  async run({ params, services }) {
    return { statusCode: 200, body: describeQueueJson(await queueView(services, params.queue)) };
  },
});

export const overview = defineRoute({
  method: 'GET',
  path: '/api/v1/resources/overview',
  group: 'admin',
  summary:
    'Counts of queues, partitions, namespaces, tasks and messages, current consumer lag, and throughput over 5 minutes.',
  access: { action: 'consume' },
  async run({ services, allowed }) {
    return { statusCode: 200, body: overviewJson(await clusterOverview(services, (q) => allowed(q))) };
  },
});

export const namespaces = defineRoute({
  method: 'GET',
  path: '/api/v1/resources/namespaces',
  group: 'admin',
  summary: 'Namespaces of the queues the caller may see, with queue, partition and message counts.',
  access: { action: 'consume' },
  async run({ services, allowed }) {
    const groups = await queuesGroupedBy(services, (q) => allowed(q), 'namespace');
    return { statusCode: 200, body: { namespaces: groupedJson(groups, 'namespace') } };
  },
});

export const tasks = defineRoute({
  method: 'GET',
  path: '/api/v1/resources/tasks',
  group: 'admin',
  summary: 'Tasks of the queues the caller may see, with queue, partition and message counts.',
  access: { action: 'consume' },
  async run({ services, allowed }) {
    const groups = await queuesGroupedBy(services, (q) => allowed(q), 'task');
    return { statusCode: 200, body: { tasks: groupedJson(groups, 'task') } };
  },
});

export const resourceRoutes: RouteDef[] = [listQueues, describeQueue, overview, namespaces, tasks];
