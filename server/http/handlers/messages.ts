/**
 * Message routes of the log: push (one result per item, in order), read one message by its
 * transactionId, and replay a partition in offset order.
 */
import { z } from 'zod';
import { rawPayload } from '../../codec/json-writer.js';
import { notFound } from '../../core/errors.js';
import { QUEUE_MODE_GROUP, isWellFormedText } from '../../core/names.js';
import { effectiveLeaseSeconds } from '../../core/queue-options.js';
import { consumptionMode } from '../../core/queue-stats.js';
import { decodeEntry } from '../../service/leases/dlq-store.js';
import type { StoredMessage } from '../../service/log/segments.js';
import { PRODUCER_ID_PATTERN } from '../../core/producer-sequence.js';
import { pushResultsText } from '../answers/push-results.js';
import { pushMeter } from '../meters.js';
import { preparePushItems } from '../push-items.js';
import { defineRoute, type RouteDef } from '../route.js';
import { MessageParams, iso, nameSchema } from '../schemas.js';

// -------------------------------------------------------------------- push

const PushItemSchema = z.object({
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

export const push = defineRoute({
  method: 'POST',
  path: '/api/v1/push',
  group: 'log',
  summary:
    'Push messages; one result per item, in order (201). With `producerId` and `sequence` (Sluice), a repeat of the push gets the first answer and stores nothing.',
  body: PushBody,
  access: { action: 'push', queues: ({ body }) => body.items.map((i) => i.queue) },
  async run({ body, rawBody, services }) {
    const items = preparePushItems(body.items, services, 'items', rawBody());
    // MessagesPushed / DuplicatesRejected are counted by the log service (for every push path).
    const stamp =
      body.producerId !== undefined && body.sequence !== undefined
        ? { producerId: body.producerId, sequence: body.sequence }
        : undefined;
    const results = items.length === 0 ? [] : await services.pushes.push(items, { stamp });
    return { statusCode: 201, body: pushResultsText(results), meter: pushMeter(results) };
  },
});

// ------------------------------------------------------------------- reads

/** A stored message as JSON, its payload spliced in verbatim. */
function messageJson(message: StoredMessage, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: message.id,
    offset: message.offset,
    transactionId: message.transactionId,
    traceId: message.traceId,
    createdAt: iso(message.createdAt),
    ...extra,
    data: rawPayload(message.payload),
  };
}

export const getMessage = defineRoute({
  method: 'GET',
  path: '/api/v1/messages/{partitionId}/{transactionId}',
  group: 'log',
  summary: 'Read one message by partition id and transactionId.',
  params: MessageParams,
  // The queue is only known after resolving the partition id: checked in the handler.
  access: { action: 'consume' },
  async run({ params, services, authorize }) {
    const partition = await services.queues.partitionById(params.partitionId);
    if (!partition) throw notFound(`no partition with id ${params.partitionId}`);
    authorize(partition.queue);
    const message = await services.messageLookup.findByTransactionId(partition.id, params.transactionId);
    if (!message)
      throw notFound(
        `no message with transactionId ${params.transactionId} in partition ` +
          `${partition.queue}/${partition.name} (lookups by transactionId cover the queue's dedup window ` +
          `and its newest segments)`,
      );
    const [progress, queue, deadRows] = await Promise.all([
      services.leaseGroups.messageProgress(partition, message.offset),
      services.queues.getQueue(partition.queue),
      services.dlq.lookup(partition.id, message.transactionId),
    ]);
    const dead = deadRows[0] ? decodeEntry(deadRows[0]) : undefined;
    const names = progress.consumerGroups.map((g) => g.name);
    const leases = progress.consumerGroups.flatMap((g) => (g.leaseExpiresAt ? [g.leaseExpiresAt] : [])).sort();
    const options = queue?.options;
    return {
      statusCode: 200,
      raw: true,
      // Per-group progress: `completed` once every lease group passed it (docs/LEASES.md, Consumer
      // groups and subscriptions); Queen's message-drawer fields around it (docs/QUEEN-COMPAT.md).
      body: messageJson(message, {
        partitionId: partition.id,
        queue: partition.queue,
        partition: partition.name,
        queuePath: `${partition.queue}/${partition.name}`,
        namespace: queue?.namespace ?? '',
        task: queue?.task ?? '',
        ...progress,
        status: dead ? 'dead_letter' : progress.status,
        payload: rawPayload(message.payload),
        isEncrypted: options?.encryptionEnabled ?? false,
        producerSub: null,
        errorMessage: dead?.errorMessage ?? null,
        retryCount: dead?.retryCount ?? 0,
        leaseExpiresAt: leases[0] ?? null,
        queueConfig: options && {
          leaseTime: effectiveLeaseSeconds(undefined, options.leaseTime),
          retryLimit: options.retryLimit,
          retryDelay: options.retryDelay,
          ttl: options.ttl,
          priority: options.priority,
        },
        mode: {
          ...consumptionMode(names, QUEUE_MODE_GROUP),
          consumedByGroups: progress.consumerGroups.filter((g) => g.consumed).length,
        },
      }),
    };
  },
});

const ReadParams = z.object({ queue: nameSchema('queue'), partition: nameSchema('partition') });
const ReadQuery = z.object({
  from: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export const readMessages = defineRoute({
  method: 'GET',
  path: '/api/v1/queues/{queue}/partitions/{partition}/messages',
  group: 'log',
  summary: 'Replay: read a partition in offset order from `from`, at most `limit` messages.',
  params: ReadParams,
  query: ReadQuery,
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  async run({ params, query, services }) {
    const partition = await services.queues.getPartition(params.queue, params.partition);
    if (!partition) throw notFound(`queue ${params.queue} has no partition ${params.partition}`);
    const messages = await services.segments.read(partition.id, query.from, {
      maxCount: query.limit,
      maxBytes: 4 * 1024 * 1024,
    });
    const last = messages[messages.length - 1];
    return {
      statusCode: 200,
      raw: true,
      body: {
        queue: partition.queue,
        partition: partition.name,
        partitionId: partition.id,
        messages: messages.map((m) => messageJson(m)),
        next: last ? last.offset + 1 : query.from,
      },
    };
  },
});

export const messageRoutes: RouteDef[] = [push, getMessage, readMessages];
