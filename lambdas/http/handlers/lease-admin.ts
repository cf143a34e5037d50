/**
 * Admin routes of the partition-lease design: the dead-letter queue (list, replay, delete,
 * bulk redrive) and consumer groups (lag views, delete, subscription, seek). Reference §2.9,
 * §2.10 and seed 002 / 004.
 */
import { z } from 'zod';
import { invalid } from '../../core/errors.js';
import type { GroupView } from '../../service/leases/lease-groups.js';
import type { DlqEntry } from '../../service/leases/dlq-service.js';
import { MAX_REDRIVE } from '../../service/leases/dlq-service.js';
import { rawPayload } from '../json.js';
import { defineRoute, type RouteDef } from '../route.js';
import { iso, nameSchema } from './log.js';

const qint = (min: number, max: number, dflt: number) =>
  z.coerce.number({ error: 'must be a number' }).int().min(min).max(max).default(dflt);
const optGroup = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(nameSchema('consumer group').optional());

// ---------------------------------------------------------------------- DLQ

/** A DLQ entry in the seed's shape: createdAt equals failedAt, producerSub is null. */
function dlqJson(e: DlqEntry): Record<string, unknown> {
  const at = iso(e.failedAt);
  return {
    id: e.id,
    transactionId: e.transactionId,
    partitionId: e.partitionId,
    queue: e.queue,
    partition: e.partition,
    consumerGroup: e.consumerGroup,
    errorMessage: e.errorMessage,
    retryCount: e.retryCount,
    data: rawPayload(e.payload),
    producerSub: null,
    createdAt: at,
    failedAt: at,
  };
}

export const listDlq = defineRoute({
  method: 'GET',
  path: '/api/v1/dlq',
  group: 'admin',
  summary: 'Dead letters of a queue (optionally one group), newest first; total is the rows on this page.',
  query: z.object({
    queue: nameSchema('queue'),
    consumerGroup: optGroup,
    limit: qint(1, 1000, 100),
    offset: qint(0, 1_000_000, 0),
    // Sent by the Queen client when set; like Queen, they filter nothing.
    partition: z.string().optional(),
    from: z.string().optional(),
    to: z.string().optional(),
  }),
  access: { action: 'consume', queues: ({ query }) => [query.queue] },
  async run({ query, services }) {
    const rows = await services.dlq.list({
      queue: query.queue,
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
      consumerGroup: optGroup,
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

const MessageParams = z.object({ partitionId: z.string().min(1).max(64), transactionId: z.string().min(1).max(256) });

export const retryMessage = defineRoute({
  method: 'POST',
  path: '/api/v1/messages/{partitionId}/{transactionId}/retry',
  group: 'admin',
  summary: 'Replay a dead letter under a fresh transactionId, then remove its row (replayed, dlqRowRemoved).',
  params: MessageParams,
  query: z.object({ consumerGroup: optGroup }),
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
  summary: 'Delete the dead-letter row of a message (404 when there is none; live messages cannot be deleted).',
  params: MessageParams,
  query: z.object({ consumerGroup: optGroup }),
  access: { action: 'manage' },
  async run({ params, query, services, authorize }) {
    const r = await services.dlq.delete(params.partitionId, params.transactionId, query.consumerGroup, (queue) =>
      authorize(queue),
    );
    return {
      statusCode: 200,
      body: {
        deleted: true,
        partitionId: params.partitionId,
        transactionId: params.transactionId,
        rowsRemoved: r.removed,
      },
    };
  },
});

// ----------------------------------------------------------- consumer groups

function viewJson(v: GroupView, allowed: (queue: string) => boolean): Record<string, unknown> {
  const queues = v.queues.filter((q) => allowed(q.queue));
  return {
    name: v.name,
    lagMessages: queues.reduce((n, q) => n + q.lagMessages, 0),
    maxLagSeconds: queues.reduce((n, q) => Math.max(n, q.lagSeconds), 0),
    queues: queues.map((q) => ({
      queue: q.queue,
      subscription: { mode: q.subscription.mode, from: iso(q.subscription.from) },
      partitions: q.partitions,
      lagMessages: q.lagMessages,
      lagSeconds: q.lagSeconds,
      leasedPartitions: q.leased,
      ...(q.detail ? { detail: q.detail.map((d) => ({ ...d, leaseExpiresAt: iso(d.leaseExpiresAt) })) } : {}),
    })),
  };
}

export const listGroups = defineRoute({
  method: 'GET',
  path: '/api/v1/consumer-groups',
  group: 'admin',
  summary: 'Every lease consumer group with its per-queue lag (messages and age of the oldest unfinished one).',
  access: { action: 'consume' },
  async run({ services, allowed }) {
    const views = await services.leaseGroups.list();
    const out = views.map((v) => viewJson(v, (q) => allowed(q))).filter((v) => (v.queues as unknown[]).length > 0);
    return { statusCode: 200, body: { consumerGroups: out } };
  },
});

export const laggingGroups = defineRoute({
  method: 'GET',
  path: '/api/v1/consumer-groups/lagging',
  group: 'admin',
  summary: 'Groups whose oldest unfinished message is at least minLagSeconds old (default 3600).',
  query: z.object({ minLagSeconds: qint(0, 10 * 365 * 86_400, 3600) }),
  access: { action: 'consume' },
  async run({ query, services, allowed }) {
    const views = await services.leaseGroups.lagging(query.minLagSeconds);
    const out = views
      .map((v) => ({ ...v, queues: v.queues.filter((q) => q.lagMessages > 0 && q.lagSeconds >= query.minLagSeconds) }))
      .map((v) => viewJson(v, (q) => allowed(q)))
      .filter((v) => (v.queues as unknown[]).length > 0);
    return { statusCode: 200, body: { minLagSeconds: query.minLagSeconds, consumerGroups: out } };
  },
});

export const describeGroup = defineRoute({
  method: 'GET',
  path: '/api/v1/consumer-groups/{group}',
  group: 'admin',
  summary: 'One lease consumer group: per queue and partition, cursor, lag and lease.',
  params: z.object({ group: nameSchema('consumer group') }),
  access: { action: 'consume' },
  async run({ params, services, allowed }) {
    const v = await services.leaseGroups.describe(params.group, true);
    return { statusCode: 200, body: viewJson(v, (q) => allowed(q)) };
  },
});

const DeleteQuery = z.object({
  deleteMetadata: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => v === undefined || v === 'true' || v === '1'),
});

export const deleteGroup = defineRoute({
  method: 'DELETE',
  path: '/api/v1/consumer-groups/{group}',
  group: 'admin',
  summary:
    "Delete a group's cursors, READY entries and scan watermarks on every queue (and its subscription unless deleteMetadata=false).",
  params: z.object({ group: nameSchema('consumer group') }),
  query: DeleteQuery,
  access: { action: 'manage' },
  async run({ params, query, services, authorize }) {
    for (const q of await services.groups.queuesOf(params.group)) authorize(q);
    const r = await services.leaseGroups.delete(params.group, { deleteMetadata: query.deleteMetadata });
    return {
      statusCode: 200,
      body: {
        success: true,
        consumerGroup: params.group,
        deletedPartitions: r.deletedPartitions,
        metadataDeleted: r.metadataDeleted,
      },
    };
  },
});

export const deleteGroupOnQueue = defineRoute({
  method: 'DELETE',
  path: '/api/v1/consumer-groups/{group}/queues/{queue}',
  group: 'admin',
  summary: "Delete a group's cursors, READY entries and scan watermark on one queue.",
  params: z.object({ group: nameSchema('consumer group'), queue: nameSchema('queue') }),
  query: DeleteQuery,
  access: { action: 'manage', queues: ({ params }) => [params.queue] },
  async run({ params, query, services }) {
    const r = await services.leaseGroups.delete(params.group, {
      queue: params.queue,
      deleteMetadata: query.deleteMetadata,
    });
    return {
      statusCode: 200,
      body: {
        success: true,
        consumerGroup: params.group,
        queueName: params.queue,
        deletedPartitions: r.deletedPartitions,
        metadataDeleted: r.metadataDeleted,
      },
    };
  },
});

/** An ISO-8601 instant or epoch milliseconds. */
const instant = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const t = typeof v === 'number' ? v : Date.parse(v);
  if (!Number.isFinite(t)) {
    ctx.addIssue({ code: 'custom', message: `not a timestamp: ${JSON.stringify(v)} (use ISO-8601)` });
    return z.NEVER;
  }
  return t;
});

export const setSubscription = defineRoute({
  method: 'POST',
  path: '/api/v1/consumer-groups/{group}/subscription',
  group: 'admin',
  summary: "Set a group's stored start time (used for partitions it has not read yet); cursors stay put.",
  params: z.object({ group: nameSchema('consumer group') }),
  body: z.object({ subscriptionTimestamp: instant.optional() }).nullish(),
  access: { action: 'manage' },
  async run({ params, body, services, authorize }) {
    const ts = body?.subscriptionTimestamp;
    if (ts === undefined) throw invalid('subscriptionTimestamp is required');
    for (const q of await services.groups.queuesOf(params.group)) authorize(q);
    const rowsUpdated = await services.leaseGroups.updateSubscription(params.group, ts);
    return {
      statusCode: 200,
      body: { success: true, consumerGroup: params.group, newTimestamp: iso(ts), rowsUpdated },
    };
  },
});

export const seekGroup = defineRoute({
  method: 'POST',
  path: '/api/v1/consumer-groups/{group}/queues/{queue}/seek',
  group: 'admin',
  summary:
    'Move a group on a queue to the end or to a timestamp (the next delivery is the first message after it); releases its leases there.',
  params: z.object({ group: nameSchema('consumer group'), queue: nameSchema('queue') }),
  body: z.object({ timestamp: instant.optional(), toEnd: z.boolean().optional() }).nullish(),
  access: { action: 'manage', queues: ({ params }) => [params.queue] },
  async run({ params, body, services }) {
    const toEnd = body?.toEnd === true;
    const ts = body?.timestamp;
    if (!toEnd && ts === undefined) throw invalid('give either {"timestamp": "<ISO-8601>"} or {"toEnd": true}');
    const n = await services.leaseGroups.seek(
      params.group,
      params.queue,
      toEnd ? { toEnd: true } : { timestamp: ts as number },
    );
    return {
      statusCode: 200,
      body: {
        success: true,
        consumerGroup: params.group,
        queueName: params.queue,
        seekToEnd: toEnd,
        targetTimestamp: toEnd ? null : iso(ts),
        partitionsUpdated: n,
      },
    };
  },
});

export const leaseAdminRoutes: RouteDef[] = [
  listDlq,
  redriveDlq,
  retryMessage,
  deleteMessage,
  listGroups,
  laggingGroups,
  describeGroup,
  deleteGroup,
  deleteGroupOnQueue,
  setSubscription,
  seekGroup,
];
