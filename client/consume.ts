/**
 * The partition-lease consumer loop (`queue(q).group(g).consume(handler, opts)`).
 *
 * Each of `concurrency` workers pops up to `popBatch` messages (default 1,000: a lease on a
 * span of one or more partitions) and feeds them to the handler `batch` at a time (the
 * builder's `batch`, default 1), or one by one with `each`. One pop and one ack per 1,000
 * messages instead of one of each per message is what makes a consumer cheap on AWS, and it
 * costs no parallelism: a (partition, group) has one leased span at a time whatever its size.
 *
 * After the pop's last handler call the loop acks the span: `completed` for what was handled,
 * `failed` (with its own error) for the first message that failed, so the server's retry budget
 * and dead-letter queue apply to that message and the rest comes back. A handler call fails
 * per message (`batch-outcome.ts`): it returns `{ batchItemFailures }`, or it throws and its
 * messages are tried again one at a time (after acking what came before), so a healthy
 * neighbour of a bad message is never failed with it. After a failure the next pop asks for one
 * message, so a message that keeps failing is not re-read with a whole pop behind it. Those
 * acks ride with the next pop (`ack-and-pop.ts`): one request per batch while there is work.
 * While a long pop is worked through, the finished part is acked every `ackIntervalMs` (a
 * partial ack keeps the lease), so a crash redelivers at most that much finished work, and
 * the lease is extended every `renewLease` ms.
 *
 * Graceful stop (`signal` aborts): no new pops (a long poll in flight is abandoned; a span it
 * may have leased comes back when that lease lapses); handlers already running finish, for
 * up to `stopTimeoutMs`, and are acked as usual. The messages of a pop not yet given to the
 * handler are handed back with status `retry` (the lease is released at once, no retry
 * budget is charged). A handler still running at the bound is abandoned: its renewal stops,
 * its `ctx.signal` aborts, the finished part is acked, and the lease expires so the rest
 * redelivers.
 *
 * The model. A consumer is one run (`consume-run.ts`: the settings, the stats, the stop and its
 * bound, the wake-up channel, acks and error reports) and `concurrency` workers, each this
 * machine (`consume-worker.ts`, a function per state, each answering the next state):
 *
 *     pop ──messages──▶ handle ──final acks, carried──▶ pop
 *      │ └──nothing, on a channel──▶ idle ──woken, or nothing──▶ pop
 *      │                              └──messages──▶ handle
 *      ├──failed (a 5xx, 429, network)──▶ backoff (1 s) ──▶ pop
 *      └──stopping, limit reached, idle too long, refused (other 4xx)──▶ stop
 *
 * - pop: sends the last pop's final acks with the next pop (`ack-and-pop`, `wait=false`), and
 *   when that finds nothing, pops: a long poll, or `wait=false` when a channel waits instead. One
 *   message only after a failure. An idle pop without `wait` pauses 100 ms.
 * - idle: registers a wait on the channel, pops once more, and sleeps until woken (a woken
 *   worker that finds work relays the wake-up) or the safety poll is due. While the channel
 *   fails, one long poll stands in for the sleep.
 * - handle (`consume-handle.ts`): the handler's calls over the pop while the lease is renewed and
 *   the finished part acked; answers the pop's final acks (completed, failed, retry), which the
 *   next pop carries.
 * - backoff: a pop failed; it is reported and the worker waits before the next.
 * - stop: the carried acks are sent on their own. A refused pop stops every worker and
 *   `consume()` throws it.
 */
import { LeaseRun, type LeaseSettings } from './consume-run.js';
import { runWorker } from './consume-worker.js';
import type { QueueRef } from './sluice.js';
import type { AckResult, AckStatus, Message } from './types.js';
import { DEFAULT_SAFETY_POLL_MS } from './wake-channel.js';

export interface LeaseContext<T> {
  /** Aborts when the consumer gives up on this handler (stop bound passed). */
  signal: AbortSignal;
  /** The messages of this handler call (one with `each`). */
  messages: Message<T>[];
  /**
   * Acks (manual mode); defaults to this call's messages as completed. Any other status
   * releases the lease, so the loop gives the handler no more messages of that pop.
   */
  ack(
    messages?: Message<T> | Message<T>[],
    status?: AckStatus | boolean,
    opts?: { error?: string },
  ): Promise<AckResult[]>;
  /** Extends the batch's lease now. */
  renew(seconds?: number): Promise<void>;
}

/**
 * A lease handler: one call per `batch` messages (or per message with `each`). Return nothing
 * when all succeeded, or `{ batchItemFailures: [{ itemIdentifier: m.transactionId }] }` (a
 * {@link BatchResponse}) to fail some; a throw fails the call, whose messages are then tried
 * one at a time. Messages can be handled more than once: make the handler idempotent.
 *
 * @example
 * ```ts
 * const handler: LeaseHandler<Order> = async (messages: Message<Order>[]) => ({
 *   batchItemFailures: (await billAll(messages)).failed.map((m) => ({ itemIdentifier: m.transactionId })),
 * });
 * ```
 */
export type LeaseHandler<T> =
  | ((messages: Message<T>[], ctx: LeaseContext<T>) => unknown)
  | ((message: Message<T>, ctx: LeaseContext<T>) => unknown);

export interface LeaseConsumeOptions {
  /** Stops the consumer gracefully. */
  signal?: AbortSignal;
  /** Workers popping and handling independently (default 1). */
  concurrency?: number;
  /**
   * Messages per pop request (default 1,000 with `autoAck`, at least the builder's `batch`;
   * without `autoAck`, the builder's `batch`). The handler still gets `batch` at a time.
   */
  popBatch?: number;
  /** Ack after the handler (default true): completed, or failed for the message that failed. */
  autoAck?: boolean;
  /**
   * While a pop is worked through, ack its finished part at most this often (default 5,000 ms;
   * 0: only after the pop's last message). Bounds what a crash redelivers.
   */
  ackIntervalMs?: number;
  /**
   * Renew the lease every this many ms while the messages of a pop are handled (default
   * 10,000; 0 turns renewal off). Keep it under the queue's `leaseTime`.
   */
  renewLease?: number;
  /** Seconds each renewal asks for (default: the builder's leaseSeconds, else max(60, 3 × interval)). */
  renewSeconds?: number;
  /** Call the handler once per message (in order) instead of once per batch. */
  each?: boolean;
  /** Stop once this many messages were delivered (checked before each pop). */
  limit?: number;
  /** Stop after this long without a message. */
  idleMs?: number;
  /** After `signal` aborts, how long running handlers may take to finish (default 30 s). */
  stopTimeoutMs?: number;
  /**
   * Wait for work on the deployment's notification channel when it offers one (AWS; default
   * true): pops ask `wait=false` and an idle consumer sleeps on a WebSocket, which costs nothing,
   * instead of long-polling, which bills a Lambda for every wait. The local server offers none,
   * and consumers long-poll there (free). Only with the builder's `wait(true)`, the default.
   */
  notifications?: boolean;
  /**
   * With notifications: how long an idle consumer sleeps before it pops anyway (default 120,000
   * ms). It bounds what a lost notification delays, and finds work no push announces (a lapsed
   * lease's messages); docs/CLIENT.md prices it.
   */
  safetyPollMs?: number;
  /** Failures the loop survives: pops after retries, acks, renewals, handler errors. */
  onError?: (error: unknown, info: { phase: 'pop' | 'ack' | 'renew' | 'handler'; messages?: Message[] }) => void;
}

export interface LeaseConsumeStats {
  /** Messages popped (handed to the loop; some may be handed back at a stop). */
  messages: number;
  /** Pops that returned messages. */
  batches: number;
  /** Messages acked completed. */
  completed: number;
  /** Messages acked failed (each failed alone, or was named in `batchItemFailures`). */
  failed: number;
  /** Messages handed back with `retry` at a stop. */
  handedBack: number;
  /** Pops abandoned at the stop bound (their leases expire). */
  abandoned: number;
}

/**
 * Runs a consumer until it stops (see the header): what `queue(q).group(g).consume()` calls.
 * Answers the stats; throws a pop the server refused (a 4xx other than 429).
 *
 * @example
 * ```ts
 * const stats = await consumeLeases(sluice.queue('orders').group('billing'), handle, { signal });
 * ```
 */
export async function consumeLeases<T>(
  q: QueueRef,
  handler: LeaseHandler<T>,
  opts: LeaseConsumeOptions = {},
): Promise<LeaseConsumeStats> {
  const run = new LeaseRun<T>(q, handler, settingsOf(q, opts), opts);
  if (opts.signal?.aborted) return run.stats;
  opts.signal?.addEventListener('abort', run.stop, { once: true });
  try {
    await Promise.all(Array.from({ length: run.settings.concurrency }, () => runWorker(run)));
  } finally {
    opts.signal?.removeEventListener('abort', run.stop);
    run.close();
  }
  if (run.fatal) throw run.fatal;
  return run.stats;
}

/** The options with their defaults filled in (the builder's `batch`, `leaseSeconds` and `wait` among them). */
function settingsOf(q: QueueRef, opts: LeaseConsumeOptions): LeaseSettings {
  const autoAck = opts.autoAck ?? true;
  const renewEvery = opts.renewLease ?? DEFAULT_RENEW_MS;
  return {
    autoAck,
    concurrency: Math.max(1, opts.concurrency ?? 1),
    stopTimeoutMs: opts.stopTimeoutMs ?? 30_000,
    renewEvery,
    renewSeconds: opts.renewSeconds ?? q.spec.leaseSeconds ?? Math.max(60, Math.ceil((3 * renewEvery) / 1000)),
    ackEvery: opts.ackIntervalMs ?? DEFAULT_ACK_INTERVAL_MS,
    each: opts.each === true,
    perCall: opts.each ? 1 : Math.max(1, q.spec.batch),
    popBatch: Math.max(1, opts.popBatch ?? (autoAck ? Math.max(DEFAULT_POP_BATCH, q.spec.batch) : q.spec.batch)),
    limit: opts.limit,
    idleMs: opts.idleMs,
    notifications: q.spec.wait && opts.notifications !== false,
    safetyPollMs: Math.max(1, opts.safetyPollMs ?? DEFAULT_SAFETY_POLL_MS),
  };
}

/** Messages per pop request by default: one pop and one ack carry this many (see docs/CLIENT.md). */
export const DEFAULT_POP_BATCH = 1000;
/** Lease renewal interval by default: inside the 60 s lease of a queue a push created. */
export const DEFAULT_RENEW_MS = 10_000;
/** How often a long pop's finished part is acked by default. */
export const DEFAULT_ACK_INTERVAL_MS = 5_000;
