/**
 * Queen's JSON shapes of the status routes (docs/QUEEN-COMPAT.md), written from the reads in
 * service/admin/status.ts and views.ts: worker-thread and PostgreSQL fields answer their
 * neutral values (0, null), since Sluice has neither.
 */
import { bucketIso, type Window } from '../../core/queue-stats.js';
import type { ActivityRow } from '../../service/admin/activity.js';
import type { QueueStatsView } from '../../service/admin/queue-stats.js';
import type { ClusterStatus, PushInterval } from '../../service/admin/status.js';
import { iso } from '../iso.js';
import {
  configJson,
  countersJson,
  partitionJson,
  perSecond,
  queueIdentity,
  timeRangeJson,
  workerJson,
} from './admin-views.js';

/** Messages delivered (pops and claim polls) and finished (acks) in a row. */
const delivered = (r: ActivityRow): number => r.popMessages + r.claimMessages;
const finished = (r: ActivityRow): number => r.ackSuccess + r.claimAcks;

/** `a / b` to two decimals, 0 when nothing was asked. */
const ratio = (a: number, b: number): number => (b > 0 ? Math.round((a / b) * 100) / 100 : 0);

/**
 * `GET /api/v1/status`: throughput newest bucket first, with the dead letters so far in each.
 *
 * @example
 * ```ts
 * const body = statusJson(await clusterStatus(services, query, (q) => allowed(q)));
 * ```
 */
export function statusJson(s: ClusterStatus): Record<string, unknown> {
  const { minutes, total, counters } = s;
  let dlqRunning = 0;
  const throughput = s.starts
    .map((start, i) => {
      const r = s.rows[i]!;
      dlqRunning += r.deadLetters;
      return {
        timestamp: bucketIso(start),
        ingested: r.pushMessages,
        processed: finished(r),
        popMessages: delivered(r),
        ingestedPerSecond: perSecond(r.pushMessages, minutes),
        processedPerSecond: perSecond(finished(r), minutes),
        popPerSecond: perSecond(delivered(r), minutes),
        avgLagMs: r.avgLagMs,
        maxLagMs: r.maxLagMs,
        avgEventLoopLagMs: 0,
        maxEventLoopLagMs: 0,
        minFreeSlots: 0,
        dbErrors: 0,
        ackFailed: r.ackFailed,
        dlqCount: dlqRunning,
        queenCpuUserPct: null,
        queenCpuSysPct: null,
        queenRssMb: null,
        dbPoolActive: 0,
        dbPoolIdle: 0,
        dbPoolSize: 0,
      };
    })
    .reverse();
  return {
    timeRange: timeRangeJson(s.window),
    bucketMinutes: minutes,
    pointCount: throughput.length,
    throughput,
    queues: s.views.map((v) => ({
      ...queueIdentity(v.queue),
      partitions: v.partitions.length,
      totalConsumed: v.partitions.reduce((n, p) => n + p.consumed, 0),
    })),
    messages: {
      ...counters,
      requests: { push: total.pushRequests, pop: total.popRequests + total.claimPolls, ack: total.ackRequests },
      batchEfficiency: {
        push: ratio(total.pushMessages, total.pushRequests),
        pop: ratio(delivered(total), total.popRequests + total.claimPolls),
        ack: ratio(total.ackSuccess + total.ackFailed, total.ackRequests),
      },
    },
    leases: { ...s.leases, totalAcked: finished(total) },
    deadLetterQueue: {
      totalMessages: counters.deadLetter,
      affectedPartitions: s.deadLetterPartitions,
      topErrors: [],
    },
    workers: [workerJson(finished(total), s.now)],
    errors: { dbErrors: 0, ackFailed: total.ackFailed, dlqMessages: counters.deadLetter },
    statsAge: 0,
  };
}

/**
 * `GET /api/v1/status/queues`: one page of queues; `pending` includes messages under lease.
 *
 * @example
 * ```ts
 * const body = statusQueuesJson(await visibleQueueViews(services, (q) => allowed(q), query), query);
 * ```
 */
export function statusQueuesJson(
  views: readonly QueueStatsView[],
  page: { limit: number; offset: number },
): Record<string, unknown> {
  return {
    queues: views.map((v) => ({
      ...queueIdentity(v.queue),
      partitions: v.partitions.length,
      messages: {
        total: v.totals.total,
        pending: v.totals.pending + v.totals.processing,
        processing: v.totals.processing,
        completed: v.totals.completed,
      },
    })),
    pagination: { limit: page.limit, offset: page.offset },
  };
}

/**
 * `GET /api/v1/status/queues/{queue}`: the queue with its config card, partitions and totals.
 *
 * @example
 * ```ts
 * const body = statusQueueJson(await queueView(services, 'orders'));
 * ```
 */
export function statusQueueJson(view: QueueStatsView): Record<string, unknown> {
  const q = view.queue;
  const totals = countersJson(view.totals);
  return {
    queue: { ...queueIdentity(q), priority: q.options.priority, config: configJson(q) },
    partitions: view.partitions.map(partitionJson),
    totals: { messages: totals, ...totals },
  };
}

/**
 * `GET /api/v1/status/analytics`: messages pushed per interval, oldest first.
 *
 * @example
 * ```ts
 * const body = statusAnalyticsJson(await pushesPerInterval(services, query, 'hour', see), 'hour');
 * ```
 */
export function statusAnalyticsJson(
  r: { window: Window; starts: readonly number[]; pushed: readonly number[] },
  interval: PushInterval,
): Record<string, unknown> {
  return {
    dataPoints: r.starts.map((s, i) => ({ timestamp: bucketIso(s), messages: r.pushed[i]! })),
    interval,
    from: iso(r.window.from),
    to: iso(r.window.to),
  };
}
