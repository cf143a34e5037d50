/**
 * Queen's analytics series (docs/QUEEN-COMPAT.md): per-queue operations and pop lag; worker
 * and system metrics of the one process; retention and parked consumers, which Sluice does not
 * track, as empty series of Queen's shape, so every view renders.
 */
import { z } from 'zod';
import { route } from '../../route.js';
import { count, isoTime, optionalFilter, optionalInstant } from '../../schemas.js';
import { TimeRange, WorkerAnswer, lagMs, rate } from './views.js';

const SeriesQuery = z.object({ from: optionalInstant, to: optionalInstant, queue: optionalFilter });
/** `hostname` and `workerId` select a replica in Queen; there is one here. */
const ReplicaQuery = SeriesQuery.extend({ hostname: z.string().optional(), workerId: z.string().optional() });

const bucketMinutes = z.number().int().min(1);
const zero = z.literal(0);

export const queueOps = route({
  method: 'GET',
  path: '/api/v1/analytics/queue-ops',
  group: 'admin',
  summary: 'Per queue and bucket (oldest first): pushes, pops, empty pops, acks, transactions, pop lag, rates.',
  query: SeriesQuery,
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        timeRange: TimeRange,
        bucketMinutes,
        series: z.array(
          z
            .object({
              bucket: isoTime,
              queueName: z.string(),
              pushRequests: count,
              pushMessages: count,
              popMessages: count,
              popEmpty: count,
              ackRequests: count,
              ackSuccess: count,
              ackFailed: count,
              transactions: count,
              partitionsCreated: zero,
              partitionsDeleted: zero,
              partitionCount: count,
              avgLagMs: lagMs,
              maxLagMs: lagMs,
              pushPerSecond: rate,
              popPerSecond: rate,
              ackPerSecond: rate,
              emptyPerSecond: rate,
              parkedCount: zero,
            })
            .strict(),
        ),
        queues: z.array(z.string()),
      })
      .strict(),
  },
});

/** Pop lag of one queue over one bucket. */
const QueueLagPoint = { queueName: z.string(), popCount: count, avgLagMs: lagMs, maxLagMs: lagMs };

export const queueLag = route({
  method: 'GET',
  path: '/api/v1/analytics/queue-lag',
  group: 'admin',
  summary: 'Age of popped messages per queue and minute (newest first): a bare array of the minutes with pops.',
  query: SeriesQuery,
  access: { action: 'consume' },
  response: { 200: z.array(z.object({ ...QueueLagPoint, bucketTime: isoTime }).strict()) },
});

export const parkedReplicas = route({
  method: 'GET',
  path: '/api/v1/analytics/queue-parked-replicas',
  group: 'admin',
  summary: 'Parked consumers per replica: not tracked here (long polls park no worker), so empty.',
  query: SeriesQuery,
  access: { action: 'consume' },
  response: {
    200: z
      .object({ timeRange: TimeRange, bucketMinutes, series: z.array(z.never()), replicas: z.array(z.never()) })
      .strict(),
  },
});

const RetentionZeros = z
  .object({ retentionMsgs: zero, completedRetentionMsgs: zero, evictionMsgs: zero, totalMsgs: zero, eventCount: zero })
  .strict();

export const retention = route({
  method: 'GET',
  path: '/api/v1/analytics/retention',
  group: 'admin',
  summary: 'Messages removed per bucket by retention: not tracked per bucket here, so zeros in every bucket.',
  query: SeriesQuery,
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        timeRange: TimeRange,
        bucketMinutes,
        series: z.array(RetentionZeros.extend({ bucket: isoTime }).strict()),
        totals: RetentionZeros,
      })
      .strict(),
  },
});

export const workerMetrics = route({
  method: 'GET',
  path: '/api/v1/analytics/worker-metrics',
  group: 'admin',
  summary: 'This process as the one worker: messages and requests per bucket (newest first), pop lag per queue.',
  query: ReplicaQuery,
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        timeRange: TimeRange,
        bucketMinutes,
        pointCount: count,
        timeSeries: z.array(
          z
            .object({
              bucket: isoTime,
              timestamp: isoTime,
              pushMessages: count,
              popMessages: count,
              ackMessages: count,
              pushRequests: count,
              popRequests: count,
              ackRequests: count,
              jobsDone: count,
              pushPerSecond: rate,
              popPerSecond: rate,
              ackPerSecond: rate,
              avgEventLoopLagMs: zero,
              maxEventLoopLagMs: zero,
              avgFreeSlots: zero,
              minFreeSlots: zero,
              dbConnections: zero,
              avgJobQueueSize: zero,
              maxJobQueueSize: zero,
              backoffSize: zero,
              avgLagMs: lagMs,
              maxLagMs: lagMs,
              lagCount: count,
              dbErrors: zero,
              ackSuccess: count,
              ackFailed: count,
              dlqCount: count,
            })
            .strict(),
        ),
        workers: z.array(WorkerAnswer),
        queues: z.array(z.object(QueueLagPoint).strict()),
        summary: z
          .object({
            totalPushMessages: count,
            totalPopMessages: count,
            totalAckMessages: count,
            totalDlqMessages: count,
          })
          .strict(),
      })
      .strict(),
  },
});

/** Queen's `{avg, min, max, last}` of one sampled value (one sample here). */
const Sample = z.object({ avg: z.number(), min: z.number(), max: z.number(), last: z.number() }).strict();
const PoolSample = z.object({ pool_size: Sample, queue_size: Sample }).strict();

export const systemMetrics = route({
  method: 'GET',
  path: '/api/v1/analytics/system-metrics',
  group: 'admin',
  summary: 'This process as the one replica: one point now, CPU (percent × 100 since start) and memory; no pool.',
  query: ReplicaQuery,
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        timeRange: TimeRange,
        bucketMinutes,
        pointCount: z.literal(1),
        replicaCount: z.literal(1),
        replicas: z.array(
          z
            .object({
              hostname: z.string(),
              port: z.number().int(),
              workerId: zero,
              timeSeries: z.array(
                z
                  .object({
                    timestamp: isoTime,
                    sampleCount: z.literal(1),
                    metrics: z
                      .object({
                        cpu: z.object({ user_us: Sample, system_us: Sample }).strict(),
                        memory: z.object({ rss_bytes: Sample, virtual_bytes: Sample }).strict(),
                        database: z.object({ pool_size: Sample, pool_idle: Sample, pool_active: Sample }).strict(),
                        threadpool: z.object({ db: PoolSample, system: PoolSample }).strict(),
                        registries: z.object({ response: Sample }).strict(),
                        shared_state: z.object({}).strict(),
                      })
                      .strict(),
                  })
                  .strict(),
              ),
            })
            .strict(),
        ),
      })
      .strict(),
  },
});
