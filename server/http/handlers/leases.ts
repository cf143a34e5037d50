/**
 * Partition-lease routes (Queen wire format; semantics in docs/LEASES.md, The model): pop, ack,
 * ack batch, lease extension and transactions. Thin: parse and validate, call the lease
 * service, serialise.
 */
import { z } from 'zod';
import { SluiceError, invalid } from '../../core/errors.js';
import { decodeLeaseId } from '../../core/leases.js';
import { QUEUE_MODE_GROUP, nameProblem, newNameProblem } from '../../core/names.js';
import type { AckRequestItem } from '../../service/leases/ack.js';
import type { Services } from '../../service/runtime.js';
import type { TxOp } from '../../service/transaction-service.js';
import { authorizePartitions } from '../access.js';
import { AckItemSchema } from '../ack-items.js';
import { ackJson, popResultText } from '../answers/lease-results.js';
import { ackMeter, popMeter, transactionMeter } from '../meters.js';
import { preparePushItems } from '../push-items.js';
import { defineRoute, type Action, type RouteDef } from '../route.js';
import { instantProblem, iso, nameSchema } from '../schemas.js';

/** Queen booleans: true only for `true` or `1`. */
const queryBoolean = z
  .string()
  .optional()
  .transform((v) => v === 'true' || v === '1');
const queryInteger = (min: number, fallback: number) =>
  z.coerce
    .number({ error: 'must be a number' })
    .int({ error: 'must be a whole number' })
    .min(min, { error: `must be at least ${min}` })
    .default(fallback);

/**
 * A consumer group, or queue mode when absent, null or empty. `problem` is the name rule: a
 * pop registers the group it names, so it takes only names a new group may have.
 */
const groupNameBy = (problem: typeof nameProblem) =>
  z
    .string()
    .nullish()
    .superRefine((v, ctx) => {
      if (v === null || v === undefined || v === '') return;
      const p = problem(v, 'consumer group');
      if (p) ctx.addIssue({ code: 'custom', message: p });
    })
    .transform((v) => (v === null || v === undefined || v === '' ? QUEUE_MODE_GROUP : v));
/** A consumer group an ack names (queue mode when absent). */
export const groupName = groupNameBy(nameProblem);

// ---------------------------------------------------------------------- pop

const PopQuery = z.object({
  consumerGroup: groupNameBy(newNameProblem),
  batch: queryInteger(1, 1),
  wait: queryBoolean,
  timeout: queryInteger(0, 30_000),
  autoAck: queryBoolean,
  leaseSeconds: z.coerce.number().int().min(0).max(43_200).optional(),
  subscriptionMode: z.string().max(64).optional(),
  // `now` or an ISO-8601 instant (the only values Queen's clients send); anything else is a
  // mistake that would otherwise record a subscription to all history for good.
  subscriptionFrom: z
    .string()
    .max(64)
    .optional()
    .refine(
      (v) =>
        v === undefined ||
        v.trim() === '' ||
        v.trim().toLowerCase() === 'now' ||
        (/^\d{4}-\d\d-\d\d/.test(v.trim()) && instantProblem(v.trim()) === undefined),
      {
        message: 'subscriptionFrom must be "now" or an ISO-8601 instant such as 2026-01-31T12:00:00Z',
      },
    ),
  partitions: queryInteger(1, 1),
  // Sent by the Queen client; they select nothing on the queue routes (GET /api/v1/pop selects by them).
  namespace: z.string().max(256).optional(),
  task: z.string().max(256).optional(),
});

async function runPop(
  services: Services,
  signal: () => AbortSignal,
  queue: string,
  partition: string | undefined,
  q: z.infer<typeof PopQuery>,
) {
  const {
    result: r,
    retryAfterSeconds,
    expired,
    unknownQueue,
  } = await services.leasePops.answer(
    {
      queue,
      partition,
      group: q.consumerGroup,
      batch: q.batch,
      partitions: partition === undefined ? q.partitions : 1,
      autoAck: q.autoAck,
      leaseSeconds: q.leaseSeconds,
      subscriptionMode: q.subscriptionMode,
      subscriptionFrom: q.subscriptionFrom,
      wait: q.wait,
      timeoutMs: q.timeout,
    },
    // Only a waiting pop needs to hear of shutdown or the deadline.
    q.wait ? signal() : undefined,
  );
  // A queue that does not exist gets no series: its name is whatever the client sent.
  const meter = popMeter(unknownQueue ? undefined : queue, r, services.clock(), expired);
  // 204 for every "nothing to deliver": empty, unknown, leased, held back, timed out; with
  // `Retry-After` when the wait cap turned the wait away (our client sleeps that long).
  if (!r)
    return retryAfterSeconds === undefined
      ? { statusCode: 204, meter }
      : { statusCode: 204, headers: { 'retry-after': String(retryAfterSeconds) }, meter };
  return { statusCode: 200, body: popResultText(r), meter };
}

export const popPartition = defineRoute({
  method: 'GET',
  path: '/api/v1/pop/queue/{queue}/partition/{partition}',
  group: 'leases',
  summary: 'Lease the next batch of one partition for a consumer group (204 when nothing is available).',
  params: z.object({ queue: nameSchema('queue'), partition: nameSchema('partition') }),
  query: PopQuery,
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  run: (i) => runPop(i.services, () => i.signal, i.params.queue, i.params.partition, i.query),
});

export const popQueue = defineRoute({
  method: 'GET',
  path: '/api/v1/pop/queue/{queue}',
  group: 'leases',
  summary: 'Lease the next batch of any partition with work (up to `partitions` of them) for a consumer group.',
  params: z.object({ queue: nameSchema('queue') }),
  query: PopQuery,
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  run: (i) => runPop(i.services, () => i.signal, i.params.queue, undefined, i.query),
});

export const popMatching = defineRoute({
  method: 'GET',
  path: '/api/v1/pop',
  group: 'leases',
  summary:
    'Lease the next batch from ONE of the queues a `namespace` and/or `task` selects: the highest-priority one with work (equal priorities take turns); 204 when none has any.',
  query: PopQuery.refine((q) => !!q.namespace || !!q.task, {
    message: 'name a namespace or a task (or pop a queue: /api/v1/pop/queue/{queue})',
  }),
  // The queues are known only while running: those the caller may not consume are left out.
  access: { action: 'consume' },
  async run(i) {
    const { query: q, services, allowed } = i;
    const {
      result: r,
      retryAfterSeconds,
      expired,
    } = await services.matchingPops.answer(
      {
        namespace: q.namespace,
        task: q.task,
        allowed: (queue) => allowed(queue),
        principal: i.principal,
        group: q.consumerGroup,
        batch: q.batch,
        partitions: q.partitions,
        autoAck: q.autoAck,
        leaseSeconds: q.leaseSeconds,
        subscriptionMode: q.subscriptionMode,
        subscriptionFrom: q.subscriptionFrom,
        wait: q.wait,
        timeoutMs: q.timeout,
      },
      // Only a waiting pop needs to hear of shutdown or the deadline (the signal is made on first read).
      q.wait ? i.signal : undefined,
    );
    const meter = popMeter(r?.queue, r, services.clock(), expired);
    if (!r)
      return retryAfterSeconds === undefined
        ? { statusCode: 204, meter }
        : { statusCode: 204, headers: { 'retry-after': String(retryAfterSeconds) }, meter };
    return { statusCode: 200, body: popResultText(r), meter };
  },
});

// ---------------------------------------------------------------------- ack

/** What `/ack` and `/ack/batch` share: the grant check per acked partition, the acks, their JSON. */
async function runAcks(
  services: Services,
  authorize: (queue: string, action?: Action) => void,
  acks: readonly z.infer<typeof AckItemSchema>[],
  group: string,
) {
  await authorizePartitions(
    services,
    acks.map((a) => a.partitionId),
    authorize,
  );
  const items: AckRequestItem[] = acks.map((a, index) => ({
    index,
    partitionId: a.partitionId,
    transactionId: a.transactionId,
    status: a.status,
    error: a.error,
    leaseId: a.leaseId,
  }));
  const results = await services.leaseAcks.ack(items, group);
  return { statusCode: 200, body: results.map(ackJson), meter: ackMeter(results) };
}

export const ack = defineRoute({
  method: 'POST',
  path: '/api/v1/ack',
  group: 'leases',
  summary: 'Acknowledge one message: completed/success, failed, retry or dlq (an array with one result).',
  body: AckItemSchema.extend({ consumerGroup: groupName }),
  access: { action: 'consume' },
  async run({ body, services, authorize }) {
    return runAcks(services, authorize, [body], body.consumerGroup);
  },
});

export const ackBatch = defineRoute({
  method: 'POST',
  path: '/api/v1/ack/batch',
  group: 'leases',
  summary: 'Acknowledge many messages; the top-level consumerGroup applies to every item.',
  body: z.object({
    acknowledgments: z.array(AckItemSchema, { error: 'acknowledgments must be an array' }).max(10_000),
    consumerGroup: groupName,
  }),
  access: { action: 'consume' },
  async run({ body, services, authorize }) {
    return runAcks(services, authorize, body.acknowledgments, body.consumerGroup);
  },
});

// ------------------------------------------------------------------- extend

export const extendLease = defineRoute({
  method: 'POST',
  path: '/api/v1/lease/{leaseId}/extend',
  group: 'leases',
  summary: 'Renew every live lease held by a lease id (never shortens); 200 with success false when none is live.',
  params: z.object({ leaseId: z.string().min(1).max(4096) }),
  body: z.object({ seconds: z.coerce.number().int().min(1).max(43_200).optional() }).nullish(),
  access: { action: 'consume' },
  async run({ params, body, services, authorize }) {
    const lease = decodeLeaseId(params.leaseId, QUEUE_MODE_GROUP);
    if (lease) await authorizePartitions(services, lease.partitionIds, authorize);
    const r = await services.leaseAcks.extend(params.leaseId, body?.seconds ?? 60);
    const at = iso(r.expiresAt);
    return {
      statusCode: 200,
      body: {
        leaseId: r.leaseId,
        success: r.success,
        renewed: r.renewed,
        newExpiresAt: at,
        expiresAt: at,
        lease_expires_at: at,
      },
    };
  },
});

// -------------------------------------------------------------- transaction

const TransactionPushItem = z.object({
  queue: z.string({ error: 'queue is required and must be a string' }),
  partition: z.string().optional(),
  payload: z.unknown().optional(),
  data: z.unknown().optional(),
  traceId: z.string().max(256).nullish(),
  transactionId: z.unknown().optional(),
});
const TransactionOperationSchema = z.discriminatedUnion(
  'type',
  [
    z.object({
      type: z.literal('push'),
      items: z
        .array(TransactionPushItem, { error: 'items must be an array' })
        .min(1, 'a push operation needs at least one item'),
    }),
    z.object({
      type: z.literal('ack'),
      transactionId: z.string({ error: 'transactionId is required' }).min(1).max(256),
      partitionId: z.string({ error: 'partitionId is required' }).min(1).max(64),
      status: z.unknown().optional(),
      consumerGroup: groupName,
      error: z.string().max(8192).nullish(),
    }),
  ],
  { error: 'each operation needs type "push" or "ack"' },
);

export const transaction = defineRoute({
  method: 'POST',
  path: '/api/v1/transaction',
  group: 'leases',
  summary: 'Apply pushes and acks atomically: all or nothing (200 with success false on a business failure).',
  body: z.object({
    operations: z
      .array(TransactionOperationSchema, { error: 'operations must be an array' })
      .min(1, 'operations must not be empty'),
    requiredLeases: z.array(z.string()).optional(),
  }),
  // `push` on the queues it pushes to, `consume` on the queues it acks (resolved from the acked
  // partitions below): an ack-only transaction needs no push grant, a push-only one no consume.
  access: {
    action: 'push',
    also: ['consume'],
    queues: ({ body }) => body.operations.flatMap((o) => (o.type === 'push' ? o.items.map((i) => i.queue) : [])),
  },
  async run({ body, services, authorize }) {
    await authorizePartitions(
      services,
      body.operations.flatMap((o) => (o.type === 'ack' ? [o.partitionId] : [])),
      authorize,
    );
    const operations: TxOp[] = body.operations.map((o, i) => {
      if (o.type === 'ack')
        return {
          type: 'ack',
          transactionId: o.transactionId,
          partitionId: o.partitionId,
          status: o.status,
          consumerGroup: o.consumerGroup,
          error: o.error,
        };
      o.items.forEach((it, j) => {
        if (it.transactionId !== undefined)
          throw invalid(
            `operations[${i}].items[${j}].transactionId: transaction pushes take no transactionId; the server mints one`,
          );
      });
      return {
        type: 'push',
        items: preparePushItems(
          o.items.map((it) => ({
            queue: it.queue,
            partition: it.partition,
            payload: 'payload' in it ? it.payload : 'data' in it ? it.data : {},
            traceId: it.traceId,
          })),
          services,
          `operations[${i}].items`,
        ),
      };
    });
    try {
      const r = await services.transactions.run(operations);
      const pushed = operations.flatMap((o) => (o.type === 'push' ? o.items : []));
      return { statusCode: 200, body: r, ...(r.success ? { meter: transactionMeter(pushed) } : {}) };
    } catch (e) {
      // Business failures answer 200 with success false (a 5xx would make the client retry a non-idempotent call).
      if (e instanceof SluiceError && (e.code === 'queue_full' || e.code === 'not_found'))
        return { statusCode: 200, body: { transactionId: null, success: false, error: e.message, results: [] } };
      throw e;
    }
  },
});

export const leaseRoutes: RouteDef[] = [popPartition, popQueue, popMatching, ack, ackBatch, extendLease, transaction];
