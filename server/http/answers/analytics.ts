/**
 * Queen's JSON shapes of the analytics series (docs/QUEEN-COMPAT.md), written from the reads in
 * service/admin/analytics.ts: the fields Queen fills from its worker threads, PostgreSQL pool
 * or retention jobs answer their neutral values (0, empty), so every dashboard view renders.
 */
import { bucketIso } from '../../core/queue-stats.js';
import type { ActivityRow } from '../../service/admin/activity.js';
import type {
  PopLagPoint,
  ProcessSample,
  QueueOpsSeries,
  SeriesWindow,
  WorkerActivity,
} from '../../service/admin/analytics.js';
import { perSecond, timeRangeJson, workerJson } from './admin-views.js';

/** Messages delivered (pops and claim polls) and finished (acks) in a row. */
const delivered = (r: ActivityRow): number => r.popMessages + r.claimMessages;
const finished = (r: ActivityRow): number => r.ackSuccess + r.claimAcks;

/**
 * `GET /api/v1/analytics/queue-ops`: per bucket (oldest first), per queue.
 *
 * @example
 * ```ts
 * const body = queueOpsJson(await queueOpsSeries(services, query, (q) => allowed(q)));
 * ```
 */
export function queueOpsJson(r: QueueOpsSeries): Record<string, unknown> {
  const { minutes } = r;
  const series = r.starts.flatMap((start, i) =>
    r.queues.map(({ queue, partitionCount, rows }) => {
      const a = rows[i]!;
      return {
        bucket: bucketIso(start),
        queueName: queue,
        pushRequests: a.pushRequests,
        pushMessages: a.pushMessages,
        popMessages: delivered(a),
        popEmpty: a.popEmpty,
        ackRequests: a.ackRequests,
        ackSuccess: finished(a),
        ackFailed: a.ackFailed,
        transactions: a.transactions,
        partitionsCreated: 0,
        partitionsDeleted: 0,
        partitionCount,
        avgLagMs: a.avgLagMs,
        maxLagMs: a.maxLagMs,
        pushPerSecond: perSecond(a.pushMessages, minutes),
        popPerSecond: perSecond(delivered(a), minutes),
        ackPerSecond: perSecond(finished(a), minutes),
        emptyPerSecond: perSecond(a.popEmpty, minutes),
        parkedCount: 0,
      };
    }),
  );
  return {
    timeRange: timeRangeJson(r.window),
    bucketMinutes: minutes,
    series,
    queues: r.queues.map((q) => q.queue),
  };
}

/**
 * `GET /api/v1/analytics/queue-lag`: a bare array, newest minute first.
 *
 * @example
 * ```ts
 * const body = queueLagJson(await popLag(services, query, (q) => allowed(q)));
 * ```
 */
export function queueLagJson(points: readonly PopLagPoint[]): Record<string, unknown>[] {
  return points.map(({ queue, bucket, row }) => ({
    queueName: queue,
    popCount: row.lagCount,
    avgLagMs: row.avgLagMs,
    maxLagMs: row.maxLagMs,
    bucketTime: bucketIso(bucket),
  }));
}

/**
 * `GET /api/v1/analytics/queue-parked-replicas`: long polls park no worker here, so no series.
 *
 * @example
 * ```ts
 * const body = parkedReplicasJson(seriesWindow(services, query));
 * ```
 */
export function parkedReplicasJson(w: SeriesWindow): Record<string, unknown> {
  return { timeRange: timeRangeJson(w.window), bucketMinutes: w.minutes, series: [], replicas: [] };
}

/**
 * `GET /api/v1/analytics/retention`: retention is not counted per bucket here, so zeros in each.
 *
 * @example
 * ```ts
 * const body = retentionJson(seriesWindow(services, query));
 * ```
 */
export function retentionJson(w: SeriesWindow): Record<string, unknown> {
  const zeros = { retentionMsgs: 0, completedRetentionMsgs: 0, evictionMsgs: 0, totalMsgs: 0, eventCount: 0 };
  return {
    timeRange: timeRangeJson(w.window),
    bucketMinutes: w.minutes,
    series: w.starts.map((s) => ({ bucket: bucketIso(s), ...zeros })),
    totals: zeros,
  };
}

/**
 * `GET /api/v1/analytics/worker-metrics`: this process as the one worker, newest bucket first.
 *
 * @example
 * ```ts
 * const body = workerMetricsJson(await workerActivity(services, query, (q) => allowed(q)));
 * ```
 */
export function workerMetricsJson(a: WorkerActivity): Record<string, unknown> {
  const { minutes, total } = a;
  const timeSeries = a.starts
    .map((start, i) => {
      const r = a.rows[i]!;
      return {
        bucket: bucketIso(start),
        timestamp: bucketIso(start),
        pushMessages: r.pushMessages,
        popMessages: delivered(r),
        ackMessages: finished(r),
        pushRequests: r.pushRequests,
        popRequests: r.popRequests + r.claimPolls,
        ackRequests: r.ackRequests,
        jobsDone: r.pushRequests + r.popRequests + r.claimPolls + r.ackRequests,
        pushPerSecond: perSecond(r.pushMessages, minutes),
        popPerSecond: perSecond(delivered(r), minutes),
        ackPerSecond: perSecond(finished(r), minutes),
        avgEventLoopLagMs: 0,
        maxEventLoopLagMs: 0,
        avgFreeSlots: 0,
        minFreeSlots: 0,
        dbConnections: 0,
        avgJobQueueSize: 0,
        maxJobQueueSize: 0,
        backoffSize: 0,
        avgLagMs: r.avgLagMs,
        maxLagMs: r.maxLagMs,
        lagCount: r.lagCount,
        dbErrors: 0,
        ackSuccess: finished(r),
        ackFailed: r.ackFailed,
        dlqCount: r.deadLetters,
      };
    })
    .reverse();
  return {
    timeRange: timeRangeJson(a.window),
    bucketMinutes: minutes,
    pointCount: timeSeries.length,
    timeSeries,
    workers: [workerJson(finished(total), a.now)],
    queues: a.queues.map(({ queue, row }) => ({
      queueName: queue,
      popCount: row?.lagCount ?? 0,
      avgLagMs: row?.avgLagMs ?? 0,
      maxLagMs: row?.maxLagMs ?? 0,
    })),
    summary: {
      totalPushMessages: total.pushMessages,
      totalPopMessages: delivered(total),
      totalAckMessages: finished(total),
      totalDlqMessages: total.deadLetters,
    },
  };
}

/** Queen's `{avg, min, max, last}` of one sampled value (one sample here). */
const sample = (v: number) => ({ avg: v, min: v, max: v, last: v });

/**
 * `GET /api/v1/analytics/system-metrics`: this process as the one replica, one point now; no
 * database pool or worker threads, so those read 0.
 *
 * @example
 * ```ts
 * const body = systemMetricsJson(processSample(services, query));
 * ```
 */
export function systemMetricsJson(s: ProcessSample): Record<string, unknown> {
  const zero = sample(0);
  return {
    timeRange: timeRangeJson(s.window),
    bucketMinutes: s.minutes,
    pointCount: 1,
    replicaCount: 1,
    replicas: [
      {
        hostname: s.hostname,
        port: s.port,
        workerId: 0,
        timeSeries: [
          {
            timestamp: bucketIso(Math.floor(s.now / 60_000) * 60_000),
            sampleCount: 1,
            metrics: {
              cpu: { user_us: sample(s.cpu.user), system_us: sample(s.cpu.system) },
              memory: {
                rss_bytes: sample(s.memory.rss),
                virtual_bytes: sample(s.memory.heapTotal + s.memory.external),
              },
              database: { pool_size: zero, pool_idle: zero, pool_active: zero },
              threadpool: {
                db: { pool_size: zero, queue_size: zero },
                system: { pool_size: zero, queue_size: zero },
              },
              registries: { response: zero },
              shared_state: {},
            },
          },
        ],
      },
    ],
  };
}
