/**
 * Dead letters of the partition-lease design (docs/LEASES.md, Dead-letter queue): list them,
 * replay or delete one message's, bulk redrive. Record claims keep their own dead letters
 * (claims.ts).
 */
import { z } from 'zod';
import { MAX_REDRIVE } from '../limits.js';
import { route } from '../route.js';
import { MessageParams, boundedQueryInteger, count, isoTime, nameSchema, payload } from '../schemas.js';

/** An optional consumer group; an empty one counts as absent. */
const optionalGroup = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(nameSchema('consumer group').optional());

/** A dead letter in Queen's shape: createdAt equals failedAt, producerSub is null. */
const DeadLetterAnswer = z
  .object({
    id: z.string(),
    transactionId: z.string(),
    partitionId: z.string(),
    queue: z.string(),
    partition: z.string(),
    consumerGroup: z.string(),
    errorMessage: z.string(),
    retryCount: count,
    data: payload,
    producerSub: z.null(),
    createdAt: isoTime,
    failedAt: isoTime,
  })
  .strict();

export const listDlq = route({
  method: 'GET',
  path: '/api/v1/dlq',
  group: 'admin',
  summary:
    'Dead letters of a queue, or of every queue the caller may consume (optionally one group), newest first; total is the rows on this page.',
  query: z.object({
    // Queen's DeadLetter view sends no queue: every queue the caller may see.
    queue: z
      .string()
      .optional()
      .transform((v) => (v === '' ? undefined : v))
      .pipe(nameSchema('queue').optional()),
    consumerGroup: optionalGroup,
    limit: boundedQueryInteger(1, 1000, 100),
    offset: boundedQueryInteger(0, 1_000_000, 0),
    // Sent by the Queen client when set; like Queen, they filter nothing.
    partition: z.string().optional(),
    from: z.string().optional(),
    to: z.string().optional(),
  }),
  access: { action: 'consume', queues: ({ query }) => [query.queue] },
  response: {
    200: z
      .object({
        messages: z.array(DeadLetterAnswer),
        total: count,
        pagination: z.object({ limit: count, offset: count }).strict(),
      })
      .strict(),
  },
});

export const redriveDlq = route({
  method: 'POST',
  path: '/api/v1/dlq/retry',
  group: 'admin',
  summary:
    'Bulk redrive: replay up to `limit` dead letters of a queue (oldest first); call again with `after: next` while `more` is true.',
  // Strict: a filter this route does not have (partition, from, …) is refused, never ignored.
  body: z
    .object({
      queue: nameSchema('queue'),
      consumerGroup: optionalGroup,
      limit: z.number().int().min(1).max(MAX_REDRIVE).default(100),
      after: z.string().min(1).max(1024).optional(),
    })
    .strict(),
  access: { action: 'manage', queues: ({ body }) => [body.queue] },
  response: {
    200: z
      .object({
        queue: z.string(),
        consumerGroup: z.string().nullable(),
        moved: count,
        failed: count,
        more: z.boolean(),
        next: z.string().nullable().describe('Pass as `after` while `more` is true.'),
        errors: z.array(z.string()),
      })
      .strict(),
  },
});

export const retryMessage = route({
  method: 'POST',
  path: '/api/v1/messages/{partitionId}/{transactionId}/retry',
  group: 'admin',
  summary: 'Replay a dead letter under a fresh transactionId, then remove its row (replayed, dlqRowRemoved).',
  params: MessageParams,
  query: z.object({ consumerGroup: optionalGroup }),
  access: { action: 'manage' },
  response: {
    200: z
      .object({
        replayed: z.boolean(),
        dlqRowRemoved: z.boolean(),
        rowsRemoved: count,
        transactionId: z.string().describe("The replayed message's new transactionId."),
        messageId: z.string(),
        partitionId: z.string(),
        queue: z.string(),
        partition: z.string(),
        originalTransactionId: z.string(),
      })
      .strict(),
  },
});

export const deleteMessage = route({
  method: 'DELETE',
  path: '/api/v1/messages/{partitionId}/{transactionId}',
  group: 'admin',
  summary:
    "Delete a message's dead-letter row(s). Queen's shape: 200 `success: false` when there is none; a message that is not a dead letter stays in the log (docs/QUEEN-COMPAT.md).",
  params: MessageParams,
  query: z.object({ consumerGroup: optionalGroup }),
  access: { action: 'manage' },
  response: {
    200: z
      .object({
        success: z.boolean(),
        deleted: z.boolean(),
        partitionId: z.string(),
        transactionId: z.string(),
        rowsRemoved: count,
        message: z.string(),
      })
      .strict(),
  },
});
