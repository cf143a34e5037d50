/**
 * Queen's status routes (docs/QUEEN-COMPAT.md): the cluster status with its throughput series,
 * the queue list with counters, one queue with its config and partitions, and messages created
 * per interval. Counters come from the items the queue keeps; series from this process's
 * activity; worker-thread and PostgreSQL fields answer their neutral values.
 */
import * as statusApi from '../../../contract/routes/admin/status.js';
import { bucketIso, bucketMinutes, windowOf } from '../../core/queue-stats.js';
import { addRow, emptyRow, type ActivityRow } from '../../service/admin/activity.js';
import { bucketsOf, visibleQueue, visibleQueueViews } from '../../service/admin/views.js';
import { implement, type RouteDef } from '../route.js';
import {
  configJson,
  countersJson,
  partitionJson,
  perSecond,
  queueIdentity,
  timeRangeJson,
  workerJson,
} from '../answers/admin-views.js';
import { iso } from '../iso.js';

/** Messages delivered (pops and claim polls) and finished (acks) in a row. */
const delivered = (r: ActivityRow): number => r.popMessages + r.claimMessages;
const finished = (r: ActivityRow): number => r.ackSuccess + r.claimAcks;

export const status = implement(
  statusApi.status,
  ['activity', 'admin', 'clock'],
  async ({ query, services, allowed }) => {
    const now = services.clock();
    const w = windowOf(query, now);
    const minutes = bucketMinutes(w);
    const views = await visibleQueueViews(
      services,
      (q) => allowed(q) && (query.queue === undefined || q === query.queue),
      { namespace: query.namespace, task: query.task },
      { withDeadLetters: true },
    );
    const inScope = new Set(views.map((v) => v.queue.name));
    const { starts, rows } = await bucketsOf(services, w, minutes, (q) => inScope.has(q));
    const total = emptyRow();
    for (const r of rows) addRow(total, r);
    let dlqRunning = 0;
    const throughput = starts
      .map((start, i) => {
        const r = rows[i]!;
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
    const counters = views.reduce(
      (acc, v) => {
        for (const k of Object.keys(acc) as (keyof typeof acc)[]) acc[k] += v.totals[k];
        return acc;
      },
      { total: 0, pending: 0, processing: 0, completed: 0, failed: 0, deadLetter: 0 },
    );
    const parts = views.flatMap((v) => v.partitions);
    const leaseLanes = parts.flatMap((p) => p.lanes.filter((l) => l.kind === 'lease' && l.out !== null));
    const ratio = (a: number, b: number): number => (b > 0 ? Math.round((a / b) * 100) / 100 : 0);
    return {
      statusCode: 200,
      body: {
        timeRange: timeRangeJson(w),
        bucketMinutes: minutes,
        pointCount: throughput.length,
        throughput,
        queues: views.map((v) => ({
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
        leases: {
          active: leaseLanes.length,
          partitionsWithLeases: parts.filter((p) => p.lanes.some((l) => l.kind === 'lease' && l.out !== null)).length,
          totalBatchSize: leaseLanes.reduce((n, l) => n + (l.out ? l.out.to - l.out.from : 0), 0),
          totalAcked: finished(total),
        },
        deadLetterQueue: {
          totalMessages: counters.deadLetter,
          affectedPartitions: parts.filter((p) => p.counters.deadLetter > 0).length,
          topErrors: [],
        },
        workers: [workerJson(finished(total), now)],
        errors: { dbErrors: 0, ackFailed: total.ackFailed, dlqMessages: counters.deadLetter },
        statsAge: 0,
      },
    };
  },
);

export const statusQueues = implement(statusApi.statusQueues, ['admin'], async ({ query, services, allowed }) => {
  const views = await visibleQueueViews(services, (q) => allowed(q), query);
  return {
    statusCode: 200,
    body: {
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
      pagination: { limit: query.limit, offset: query.offset },
    },
  };
});

export const statusQueue = implement(statusApi.statusQueue, ['admin'], async ({ params, services }) => {
  const q = await visibleQueue(services, params.queue);
  const view = await services.admin.stats.queueDetail(q, { withDeadLetters: true });
  const totals = countersJson(view.totals);
  return {
    statusCode: 200,
    body: {
      queue: { ...queueIdentity(q), priority: q.options.priority, config: configJson(q) },
      partitions: view.partitions.map(partitionJson),
      totals: { messages: totals, ...totals },
    },
  };
});

const INTERVALS = { minute: 1, hour: 60, day: 1440 } as const;

export const statusAnalytics = implement(
  statusApi.statusAnalytics,
  ['activity', 'admin', 'clock'],
  async ({ query, services, allowed }) => {
    const now = services.clock();
    const to = query.to ?? now;
    const w = windowOf({ from: query.from ?? to - 86_400_000, to }, now);
    const minutes = INTERVALS[query.interval];
    const queues = await services.admin.stats.listQueues({
      visible: (q) => allowed(q) && (query.queue === undefined || q === query.queue),
      namespace: query.namespace,
      task: query.task,
    });
    const names = new Set(queues.map((q) => q.name));
    const { starts, rows } = await bucketsOf(services, w, minutes, (q) => names.has(q));
    return {
      statusCode: 200,
      body: {
        dataPoints: starts.map((s, i) => ({ timestamp: bucketIso(s), messages: rows[i]!.pushMessages })),
        interval: query.interval,
        from: iso(w.from),
        to: iso(w.to),
      },
    };
  },
);

export const statusRoutes: RouteDef[] = [status, statusQueues, statusQueue, statusAnalytics];
