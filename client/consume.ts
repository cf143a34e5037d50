/**
 * The partition-lease consumer loop (`queue(q).group(g).consume(handler, opts)`).
 *
 * Each of `concurrency` workers pops a batch (a lease on a span of one or more partitions),
 * runs the handler, and acks: `completed` when it resolves, `failed` (with the error's
 * message) when it throws, so the server's retry budget and dead-letter queue apply. With
 * `renewLease` the lease is extended every interval while the handler runs.
 *
 * Graceful stop (`signal` aborts): no new pops (a long poll in flight is abandoned; a span it
 * may have leased comes back when that lease lapses); handlers already running finish, for
 * up to `stopTimeoutMs`, and are acked as usual. In `each` mode the messages of a batch not
 * yet started are handed back with status `retry` (the lease is released at once, no retry
 * budget is charged). A handler still running at the bound is abandoned: its renewal stops,
 * its `ctx.signal` aborts, nothing is acked, and its lease expires so the span redelivers.
 */
import { SluiceApiError } from './errors.js';
import { sleep } from './retry.js';
import type { QueueRef } from './sluice.js';
import type { AckResult, AckStatus, Message } from './types.js';

export interface LeaseContext<T> {
  /** Aborts when the consumer gives up on this handler (stop bound passed). */
  signal: AbortSignal;
  /** The batch being handled. */
  messages: Message<T>[];
  /** Acks (manual mode); defaults to the whole batch as completed. */
  ack(
    messages?: Message<T> | Message<T>[],
    status?: AckStatus | boolean,
    opts?: { error?: string },
  ): Promise<AckResult[]>;
  /** Extends the batch's lease now. */
  renew(seconds?: number): Promise<void>;
}

export type LeaseHandler<T> =
  | ((messages: Message<T>[], ctx: LeaseContext<T>) => unknown)
  | ((message: Message<T>, ctx: LeaseContext<T>) => unknown);

export interface LeaseConsumeOptions {
  /** Stops the consumer gracefully. */
  signal?: AbortSignal;
  /** Workers popping and handling independently (default 1). */
  concurrency?: number;
  /** Ack after the handler (default true): completed, or failed when it throws. */
  autoAck?: boolean;
  /** Renew the lease every this many ms while a handler runs (default: no renewal). */
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
  /** Failures the loop survives: pops after retries, acks, renewals, handler errors. */
  onError?: (error: unknown, info: { phase: 'pop' | 'ack' | 'renew' | 'handler'; messages?: Message[] }) => void;
}

export interface LeaseConsumeStats {
  /** Messages delivered to handlers. */
  messages: number;
  batches: number;
  /** Messages acked completed. */
  completed: number;
  /** Messages acked failed (handler threw). */
  failed: number;
  /** Messages handed back with `retry` at a stop. */
  handedBack: number;
  /** Batches abandoned at the stop bound (their leases expire). */
  abandoned: number;
}

type Outcome = { kind: 'done' } | { kind: 'error'; error: unknown } | { kind: 'abandoned' };

export async function consumeLeases<T>(
  q: QueueRef,
  handler: LeaseHandler<T>,
  opts: LeaseConsumeOptions = {},
): Promise<LeaseConsumeStats> {
  const client = q.client;
  const autoAck = opts.autoAck ?? true;
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const stopTimeoutMs = opts.stopTimeoutMs ?? 30_000;
  const renewEvery = opts.renewLease ?? 0;
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

  const ack = async (msgs: Message<T>[], status: AckStatus, error?: string): Promise<void> => {
    if (msgs.length === 0) return;
    try {
      const results = await client.ack(msgs, status, error !== undefined ? { error } : {});
      const bad = results.filter((r) => !r.success);
      if (bad.length > 0)
        report(
          new Error(
            `ack ${status}: ${bad.length} of ${results.length} not applied (${bad[0]?.error ?? 'unknown'}); those messages will be delivered again`,
          ),
          'ack',
          msgs,
        );
    } catch (e) {
      report(e, 'ack', msgs);
    }
  };

  const bounded = async (fn: () => unknown): Promise<Outcome> => {
    const run = (async (): Promise<Outcome> => {
      try {
        await fn();
        return { kind: 'done' };
      } catch (error) {
        return { kind: 'error', error };
      }
    })();
    return Promise.race([run, abandoned.then((): Outcome => ({ kind: 'abandoned' }))]);
  };

  const processBatch = async (msgs: Message<T>[]): Promise<void> => {
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
    const timer =
      renewEvery > 0
        ? setInterval(() => void renewNow().catch((e: unknown) => report(e, 'renew', msgs)), renewEvery)
        : undefined;
    const ctx: LeaseContext<T> = {
      signal: ctl.signal,
      messages: msgs,
      ack: (m = msgs, status = 'completed', o = {}) => client.ack(m, status, o),
      renew: renewNow,
    };
    try {
      if (!opts.each) {
        const out = await bounded(() => (handler as (m: Message<T>[], c: LeaseContext<T>) => unknown)(msgs, ctx));
        if (out.kind === 'abandoned') stats.abandoned++;
        else if (out.kind === 'error') {
          report(out.error, 'handler', msgs);
          if (autoAck) {
            await ack(msgs, 'failed', errorText(out.error));
            stats.failed += msgs.length;
          }
        } else if (autoAck) {
          await ack(msgs, 'completed');
          stats.completed += msgs.length;
        }
        return;
      }
      // each: in order; stop at the first failure (the lease release redelivers the rest).
      let i = 0;
      let failure: { error: unknown } | undefined;
      let gaveUp = false;
      for (; i < msgs.length; i++) {
        if (stopping.signal.aborted) break;
        const out = await bounded(() =>
          (handler as (m: Message<T>, c: LeaseContext<T>) => unknown)(msgs[i] as Message<T>, ctx),
        );
        if (out.kind === 'abandoned') {
          gaveUp = true;
          break;
        }
        if (out.kind === 'error') {
          failure = { error: out.error };
          report(out.error, 'handler', [msgs[i] as Message]);
          break;
        }
      }
      if (gaveUp) stats.abandoned++;
      if (!autoAck) return;
      const done = msgs.slice(0, i);
      const marked: Message<T>[] = done.map((m) => ({ ...m, _status: 'completed' }));
      if (failure) marked.push({ ...(msgs[i] as Message<T>), _status: 'failed', _error: errorText(failure.error) });
      else if (!gaveUp && i < msgs.length) marked.push(...msgs.slice(i).map((m) => ({ ...m, _status: 'retry' })));
      await ack(marked, 'completed');
      stats.completed += done.length;
      if (failure) stats.failed++;
      else if (!gaveUp) stats.handedBack += msgs.length - i;
    } finally {
      if (timer) clearInterval(timer);
      running.delete(ctl);
    }
  };

  const worker = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      if (opts.limit !== undefined && stats.messages >= opts.limit) break;
      let ref = q;
      if (opts.idleMs !== undefined) {
        const left = opts.idleMs - (Date.now() - lastMessageAt);
        if (left <= 0) break;
        if (q.spec.wait && left < q.spec.timeoutMs) ref = q.timeout(Math.max(1, left));
      }
      let msgs: Message<T>[];
      try {
        msgs = await ref.pop<T>({ signal: stopping.signal });
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
      await processBatch(msgs);
      // Limit reached: stop the other workers' long polls too (running handlers still finish).
      if (opts.limit !== undefined && stats.messages >= opts.limit) stop();
    }
  };

  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    opts.signal?.removeEventListener('abort', stop);
    if (abandonTimer) clearTimeout(abandonTimer);
    if (!stopping.signal.aborted) stopping.abort();
  }
  if (fatal) throw fatal;
  return stats;
}

export const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e)).slice(0, 2000);
