/**
 * Queen's status routes (docs/QUEEN-COMPAT.md): the cluster status with its throughput series,
 * the queue list with counters, one queue with its config and partitions, and messages created
 * per interval. Worker-thread and PostgreSQL fields answer their neutral values.
 */
import { z } from 'zod';
import { route } from '../../route.js';
import { count, integer, isoTime, lenientInteger, nameSchema, optionalFilter, optionalInstant } from '../../schemas.js';
import {
  Counters,
  ListCounters,
  PartitionAnswer,
  QueueConfig,
  QueueIdentity,
  TimeRange,
  WorkerAnswer,
  lagMs,
  rate,
} from './views.js';

const StatusQuery = z.object({
  from: optionalInstant,
  to: optionalInstant,
  queue: optionalFilter,
  namespace: optionalFilter,
  task: optionalFilter,
});

/** One bucket of the cluster's throughput. */
const ThroughputPoint = z
  .object({
    timestamp: isoTime,
    ingested: count,
    processed: count,
    popMessages: count,
    ingestedPerSecond: rate,
    processedPerSecond: rate,
    popPerSecond: rate,
    avgLagMs: lagMs,
    maxLagMs: lagMs,
    avgEventLoopLagMs: z.literal(0),
    maxEventLoopLagMs: z.literal(0),
    minFreeSlots: z.literal(0),
    dbErrors: z.literal(0),
    ackFailed: count,
    dlqCount: count.describe('Dead letters up to this bucket, in the window.'),
    queenCpuUserPct: z.null(),
    queenCpuSysPct: z.null(),
    queenRssMb: z.null(),
    dbPoolActive: z.literal(0),
    dbPoolIdle: z.literal(0),
    dbPoolSize: z.literal(0),
  })
  .strict();

/** Per-kind figures: pushes, pops (claim polls included) and acks. */
const PerKind = (n: z.ZodNumber) => z.object({ push: n, pop: n, ack: n }).strict();

export const status = route({
  method: 'GET',
  path: '/api/v1/status',
  group: 'admin',
  summary:
    'Throughput per bucket (newest first), message counters, leases and dead letters of the queues the caller may see.',
  query: StatusQuery,
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        timeRange: TimeRange,
        bucketMinutes: z.number().int().min(1),
        pointCount: count,
        throughput: z.array(ThroughputPoint),
        queues: z.array(QueueIdentity.extend({ partitions: count, totalConsumed: count }).strict()),
        messages: Counters.extend({
          requests: PerKind(count),
          batchEfficiency: PerKind(z.number().min(0)),
        }).strict(),
        leases: z
          .object({ active: count, partitionsWithLeases: count, totalBatchSize: count, totalAcked: count })
          .strict(),
        deadLetterQueue: z
          .object({ totalMessages: count, affectedPartitions: count, topErrors: z.array(z.never()) })
          .strict(),
        workers: z.array(WorkerAnswer),
        errors: z.object({ dbErrors: z.literal(0), ackFailed: count, dlqMessages: count }).strict(),
        statsAge: z.literal(0),
      })
      .strict(),
  },
});

export const statusQueues = route({
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
  response: {
    200: z
      .object({
        queues: z.array(QueueIdentity.extend({ partitions: count, messages: ListCounters }).strict()),
        pagination: z.object({ limit: count, offset: count }).strict(),
      })
      .strict(),
  },
});

export const statusQueue = route({
  method: 'GET',
  path: '/api/v1/status/queues/{queue}',
  group: 'admin',
  summary: "One queue's config, partitions (counters, cursor totals, activity times) and totals.",
  params: z.object({ queue: nameSchema('queue') }),
  // Sent by queenctl; partitions are always included, as in Queen.
  query: z.object({ includePartitions: z.string().optional() }),
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  response: {
    200: z
      .object({
        queue: QueueIdentity.extend({ priority: integer, config: QueueConfig }).strict(),
        partitions: z.array(PartitionAnswer),
        totals: Counters.extend({ messages: Counters }).strict(),
      })
      .strict(),
  },
});

export const statusAnalytics = route({
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
  response: {
    200: z
      .object({
        dataPoints: z.array(z.object({ timestamp: isoTime, messages: count }).strict()),
        interval: z.enum(['minute', 'hour', 'day']),
        from: isoTime,
        to: isoTime,
      })
      .strict(),
  },
});
