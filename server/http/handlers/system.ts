/**
 * Queen's system routes that have no counterpart here, answered with their neutral values so
 * Queen's dashboard and `queenctl` work unchanged (docs/QUEEN-COMPAT.md): maintenance status
 * (Sluice has no push buffer and no pop pause), traces (Sluice stores none), and the stats
 * refresh (its counters are computed on each read, so there is nothing to refresh).
 */
import * as systemApi from '../../../contract/routes/admin/system.js';
import { implement, type RouteDef } from '../route.js';

export const maintenanceStatus = implement(systemApi.maintenanceStatus, [], () => {
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
});

export const popMaintenanceStatus = implement(systemApi.popMaintenanceStatus, [], () => {
  return Promise.resolve({
    statusCode: 200,
    body: { popMaintenanceMode: false, message: 'Sluice never pauses pops' },
  });
});

export const statsRefresh = implement(systemApi.statsRefresh, [], () => {
  return Promise.resolve({ statusCode: 200, body: {} });
});

export const tracesByName = implement(systemApi.tracesByName, [], ({ query }) => {
  return Promise.resolve({ statusCode: 200, body: { traces: [], total: 0, pagination: query } });
});

export const traceNames = implement(systemApi.traceNames, [], ({ query }) => {
  return Promise.resolve({ statusCode: 200, body: { trace_names: [], total: 0, pagination: query } });
});

export const messageTraces = implement(systemApi.messageTraces, [], () => {
  return Promise.resolve({ statusCode: 200, body: { traces: [] } });
});

export const systemRoutes: RouteDef[] = [
  maintenanceStatus,
  popMaintenanceStatus,
  statsRefresh,
  tracesByName,
  traceNames,
  messageTraces,
];
