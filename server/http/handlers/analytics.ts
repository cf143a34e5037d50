/**
 * Queen's analytics series (docs/QUEEN-COMPAT.md): per-queue operations and pop lag from this
 * process's activity; worker and system metrics for this one process; retention and parked
 * consumers, which Sluice does not track, as empty series of Queen's shape, so every view
 * renders. The caller sees series of the queues it may consume.
 */
import * as analyticsApi from '../../../contract/routes/admin/analytics.js';
import { popLag, processSample, queueOpsSeries, seriesWindow, workerActivity } from '../../service/admin/analytics.js';
import { implement, type RouteDef } from '../route.js';
import {
  parkedReplicasJson,
  queueLagJson,
  queueOpsJson,
  retentionJson,
  systemMetricsJson,
  workerMetricsJson,
} from '../answers/analytics.js';

export const queueOps = implement(
  analyticsApi.queueOps,
  ['activity', 'clock', 'queues'],
  async ({ query, services, allowed }) => {
    return { statusCode: 200, body: queueOpsJson(await queueOpsSeries(services, query, (q) => allowed(q))) };
  },
);

export const queueLag = implement(
  analyticsApi.queueLag,
  ['activity', 'clock'],
  async ({ query, services, allowed }) => {
    return { statusCode: 200, body: queueLagJson(await popLag(services, query, (q) => allowed(q))) };
  },
);

export const parkedReplicas = implement(analyticsApi.parkedReplicas, ['clock'], ({ query, services }) => {
  return Promise.resolve({ statusCode: 200, body: parkedReplicasJson(seriesWindow(services, query)) });
});

export const retention = implement(analyticsApi.retention, ['clock'], ({ query, services }) => {
  return Promise.resolve({ statusCode: 200, body: retentionJson(seriesWindow(services, query)) });
});

export const workerMetrics = implement(
  analyticsApi.workerMetrics,
  ['activity', 'clock'],
  async ({ query, services, allowed }) => {
    return { statusCode: 200, body: workerMetricsJson(await workerActivity(services, query, (q) => allowed(q))) };
  },
);

export const systemMetrics = implement(analyticsApi.systemMetrics, ['clock', 'config'], ({ query, services }) => {
  return Promise.resolve({ statusCode: 200, body: systemMetricsJson(processSample(services, query)) });
});

export const analyticsRoutes: RouteDef[] = [
  queueOps,
  queueLag,
  parkedReplicas,
  retention,
  workerMetrics,
  systemMetrics,
];
