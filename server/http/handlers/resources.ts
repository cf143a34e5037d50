/**
 * Queen's resource routes (docs/QUEEN-COMPAT.md): queues with their counters, one queue with
 * its partitions, the cluster overview, namespaces and tasks. Reads only; a listing shows the
 * queues the caller may consume, and naming a queue it may not consume is refused (403).
 */
import * as resourcesApi from '../../../contract/routes/admin/resources.js';
import { clusterOverview, queuesGroupedBy } from '../../service/admin/resources.js';
import { queueView, visibleQueueViews } from '../../service/admin/views.js';
import { implement, type RouteDef } from '../route.js';
import { queueRowJson } from '../answers/admin-views.js';
import { describeQueueJson, groupedJson, overviewJson } from '../answers/resources.js';

export const listQueues = implement(resourcesApi.listQueues, ['admin'], async ({ query, services, allowed }) => {
  const views = await visibleQueueViews(services, (name) => allowed(name), query);
  return { statusCode: 200, body: { queues: views.map(queueRowJson) } };
});

export const describeQueue = implement(resourcesApi.describeQueue, ['admin'], async ({ params, services }) => {
  return { statusCode: 200, body: describeQueueJson(await queueView(services, params.queue)) };
});

export const overview = implement(
  resourcesApi.overview,
  ['activity', 'admin', 'clock'],
  async ({ services, allowed }) => {
    return { statusCode: 200, body: overviewJson(await clusterOverview(services, (q) => allowed(q))) };
  },
);

export const namespaces = implement(resourcesApi.namespaces, ['admin'], async ({ services, allowed }) => {
  const groups = await queuesGroupedBy(services, (q) => allowed(q), 'namespace');
  return { statusCode: 200, body: { namespaces: groupedJson(groups, 'namespace') } };
});

export const tasks = implement(resourcesApi.tasks, ['admin'], async ({ services, allowed }) => {
  const groups = await queuesGroupedBy(services, (q) => allowed(q), 'task');
  return { statusCode: 200, body: { tasks: groupedJson(groups, 'task') } };
});

export const resourceRoutes: RouteDef[] = [listQueues, describeQueue, overview, namespaces, tasks];
