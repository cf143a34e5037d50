/**
 * Dead-letter routes of the partition-lease design (docs/LEASES.md, Dead-letter queue): list,
 * replay or delete one message, bulk redrive. Record claims keep their own dead letters
 * (handlers/claims.ts).
 */
import * as deadLettersApi from '../../../contract/routes/dead-letters.js';
import { rawPayload } from '../../codec/json-writer.js';
import type { DlqEntry } from '../../service/leases/dlq-service.js';
import { implement, type RouteDef } from '../route.js';
import { iso } from '../iso.js';

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

export const listDlq = implement(deadLettersApi.listDlq, ['admin'], async ({ query, services, allowed }) => {
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
});

export const redriveDlq = implement(deadLettersApi.redriveDlq, ['dlq'], async ({ body, services }) => {
  const r = await services.dlq.redrive({
    queue: body.queue,
    consumerGroup: body.consumerGroup,
    limit: body.limit,
    after: body.after,
  });
  return { statusCode: 200, body: { queue: body.queue, consumerGroup: body.consumerGroup ?? null, ...r } };
});

export const retryMessage = implement(
  deadLettersApi.retryMessage,
  ['dlq'],
  async ({ params, query, services, authorize }) => {
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
);

export const deleteMessage = implement(
  deadLettersApi.deleteMessage,
  ['dlq'],
  async ({ params, query, services, authorize }) => {
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
);

export const leaseDeadLetterRoutes: RouteDef[] = [listDlq, redriveDlq, retryMessage, deleteMessage];
