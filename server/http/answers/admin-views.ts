/**
 * Queen's JSON shapes for the admin views (docs/QUEEN-COMPAT.md), shared by the resources,
 * status, analytics and consumer-group routes: a queue row, a queue's config card, a partition
 * with its counters, a series' time range, and the fields Queen fills from PostgreSQL
 * or its worker threads, which answer their neutral values here.
 */
import { hostname } from 'node:os';
import { effectiveLeaseSeconds } from '../../core/queue-options.js';
import type { MessageCounters, Window } from '../../core/queue-stats.js';
import type { PartitionStats, QueueStatsView } from '../../service/admin/queue-stats.js';
import type { QueueRecord } from '../../service/log/log-store.js';
import { iso } from '../iso.js';

/** A series' window as Queen writes it: `{from, to}` in ISO-8601. */
export const timeRangeJson = (w: Window) => ({ from: iso(w.from), to: iso(w.to) });

/** A queue's options as Queen's QueueDetail config card reads them (leaseTime in s, retryDelay in ms). */
export function configJson(q: QueueRecord): Record<string, unknown> {
  return {
    ...q.options,
    leaseTime: effectiveLeaseSeconds(undefined, q.options.leaseTime),
    maxQueueSize: q.options.maxSize,
  };
}

/** A queue's identity fields, in Queen's words. */
export function queueIdentity(q: QueueRecord): Record<string, unknown> {
  return {
    id: q.queueId,
    name: q.name,
    namespace: q.namespace,
    task: q.task,
    createdAt: iso(q.createdAt),
  };
}

/** A queue row of `GET /api/v1/resources/queues` (queenctl's extra columns included). */
export function queueRowJson(v: QueueStatsView): Record<string, unknown> {
  const q = v.queue;
  return {
    ...queueIdentity(q),
    priority: q.options.priority,
    partitions: v.partitions.length,
    partitionCount: v.partitions.length,
    messages: {
      total: v.totals.total,
      pending: v.totals.pending,
      processing: v.totals.processing,
      completed: v.totals.completed,
    },
    leaseTime: effectiveLeaseSeconds(undefined, q.options.leaseTime),
    retryLimit: q.options.retryLimit,
    maxSize: q.options.maxSize,
    encryptionEnabled: q.options.encryptionEnabled,
  };
}

export const countersJson = (c: MessageCounters) => ({ ...c });

/**
 * A partition with its counters (under both of Queen's names, `messages` and `stats`), its
 * stored offsets and each group's position on it.
 */
export function partitionJson(p: PartitionStats): Record<string, unknown> {
  return {
    id: p.ref.id,
    name: p.ref.name,
    createdAt: iso(p.ref.createdAt),
    messages: countersJson(p.counters),
    stats: countersJson(p.counters),
    cursor: { totalConsumed: p.consumed, batchesConsumed: 0 },
    lastActivity: iso(p.newestAt),
    oldestMessage: iso(p.oldestAt),
    newestMessage: iso(p.newestAt),
    firstOffset: p.head,
    nextOffset: p.tail,
    consumers: p.lanes.map((l) => ({
      group: l.group,
      kind: l.kind,
      nextOffset: l.doneBelow,
      lag: Math.max(0, p.tail - Math.max(l.doneBelow, p.head)),
      inFlight: l.out ? l.out.to - l.out.from : 0,
      leaseExpiresAt: l.out ? iso(l.out.until) : null,
    })),
  };
}

/** This process as Queen's one "worker" row (no worker threads here: the counters are 0). */
export function workerJson(messagesProcessed: number, now: number): Record<string, unknown> {
  return {
    hostname: hostname(),
    workerId: 0,
    avgEventLoopLagMs: 0,
    maxEventLoopLagMs: 0,
    freeSlots: 0,
    dbConnections: 0,
    jobQueueSize: 0,
    backoffSize: 0,
    messagesProcessed,
    lastSeen: iso(now),
  };
}

/** Per second over a bucket of `minutes`, as a JSON number. */
export const perSecond = (n: number, minutes: number): number => Math.round((n / (minutes * 60)) * 1000) / 1000;
