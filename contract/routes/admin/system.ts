/**
 * The service itself: liveness and readiness (public), this API's OpenAPI document, the local
 * server's Prometheus metrics (not deployed: on AWS, CloudWatch holds them), and Queen's system
 * routes that have no counterpart here, answered with their neutral values so Queen's dashboard
 * and `queenctl` work unchanged (docs/QUEEN-COMPAT.md): maintenance status (Sluice has no push
 * buffer and no pop pause), traces (Sluice stores none), the stats refresh (its counters are
 * computed on each read).
 */
import { z } from 'zod';
import { route, text } from '../../route.js';
import { MessageParams, count, isoTime, lenientInteger } from '../../schemas.js';

// ------------------------------------------------------------------- health

const backend = z.enum(['embedded', 'aws']);
/** A probe that failed: why, in words that name no internals. */
const Failed = { backend, reason: z.string(), error: z.string().describe("The failure's kind (its error name).") };

export const health = route({
  method: 'GET',
  path: '/health',
  group: 'log',
  summary: 'Liveness: 200 healthy, 200 degraded while writes fail (with a reason), 503 when storage is unreachable.',
  access: { action: 'public' },
  response: {
    // Queen's `{"status": "healthy", "database": "connected"}` while all is well.
    200: z.discriminatedUnion('status', [
      z
        .object({ status: z.literal('healthy'), database: z.literal('connected'), backend, version: z.string() })
        .strict(),
      z
        .object({
          status: z.literal('degraded'),
          database: z.literal('connected'),
          backend,
          version: z.string(),
          reason: z.string(),
          writeFailures: z.number().int().min(1),
          lastWriteFailure: z.object({ at: isoTime, kind: z.string() }).strict().optional(),
        })
        .strict(),
    ]),
    503: z.object({ status: z.literal('unhealthy'), database: z.literal('disconnected'), ...Failed }).strict(),
  },
});

export const ready = route({
  method: 'GET',
  path: '/ready',
  group: 'log',
  summary: 'Readiness: a probe write; 200 when storage is reachable and writable, 503 when not.',
  access: { action: 'public' },
  response: {
    200: z.object({ status: z.literal('ready'), backend, version: z.string() }).strict(),
    503: z.object({ status: z.literal('not_ready'), ...Failed }).strict(),
  },
});

// ------------------------------------------------------------------ openapi

export const openApi = route({
  method: 'GET',
  path: '/api/v1/openapi.json',
  group: 'admin',
  summary: 'This API as an OpenAPI 3.1 document, generated from the route table and its zod schemas.',
  access: { action: 'public' },
  response: {
    200: z
      .object({
        openapi: z.literal('3.1.0'),
        info: z.object({ title: z.string(), version: z.string() }).loose(),
        paths: z.record(z.string(), z.record(z.string(), z.object({ operationId: z.string() }).loose())),
      })
      .loose(),
  },
});

// ------------------------------------------------------------------ metrics

const metricsRoute = (path: string, summary: string) =>
  route({
    method: 'GET',
    path,
    group: 'admin',
    summary,
    // Open on the loopback server without grants; with grants, series labelled by a queue only
    // for queues the caller may manage.
    access: { action: 'manage' },
    response: { 200: text('text/plain', z.string().describe('Prometheus text format 0.0.4.')) },
  });

export const metrics = metricsRoute('/metrics', 'Metrics in Prometheus text format (local server only).');
export const metricsPrometheus = metricsRoute(
  '/metrics/prometheus',
  'Metrics in Prometheus text format, where Queen serves them (local server only).',
);

// ------------------------------------------------------------ Queen's system

export const maintenanceStatus = route({
  method: 'GET',
  path: '/api/v1/system/maintenance',
  group: 'admin',
  summary: 'Maintenance modes: always off (Sluice buffers no pushes and never pauses pops).',
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        maintenanceMode: z.literal(false),
        popMaintenanceMode: z.literal(false),
        bufferedMessages: z.literal(0),
        bufferHealthy: z.literal(true),
        bufferStats: z
          .object({
            pendingCount: z.literal(0),
            failedCount: z.literal(0),
            dbHealthy: z.literal(true),
            failedFiles: z
              .object({
                count: z.literal(0),
                totalBytes: z.literal(0),
                totalMB: z.literal(0),
                failoverCount: z.literal(0),
                qos0Count: z.literal(0),
              })
              .strict(),
          })
          .strict(),
      })
      .strict(),
  },
});

export const popMaintenanceStatus = route({
  method: 'GET',
  path: '/api/v1/system/maintenance/pop',
  group: 'admin',
  summary: 'Pop maintenance mode: always off.',
  access: { action: 'consume' },
  response: { 200: z.object({ popMaintenanceMode: z.literal(false), message: z.string() }).strict() },
});

export const statsRefresh = route({
  method: 'POST',
  path: '/api/v1/stats/refresh',
  group: 'admin',
  summary: 'Nothing to refresh: the admin counters are computed on each read.',
  access: { action: 'manage' },
  response: { 200: z.object({}).strict() },
});

const Page = z.object({ limit: lenientInteger(1, 1000, 100), offset: lenientInteger(0, 1_000_000, 0) });
const Pagination = z.object({ limit: count, offset: count }).strict();
const none = z.array(z.never());

export const tracesByName = route({
  method: 'GET',
  path: '/api/v1/traces/by-name/{name}',
  group: 'admin',
  summary: 'Traces carrying a name: none (Sluice stores no traces).',
  params: z.object({ name: z.string().min(1).max(1024) }),
  query: Page,
  access: { action: 'consume' },
  response: { 200: z.object({ traces: none, total: z.literal(0), pagination: Pagination }).strict() },
});

export const traceNames = route({
  method: 'GET',
  path: '/api/v1/traces/names',
  group: 'admin',
  summary: 'Trace names: none (Sluice stores no traces).',
  query: Page,
  access: { action: 'consume' },
  response: { 200: z.object({ trace_names: none, total: z.literal(0), pagination: Pagination }).strict() },
});

export const messageTraces = route({
  method: 'GET',
  path: '/api/v1/traces/{partitionId}/{transactionId}',
  group: 'admin',
  summary: "A message's traces: none (Sluice stores no traces).",
  params: MessageParams,
  access: { action: 'consume' },
  response: { 200: z.object({ traces: none }).strict() },
});
