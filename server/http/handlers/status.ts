/**
 * Queen's status routes (docs/QUEEN-COMPAT.md): the cluster status with its throughput series,
 * the queue list with counters, one queue with its config and partitions, and messages created
 * per interval. Counters come from the items the queue keeps; series from this process's
 * activity; worker-thread and PostgreSQL fields answer their neutral values.
 */
import * as statusApi from '../../../contract/routes/admin/status.js';
import { clusterStatus, pushesPerInterval } from '../../service/admin/status.js';
import { queueView, visibleQueueViews } from '../../service/admin/views.js';
import { implement, type RouteDef } from '../route.js';
import { statusAnalyticsJson, statusJson, statusQueueJson, statusQueuesJson } from '../answers/status.js';

export const status = implement(
  statusApi.status,
  ['activity', 'admin', 'clock'],
  async ({ query, services, allowed }) => {
    return { statusCode: 200, body: statusJson(await clusterStatus(services, query, (q) => allowed(q))) };
  },
);

export const statusQueues = implement(statusApi.statusQueues, ['admin'], async ({ query, services, allowed }) => {
  return {
    statusCode: 200,
    body: statusQueuesJson(await visibleQueueViews(services, (q) => allowed(q), query), query),
  };
});

export const statusQueue = implement(statusApi.statusQueue, ['admin'], async ({ params, services }) => {
  return { statusCode: 200, body: statusQueueJson(await queueView(services, params.queue)) };
});

export const statusAnalytics = implement(
  statusApi.statusAnalytics,
  ['activity', 'admin', 'clock'],
  async ({ query, services, allowed }) => {
    const pushed = await pushesPerInterval(services, query, query.interval, (q) => allowed(q));
    return { statusCode: 200, body: statusAnalyticsJson(pushed, query.interval) };
  },
);

export const statusRoutes: RouteDef[] = [status, statusQueues, statusQueue, statusAnalytics];
