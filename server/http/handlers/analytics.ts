/**
 * Queen's analytics series (docs/QUEEN-COMPAT.md): per-queue operations and pop lag from this
 * process's activity; worker and system metrics for this one process; retention and parked
 * consumers, which Sluice does not track, as empty series of Queen's shape, so every view
 * renders. The caller sees series of the queues it may consume.
 */
import * as analyticsApi from '../../../contract/routes/admin/analytics.js';
import { bucketIso, bucketMinutes, bucketStarts, windowOf } from '../../core/queue-stats.js';
import { addRow, emptyRow } from '../../service/admin/activity.js';
import { implement, type RouteDef } from '../route.js';
import { perSecond, timeRangeJson, workerJson } from '../answers/admin-views.js';
import { bucketsOf } from '../../service/admin/views.js';
import { hostname } from 'node:os';

export const queueOps = implement(
  analyticsApi.queueOps,
  ['activity', 'clock', 'queues'],
  async ({ query, services, allowed }) => {
    const w = windowOf(query, services.clock());
    const minutes = bucketMinutes(w);
    const starts = bucketStarts(w, minutes);
    const all = await services.activity.seriesEverywhere(starts, minutes);
    const names =
      query.queue !== undefined
        ? allowed(query.queue)
          ? [query.queue]
          : []
        : [...all.keys()].filter((q) => allowed(q)).sort();
    const partitionCounts = new Map<string, number>();
    for (const q of names) partitionCounts.set(q, (await services.queues.listPartitions(q)).length);
    const series = starts.flatMap((start, i) =>
      names.map((q) => {
        const r = all.get(q)?.[i] ?? emptyRow();
        return {
          bucket: bucketIso(start),
          queueName: q,
          pushRequests: r.pushRequests,
          pushMessages: r.pushMessages,
          popMessages: r.popMessages + r.claimMessages,
          popEmpty: r.popEmpty,
          ackRequests: r.ackRequests,
          ackSuccess: r.ackSuccess + r.claimAcks,
          ackFailed: r.ackFailed,
          transactions: r.transactions,
          partitionsCreated: 0,
          partitionsDeleted: 0,
          partitionCount: partitionCounts.get(q) ?? 0,
          avgLagMs: r.avgLagMs,
          maxLagMs: r.maxLagMs,
          pushPerSecond: perSecond(r.pushMessages, minutes),
          popPerSecond: perSecond(r.popMessages + r.claimMessages, minutes),
          ackPerSecond: perSecond(r.ackSuccess + r.claimAcks, minutes),
          emptyPerSecond: perSecond(r.popEmpty, minutes),
          parkedCount: 0,
        };
      }),
    );
    return { statusCode: 200, body: { timeRange: timeRangeJson(w), bucketMinutes: minutes, series, queues: names } };
  },
);

export const queueLag = implement(
  analyticsApi.queueLag,
  ['activity', 'clock'],
  async ({ query, services, allowed }) => {
    const w = windowOf(query, services.clock());
    const starts = bucketStarts(w, 1);
    const out: Record<string, unknown>[] = [];
    for (const [q, rows] of await services.activity.seriesEverywhere(starts, 1)) {
      if (!allowed(q) || (query.queue !== undefined && q !== query.queue)) continue;
      rows.forEach((r, i) => {
        if (r.lagCount === 0) return;
        out.push({
          queueName: q,
          popCount: r.lagCount,
          avgLagMs: r.avgLagMs,
          maxLagMs: r.maxLagMs,
          bucketTime: bucketIso(starts[i]!),
        });
      });
    }
    out.sort((a, b) => ((a.bucketTime as string) < (b.bucketTime as string) ? 1 : -1));
    return Promise.resolve({ statusCode: 200, body: out });
  },
);

export const parkedReplicas = implement(analyticsApi.parkedReplicas, ['clock'], ({ query, services }) => {
  const w = windowOf(query, services.clock());
  return Promise.resolve({
    statusCode: 200,
    body: { timeRange: timeRangeJson(w), bucketMinutes: bucketMinutes(w), series: [], replicas: [] },
  });
});

export const retention = implement(analyticsApi.retention, ['clock'], ({ query, services }) => {
  const w = windowOf(query, services.clock());
  const minutes = bucketMinutes(w);
  const zeros = { retentionMsgs: 0, completedRetentionMsgs: 0, evictionMsgs: 0, totalMsgs: 0, eventCount: 0 };
  return Promise.resolve({
    statusCode: 200,
    body: {
      timeRange: timeRangeJson(w),
      bucketMinutes: minutes,
      series: bucketStarts(w, minutes).map((s) => ({ bucket: bucketIso(s), ...zeros })),
      totals: zeros,
    },
  });
});

export const workerMetrics = implement(
  analyticsApi.workerMetrics,
  ['activity', 'clock'],
  async ({ query, services, allowed }) => {
    const now = services.clock();
    const w = windowOf(query, now);
    const minutes = bucketMinutes(w);
    const { starts, rows } = await bucketsOf(services, w, minutes, (q) => allowed(q));
    const total = emptyRow();
    const timeSeries = starts
      .map((start, i) => {
        const r = rows[i]!;
        addRow(total, r);
        const pops = r.popMessages + r.claimMessages;
        const acks = r.ackSuccess + r.claimAcks;
        return {
          bucket: bucketIso(start),
          timestamp: bucketIso(start),
          pushMessages: r.pushMessages,
          popMessages: pops,
          ackMessages: acks,
          pushRequests: r.pushRequests,
          popRequests: r.popRequests + r.claimPolls,
          ackRequests: r.ackRequests,
          jobsDone: r.pushRequests + r.popRequests + r.claimPolls + r.ackRequests,
          pushPerSecond: perSecond(r.pushMessages, minutes),
          popPerSecond: perSecond(pops, minutes),
          ackPerSecond: perSecond(acks, minutes),
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
          ackSuccess: acks,
          ackFailed: r.ackFailed,
          dlqCount: r.deadLetters,
        };
      })
      .reverse();
    const queues = [
      ...(await services.activity.seriesEverywhere([starts[0] ?? w.from], Math.ceil((w.to - w.from) / 60_000))),
    ]
      .filter(([q]) => allowed(q))
      .map(([q, [r]]) => ({
        queueName: q,
        popCount: r?.lagCount ?? 0,
        avgLagMs: r?.avgLagMs ?? 0,
        maxLagMs: r?.maxLagMs ?? 0,
      }));
    return Promise.resolve({
      statusCode: 200,
      body: {
        timeRange: timeRangeJson(w),
        bucketMinutes: minutes,
        pointCount: timeSeries.length,
        timeSeries,
        workers: [workerJson(total.ackSuccess + total.claimAcks, now)],
        queues,
        summary: {
          totalPushMessages: total.pushMessages,
          totalPopMessages: total.popMessages + total.claimMessages,
          totalAckMessages: total.ackSuccess + total.claimAcks,
          totalDlqMessages: total.deadLetters,
        },
      },
    });
  },
);

/** Queen's `{avg, min, max, last}` of one sampled value (one sample here). */
const sample = (v: number) => ({ avg: v, min: v, max: v, last: v });

export const systemMetrics = implement(analyticsApi.systemMetrics, ['clock', 'config'], ({ query, services }) => {
  const now = services.clock();
  const w = windowOf(query, now);
  const cpu = process.cpuUsage();
  const upUs = Math.max(1, process.uptime() * 1e6);
  const mem = process.memoryUsage();
  const zero = sample(0);
  return Promise.resolve({
    statusCode: 200,
    body: {
      timeRange: timeRangeJson(w),
      bucketMinutes: bucketMinutes(w),
      pointCount: 1,
      replicaCount: 1,
      replicas: [
        {
          hostname: hostname(),
          port: services.config.port,
          workerId: 0,
          timeSeries: [
            {
              timestamp: bucketIso(Math.floor(now / 60_000) * 60_000),
              sampleCount: 1,
              metrics: {
                cpu: {
                  user_us: sample(Math.round((cpu.user / upUs) * 10_000)),
                  system_us: sample(Math.round((cpu.system / upUs) * 10_000)),
                },
                memory: { rss_bytes: sample(mem.rss), virtual_bytes: sample(mem.heapTotal + mem.external) },
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
    },
  });
});

export const analyticsRoutes: RouteDef[] = [
  queueOps,
  queueLag,
  parkedReplicas,
  retention,
  workerMetrics,
  systemMetrics,
];
