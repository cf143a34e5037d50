/**
 * Queen's analytics series (docs/QUEEN-COMPAT.md): per-queue operations and pop lag from this
 * process's activity; worker and system metrics for this one process; retention and parked
 * consumers, which Sluice does not track, as empty series of Queen's shape, so every view
 * renders. The caller sees series of the queues it may consume.
 */
import { z } from 'zod';
import { popLag, processSample, queueOpsSeries, seriesWindow, workerActivity } from '../../service/admin/analytics.js';
import { defineRoute, type RouteDef } from '../route.js';
import { optionalFilter, optionalInstant } from '../admin-query.js';
import {
  parkedReplicasJson,
  queueLagJson,
  queueOpsJson,
  retentionJson,
  systemMetricsJson,
  workerMetricsJson,
} from '../answers/analytics.js';

const SeriesQuery = z.object({ from: optionalInstant, to: optionalInstant, queue: optionalFilter });
/** `hostname` and `workerId` select a replica in Queen; there is one here. */
const ReplicaQuery = SeriesQuery.extend({ hostname: z.string().optional(), workerId: z.string().optional() });

export const queueOps = defineRoute({
  method: 'GET',
  path: '/api/v1/analytics/queue-ops',
  group: 'admin',
  summary: 'Per queue and bucket (oldest first): pushes, pops, empty pops, acks, transactions, pop lag, rates.',
  query: SeriesQuery,
  access: { action: 'consume' },
  async run({ query, services, allowed }) {
    return { statusCode: 200, body: queueOpsJson(await queueOpsSeries(services, query, (q) => allowed(q))) };
  },
});

export const queueLag = defineRoute({
  method: 'GET',
  path: '/api/v1/analytics/queue-lag',
  group: 'admin',
  summary: 'Age of popped messages per queue and minute (newest first): a bare array of the minutes with pops.',
  query: SeriesQuery,
  access: { action: 'consume' },
  async run({ query, services, allowed }) {
    return { statusCode: 200, body: queueLagJson(await popLag(services, query, (q) => allowed(q))) };
  },
});

export const parkedReplicas = defineRoute({
  method: 'GET',
  path: '/api/v1/analytics/queue-parked-replicas',
  group: 'admin',
  summary: 'Parked consumers per replica: not tracked here (long polls park no worker), so empty.',
  query: SeriesQuery,
  access: { action: 'consume' },
  run({ query, services }) {
    return Promise.resolve({ statusCode: 200, body: parkedReplicasJson(seriesWindow(services, query)) });
  },
});

export const retention = defineRoute({
  method: 'GET',
  path: '/api/v1/analytics/retention',
  group: 'admin',
  summary: 'Messages removed per bucket by retention: not tracked per bucket here, so zeros in every bucket.',
  query: SeriesQuery,
  access: { action: 'consume' },
  run({ query, services }) {
    return Promise.resolve({ statusCode: 200, body: retentionJson(seriesWindow(services, query)) });
  },
});

export const workerMetrics = defineRoute({
  method: 'GET',
  path: '/api/v1/analytics/worker-metrics',
  group: 'admin',
  summary: 'This process as the one worker: messages and requests per bucket (newest first), pop lag per queue.',
  query: ReplicaQuery,
  access: { action: 'consume' },
  async run({ query, services, allowed }) {
    return { statusCode: 200, body: workerMetricsJson(await workerActivity(services, query, (q) => allowed(q))) };
  },
});

export const systemMetrics = defineRoute({
  method: 'GET',
  path: '/api/v1/analytics/system-metrics',
  group: 'admin',
  summary: 'This process as the one replica: one point now, CPU (percent × 100 since start) and memory; no pool.',
  query: ReplicaQuery,
  access: { action: 'consume' },
  run({ query, services }) {
    return Promise.resolve({ statusCode: 200, body: systemMetricsJson(processSample(services, query)) });
  },
});

export const analyticsRoutes: RouteDef[] = [
  queueOps,
  queueLag,
  parkedReplicas,
  retention,
  workerMetrics,
  systemMetrics,
];
