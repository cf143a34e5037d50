/**
 * Partition leases (Queen's wire format; semantics in docs/LEASES.md, The model): pop a batch
 * (one partition, any partition of a queue, or a queue a namespace and task select), ack one
 * or many, extend a lease, transactions of pushes and acks, and ack-and-pop (Sluice's: an ack
 * and the next pop in one request).
 */
import { z } from 'zod';
import { parseAckStatus } from '../ack-status.js';
import { QUEUE_MODE_GROUP, nameProblem, newNameProblem } from '../names.js';
import { NO_BODY, route } from '../route.js';
import { count, isoTime, isoTimeOrNull, instantProblem, nameSchema, payload } from '../schemas.js';

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

/** The query of every pop route. */
export const PopQuery = z.object({
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

/** A pop's answer (Queen's shape): the lease, and the messages, each repeating where it is from. */
export const PopAnswer = z
  .object({
    success: z.literal(true),
    queue: z.string(),
    partition: z.string().nullable().describe('The first partition leased.'),
    partitionId: z.string().nullable(),
    leaseId: z.string().describe("'' for an auto-acked pop."),
    consumerGroup: z.string(),
    partitionsClaimed: count,
    messages: z.array(
      z
        .object({
          id: z.string(),
          transactionId: z.string(),
          traceId: z.string().nullable(),
          data: payload,
          producerSub: z.null(),
          createdAt: isoTime,
          partitionId: z.string(),
          partition: z.string(),
          leaseId: z.string(),
          consumerGroup: z.string(),
          queue: z.string(),
          offset: count,
        })
        .strict(),
    ),
  })
  .strict();

/** 204 for every "nothing to deliver": empty, unknown, leased, held back, timed out. */
const popAnswers = { 200: PopAnswer, 204: NO_BODY } as const;

export const popPartition = route({
  method: 'GET',
  path: '/api/v1/pop/queue/{queue}/partition/{partition}',
  group: 'leases',
  summary: 'Lease the next batch of one partition for a consumer group (204 when nothing is available).',
  params: z.object({ queue: nameSchema('queue'), partition: nameSchema('partition') }),
  query: PopQuery,
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  response: popAnswers,
});

export const popQueue = route({
  method: 'GET',
  path: '/api/v1/pop/queue/{queue}',
  group: 'leases',
  summary: 'Lease the next batch of any partition with work (up to `partitions` of them) for a consumer group.',
  params: z.object({ queue: nameSchema('queue') }),
  query: PopQuery,
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  response: popAnswers,
});

export const popMatching = route({
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
  response: popAnswers,
});

// ---------------------------------------------------------------------- ack

const statusSchema = z
  .unknown()
  .optional()
  .superRefine((v, ctx) => {
    if (parseAckStatus(v) === undefined)
      ctx.addIssue({
        code: 'custom',
        message: `status must be completed, success, failed, retry or dlq (got ${JSON.stringify(v)})`,
      });
  })
  .transform((v) => parseAckStatus(v) ?? 'completed');

/** One ack item, as `/ack`, `/ack/batch` and ack-and-pop take it. */
export const AckItemSchema = z.object({
  transactionId: z.string({ error: 'transactionId is required' }).min(1).max(256),
  partitionId: z.string({ error: 'partitionId is required' }).min(1).max(64),
  status: statusSchema,
  error: z.string().max(8192).nullish(),
  leaseId: z.string().max(4096).nullish(),
});

/** One ack result, in the request's order. */
export const AckAnswer = z
  .object({
    index: count,
    transactionId: z.string(),
    success: z.boolean(),
    error: z.string().nullable(),
    queueName: z.string().nullable(),
    partitionName: z.string().nullable(),
    leaseReleased: z.boolean(),
    dlq: z.boolean(),
  })
  .strict();

export const ack = route({
  method: 'POST',
  path: '/api/v1/ack',
  group: 'leases',
  summary: 'Acknowledge one message: completed/success, failed, retry or dlq (an array with one result).',
  body: AckItemSchema.extend({ consumerGroup: groupName }),
  access: { action: 'consume' },
  response: { 200: z.array(AckAnswer) },
});

export const ackBatch = route({
  method: 'POST',
  path: '/api/v1/ack/batch',
  group: 'leases',
  summary: 'Acknowledge many messages; the top-level consumerGroup applies to every item.',
  body: z.object({
    acknowledgments: z.array(AckItemSchema, { error: 'acknowledgments must be an array' }).max(10_000),
    consumerGroup: groupName,
  }),
  access: { action: 'consume' },
  response: { 200: z.array(AckAnswer) },
});

// ------------------------------------------------------------------- extend

export const extendLease = route({
  method: 'POST',
  path: '/api/v1/lease/{leaseId}/extend',
  group: 'leases',
  summary: 'Renew every live lease held by a lease id (never shortens); 200 with success false when none is live.',
  params: z.object({ leaseId: z.string().min(1).max(4096) }),
  body: z.object({ seconds: z.coerce.number().int().min(1).max(43_200).optional() }).nullish(),
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        leaseId: z.string(),
        success: z.boolean(),
        renewed: count,
        newExpiresAt: isoTimeOrNull,
        expiresAt: isoTimeOrNull,
        lease_expires_at: isoTimeOrNull,
      })
      .strict(),
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

const TransactionResult = z.discriminatedUnion('type', [
  z
    .object({
      index: count,
      type: z.literal('push'),
      success: z.literal(true),
      transactionId: z.string(),
      messageId: z.string(),
      partitionId: z.string(),
      queueName: z.string(),
      messages: z.array(
        z
          .object({
            transactionId: z.string(),
            messageId: z.string(),
            partitionId: z.string(),
            queueName: z.string(),
            partition: z.string(),
          })
          .strict(),
      ),
    })
    .strict(),
  z
    .object({
      index: count,
      type: z.literal('ack'),
      success: z.literal(true),
      transactionId: z.string(),
      error: z.null(),
      dlq: z.boolean(),
    })
    .strict(),
]);

export const transaction = route({
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
  // partitions while running): an ack-only transaction needs no push grant, a push-only one no consume.
  access: {
    action: 'push',
    also: ['consume'],
    queues: ({ body }) => body.operations.flatMap((o) => (o.type === 'push' ? o.items.map((i) => i.queue) : [])),
  },
  response: {
    200: z
      .object({
        transactionId: z.string().nullable().describe('null when the transaction was refused before it began.'),
        success: z.boolean(),
        error: z.string().optional().describe('Why it was not applied (success false).'),
        results: z.array(TransactionResult).describe('One per operation when applied; empty when not.'),
      })
      .strict(),
  },
});

// -------------------------------------------------------------- ack-and-pop

const AckAndPopBody = z.object({
  consumerGroup: z
    .string()
    .nullish()
    .superRefine((v, ctx) => {
      const p = v ? newNameProblem(v, 'consumer group') : undefined;
      if (p) ctx.addIssue({ code: 'custom', message: p });
    })
    .transform((v) => v || QUEUE_MODE_GROUP),
  /** Pop one partition; absent: any partition with work, as `GET /pop/queue/{queue}`. */
  partition: nameSchema('partition').optional(),
  acknowledgments: z.array(AckItemSchema, { error: 'acknowledgments must be an array' }).max(10_000).default([]),
  batch: z.number().int().min(1).default(1),
  partitions: z.number().int().min(1).default(1),
  wait: z.boolean().default(false),
  timeout: z.number().int().min(0).default(30_000),
  autoAck: z.boolean().default(false),
  leaseSeconds: z.number().int().min(0).max(43_200).optional(),
  subscriptionMode: z.string().max(64).optional(),
  subscriptionFrom: z
    .string()
    .max(64)
    .optional()
    .refine((v) => v === undefined || v === 'now' || instantProblem(v) === undefined, {
      message: 'subscriptionFrom must be "now" or an ISO-8601 instant such as 2026-01-31T12:00:00Z',
    }),
});

export const ackAndPop = route({
  method: 'POST',
  path: '/api/v1/queues/{queue}/ack-and-pop',
  group: 'leases',
  summary:
    'Ack a batch (as /ack/batch), then pop the next one for the same queue and group, unless an ack failed: {acks, pop}.',
  params: z.object({ queue: nameSchema('queue') }),
  body: AckAndPopBody,
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  response: {
    200: z
      .object({
        acks: z.array(AckAnswer),
        popped: z.boolean().describe('Whether it popped (false: an ack failed).'),
        pop: PopAnswer.nullable().describe("Queen's pop answer, or null: nothing to deliver, or not popped."),
      })
      .strict(),
  },
});
