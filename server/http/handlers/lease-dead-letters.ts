/**
 * Dead-letter routes of the partition-lease design (docs/LEASES.md, Dead-letter queue): list,
 * replay or delete one message, bulk redrive. Record claims keep their own dead letters
 * (handlers/claims.ts).
 */
import { z } from 'zod';
import { rawPayload } from '../../codec/json-writer.js';
import type { DlqEntry } from '../../service/leases/dlq-service.js';
import { MAX_REDRIVE } from '../../service/leases/dlq-service.js';
import { defineRoute, type RouteDef } from '../route.js';
import { MessageParams, boundedQueryInteger, iso, nameSchema } from '../schemas.js';

/** An optional consumer group; an empty one counts as absent. */
const optionalGroup = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(nameSchema('consumer group').optional());

/** A DLQ entry in Queen's shape (docs/LEASES.md, Dead-letter queue): createdAt equals failedAt, producerSub is null. */
function dlqJson(entry: DlqEntry): Record<string, unknown> {
  const at = iso(entry.failedAt);
  return {
    id: entry.id,
    transactionId: entry.transactionId,
    partitionId: entry.partitionId,
    queue: entry.queue,
    partition: entry.partition,
    consumerGroup: entry.consumerGroup,
    errorMessage: entry.errorMessage,
    retryCount: entry.retryCount,
    data: rawPayload(entry.payload),
    producerSub: null,
    createdAt: at,
    failedAt: at,
  };
}

export const listDlq = defineRoute({
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
  async run({ query, services, allowed }) {
    const queues = query.queue !== undefined ? [query.queue] : await services.admin.stats.names((q) => allowed(q));
    const rows = await services.admin.deadLetters.listAcross(queues, {
      consumerGroup: query.consumerGroup,
      limit: query.limit,
      offset: query.offset,
    });
    return {
      statusCode: 200,
      raw: true,
      body: {
        messages: rows.map(dlqJson),
        total: rows.length,
        pagination: { limit: query.limit, offset: query.offset },
      },
    };
  },
});

export const redriveDlq = defineRoute({
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
  async run({ body, services }) {
    const r = await services.dlq.redrive({
      queue: body.queue,
      consumerGroup: body.consumerGroup,
      limit: body.limit,
      after: body.after,
    });
    return { statusCode: 200, body: { queue: body.queue, consumerGroup: body.consumerGroup ?? null, ...r } };
  },
});

export const retryMessage = defineRoute({
  method: 'POST',
  path: '/api/v1/messages/{partitionId}/{transactionId}/retry',
  group: 'admin',
  summary: 'Replay a dead letter under a fresh transactionId, then remove its row (replayed, dlqRowRemoved).',
  params: MessageParams,
  query: z.object({ consumerGroup: optionalGroup }),
  access: { action: 'manage' },
  async run({ params, query, services, authorize }) {
    const r = await services.dlq.retry(params.partitionId, params.transactionId, query.consumerGroup, (queue) =>
      authorize(queue),
    );
    return {
      statusCode: 200,
      body: {
        replayed: r.replayed,
        dlqRowRemoved: r.dlqRowRemoved,
        rowsRemoved: r.removed,
        transactionId: r.push.transactionId,
        messageId: r.push.messageId,
        partitionId: r.push.partitionId,
        queue: r.push.queue,
        partition: r.push.partition,
        originalTransactionId: params.transactionId,
      },
    };
  },
});

export const deleteMessage = defineRoute({
  method: 'DELETE',
  path: '/api/v1/messages/{partitionId}/{transactionId}',
  group: 'admin',
  summary:
    "Delete a message's dead-letter row(s). Queen's shape: 200 `success: false` when there is none; a message that is not a dead letter stays in the log (docs/QUEEN-COMPAT.md).",
  params: MessageParams,
  query: z.object({ consumerGroup: optionalGroup }),
  access: { action: 'manage' },
  async run({ params, query, services, authorize }) {
    const { partitionId, transactionId } = params;
    const r = await services.dlq.delete(partitionId, transactionId, query.consumerGroup, (queue) => authorize(queue));
    const deleted = r.removed > 0;
    return {
      statusCode: 200,
      body: {
        success: deleted,
        deleted,
        partitionId,
        transactionId,
        rowsRemoved: r.removed,
        message: deleted
          ? `deleted ${r.removed} dead-letter row(s); the message stays in the log`
          : `no dead-letter row for transactionId ${transactionId} in partition ${partitionId}` +
            `${query.consumerGroup ? ` for group ${query.consumerGroup}` : ''}: only dead letters can be deleted here`,
      },
    };
  },
});

export const leaseDeadLetterRoutes: RouteDef[] = [listDlq, redriveDlq, retryMessage, deleteMessage];
