import { z } from 'zod';
import { jsonNumber, jsonString } from '../../codec/json-text.js';
import { SluiceError, notFound } from '../../core/errors.js';
import { DEFAULT_PARTITION, isWellFormedText, nameProblem, type NameKind } from '../../core/names.js';
import {
  QueueOptionsInput,
  queueOptionsProblem,
  resolveQueueOptions,
  type QueueOptions,
} from '../../core/queue-options.js';
import type { PushItem, PushResult } from '../../service/log/push.js';
import type { StoredMessage } from '../../service/log/segments.js';
import type { Services } from '../../service/runtime.js';
import { RawJson, rawPayload } from '../json.js';
import { payloadSpans } from '../raw-json.js';
import { defineRoute, type RouteDef } from '../route.js';

/** A queue, partition or group name: the schema carries the same rule as `core/names.ts`. */
export const nameSchema = (kind: NameKind) =>
  z.string({ error: `${kind} is required and must be a string` }).superRefine((v, ctx) => {
    const p = nameProblem(v, kind);
    if (p) ctx.addIssue({ code: 'custom', message: p });
  });

/** Epoch ms as ISO-8601 UTC. */
export const iso = (ms: number | undefined | null): string | null =>
  ms === undefined || ms === null ? null : new Date(ms).toISOString();

// --------------------------------------------------------------- configure

const ConfigureBody = z.object({
  queue: z.string({ error: 'queue is required' }).superRefine((v, ctx) => {
    const p = nameProblem(v, 'queue');
    if (p) ctx.addIssue({ code: 'custom', message: p });
  }),
  namespace: z.string().max(256).nullish(),
  task: z.string().max(256).nullish(),
  options: QueueOptionsInput.nullish(),
});

/** Options as `/configure` answers them: every option, with its JSON type. */
export function echoOptions(o: QueueOptions): Record<string, number | boolean> {
  return { ...o, leaseTime: o.leaseTime ?? 60 };
}

export const configure = defineRoute({
  method: 'POST',
  path: '/api/v1/configure',
  group: 'admin',
  summary: 'Create a queue or replace its whole configuration.',
  body: ConfigureBody,
  access: { action: 'manage', queues: ({ body }) => [body.queue] },
  async run({ body, services }) {
    // Claim options left out take the service-wide defaults (SLUICE_GROUP_*).
    const options = resolveQueueOptions(body.options ?? undefined, services.config.claimDefaults);
    const problem = queueOptionsProblem(options);
    if (problem) throw new SluiceError('invalid_request', problem);
    const { queue, defaultPartition } = await services.queues.configure({
      queue: body.queue,
      namespace: body.namespace,
      task: body.task,
      options,
    });
    return {
      statusCode: 200,
      body: {
        configured: true,
        queueId: queue.queueId,
        partitionId: defaultPartition.id,
        queue: queue.name,
        namespace: queue.namespace,
        task: queue.task,
        options: echoOptions(queue.options),
      },
    };
  },
});

export const deleteQueue = defineRoute({
  method: 'DELETE',
  path: '/api/v1/resources/queues/{queue}',
  group: 'admin',
  summary:
    'Delete a queue with its partitions, messages, cursors, claim state and DLQ rows (group registrations stay); deleted is true even when it did not exist.',
  params: z.object({ queue: nameSchema('queue') }),
  access: { action: 'manage', queues: ({ params }) => [params.queue] },
  async run({ params, services }) {
    const { existed } = await services.deletion.deleteQueue(params.queue);
    return { statusCode: 200, body: { deleted: true, queue: params.queue, existed } };
  },
});

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
const PushBody = z.object({ items: z.array(PushItemSchema, { error: 'items must be an array' }) });
type PushItemInput = z.infer<typeof PushItemSchema>;

/** Checks names and sizes of every item before anything is written (nothing half-written). */
export function preparePushItems(items: PushItemInput[], services: Services, path = 'items', raw?: Buffer): PushItem[] {
  // The exact bytes each payload was sent as, when the body is the plain push shape.
  const spans = raw ? payloadSpans(raw) : undefined;
  const exact = spans && spans.length === items.length ? spans : undefined;
  const { maxMessageBytes, maxPushItems } = services.config;
  if (items.length > maxPushItems) {
    throw new SluiceError(
      'payload_too_large',
      `a push may carry at most ${maxPushItems} messages (got ${items.length}); split it`,
      { limit: maxPushItems },
    );
  }
  const okNames = new Set<string>();
  const checkName = (name: string, kind: 'queue' | 'partition', i: number): void => {
    const k = `${kind}\u0000${name}`;
    if (okNames.has(k)) return;
    const problem = nameProblem(name, kind);
    if (problem) throw new SluiceError('invalid_request', `${path}[${i}].${kind}: ${problem}`);
    okNames.add(k);
  };
  return items.map((it, i) => {
    checkName(it.queue, 'queue', i);
    const partition = it.partition ?? DEFAULT_PARTITION;
    checkName(partition, 'partition', i);
    // Queen: payload when present (even null), else data, else an empty object.
    const span = exact?.[i];
    let payload: Buffer;
    if (span && raw) payload = raw.subarray(span[0], span[1]);
    else {
      const value = 'payload' in it ? it.payload : 'data' in it ? it.data : {};
      payload = Buffer.from(JSON.stringify(value === undefined ? null : value), 'utf8');
    }
    if (payload.byteLength > maxMessageBytes) {
      throw new SluiceError(
        'payload_too_large',
        `${path}[${i}]: payload is ${payload.byteLength} bytes; the limit is ${maxMessageBytes}`,
        { index: i, limit: maxMessageBytes },
      );
    }
    return { queue: it.queue, partition, payload, transactionId: it.transactionId, traceId: it.traceId ?? null };
  });
}

/**
 * A push result in Queen's wire shape (snake_case ids): the reference that
 * {@link pushResultsText} writes as text, kept equal by test/unit/push-results-text.test.ts.
 */
export function pushResultJson(r: PushResult): Record<string, unknown> {
  const out: Record<string, unknown> = {
    index: r.index,
    status: r.status,
    transaction_id: r.transactionId,
    message_id: r.messageId,
    partition_id: r.partitionId,
    trace_id: r.traceId,
    queueName: r.queue,
    partition: r.partition,
  };
  if (r.offset !== undefined) out.offset = r.offset;
  if (r.error !== undefined) out.error = r.error;
  return out;
}

/**
 * `JSON.stringify(results.map(pushResultJson))`, built as text: a push answers one result per
 * message, and serialising them was about 3 % of the server's main thread at batch 100; this
 * takes 52 µs per 100 results against 78 µs (microbenchmark, interleaved). Results in a row
 * with the same queue and partition reuse their escaped text.
 *
 * @example
 * ```ts
 * pushResultsText(await services.pushes.push(items)); // '[{"index":0,"status":"queued",...}]'
 * ```
 */
export function pushResultsText(results: readonly PushResult[]): string {
  let out = '[';
  let queue: string | undefined;
  let queueText = '';
  let partition: string | undefined;
  let partitionText = '';
  let partitionId: string | undefined;
  let partitionIdText = '';
  for (let i = 0; i < results.length; i++) {
    const r = results[i] as PushResult;
    if (r.queue !== queue) queueText = jsonString((queue = r.queue));
    if (r.partition !== partition) partitionText = jsonString((partition = r.partition));
    if (r.partitionId !== partitionId) partitionIdText = jsonString((partitionId = r.partitionId));
    out +=
      `${i === 0 ? '' : ','}{"index":${jsonNumber(r.index)},"status":${jsonString(r.status)},"transaction_id":${jsonString(r.transactionId)}` +
      `,"message_id":${jsonString(r.messageId)},"partition_id":${partitionIdText},"trace_id":${r.traceId === null ? 'null' : jsonString(r.traceId)}` +
      `,"queueName":${queueText},"partition":${partitionText}` +
      `${r.offset === undefined ? '' : `,"offset":${jsonNumber(r.offset)}`}${r.error === undefined ? '' : `,"error":${jsonString(r.error)}`}}`;
  }
  return `${out}]`;
}

export const push = defineRoute({
  method: 'POST',
  path: '/api/v1/push',
  group: 'log',
  summary: 'Push messages; one result per item, in order (201).',
  body: PushBody,
  access: { action: 'push', queues: ({ body }) => body.items.map((i) => i.queue) },
  async run({ body, rawBody, services }) {
    const items = preparePushItems(body.items, services, 'items', rawBody());
    // MessagesPushed / DuplicatesRejected are counted by the log service (for every push path).
    const results = items.length === 0 ? [] : await services.pushes.push(items);
    return { statusCode: 201, body: pushResultsText(results) };
  },
});

// ------------------------------------------------------------------- reads

/** A stored message as JSON, its payload spliced in verbatim. */
export function messageJson(m: StoredMessage, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: m.id,
    offset: m.offset,
    transactionId: m.transactionId,
    traceId: m.traceId,
    createdAt: iso(m.createdAt),
    ...extra,
    data: rawPayload(m.payload),
  };
}

const MessageParams = z.object({ partitionId: z.string().min(1).max(64), transactionId: z.string().min(1).max(256) });

export const getMessage = defineRoute({
  method: 'GET',
  path: '/api/v1/messages/{partitionId}/{transactionId}',
  group: 'log',
  summary: 'Read one message by partition id and transactionId.',
  params: MessageParams,
  // The queue is only known after resolving the partition id: checked in the handler.
  access: { action: 'consume' },
  async run({ params, services, authorize }) {
    const part = await services.queues.partitionById(params.partitionId);
    if (!part) throw notFound(`no partition with id ${params.partitionId}`);
    authorize(part.queue);
    const msg = await services.messageLookup.findByTransactionId(part.id, params.transactionId);
    if (!msg)
      throw notFound(
        `no message with transactionId ${params.transactionId} in partition ${part.queue}/${part.name} (lookups by transactionId cover the queue's dedup window and its newest segments)`,
      );
    return {
      statusCode: 200,
      raw: true,
      // Per-group progress (seed 004): status is `completed` once every lease group passed it.
      body: messageJson(msg, {
        partitionId: part.id,
        queue: part.queue,
        partition: part.name,
        ...(await services.leaseGroups.messageProgress(part, msg.offset)),
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
    const part = await services.queues.getPartition(params.queue, params.partition);
    if (!part) throw notFound(`queue ${params.queue} has no partition ${params.partition}`);
    const msgs = await services.segments.read(part.id, query.from, {
      maxCount: query.limit,
      maxBytes: 4 * 1024 * 1024,
    });
    const last = msgs[msgs.length - 1];
    return {
      statusCode: 200,
      raw: true,
      body: {
        queue: part.queue,
        partition: part.name,
        partitionId: part.id,
        messages: msgs.map((m) => messageJson(m)),
        next: last ? last.offset + 1 : query.from,
      },
    };
  },
});

// ------------------------------------------------------------------ health

export const health = defineRoute({
  method: 'GET',
  path: '/health',
  group: 'log',
  summary: 'Liveness and storage reachability (200 healthy, 503 not).',
  access: { action: 'public' },
  async run({ services }) {
    try {
      await services.storage.items.get('meta', { pk: 'HEALTH', sk: 'probe' });
      return { statusCode: 200, body: { status: 'healthy', backend: services.storage.kind, version: VERSION } };
    } catch (e) {
      return {
        statusCode: 503,
        body: {
          status: 'unhealthy',
          backend: services.storage.kind,
          error: e instanceof Error ? e.name : 'storage unreachable',
        },
      };
    }
  },
});

export const VERSION = '0.1.0';

export const logRoutes: RouteDef[] = [configure, deleteQueue, push, getMessage, readMessages, health];

// Re-exported so other route modules share one RawJson class.
export { RawJson };
