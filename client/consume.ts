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
 */
import { SluiceApiError } from './errors.js';
import { sleep } from './retry.js';
import { ackAndPop } from './ack-and-pop.js';
import { errorText, runBatch, type CallResult } from './batch-outcome.js';
import { QUEUE_MODE, type QueueRef } from './sluice.js';
import type { AckResult, AckStatus, Message } from './types.js';
import { DEFAULT_SAFETY_POLL_MS, WakeChannel } from './wake-channel.js';

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

export async function consumeLeases<T>(
  q: QueueRef,
  handler: LeaseHandler<T>,
  opts: LeaseConsumeOptions = {},
): Promise<LeaseConsumeStats> {
  const client = q.client;
  const autoAck = opts.autoAck ?? true;
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const stopTimeoutMs = opts.stopTimeoutMs ?? 30_000;
  const renewEvery = opts.renewLease ?? DEFAULT_RENEW_MS;
  const ackEvery = opts.ackIntervalMs ?? DEFAULT_ACK_INTERVAL_MS;
  const perCall = opts.each ? 1 : Math.max(1, q.spec.batch);
  const popBatch = Math.max(1, opts.popBatch ?? (autoAck ? Math.max(DEFAULT_POP_BATCH, q.spec.batch) : q.spec.batch));
  const renewSeconds = opts.renewSeconds ?? q.spec.leaseSeconds ?? Math.max(60, Math.ceil((3 * renewEvery) / 1000));
  const stats: LeaseConsumeStats = { messages: 0, batches: 0, completed: 0, failed: 0, handedBack: 0, abandoned: 0 };
  const report = (e: unknown, phase: 'pop' | 'ack' | 'renew' | 'handler', messages?: Message[]): void => {
    if (opts.onError) opts.onError(e, { phase, ...(messages ? { messages } : {}) });
  };

  // `stopping` ends polling; `abandon` fires stopTimeoutMs later and gives up on handlers.
  const stopping = new AbortController();
  let fatal: SluiceApiError | undefined;
  let abandonTimer: NodeJS.Timeout | undefined;
  let abandonResolve!: () => void;
  const abandoned = new Promise<void>((r) => (abandonResolve = r));
  const running = new Set<AbortController>();
  const stop = (): void => {
    if (stopping.signal.aborted) return;
    stopping.abort(opts.signal?.reason);
    abandonTimer = setTimeout(() => {
      for (const c of running) c.abort(new Error('consumer stopped: handler abandoned at the stop bound'));
      abandonResolve();
    }, stopTimeoutMs);
  };
  if (opts.signal?.aborted) return stats;
  opts.signal?.addEventListener('abort', stop, { once: true });

  let lastMessageAt = Date.now();
  // One connection for all workers; each registers its own waits on it, for the loop's group.
  const channel =
    q.spec.wait && opts.notifications !== false
      ? new WakeChannel(client.http, q.spec.queue, q.spec.group ?? QUEUE_MODE)
      : undefined;
  const safetyPollMs = Math.max(1, opts.safetyPollMs ?? DEFAULT_SAFETY_POLL_MS);

  const reportAcks = (results: readonly AckResult[], status: AckStatus, msgs: Message<T>[]): void => {
    const bad = results.filter((r) => !r.success);
    if (bad.length > 0)
      report(
        new Error(
          `ack ${status}: ${bad.length} of ${results.length} not applied (${bad[0]?.error ?? 'unknown'}); those messages will be delivered again`,
        ),
        'ack',
        msgs,
      );
  };
  const ack = async (msgs: Message<T>[], status: AckStatus, error?: string): Promise<void> => {
    if (msgs.length === 0) return;
    try {
      reportAcks(await client.ack(msgs, status, error !== undefined ? { error } : {}), status, msgs);
    } catch (e) {
      report(e, 'ack', msgs);
    }
  };

  const bounded = async (fn: () => unknown): Promise<CallResult> => {
    const run = (async (): Promise<CallResult> => {
      try {
        return { kind: 'done', value: await fn() };
      } catch (error) {
        return { kind: 'error', error };
      }
    })();
    return Promise.race([run, abandoned.then((): CallResult => ({ kind: 'abandoned' }))]);
  };

  /** Works a pop through; returns its final acks (each message marked with its status), for the next request to carry. */
  const processBatch = async (msgs: Message<T>[]): Promise<Message<T>[]> => {
    const ctl = new AbortController();
    running.add(ctl);
    const renewNow = async (seconds = renewSeconds): Promise<void> => {
      const rs = await client.renew(msgs, seconds);
      const lost = rs.filter((r) => !r.success);
      if (lost.length > 0)
        throw new Error(
          `lease ${lost[0]?.leaseId} could not be renewed (it expired); its messages will be delivered again`,
        );
    };
    // One timer for the whole pop, not per handler call: it covers 1,000 messages handled
    // one at a time as well as one long batch call.
    const timer =
      renewEvery > 0
        ? setInterval(() => void renewNow().catch((e: unknown) => report(e, 'renew', msgs)), renewEvery)
        : undefined;
    // Manual mode: an ack with another status than completed released the lease; the rest of
    // the pop would only be refused.
    let released = false;
    const ctxFor = (part: Message<T>[]): LeaseContext<T> => ({
      signal: ctl.signal,
      messages: part,
      ack: (m = part, status = 'completed', o = {}) => {
        if (status !== 'completed' && status !== 'success' && status !== true) released = true;
        return client.ack(m, status, o);
      },
      renew: renewNow,
    });
    const call = (part: Message<T>[]): Promise<CallResult> =>
      bounded(() =>
        opts.each
          ? (handler as (m: Message<T>, c: LeaseContext<T>) => unknown)(part[0] as Message<T>, ctxFor(part))
          : (handler as (m: Message<T>[], c: LeaseContext<T>) => unknown)(part, ctxFor(part)),
      );
    try {
      let done = 0; // messages whose handler call resolved
      let acked = 0; // of those, how many a progress ack already committed
      let lastAck = Date.now();
      let failure: { error: unknown; message: Message<T> } | undefined;
      let gaveUp = false;
      while (done < msgs.length && !stopping.signal.aborted && !released) {
        const part = msgs.slice(done, done + perCall);
        if (!autoAck) {
          // Manual mode: the handler acks; a throw only ends this pop's handling.
          const out = await call(part);
          if (out.kind === 'abandoned') gaveUp = true;
          if (out.kind === 'error') report(out.error, 'handler', part);
          if (out.kind !== 'done') break;
          done += part.length;
          continue;
        }
        const run = await runBatch(part, (m) => m.transactionId, call, {
          stopAtFailure: true, // a lease group's partition is in order: what follows a failure comes back
          // Before the one-at-a-time pass: commit what came before (a partial ack keeps the lease).
          beforeSolo: async () => {
            await ack(msgs.slice(acked, done), 'completed');
            acked = done;
            lastAck = Date.now();
          },
        });
        if (run.threw !== undefined) report(run.threw, 'handler', part);
        const ok = run.outcomes.findIndex((o) => !o.ok);
        done += ok === -1 ? run.outcomes.length : ok;
        const bad = ok === -1 ? undefined : run.outcomes[ok];
        if (bad && !bad.ok) {
          failure = { error: bad.error, message: part[ok] as Message<T> };
          if (part.length > 1 || run.threw === undefined) report(bad.error, 'handler', [failure.message]);
          break;
        }
        if (run.abandoned) {
          gaveUp = true;
          break;
        }
        if (ackEvery > 0 && done < msgs.length && Date.now() - lastAck >= ackEvery) {
          // A partial ack keeps the lease: the rest of the pop is still ours.
          await ack(msgs.slice(acked, done), 'completed');
          acked = done;
          lastAck = Date.now();
        }
      }
      if (gaveUp) stats.abandoned++;
      if (!autoAck) return []; // what was handed to the handler is the handler's to ack
      const marked: Message<T>[] = msgs.slice(acked, done).map((m) => ({ ...m, _status: 'completed' }));
      if (failure) {
        marked.push({ ...failure.message, _status: 'failed', _error: errorText(failure.error) });
        // On the failed message's partition `failed` decides (the lowest signal wins) and what
        // follows it comes back; a pop over several partitions (`partitions(n)`) releases the
        // others' spans at once too.
        marked.push(...msgs.slice(done + 1).map((m) => ({ ...m, _status: 'retry' })));
      } else if (!gaveUp && done < msgs.length) {
        // Stopping: what the handler never saw goes back now, without charging the budget.
        marked.push(...msgs.slice(done).map((m) => ({ ...m, _status: 'retry' })));
      }
      stats.completed += done;
      if (failure) stats.failed++;
      else if (!gaveUp) stats.handedBack += msgs.length - done;
      return marked;
    } finally {
      if (timer) clearInterval(timer);
      running.delete(ctl);
    }
  };

  /**
   * On an empty pop with a channel: register a wait, look once more (a push may have landed
   * before the wait was stored), then sleep until woken. `undefined`: the server has no channel
   * (long-poll from now on). While the channel fails, one long poll stands in for the sleep, so
   * work is still found promptly and nothing spins. `woken`: the sleep ended with a wake-up, and
   * the next pop tells whether to relay it.
   */
  const idleOnChannel = async (
    pop: () => Promise<Message<T>[]>,
    longPoll: () => Promise<Message<T>[]>,
  ): Promise<Message<T>[] | 'woken' | undefined> => {
    if (!channel || channel.state === 'unavailable') return undefined;
    let armed: 'armed' | 'unavailable';
    try {
      armed = await channel.arm(stopping.signal);
    } catch (e) {
      if (stopping.signal.aborted) return [];
      report(e, 'pop');
      return longPoll();
    }
    if (armed === 'unavailable') return undefined;
    const again = await pop();
    if (again.length > 0) return again;
    let left = safetyPollMs;
    if (opts.idleMs !== undefined) left = Math.min(left, Math.max(0, opts.idleMs - (Date.now() - lastMessageAt)));
    return (await channel.sleep(left, stopping.signal)) === 'work' ? 'woken' : [];
  };

  const worker = async (): Promise<void> => {
    let carried: Message<T>[] = []; // the last pop's final acks, sent with the next pop
    try {
      await work(
        (acks) => (carried = acks),
        () => carried.splice(0),
      );
    } finally {
      await ack(carried, 'completed');
    }
  };

  /**
   * The poll loop. A batch's final acks travel with the next pop in one request
   * (`ack-and-pop`, without waiting, so a stop never cuts it short); when that finds nothing,
   * or there were no acks, the loop pops (and long-polls) as usual.
   */
  let combinedMissing = false;
  const work = async (carry: (acks: Message<T>[]) => void, take: () => Message<T>[]): Promise<void> => {
    // After a failure the failed message heads its partition again: pop it alone until a pop
    // goes through cleanly, rather than re-reading a whole pop behind it at each redelivery.
    let recovering = false;
    let woken = false; // this worker's last sleep ended with a wake-up
    while (!stopping.signal.aborted) {
      if (opts.limit !== undefined && stats.messages >= opts.limit) break;
      const size = recovering ? 1 : popBatch;
      // A limit caps the pop too, so `limit: 5` does not lease 1,000 messages to use 5.
      let ref = q.batch(opts.limit !== undefined ? Math.max(1, Math.min(size, opts.limit - stats.messages)) : size);
      if (opts.idleMs !== undefined) {
        const left = opts.idleMs - (Date.now() - lastMessageAt);
        if (left <= 0) break;
        if (q.spec.wait && left < q.spec.timeoutMs) ref = ref.timeout(Math.max(1, left));
      }
      let msgs: Message<T>[] = [];
      const acks = take();
      if (acks.length > 0 && !combinedMissing) {
        try {
          const r = await ackAndPop<T>(ref.wait(false), acks);
          reportAcks(r.acks, 'completed', acks);
          msgs = r.messages;
        } catch (e) {
          // A server from before the route: ack on its own from now on.
          if (e instanceof SluiceApiError && (e.status === 404 || e.status === 405)) combinedMissing = true;
          else report(e, 'ack', acks);
        }
      }
      if (combinedMissing) await ack(acks, 'completed');
      // With a channel the pop never waits on the server: waiting happens on the channel.
      const onChannel = channel !== undefined && channel.state !== 'unavailable';
      const waiting = ref;
      if (onChannel) ref = ref.wait(false);
      const pop = (): Promise<Message<T>[]> => ref.pop<T>({ signal: stopping.signal });
      try {
        if (msgs.length === 0) msgs = await pop();
        // Woken and found work: the server wakes the group's next consumers, which may find more.
        if (woken && msgs.length > 0) channel?.relay();
        woken = false;
        if (msgs.length === 0 && onChannel) {
          const idle = await idleOnChannel(pop, () => waiting.pop<T>({ signal: stopping.signal }));
          if (idle === undefined) continue; // the server has no channel: long-poll from now on
          if (idle === 'woken') {
            woken = true;
            continue;
          }
          msgs = idle;
          if (msgs.length === 0) continue;
        }
      } catch (e) {
        if (stopping.signal.aborted) break;
        if (e instanceof SluiceApiError && e.status >= 400 && e.status < 500 && e.status !== 429) {
          fatal ??= e; // a configuration problem (forbidden, invalid): stop everyone
          stop();
          break;
        }
        report(e, 'pop');
        await sleep(1000, stopping.signal).catch(() => undefined);
        continue;
      }
      if (msgs.length === 0) {
        if (!q.spec.wait) await sleep(100, stopping.signal).catch(() => undefined);
        continue;
      }
      lastMessageAt = Date.now();
      stats.messages += msgs.length;
      stats.batches++;
      const finalAcks = await processBatch(msgs);
      recovering = finalAcks.some((m) => m._status === 'failed');
      carry(finalAcks);
      // Limit reached: stop the other workers' long polls too (running handlers still finish).
      if (opts.limit !== undefined && stats.messages >= opts.limit) stop();
    }
  };

  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    opts.signal?.removeEventListener('abort', stop);
    channel?.close();
    if (abandonTimer) clearTimeout(abandonTimer);
    if (!stopping.signal.aborted) stopping.abort();
  }
  if (fatal) throw fatal;
  return stats;
}

/** Messages per pop request by default: one pop and one ack carry this many (see docs/CLIENT.md). */
export const DEFAULT_POP_BATCH = 1000;
/** Lease renewal interval by default: inside the 60 s lease of a queue a push created. */
export const DEFAULT_RENEW_MS = 10_000;
/** How often a long pop's finished part is acked by default. */
export const DEFAULT_ACK_INTERVAL_MS = 5_000;
