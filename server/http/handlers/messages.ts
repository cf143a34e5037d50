/**
 * Message routes of the log: push (one result per item, in order), read one message by its
 * transactionId, and replay a partition in offset order.
 */
import * as messagesApi from '../../../contract/routes/messages.js';
import { rawPayload } from '../../codec/json-writer.js';
import { notFound } from '../../core/errors.js';
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import { effectiveLeaseSeconds } from '../../core/queue-options.js';
import { consumptionMode } from '../../core/queue-stats.js';
import { decodeEntry } from '../../service/leases/dlq-store.js';
import type { StoredMessage } from '../../service/log/segments.js';
import { pushResultsText } from '../answers/push-results.js';
import { pushMeter } from '../meters.js';
import { preparePushItems } from '../push-items.js';
import { implement, type RouteDef } from '../route.js';
import { iso } from '../iso.js';

export const push = implement(messagesApi.push, ['config', 'pushes'], async ({ body, rawBody, services }) => {
  const items = preparePushItems(body.items, services, 'items', rawBody());
  // MessagesPushed / DuplicatesRejected are counted by the log service (for every push path).
  const stamp =
    body.producerId !== undefined && body.sequence !== undefined
      ? { producerId: body.producerId, sequence: body.sequence }
      : undefined;
  const results = items.length === 0 ? [] : await services.pushes.push(items, { stamp });
  return { statusCode: 201, body: pushResultsText(results), meter: pushMeter(results) };
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

export const getMessage = implement(
  messagesApi.getMessage,
  ['dlq', 'leaseGroups', 'messageLookup', 'queues'],
  async ({ params, services, authorize }) => {
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
);

export const readMessages = implement(
  messagesApi.readMessages,
  ['queues', 'segments'],
  async ({ params, query, services }) => {
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
);

export const messageRoutes: RouteDef[] = [push, getMessage, readMessages];
