/**
 * What the workers of one partition-lease consumer share (`consume.ts` has the model): the
 * settings, the stats, the stop and its bound, the wake-up channel, and the acks and error
 * reports every state makes.
 */
import type { CallResult } from './batch-outcome.js';
import type { LeaseConsumeOptions, LeaseConsumeStats, LeaseHandler } from './consume.js';
import type { SluiceApiError } from './errors.js';
import { QUEUE_MODE, type QueueRef } from './sluice.js';
import type { AckResult, AckStatus, Message } from './types.js';
import { WakeChannel } from './wake-channel.js';

/** Where a failure the loop survives happened (the `onError` option's `phase`). */
export type Phase = 'pop' | 'ack' | 'renew' | 'handler';

/** {@link LeaseConsumeOptions} with the defaults filled in (`consume.ts`, `settingsOf`). */
export interface LeaseSettings {
  autoAck: boolean;
  concurrency: number;
  stopTimeoutMs: number;
  /** Renewal interval in ms (0: off), and the seconds each renewal asks for. */
  renewEvery: number;
  renewSeconds: number;
  /** Progress-ack interval in ms (0: only the final acks). */
  ackEvery: number;
  each: boolean;
  /** Messages per handler call, and per pop. */
  perCall: number;
  popBatch: number;
  limit: number | undefined;
  idleMs: number | undefined;
  /** Wait on the deployment's notification channel when it offers one. */
  notifications: boolean;
  safetyPollMs: number;
}

/**
 * One consumer's shared state. The stop has two stages: {@link stop} aborts
 * {@link stopping} (no new pops), and `stopTimeoutMs` later {@link abandoned} resolves and the
 * running handlers' signals abort.
 *
 * @example
 * ```ts
 * const run = new LeaseRun(q, handler, settings, opts);
 * await Promise.all(Array.from({ length: settings.concurrency }, () => runWorker(run)));
 * run.close();
 * ```
 */
export class LeaseRun<T> {
  readonly stats: LeaseConsumeStats = { messages: 0, batches: 0, completed: 0, failed: 0, handedBack: 0, abandoned: 0 };
  /** Aborted at the stop: no new pops, and a long poll in flight is abandoned. */
  readonly stopping = new AbortController();
  /** Resolves at the stop bound: handlers still running then are given up. */
  readonly abandoned: Promise<void>;
  /** The abort controllers of the pops being handled (their handlers' `ctx.signal`). */
  readonly running = new Set<AbortController>();
  /** One connection for all workers; each registers its own waits on it, for the loop's group. */
  readonly channel: WakeChannel | undefined;
  /** A refused pop (a configuration problem): every worker stops and `consume()` throws it. */
  fatal: SluiceApiError | undefined;
  /** When a pop last delivered messages (for `idleMs`). */
  lastMessageAt = Date.now();
  /** The server has no ack-and-pop route (one from before it): acks go on their own from then on. */
  combinedMissing = false;
  private abandonTimer: NodeJS.Timeout | undefined;
  private abandonResolve!: () => void;

  constructor(
    readonly q: QueueRef,
    readonly handler: LeaseHandler<T>,
    readonly settings: LeaseSettings,
    private readonly opts: Pick<LeaseConsumeOptions, 'signal' | 'onError'>,
  ) {
    this.abandoned = new Promise<void>((r) => (this.abandonResolve = r));
    this.channel = settings.notifications
      ? new WakeChannel(q.client.http, q.spec.queue, q.spec.group ?? QUEUE_MODE)
      : undefined;
  }

  get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** Starts the stop (the caller's signal, the limit, a refused pop); the second call does nothing. */
  readonly stop = (): void => {
    if (this.stopped) return;
    this.stopping.abort(this.opts.signal?.reason);
    this.abandonTimer = setTimeout(() => {
      for (const c of this.running) c.abort(new Error('consumer stopped: handler abandoned at the stop bound'));
      this.abandonResolve();
    }, this.settings.stopTimeoutMs);
  };

  report(e: unknown, phase: Phase, messages?: Message[]): void {
    if (this.opts.onError) this.opts.onError(e, { phase, ...(messages ? { messages } : {}) });
  }

  /** Reports the acks the server did not apply (their messages will be delivered again). */
  reportAcks(results: readonly AckResult[], status: AckStatus, msgs: Message<T>[]): void {
    const bad = results.filter((r) => !r.success);
    if (bad.length > 0)
      this.report(
        new Error(
          `ack ${status}: ${bad.length} of ${results.length} not applied (${bad[0]?.error ?? 'unknown'}); those messages will be delivered again`,
        ),
        'ack',
        msgs,
      );
  }

  /** Acks on their own; a failure is reported, not thrown. */
  async ack(msgs: Message<T>[], status: AckStatus, error?: string): Promise<void> {
    if (msgs.length === 0) return;
    try {
      this.reportAcks(await this.q.client.ack(msgs, status, error !== undefined ? { error } : {}), status, msgs);
    } catch (e) {
      this.report(e, 'ack', msgs);
    }
  }

  /** Runs a handler call, or answers `abandoned` at the stop bound if it is still running then. */
  async bounded(fn: () => unknown): Promise<CallResult> {
    const run = (async (): Promise<CallResult> => {
      try {
        return { kind: 'done', value: await fn() };
      } catch (error) {
        return { kind: 'error', error };
      }
    })();
    return Promise.race([run, this.abandoned.then((): CallResult => ({ kind: 'abandoned' }))]);
  }

  /** After the workers: the channel closed, the bound's timer cleared, and `stopping` aborted. */
  close(): void {
    this.channel?.close();
    if (this.abandonTimer) clearTimeout(this.abandonTimer);
    if (!this.stopped) this.stopping.abort();
  }
}
