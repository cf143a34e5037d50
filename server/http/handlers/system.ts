/**
 * Queen's system routes that have no counterpart here, answered with their neutral values so
 * Queen's dashboard and `queenctl` work unchanged (docs/QUEEN-COMPAT.md): maintenance status
 * (Sluice has no push buffer and no pop pause), traces (Sluice stores none), and the stats
 * refresh (its counters are computed on each read, so there is nothing to refresh).
 */
import { z } from 'zod';
import { defineRoute, type RouteDef } from '../route.js';
import { lenientInteger } from '../admin-query.js';
import { MessageParams } from '../schemas.js';

export const maintenanceStatus = defineRoute({
  method: 'GET',
  path: '/api/v1/system/maintenance',
  group: 'admin',
  summary: 'Maintenance modes: always off (Sluice buffers no pushes and never pauses pops).',
  access: { action: 'consume' },
  run() {
    return Promise.resolve({
      statusCode: 200,
      body: {
        maintenanceMode: false,
        popMaintenanceMode: false,
        bufferedMessages: 0,
        bufferHealthy: true,
        bufferStats: {
          pendingCount: 0,
          failedCount: 0,
          dbHealthy: true,
          failedFiles: { count: 0, totalBytes: 0, totalMB: 0, failoverCount: 0, qos0Count: 0 },
        },
      },
    });
  },
});

export const popMaintenanceStatus = defineRoute({
  method: 'GET',
  path: '/api/v1/system/maintenance/pop',
  group: 'admin',
  summary: 'Pop maintenance mode: always off.',
  access: { action: 'consume' },
  run() {
    return Promise.resolve({
      statusCode: 200,
      body: { popMaintenanceMode: false, message: 'Sluice never pauses pops' },
    });
  },
});

export const statsRefresh = defineRoute({
  method: 'POST',
  path: '/api/v1/stats/refresh',
  group: 'admin',
  summary: 'Nothing to refresh: the admin counters are computed on each read.',
  access: { action: 'manage' },
  run() {
    return Promise.resolve({ statusCode: 200, body: {} });
  },
});

const Page = z.object({ limit: lenientInteger(1, 1000, 100), offset: lenientInteger(0, 1_000_000, 0) });

export const tracesByName = defineRoute({
  method: 'GET',
  path: '/api/v1/traces/by-name/{name}',
  group: 'admin',
  summary: 'Traces carrying a name: none (Sluice stores no traces).',
  params: z.object({ name: z.string().min(1).max(1024) }),
  query: Page,
  access: { action: 'consume' },
  run({ query }) {
    return Promise.resolve({ statusCode: 200, body: { traces: [], total: 0, pagination: query } });
  },
});

export const traceNames = defineRoute({
  method: 'GET',
  path: '/api/v1/traces/names',
  group: 'admin',
  summary: 'Trace names: none (Sluice stores no traces).',
  query: Page,
  access: { action: 'consume' },
  run({ query }) {
    return Promise.resolve({ statusCode: 200, body: { trace_names: [], total: 0, pagination: query } });
  },
});

export const messageTraces = defineRoute({
  method: 'GET',
  path: '/api/v1/traces/{partitionId}/{transactionId}',
  group: 'admin',
  summary: "A message's traces: none (Sluice stores no traces).",
  params: MessageParams,
  access: { action: 'consume' },
  run() {
    return Promise.resolve({ statusCode: 200, body: { traces: [] } });
  },
});

export const systemRoutes: RouteDef[] = [
  maintenanceStatus,
  popMaintenanceStatus,
  statsRefresh,
  tracesByName,
  traceNames,
  messageTraces,
];
