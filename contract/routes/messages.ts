/**
 * Messages of the log: push (one result per item, in order), read one message by its
 * transactionId, replay a partition in offset order, and browse the newest messages across
 * queues without consuming them (Queen's Messages view, `sluice peek`).
 */
import { z } from 'zod';
import { PRODUCER_ID_PATTERN } from '../limits.js';
import { isWellFormedText } from '../names.js';
import { route } from '../route.js';
import {
  MessageParams,
  count,
  integer,
  isoTime,
  isoTimeOrNull,
  lenientInteger,
  nameSchema,
  optionalFilter,
  optionalInstant,
  payload,
} from '../schemas.js';

// -------------------------------------------------------------------- push

/** One message of a push (names are checked with the sizes, before anything is written). */
export const PushItemSchema = z.object({
  queue: z.string({ error: 'queue is required and must be a string' }),
  partition: z.string({ error: 'partition must be a string' }).optional(),
  payload: z.unknown().optional(),
  data: z.unknown().optional(),
  transactionId: z
    .string({ error: 'transactionId must be a string' })
    .min(1, 'transactionId must not be empty')
    .max(256, 'transactionId must be at most 256 characters')
    // It is a storage key (the dedup reservation's sort key): it must have a UTF-8 form.
    .refine(isWellFormedText, 'transactionId must be valid Unicode text (it holds a lone UTF-16 surrogate)')
    .optional(),
  traceId: z.string({ error: 'traceId must be a string' }).max(256).nullish(),
});

const PushBody = z
  .object({
    items: z.array(PushItemSchema, { error: 'items must be an array' }),
    // Sluice's idempotent producers (docs/DELIVERY.md): Queen clients send neither.
    producerId: z
      .string({ error: 'producerId must be a string' })
      .regex(PRODUCER_ID_PATTERN, 'producerId must be 1 to 64 characters of A-Z, a-z, 0-9, ".", "_" or "-"')
      .optional(),
    sequence: z
      .number({ error: 'sequence must be a number' })
      .int('sequence must be a whole number')
      .min(0, 'sequence must not be negative')
      .max(Number.MAX_SAFE_INTEGER, 'sequence must be at most 2^53 - 1')
      .optional(),
  })
  .refine((b) => (b.producerId === undefined) === (b.sequence === undefined), {
    message: 'producerId and sequence go together: send both or neither',
    path: ['sequence'],
  });

/** One push result, in Queen's wire shape (snake_case ids). */
export const PushResultAnswer = z
  .object({
    index: count,
    status: z.enum(['queued', 'duplicate', 'failed']),
    transaction_id: z.string(),
    message_id: z.string().describe("The stored message's id; for a duplicate, the original's."),
    partition_id: z.string(),
    trace_id: z.string().nullable(),
    queueName: z.string(),
    partition: z.string(),
    offset: count.optional().describe('Offset of a message queued by this push.'),
    error: z.string().optional(),
  })
  .strict();

export const push = route({
  method: 'POST',
  path: '/api/v1/push',
  group: 'log',
  summary:
    'Push messages; one result per item, in order (201). With `producerId` and `sequence` (Sluice), a repeat of the push gets the first answer and stores nothing.',
  body: PushBody,
  access: { action: 'push', queues: ({ body }) => body.items.map((i) => i.queue) },
  response: { 201: z.array(PushResultAnswer) },
});

// ------------------------------------------------------------------- reads

/** Queen's consumption mode of a queue: queue mode, bus groups, both or none. */
export const ConsumptionMode = z
  .object({
    hasQueueMode: z.boolean(),
    busGroupsCount: count,
    type: z.enum(['queue', 'bus', 'hybrid', 'none']),
  })
  .strict();

/** A stored message as reads answer it, its payload as `data`. */
const StoredMessageAnswer = z.object({
  id: z.string(),
  offset: count,
  transactionId: z.string(),
  traceId: z.string().nullable(),
  createdAt: isoTime,
  data: payload,
});

export const getMessage = route({
  method: 'GET',
  path: '/api/v1/messages/{partitionId}/{transactionId}',
  group: 'log',
  summary: 'Read one message by partition id and transactionId.',
  params: MessageParams,
  // The queue is only known after resolving the partition id: checked in the handler.
  access: { action: 'consume' },
  response: {
    // Per-group progress: `completed` once every lease group passed it (docs/LEASES.md, Consumer
    // groups and subscriptions); Queen's message-drawer fields around it (docs/QUEEN-COMPAT.md).
    200: StoredMessageAnswer.extend({
      partitionId: z.string(),
      queue: z.string(),
      partition: z.string(),
      queuePath: z.string(),
      namespace: z.string(),
      task: z.string(),
      consumerGroups: z.array(
        z.object({ name: z.string(), consumed: z.boolean(), leaseExpiresAt: isoTimeOrNull }).strict(),
      ),
      status: z.enum(['pending', 'processing', 'completed', 'dead_letter']),
      payload,
      isEncrypted: z.boolean(),
      producerSub: z.null(),
      errorMessage: z.string().nullable(),
      retryCount: count,
      leaseExpiresAt: isoTimeOrNull,
      queueConfig: z
        .object({ leaseTime: count, retryLimit: count, retryDelay: count, ttl: count, priority: integer })
        .strict()
        .optional(),
      mode: ConsumptionMode.extend({ consumedByGroups: count }).strict(),
    }).strict(),
  },
});

export const readMessages = route({
  method: 'GET',
  path: '/api/v1/queues/{queue}/partitions/{partition}/messages',
  group: 'log',
  summary: 'Replay: read a partition in offset order from `from`, at most `limit` messages.',
  params: z.object({ queue: nameSchema('queue'), partition: nameSchema('partition') }),
  query: z.object({
    from: z.coerce.number().int().min(0).default(0),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  }),
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  response: {
    200: z
      .object({
        queue: z.string(),
        partition: z.string(),
        partitionId: z.string(),
        messages: z.array(StoredMessageAnswer.strict()),
        next: count.describe('The offset to read from next.'),
      })
      .strict(),
  },
});

// ------------------------------------------------------------------ browse

/** A message's status as the browse view shows it. */
export const MESSAGE_STATUSES = ['pending', 'processing', 'completed', 'dead_letter'] as const;

export const browseMessages = route({
  method: 'GET',
  path: '/api/v1/messages',
  group: 'admin',
  summary:
    'Newest messages first in a window (default: the last hour), without consuming them: status per message, payload with payload=true.',
  query: z.object({
    queue: optionalFilter,
    partition: optionalFilter,
    status: z
      .string()
      .optional()
      .transform((v) => MESSAGE_STATUSES.find((s) => s === v)),
    from: optionalInstant,
    to: optionalInstant,
    // Queen's name for the namespace filter here (not `namespace`).
    ns: optionalFilter,
    task: optionalFilter,
    limit: lenientInteger(1, 1000, 200),
    offset: lenientInteger(0, 100_000, 0),
    payload: z
      .string()
      .optional()
      .transform((v) => v === 'true' || v === '1'),
  }),
  access: { action: 'consume', queues: ({ query }) => [query.queue] },
  response: {
    200: z
      .object({
        messages: z.array(
          z
            .object({
              id: z.string(),
              transactionId: z.string(),
              partitionId: z.string(),
              queuePath: z.string(),
              queue: z.string(),
              partition: z.string(),
              namespace: z.string(),
              task: z.string(),
              status: z.enum(MESSAGE_STATUSES),
              queueStatus: z.enum(MESSAGE_STATUSES),
              busStatus: z.object({ consumedBy: count, totalGroups: count }).strict(),
              traceId: z.string().nullable(),
              producerSub: z.null(),
              queuePriority: integer,
              createdAt: isoTime,
              leaseExpiresAt: isoTimeOrNull,
              offset: count,
              data: payload.optional().describe('With payload=true.'),
            })
            .strict(),
        ),
        mode: ConsumptionMode,
      })
      .strict(),
  },
});
