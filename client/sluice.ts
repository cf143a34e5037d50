// One concept past 500 lines: the client and the queue handles every call starts from.
import { DeadLetterQueue, GroupAdmin, retryMessage } from './admin.js';
import type { Auth } from './auth.js';
import { ClaimGroup } from './claims.js';
import {
  consumeLeases,
  type LeaseConsumeOptions,
  type LeaseConsumeStats,
  type LeaseContext,
  type LeaseHandler,
} from './consume.js';
import { SluiceApiError } from './errors.js';
import { DEFAULT_ENDPOINT, LONG_POLL_MARGIN_MS, seg, Transport, type RetryEvent } from './http.js';
import {
  DEFAULT_PARTITION,
  postPush,
  Producer,
  pushResult,
  wireItem,
  type SendOptions,
  type WireItem,
} from './producer.js';
import { ProducerStamps } from './producer-stamps.js';
import type { RetryPolicy } from './retry.js';
import { Targets } from './targets.js';
import { Transaction } from './transaction.js';
import type {
  AckResult,
  AckStatus,
  ConfigureResult,
  DeleteMessageResult,
  DeleteQueueResult,
  Message,
  PushResult,
  QueueInfo,
  QueueOptions,
  ReadMessage,
  RenewResult,
  RetryMessageResult,
  StoredMessage,
  UpdateResult,
} from './types.js';
import type { ExtendLeaseAnswer, HealthAnswer, ReadMessagesAnswer } from './wire.js';

/** The implicit group of a pop that names none. */
export const QUEUE_MODE = '__QUEUE_MODE__';

/**
 * One ack item on the wire: a message's own `_status`/`_error` (set by the consume loop) win.
 *
 * @example
 * ```ts
 * ackItem(msg, 'completed'); // { transactionId, partitionId, status: 'completed', error: null, leaseId }
 * ```
 */
export function ackItem(m: Message, status: string, error?: string) {
  const o = m as Message & { _status?: string; _error?: string };
  return {
    transactionId: m.transactionId,
    partitionId: m.partitionId,
    status: o._status ?? status,
    error: o._error ?? error ?? null,
    ...(m.leaseId ? { leaseId: m.leaseId } : {}),
  };
}
export { DEFAULT_PARTITION };

export interface SluiceOptions {
  /** Base URL. Default: SLUICE_ENDPOINT, else http://127.0.0.1:6632. */
  endpoint?: string;
  /** `{type:'sigv4'}` for an IAM-protected deployment, `{type:'bearer', token}`, or none (default). */
  auth?: Auth;
  /** Shorthand for `auth: {type: 'bearer', token}`. */
  token?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** Per-request timeout (default 30 s; long polls get their wait plus 5 s). */
  timeoutMs?: number;
  /** Retry policy (attempts, baseDelayMs, maxDelayMs, factor). */
  retry?: Partial<RetryPolicy>;
  /** Most items per push request (default 1000; the server takes up to 10,000). */
  maxPushItems?: number;
  /** Most JSON bytes per push request (default 4 MiB, under Lambda's 6 MB payload limit). */
  maxPushBytes?: number;
  /**
   * How long `send()` waits for more sends to the same (queue, partition) before pushing them
   * together (default 5 ms). 0 pushes each send at once, on its own.
   */
  lingerMs?: number;
  /** Most sends gathered into one push (default `maxPushItems`, 1000); bytes are capped by `maxPushBytes`. */
  maxBatch?: number;
  /**
   * Idempotent pushes (default true): each push request carries a producer stamp that its
   * retries repeat, so a retry never stores a message twice and gets the first answer
   * (docs/DELIVERY.md). Items carry a transactionId only when you give one. `false` mints a
   * transactionId per item instead (for a server without stamps, such as Queen; on Sluice that
   * costs a dedup write per message).
   */
  producerSequences?: boolean;
  onRetry?: (e: RetryEvent) => void;
  /** Test hooks. */
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  now?: () => Date;
}

/**
 * The Sluice client.
 *
 * @example
 * ```ts
 * import { Sluice } from '@sluice/client';
 * const sluice = new Sluice({ endpoint: process.env.SLUICE_ENDPOINT });
 * await sluice.queue('orders').partition('eu').push([{ data: { id: 1 } }]);
 * ```
 */
export class Sluice {
  readonly http: Transport;
  readonly maxPushItems: number;
  readonly maxPushBytes: number;
  /** Gathers `send()` calls into pushes (see {@link QueueRef.send}). */
  readonly producer: Producer;
  /** Partition-lease consumer groups: list, describe, lagging, delete, seek, subscription. */
  readonly groups: GroupAdmin;
  /** Targets: consumer groups Sluice delivers to an HTTPS endpoint (set, get, list, delete, pause, resume, rotateSecret). */
  readonly targets: Targets;
  /** Producer stamps of this client's pushes (absent with `producerSequences: false`). */
  readonly stamps: ProducerStamps | undefined;

  constructor(opts: SluiceOptions = {}) {
    const endpoint = opts.endpoint ?? process.env['SLUICE_ENDPOINT'] ?? DEFAULT_ENDPOINT;
    const auth: Auth | undefined = opts.auth ?? (opts.token ? { type: 'bearer', token: opts.token } : undefined);
    this.http = new Transport({
      endpoint,
      auth,
      headers: opts.headers,
      timeoutMs: opts.timeoutMs,
      retry: opts.retry,
      fetch: opts.fetch,
      sleep: opts.sleep,
      random: opts.random,
      now: opts.now,
      onRetry: opts.onRetry,
    });
    this.maxPushItems = opts.maxPushItems ?? 1000;
    this.maxPushBytes = opts.maxPushBytes ?? 4 * 1024 * 1024;
    this.stamps = opts.producerSequences === false ? undefined : new ProducerStamps();
    this.producer = new Producer(this.http, {
      lingerMs: opts.lingerMs ?? 5,
      maxBatch: Math.max(1, Math.min(opts.maxBatch ?? this.maxPushItems, this.maxPushItems)),
      maxBytes: this.maxPushBytes,
      stamps: this.stamps,
    });
    this.groups = new GroupAdmin(this.http);
    this.targets = new Targets(this.http);
  }

  /**
   * Pushes every message `send()` has gathered now, without waiting out `lingerMs`, and
   * resolves when each send made before the call has its answer.
   *
   * @example
   * ```ts
   * void sluice.queue('metrics').send({ data: sample });
   * await sluice.flush(); // the sample is stored (or its send rejected)
   * ```
   */
  flush(): Promise<void> {
    return this.producer.flush();
  }

  /**
   * Flushes the gathered sends and refuses new ones. Call it before the process exits;
   * consumers and other calls are not affected.
   *
   * @example
   * ```ts
   * process.once('SIGTERM', () => void sluice.close().then(() => process.exit(0)));
   * ```
   */
  close(): Promise<void> {
    return this.producer.close();
  }

  /** A builder for one queue. Builders are immutable: each call returns a new one. */
  queue(name: string): QueueRef {
    return new QueueRef(this, { queue: name, batch: 1, wait: true, timeoutMs: 30_000, partitions: 1, options: {} });
  }

  /**
   * Acks lease-delivered messages: `true`/`'completed'`, `false`/`'failed'`, `'retry'`, `'dlq'`.
   * One message goes to `/ack`, several to one `/ack/batch` per group. The group is each
   * message's own `consumerGroup` unless `group` is given. Retried (acks name their lease).
   */
  async ack(
    messages: Message | readonly Message[],
    status: AckStatus | boolean = 'completed',
    opts: { group?: string; error?: string; signal?: AbortSignal } = {},
  ): Promise<AckResult[]> {
    const st = status === true ? 'completed' : status === false ? 'failed' : status;
    const list = Array.isArray(messages) ? (messages as readonly Message[]) : [messages as Message];
    if (list.length === 0) return [];
    for (const m of list) {
      if (!m || typeof m.transactionId !== 'string' || typeof m.partitionId !== 'string')
        throw new TypeError(
          'ack: each message needs transactionId and partitionId (pass the messages pop() or consume() gave you)',
        );
    }
    const item = (m: Message) => ackItem(m, st, opts.error);
    if (!Array.isArray(messages)) {
      const m = messages as Message;
      const r = await this.http.json<AckResult[] | AckResult>({
        method: 'POST',
        path: '/api/v1/ack',
        body: { ...item(m), consumerGroup: opts.group ?? m.consumerGroup ?? null },
        retry: 'idempotent',
        signal: opts.signal,
      });
      return Array.isArray(r) ? r : r ? [r] : [];
    }
    const byGroup = new Map<string, Message[]>();
    for (const m of list) {
      const g = opts.group ?? m.consumerGroup ?? QUEUE_MODE;
      byGroup.set(g, [...(byGroup.get(g) ?? []), m]);
    }
    const out: AckResult[] = [];
    for (const [g, ms] of byGroup) {
      const r = await this.http.json<AckResult[]>({
        method: 'POST',
        path: '/api/v1/ack/batch',
        body: { acknowledgments: ms.map(item), consumerGroup: g },
        retry: 'idempotent',
        signal: opts.signal,
      });
      out.push(...(r ?? []));
    }
    return out;
  }

  /**
   * Extends leases (`POST /api/v1/lease/{id}/extend`): every live lease of each distinct id
   * moves to at least now + `seconds`. An expired lease renews nothing (`success: false`).
   */
  async renew(
    target: string | Message | readonly Message[],
    seconds?: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<RenewResult[]> {
    const ids =
      typeof target === 'string'
        ? [target]
        : [
            ...new Set(
              (Array.isArray(target) ? (target as readonly Message[]) : [target as Message])
                .map((m) => m.leaseId)
                .filter(Boolean),
            ),
          ];
    const out: RenewResult[] = [];
    for (const id of ids) {
      const r = await this.http.json<ExtendLeaseAnswer>({
        method: 'POST',
        path: `/api/v1/lease/${seg(id)}/extend`,
        body: seconds === undefined ? {} : { seconds },
        retry: 'idempotent',
        signal: opts.signal,
      });
      out.push({
        leaseId: r?.leaseId ?? id,
        success: r?.success ?? false,
        renewed: r?.renewed ?? 0,
        newExpiresAt: r?.newExpiresAt ?? r?.expiresAt ?? null,
      });
    }
    return out;
  }

  /** Pushes and acks applied together. */
  transaction(): Transaction {
    return new Transaction(this.http);
  }

  /** A queue's dead-letter queue (lease groups). */
  dlq(queue: string): DeadLetterQueue {
    return new DeadLetterQueue(this.http, queue);
  }

  /** Replays one dead letter with a fresh transaction id, then removes its row. Not retried on 5xx. */
  retryMessage(
    partitionId: string,
    transactionId: string,
    opts: { consumerGroup?: string; signal?: AbortSignal } = {},
  ): Promise<RetryMessageResult> {
    return retryMessage(this.http, partitionId, transactionId, opts);
  }

  /**
   * Deletes a message's dead-letter row(s); `success` is false when there was none (the
   * message is not a dead letter, or another caller deleted it first). Only dead letters can
   * be deleted: the message itself stays in the log.
   *
   * @example
   * ```ts
   * const r = await sluice.deleteMessage(entry.partitionId, entry.transactionId);
   * if (!r.success) console.warn(r.message);
   * ```
   */
  async deleteMessage(
    partitionId: string,
    transactionId: string,
    opts: { consumerGroup?: string; signal?: AbortSignal } = {},
  ): Promise<DeleteMessageResult> {
    return (await this.http.json<DeleteMessageResult>({
      method: 'DELETE',
      path: `/api/v1/messages/${seg(partitionId)}/${seg(transactionId)}`,
      query: { consumerGroup: opts.consumerGroup },
      retry: 'idempotent',
      signal: opts.signal,
    })) as DeleteMessageResult;
  }

  /** One message by partition id and transactionId (with per-group progress where the server has it). */
  async getMessage<T = unknown>(
    partitionId: string,
    transactionId: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<StoredMessage<T>> {
    return (await this.http.json<StoredMessage<T>>({
      method: 'GET',
      path: `/api/v1/messages/${seg(partitionId)}/${seg(transactionId)}`,
      retry: 'idempotent',
      signal: opts.signal,
    })) as StoredMessage<T>;
  }

  /** `GET /health`. */
  async health(opts: { signal?: AbortSignal } = {}): Promise<HealthAnswer> {
    return (await this.http.json<HealthAnswer>({
      method: 'GET',
      path: '/health',
      retry: 'idempotent',
      signal: opts.signal,
    })) as HealthAnswer;
  }
}

/** What a {@link QueueRef} carries. */
export interface QueueSpec {
  queue: string;
  partition?: string;
  group?: string;
  batch: number;
  wait: boolean;
  timeoutMs: number;
  partitions: number;
  leaseSeconds?: number;
  subscriptionMode?: string;
  subscriptionFrom?: string;
  options: QueueOptions;
}

export interface PushOptions {
  /** Throw when any item failed (default true); false returns the failures in the results. */
  throwOnFailure?: boolean;
  signal?: AbortSignal;
}

/**
 * A queue, optionally narrowed to a partition and a consumer group.
 *
 * @example
 * ```ts
 * const orders = sluice.queue('orders');
 * await orders.config({ leaseTime: 30 }).create();
 * await orders.partition('eu').push([{ data: { id: 1 } }]);
 * const msgs = await orders.group('billing').batch(10).wait(false).pop();
 * await sluice.ack(msgs);
 * ```
 */
export class QueueRef {
  constructor(
    readonly client: Sluice,
    readonly spec: Readonly<QueueSpec>,
  ) {}

  private with(patch: Partial<QueueSpec>): QueueRef {
    return new QueueRef(this.client, { ...this.spec, ...patch });
  }

  get name(): string {
    return this.spec.queue;
  }

  /** Pushes and pops on this partition (pushes default to `Default`; pops to any partition). */
  partition(name: string): QueueRef {
    return this.with({ partition: name });
  }
  /** Consumer group for pops, acks and consume (default: queue mode, `__QUEUE_MODE__`). */
  group(name: string): QueueRef {
    return this.with({ group: name });
  }
  /** Messages per pop (default 1). */
  batch(n: number): QueueRef {
    return this.with({ batch: n });
  }
  /** Long-poll (default true). */
  wait(on: boolean): QueueRef {
    return this.with({ wait: on });
  }
  /** Long-poll wait in ms (default 30,000; the server caps it below API Gateway's 30 s). */
  timeout(ms: number): QueueRef {
    return this.with({ timeoutMs: ms });
  }
  /** Partitions one wildcard pop may lease together (default 1). */
  partitions(n: number): QueueRef {
    return this.with({ partitions: n });
  }
  /** Lease length for pops, overriding the queue's `leaseTime`. */
  leaseSeconds(s: number): QueueRef {
    return this.with({ leaseSeconds: s });
  }
  /** Where a new group starts: `all` (default), `new`. Fixed on the group's first pop. */
  subscriptionMode(mode: string): QueueRef {
    return this.with({ subscriptionMode: mode });
  }
  /** A new group starts at this time (`now` or ISO-8601). */
  subscriptionFrom(from: string | Date): QueueRef {
    return this.with({ subscriptionFrom: from instanceof Date ? from.toISOString() : from });
  }
  /** Options for {@link create}. */
  config(options: QueueOptions): QueueRef {
    return this.with({ options: { ...this.spec.options, ...options } });
  }

  /**
   * Creates the queue or replaces its whole configuration (`POST /api/v1/configure`): options
   * not given go back to the server's defaults.
   */
  async create(opts: { namespace?: string; task?: string; signal?: AbortSignal } = {}): Promise<ConfigureResult> {
    return (await this.client.http.json<ConfigureResult>({
      method: 'POST',
      path: '/api/v1/configure',
      body: {
        queue: this.spec.queue,
        namespace: opts.namespace ?? null,
        task: opts.task ?? null,
        options: this.spec.options,
      },
      retry: 'idempotent',
      signal: opts.signal,
    })) as ConfigureResult;
  }

  /**
   * Changes only the options given (`PATCH /api/v1/resources/queues/{queue}`), keeping the rest;
   * `null` puts an option back to its default. A queue that does not exist is a
   * {@link SluiceApiError} with status 404.
   *
   * @example
   * ```ts
   * await sluice.queue('orders').update({ options: { ttl: 600 } });
   * ```
   */
  async update(change: {
    options?: { [K in keyof QueueOptions]?: QueueOptions[K] | null };
    namespace?: string | null;
    task?: string | null;
    signal?: AbortSignal;
  }): Promise<UpdateResult> {
    const { signal, ...body } = change;
    return (await this.client.http.json<UpdateResult>({
      method: 'PATCH',
      path: `/api/v1/resources/queues/${seg(this.spec.queue)}`,
      body,
      retry: 'idempotent',
      signal,
    })) as UpdateResult;
  }

  /**
   * The queue's options (`GET /api/v1/queues/{queue}`); a queue that does not exist is a
   * {@link SluiceApiError} with status 404.
   */
  async describe(opts: { signal?: AbortSignal } = {}): Promise<QueueInfo> {
    return (await this.client.http.json<QueueInfo>({
      method: 'GET',
      path: `/api/v1/queues/${seg(this.spec.queue)}`,
      retry: 'idempotent',
      signal: opts.signal,
    })) as QueueInfo;
  }

  /**
   * Deletes the queue with its partitions, messages, cursors, claim state and dead letters
   * (`DELETE /api/v1/resources/queues/{queue}`). Its consumer groups stay registered, so a
   * queue created again under the name inherits them. `deleted` is true even when the queue
   * did not exist; `existed` says whether it did.
   */
  async delete(opts: { signal?: AbortSignal } = {}): Promise<DeleteQueueResult> {
    return (await this.client.http.json<DeleteQueueResult>({
      method: 'DELETE',
      path: `/api/v1/resources/queues/${seg(this.spec.queue)}`,
      retry: 'idempotent',
      signal: opts.signal,
    })) as DeleteQueueResult;
  }

  /**
   * Pushes items in order, split into requests under the server's limits (item count and
   * body size). Each item is a `PushItem` or a bare payload. Each request carries a producer
   * stamp that its retries repeat (the client retries on 429, 5xx and network errors), so a
   * retry never duplicates a message and gets the first attempt's offsets (docs/DELIVERY.md).
   */
  async push(items: readonly unknown[], opts: PushOptions = {}): Promise<PushResult[]> {
    const mint = this.client.stamps === undefined;
    const prepared = items.map((it) => wireItem(it, this.spec.queue, this.spec.partition, mint));
    const results: PushResult[] = [];
    let chunk: WireItem[] = [];
    let bytes = 0;
    let first = 0;
    const flush = async (): Promise<void> => {
      if (chunk.length === 0) return;
      const rows = await postPush(this.client.http, chunk, opts.signal, this.client.stamps);
      rows.forEach((r, i) => results.push(pushResult(r, first + i, this.spec.queue)));
      first += chunk.length;
      chunk = [];
      bytes = 0;
    };
    for (const p of prepared) {
      if (chunk.length > 0 && (chunk.length >= this.client.maxPushItems || bytes + p.bytes > this.client.maxPushBytes))
        await flush();
      chunk.push(p);
      bytes += p.bytes;
    }
    await flush();
    const failed = results.filter((r) => r.status === 'failed');
    if (failed.length > 0 && opts.throwOnFailure !== false) {
      throw new SluiceApiError(
        201,
        'operation_failed',
        `${failed.length} of ${results.length} pushed items failed; first: ` +
          `${failed[0]?.error ?? 'unknown error'} (items without a failure were stored; push the failed ones again)`,
        failed,
        'POST /api/v1/push',
      );
    }
    return results;
  }

  /**
   * Sends one message. Sends to the same (queue, partition) made within `lingerMs` (default
   * 5 ms) are gathered into one push of up to `maxBatch` messages (default 1000) and
   * `maxPushBytes`, stored in the order the sends were made. Resolves with this message's own
   * result (`queued`, or `duplicate` when its transactionId was seen before); rejects when its
   * item `failed` (unless `throwOnFailure: false`) or with the error of the push that carried
   * it. `sluice.flush()` pushes at once; `sluice.close()` flushes before the process exits.
   *
   * @example
   * ```ts
   * const orders = sluice.queue('orders').partition('eu');
   * const results = await Promise.all(ids.map((id) => orders.send({ data: { id }, transactionId: `order-${id}` })));
   * // one push request for up to 1,000 of them; results[i].offset is ids[i]'s offset
   * ```
   */
  async send(item: unknown, opts: SendOptions = {}): Promise<PushResult> {
    // Throws here, for this send only, on a payload JSON cannot carry (a BigInt, a cycle).
    const wire = wireItem(item, this.spec.queue, this.spec.partition, this.client.stamps === undefined);
    return this.client.producer.send(wire, opts);
  }

  /**
   * One pop: up to `batch` messages leased to the group, or `[]` when nothing is available
   * (the server answered 204; after the `Retry-After` it carries when the deployment's wait cap
   * turned the wait away). Unlike Queen's client, errors are thrown, not swallowed.
   */
  async pop<T = unknown>(opts: { autoAck?: boolean; signal?: AbortSignal } = {}): Promise<Message<T>[]> {
    const s = this.spec;
    const path =
      s.partition !== undefined
        ? `/api/v1/pop/queue/${seg(s.queue)}/partition/${seg(s.partition)}`
        : `/api/v1/pop/queue/${seg(s.queue)}`;
    const r = await this.client.http.json<{
      queue?: string;
      consumerGroup?: string;
      leaseId?: string;
      messages?: Message<T>[];
    }>({
      method: 'GET',
      path,
      query: {
        batch: s.batch,
        wait: s.wait,
        timeout: s.timeoutMs,
        consumerGroup: s.group,
        subscriptionMode: s.subscriptionMode,
        subscriptionFrom: s.subscriptionFrom,
        partitions: s.partitions > 1 ? s.partitions : undefined,
        leaseSeconds: s.leaseSeconds,
        autoAck: opts.autoAck ? true : undefined,
      },
      // A pop whose answer was lost leaves its span leased until the lease lapses: delayed, not lost.
      retry: 'idempotent',
      timeoutMs: s.wait ? s.timeoutMs + LONG_POLL_MARGIN_MS : undefined,
      signal: opts.signal,
      paced: true,
    });
    if (!r) return [];
    return (r.messages ?? []).map((m) => ({
      ...m,
      queue: (m.queue as string | undefined) ?? r.queue ?? s.queue,
      consumerGroup: m.consumerGroup ?? r.consumerGroup ?? s.group ?? QUEUE_MODE,
      leaseId: m.leaseId ?? r.leaseId ?? '',
    }));
  }

  /** Acks messages for this builder's group (when the messages do not name one). */
  ack(
    messages: Message | readonly Message[],
    status: AckStatus | boolean = 'completed',
    opts: { error?: string; signal?: AbortSignal } = {},
  ): Promise<AckResult[]> {
    const list = Array.isArray(messages) ? (messages as readonly Message[]) : [messages as Message];
    const withGroup = list.map((m) => ({ ...m, consumerGroup: m.consumerGroup || this.spec.group || QUEUE_MODE }));
    return this.client.ack(Array.isArray(messages) ? withGroup : (withGroup[0] as Message), status, opts);
  }

  /**
   * Consumes with partition leases until `signal` aborts (or `limit`/`idleMs`): pops, runs the
   * handler, acks (completed after it resolves, failed when it throws), renews leases of
   * long handlers. See {@link LeaseConsumeOptions}.
   */
  consume<T = unknown>(
    handler: (message: Message<T>, ctx: LeaseContext<T>) => unknown,
    opts: LeaseConsumeOptions & { each: true },
  ): Promise<LeaseConsumeStats>;
  consume<T = unknown>(
    handler: (messages: Message<T>[], ctx: LeaseContext<T>) => unknown,
    opts?: LeaseConsumeOptions & { each?: false },
  ): Promise<LeaseConsumeStats>;
  consume<T = unknown>(handler: LeaseHandler<T>, opts: LeaseConsumeOptions = {}): Promise<LeaseConsumeStats> {
    return consumeLeases<T>(this, handler, opts);
  }

  /** A record-claim group on this partition (the builder must name a partition). */
  claimGroup(group: string): ClaimGroup {
    if (this.spec.partition === undefined)
      throw new TypeError(
        `claimGroup("${group}") needs a partition: sluice.queue("${this.spec.queue}").partition("…").claimGroup("${group}")`,
      );
    return new ClaimGroup(this.client.http, this.spec.queue, this.spec.partition, group);
  }

  /** This queue's dead letters (for this builder's group, when one is set). */
  dlq(): DeadLetterQueue {
    const d = this.client.dlq(this.spec.queue);
    return this.spec.group ? d.group(this.spec.group) : d;
  }

  /** Replays a partition in offset order from `from` (no lease, no group). */
  async read<T = unknown>(
    opts: { from?: number; limit?: number; signal?: AbortSignal } = {},
  ): Promise<{ messages: ReadMessage<T>[]; next: number }> {
    const p = this.spec.partition ?? DEFAULT_PARTITION;
    const r = await this.client.http.json<ReadMessagesAnswer>({
      method: 'GET',
      path: `/api/v1/queues/${seg(this.spec.queue)}/partitions/${seg(p)}/messages`,
      query: { from: opts.from ?? 0, limit: opts.limit ?? 100 },
      retry: 'idempotent',
      signal: opts.signal,
    });
    return {
      messages: (r?.messages ?? []).map((m) => ({
        ...(m as ReadMessage<T>),
        queue: this.spec.queue,
        partition: p,
        partitionId: r?.partitionId ?? '',
      })),
      next: r?.next ?? opts.from ?? 0,
    };
  }
}
