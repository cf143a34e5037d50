/**
 * Queen's JSON shapes the admin answers share (docs/QUEEN-COMPAT.md): a queue's identity and
 * row, its config card, message counters, a partition with its counters and each group's
 * position on it, a time window, the one "worker" this process is. Fields Queen fills from
 * PostgreSQL or its worker threads answer their neutral values (`z.literal(0)`).
 */
import { z } from 'zod';
import { QueueOptionsAnswer } from '../../queue-options.js';
import { count, integer, isoTime, isoTimeOrNull } from '../../schemas.js';

/** A rate, per second (three decimals). */
export const rate = z.number().min(0);
/** Milliseconds of lag (an average may be fractional). */
export const lagMs = z.number().min(0);

/** Message counters of a queue or partition. */
export const Counters = z
  .object({
    total: count,
    pending: count,
    processing: count,
    completed: count,
    failed: count,
    deadLetter: count,
  })
  .strict();

/** The counters queue listings show. */
export const ListCounters = z.object({ total: count, pending: count, processing: count, completed: count }).strict();

/** A queue's identity fields, in Queen's words. */
export const QueueIdentity = z.object({
  id: z.string(),
  name: z.string(),
  namespace: z.string(),
  task: z.string(),
  createdAt: isoTimeOrNull,
});

/** A queue row of `GET /api/v1/resources/queues` (queenctl's extra columns included). */
export const QueueRow = QueueIdentity.extend({
  priority: integer,
  partitions: count,
  partitionCount: count,
  messages: ListCounters,
  leaseTime: count,
  retryLimit: count,
  maxSize: count,
  encryptionEnabled: z.boolean(),
}).strict();

/** A queue's options as Queen's QueueDetail config card reads them (leaseTime in s, retryDelay in ms). */
export const QueueConfig = QueueOptionsAnswer.extend({ maxQueueSize: count }).strict();

/** A partition with its counters (as `messages` and `stats`), stored offsets and each group's position. */
export const PartitionAnswer = z
  .object({
    id: z.string(),
    name: z.string(),
    createdAt: isoTimeOrNull,
    messages: Counters,
    stats: Counters,
    cursor: z.object({ totalConsumed: count, batchesConsumed: z.literal(0) }).strict(),
    lastActivity: isoTimeOrNull,
    oldestMessage: isoTimeOrNull,
    newestMessage: isoTimeOrNull,
    firstOffset: count,
    nextOffset: count,
    consumers: z.array(
      z
        .object({
          group: z.string(),
          kind: z.enum(['lease', 'claim']),
          nextOffset: count,
          lag: count,
          inFlight: count,
          leaseExpiresAt: isoTimeOrNull,
        })
        .strict(),
    ),
  })
  .strict();

/** The window a series covers. */
export const TimeRange = z.object({ from: isoTime, to: isoTime }).strict();

/** This process as Queen's one "worker" row (no worker threads here: the counters are 0). */
export const WorkerAnswer = z
  .object({
    hostname: z.string(),
    workerId: z.literal(0),
    avgEventLoopLagMs: z.literal(0),
    maxEventLoopLagMs: z.literal(0),
    freeSlots: z.literal(0),
    dbConnections: z.literal(0),
    jobQueueSize: z.literal(0),
    backoffSize: z.literal(0),
    messagesProcessed: count,
    lastSeen: isoTime,
  })
  .strict();
