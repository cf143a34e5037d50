/**
 * Queen's JSON shapes for the admin views (docs/QUEEN-COMPAT.md), shared by the resources,
 * status, analytics and consumer-group routes: a queue row, a queue's config card, a partition
 * with its counters, time windows from `from`/`to`, and the fields Queen fills from PostgreSQL
 * or its worker threads, which answer their neutral values here.
 */
import { hostname } from 'node:os';
import { z } from 'zod';
import { effectiveLeaseSeconds } from '../../core/queue-options.js';
import { DEFAULT_WINDOW_MS, bucketMinutes, type MessageCounters, type Window } from '../../core/queue-stats.js';
import type { PartitionStats, QueueStatsView } from '../../service/admin/queue-stats.js';
import type { QueueRecord } from '../../service/log/log-store.js';
import { instantProblem, iso } from '../schemas.js';

/**
 * An optional instant in a query string: ISO-8601 (or epoch ms); unparsable values fall back to
 * the default, as in Queen.
 */
export const optionalInstant = z
  .string()
  .optional()
  .transform((v) => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = /^\d+$/.test(v) ? Number(v) : v;
    return instantProblem(n) === undefined ? (typeof n === 'number' ? n : Date.parse(n)) : undefined;
  });

/**
 * A query integer that falls back to its default when missing or unparsable (Queen's rule for
 * its admin routes), clamped to `[min, max]`.
 */
export const lenientInteger = (min: number, max: number, fallback: number) =>
  z
    .string()
    .optional()
    .transform((v) => {
      const n = v === undefined ? Number.NaN : Number(v);
      return Number.isInteger(n) ? Math.max(min, Math.min(max, n)) : fallback;
    });

/** An optional name filter from the query string: empty counts as absent. */
export const optionalFilter = z
  .string()
  .max(256)
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

/**
 * The longest window a series covers: counters live in memory for less than that, and a window
 * of years in one-minute buckets would be millions of rows (the route fuzz found it).
 */
export const MAX_WINDOW_MS = 7 * 24 * 3_600_000;

/** The window of a series request: `from`/`to`, by default the hour up to now, at most {@link MAX_WINDOW_MS} ending at `to`. */
export function windowOf(q: { from?: number | undefined; to?: number | undefined }, now: number): Window {
  const to = q.to ?? now;
  const from = q.from ?? to - DEFAULT_WINDOW_MS;
  if (!(from < to)) return { from: to - DEFAULT_WINDOW_MS, to };
  return { from: Math.max(from, to - MAX_WINDOW_MS), to };
}

export const timeRangeJson = (w: Window) => ({ from: iso(w.from), to: iso(w.to) });

export { bucketMinutes };

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
