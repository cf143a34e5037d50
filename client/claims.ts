// One concept past 500 lines: a record-claim group, every call of its HTTP API and the consume loop over them.
/**
 * Record claims: a consumer group read as a shared work queue on one partition
 * (`/api/v1/queues/{q}/partitions/{p}/groups/{g}/...`). {@link ClaimGroup} has one method per
 * route and a consumer loop, {@link ClaimGroup.consume}.
 */
import { randomUUID } from 'node:crypto';
import { batchedClaims, type ClaimBatchHandler, type ClaimBatchOptions } from './claim-batches.js';
import { SluiceApiError } from './errors.js';
import { LONG_POLL_MARGIN_MS, seg, type Transport } from './http.js';
import { sleep } from './retry.js';
import type { ClaimGroupState, ClaimRecord, ClaimStart, PollResult } from './types.js';
import type {
  ClaimAckAnswer,
  ClaimCreateAnswer,
  ClaimDeadLetterAnswer,
  ClaimDeleteAnswer,
  ClaimDiscardAnswer,
  ClaimExtendAnswer,
  ClaimListDeadLettersAnswer,
  ClaimNackAnswer,
  ClaimRedriveAnswer,
  ClaimSeekAnswer,
} from './wire.js';

export interface PollOptions {
  /** Records at most (the server caps a poll at 1,000 and about 4 MiB). */
  max?: number;
  /** Long-poll up to this long when nothing is owed (capped by the server, 25 s by default). */
  waitMs?: number;
  /** How long these claims stand (default: the queue's visibilityTimeoutMs). */
  visibilityMs?: number;
  /** Member name (1-128 bytes), owned by the authenticated principal. */
  consumer?: string;
  /** The member process's session token (pick one per process start). */
  session?: string;
  /** Take back what this member held under older sessions (first poll of a session). */
  reclaim?: boolean;
  signal?: AbortSignal;
}

/** What a claim handler may do with its record. Each settles it (the first call wins). */
export interface ClaimContext<T> {
  record: ClaimRecord<T>;
  /** Aborts when the claim was lost (an extension was refused) or the consumer gave up on the handler. */
  signal: AbortSignal;
  /** Finished (batched with other acks into one call). */
  ack(): Promise<void>;
  /** Hand back: owed to the group at once. */
  nack(): Promise<void>;
  /** Hand back after `delayMs` (holds an in-flight slot meanwhile). */
  nackAfter(delayMs: number): Promise<void>;
  /** Make the claim stand `ms` from now (default: the consumer's extension length). */
  extend(ms?: number): Promise<number>;
  /** Give up: list as a dead letter and move past it. */
  deadLetter(): Promise<void>;
  /** Whether the record was settled by the handler. */
  readonly settled: boolean;
}

export type ClaimHandler<T> = (record: ClaimRecord<T>, ctx: ClaimContext<T>) => unknown;

export interface ClaimConsumeOptions {
  /** Stops the consumer gracefully. */
  signal?: AbortSignal;
  /** Handlers running at once (default 1). */
  concurrency?: number;
  /** Records per poll (default: `concurrency`). Records beyond free slots wait, their claims kept alive. */
  max?: number;
  /** Long-poll wait per poll (default 20 s). */
  waitMs?: number;
  /** Claim duration asked on each poll (default 30 s). */
  visibilityMs?: number;
  /** Length of each automatic extension (default: `visibilityMs`). */
  extendMs?: number;
  /** Extend when this fraction of the standing claim has passed (default 0.5). */
  extendAt?: number;
  /** Member name: with it, a session token is minted at start and the first poll reclaims. */
  consumer?: string;
  /** Session token (default: a random UUID per consume() call). */
  session?: string;
  /** Ack when the handler resolves and nack when it throws, unless it settled (default true). */
  autoAck?: boolean;
  /** Delay the hand-back of a failed record (ms, or a function of the record and error; default 0 = at once). */
  failureDelayMs?: number | ((record: ClaimRecord, error: unknown) => number);
  /** Stop once this many records were delivered. */
  limit?: number;
  /** Stop after this long without a record. */
  idleMs?: number;
  /** After `signal` aborts, how long running handlers may take (default 30 s). */
  stopTimeoutMs?: number;
  /** Flush batched acks after this long (default 10 ms) or at 100 offsets. */
  ackFlushMs?: number;
  onError?: (
    error: unknown,
    info: { phase: 'poll' | 'ack' | 'nack' | 'extend' | 'dead-letter' | 'handler'; offset?: number },
  ) => void;
}

export interface ClaimConsumeStats {
  records: number;
  acked: number;
  nacked: number;
  deadLettered: number;
  extended: number;
  /** Records received but not started when the consumer stopped, nacked back to the group. */
  handedBack: number;
  /** Handlers given up on at the stop bound (their claims lapse, or return to this member on reclaim). */
  abandoned: number;
  /** Claims lost while handled (an extension was refused as stale). */
  lost: number;
  /** The session token the consumer used. */
  session?: string;
}

/**
 * One record-claim group on one partition.
 *
 * @example
 * ```ts
 * const workers = sluice.queue('jobs').partition('p0').claimGroup('workers');
 * await workers.create('earliest');
 * const { records } = await workers.poll({ max: 10, waitMs: 5000 });
 * await workers.ack(records.map((r) => r.offset));
 * ```
 */
export class ClaimGroup {
  readonly path: string;

  constructor(
    private readonly http: Transport,
    readonly queue: string,
    readonly partition: string,
    readonly group: string,
  ) {
    this.path = `/api/v1/queues/${seg(queue)}/partitions/${seg(partition)}/groups/${seg(group)}`;
  }

  /**
   * Claims up to `max` records (owed ones first). An empty answer is not an error; one the
   * deployment's wait cap turned away returns after the `Retry-After` it carries.
   */
  async poll<T = unknown>(opts: PollOptions = {}): Promise<PollResult<T>> {
    const { signal, ...body } = opts;
    const r = await this.http.json<PollResult<T>>({
      method: 'POST',
      path: `${this.path}/poll`,
      body,
      // A poll whose answer was lost leaves records claimed until they lapse: delayed, not lost.
      retry: 'idempotent',
      timeoutMs: opts.waitMs ? opts.waitMs + LONG_POLL_MARGIN_MS : undefined,
      signal,
      paced: true,
    });
    return { records: r?.records ?? [], capped: r?.capped ?? false };
  }

  /** Finishes offsets in one write; answers the group's position after it. Retried (a repeat is a harmless duplicate). */
  async ack(offsets: number | readonly number[], opts: { signal?: AbortSignal } = {}): Promise<ClaimAckAnswer> {
    const list = typeof offsets === 'number' ? [offsets] : [...offsets];
    return (await this.http.json<ClaimAckAnswer>({
      method: 'POST',
      path: `${this.path}/ack`,
      body: { offsets: list },
      retry: 'idempotent',
      signal: opts.signal,
    })) as ClaimAckAnswer;
  }

  /**
   * Hands a record back (owed at once, or after `delayMs`). Naming the delivery (`attempts`)
   * fences it: a repeat, or a late nack after the record went out again, is refused as
   * `stale_claim`, so the call is retried only when `attempts` is given.
   */
  async nack(
    offset: number,
    opts: { attempts?: number; delayMs?: number; signal?: AbortSignal } = {},
  ): Promise<ClaimNackAnswer> {
    const { signal, ...rest } = opts;
    return (await this.http.json<ClaimNackAnswer>({
      method: 'POST',
      path: `${this.path}/nack`,
      body: { offset, ...rest },
      retry: opts.attempts !== undefined ? 'idempotent' : 'unsafe',
      signal,
    })) as ClaimNackAnswer;
  }

  /** Makes the claim of delivery `attempts` stand `extendMs` from now; answers how long it stands. */
  async extend(
    offset: number,
    attempts: number,
    extendMs: number,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ClaimExtendAnswer> {
    return (await this.http.json<ClaimExtendAnswer>({
      method: 'POST',
      path: `${this.path}/extend`,
      body: { offset, attempts, extendMs },
      retry: 'idempotent',
      signal: opts.signal,
    })) as ClaimExtendAnswer;
  }

  /** Gives up on a record: lists it as a dead letter and moves the group past it. */
  async deadLetter(
    offset: number,
    opts: { attempts?: number; signal?: AbortSignal } = {},
  ): Promise<ClaimDeadLetterAnswer> {
    return (await this.http.json<ClaimDeadLetterAnswer>({
      method: 'POST',
      path: `${this.path}/dead-letter`,
      body: { offset, ...(opts.attempts !== undefined ? { attempts: opts.attempts } : {}) },
      retry: opts.attempts !== undefined ? 'idempotent' : 'unsafe',
      signal: opts.signal,
    })) as ClaimDeadLetterAnswer;
  }

  /** One page of dead-lettered offsets, ascending (`next` is the `after` of the next page). */
  async deadLetters(
    opts: { after?: number; limit?: number; signal?: AbortSignal } = {},
  ): Promise<ClaimListDeadLettersAnswer> {
    const r = await this.http.json<ClaimListDeadLettersAnswer>({
      method: 'GET',
      path: `${this.path}/dead-letters`,
      query: { after: opts.after, limit: opts.limit },
      retry: 'idempotent',
      signal: opts.signal,
    });
    return { offsets: r?.offsets ?? [], ...(r?.next !== undefined ? { next: r.next } : {}) };
  }

  /** Every dead-lettered offset. */
  async allDeadLetters(opts: { signal?: AbortSignal } = {}): Promise<number[]> {
    const out: number[] = [];
    let after: number | undefined;
    for (;;) {
      const page = await this.deadLetters({
        ...(after !== undefined ? { after } : {}),
        limit: 10_000,
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      out.push(...page.offsets);
      if (page.next === undefined || page.offsets.length === 0) return out;
      after = page.next;
    }
  }

  /** Puts a dead letter back: attempts reset, owed again (the cursor does not move back). */
  async redrive(offset: number, opts: { signal?: AbortSignal } = {}): Promise<ClaimRedriveAnswer> {
    return (await this.http.json<ClaimRedriveAnswer>({
      method: 'POST',
      path: `${this.path}/dead-letters/${seg(offset)}/redrive`,
      retry: 'idempotent',
      signal: opts.signal,
    })) as ClaimRedriveAnswer;
  }

  /** Stops tracking a dead letter (the record stays in the log). */
  async discard(offset: number, opts: { signal?: AbortSignal } = {}): Promise<ClaimDiscardAnswer> {
    return (await this.http.json<ClaimDiscardAnswer>({
      method: 'DELETE',
      path: `${this.path}/dead-letters/${seg(offset)}`,
      retry: 'idempotent',
      signal: opts.signal,
    })) as ClaimDiscardAnswer;
  }

  /** Creates the group at a start position; an existing group is left alone. */
  async create(start: ClaimStart = 'earliest', opts: { signal?: AbortSignal } = {}): Promise<ClaimCreateAnswer> {
    return (await this.http.json<ClaimCreateAnswer>({
      method: 'PUT',
      path: this.path,
      body: { start },
      retry: 'idempotent',
      signal: opts.signal,
    })) as ClaimCreateAnswer;
  }

  /** Moves the group; voids every standing claim (their acks become `stale_claim`). */
  async seek(start: ClaimStart, opts: { signal?: AbortSignal } = {}): Promise<ClaimSeekAnswer> {
    return (await this.http.json<ClaimSeekAnswer>({
      method: 'POST',
      path: `${this.path}/seek`,
      body: { start },
      retry: 'idempotent',
      signal: opts.signal,
    })) as ClaimSeekAnswer;
  }

  /** Committed position, tail, lag, in-flight, owed and dead-letter counts. */
  async describe(opts: { signal?: AbortSignal } = {}): Promise<ClaimGroupState> {
    return (await this.http.json<ClaimGroupState>({
      method: 'GET',
      path: this.path,
      retry: 'idempotent',
      signal: opts.signal,
    })) as ClaimGroupState;
  }

  /** Deletes the group's position, claims and dead letters on this partition. */
  async delete(opts: { signal?: AbortSignal } = {}): Promise<ClaimDeleteAnswer> {
    return (await this.http.json<ClaimDeleteAnswer>({
      method: 'DELETE',
      path: this.path,
      retry: 'idempotent',
      signal: opts.signal,
    })) as ClaimDeleteAnswer;
  }

  /**
   * Consumes until `signal` aborts (or `limit`/`idleMs`). Keeps each claim alive while its
   * record waits or is handled (extending it, by its delivery's `attempts`, once `extendAt`
   * of it has passed); acks (batched) when the handler resolves, nacks when it throws, unless
   * the handler settled the record itself through its context.
   *
   * Graceful stop: no new polls (a poll in flight is abandoned: records it may have claimed
   * come back when their claims lapse, or at once to this member name's next reclaiming
   * session); received records not yet started are nacked back; running handlers finish
   * for up to `stopTimeoutMs` and are settled as usual; pending acks are flushed.
   */
  consume<T = unknown>(handler: ClaimHandler<T>, opts: ClaimConsumeOptions = {}): Promise<ClaimConsumeStats> {
    return new ClaimConsumer<T>(this, handler, opts).run();
  }

  /**
   * Consumes as {@link ClaimGroup.consume} does, handing the handler up to `batch` records per
   * call (default 10). Each record is still claimed, kept alive and settled on its own: the
   * handler fails some by returning `{ batchItemFailures: [{ itemIdentifier: transactionId }] }`,
   * and when it throws, each record of the call is tried alone and only those that fail alone
   * are nacked (each with its own error, to `onError`). Make the handler idempotent.
   *
   * @example
   * ```ts
   * await workers.consumeBatches(async (records) => {
   *   const bad = records.filter((r) => !valid(r.data));
   *   await store(records.filter((r) => valid(r.data)));
   *   return { batchItemFailures: bad.map((r) => ({ itemIdentifier: r.transactionId })) };
   * }, { batch: 10, signal });
   * ```
   */
  consumeBatches<T = unknown>(handler: ClaimBatchHandler<T>, opts: ClaimBatchOptions = {}): Promise<ClaimConsumeStats> {
    const b = batchedClaims(handler, opts);
    return this.consume(b.handler, b.options);
  }
}

/** Coalesces acks into one call per flush; a failed multi-offset call is retried per offset. */
class AckBatcher {
  private pending: { offset: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  constructor(
    private readonly group: ClaimGroup,
    private readonly flushMs: number,
  ) {}

  add(offset: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ offset, resolve, reject });
      if (this.pending.length >= 100) void this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
    });
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    try {
      await this.group.ack(batch.map((b) => b.offset));
      for (const b of batch) b.resolve();
    } catch (e) {
      if (batch.length === 1) {
        batch[0]?.reject(e);
        return;
      }
      // One bad offset (stale after a seek) refuses the whole call: settle the rest one by one.
      await Promise.all(
        batch.map(async (b) => {
          try {
            await this.group.ack([b.offset]);
            b.resolve();
          } catch (err) {
            b.reject(err);
          }
        }),
      );
    }
  }
}

/** Keeps one claim alive until stopped. */
class Keeper {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private handlerCtl: AbortController | undefined;
  constructor(
    private readonly group: ClaimGroup,
    private readonly rec: ClaimRecord,
    private readonly extendMs: number,
    private readonly extendAt: number,
    private readonly onExtended: () => void,
    private readonly onLost: (e: unknown) => void,
    private readonly onError: (e: unknown) => void,
  ) {}

  /** The handler whose signal aborts if the claim is lost. */
  bind(ctl: AbortController): void {
    this.handlerCtl = ctl;
  }

  /** (Re)arms for a claim that stands `visibleMs` from now. */
  arm(visibleMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    const at = Math.max(10, Math.floor(visibleMs * this.extendAt));
    this.timer = setTimeout(() => void this.tick(visibleMs - at), at);
  }

  private async tick(leftMs: number): Promise<void> {
    if (this.stopped) return;
    const started = Date.now();
    try {
      const r = await this.group.extend(this.rec.offset, this.rec.attempts, this.extendMs);
      this.onExtended();
      this.arm(r.visibleMs);
    } catch (e) {
      if (this.stopped) return;
      if (e instanceof SluiceApiError && (e.code === 'stale_claim' || e.status === 409)) {
        this.stopped = true;
        this.onLost(e);
        this.handlerCtl?.abort(e);
        return;
      }
      this.onError(e);
      const remaining = leftMs - (Date.now() - started);
      if (remaining > 20) this.arm(remaining / this.extendAt / 2); // try again before it lapses
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

class ClaimConsumer<T> {
  private readonly stats: ClaimConsumeStats = {
    records: 0,
    acked: 0,
    nacked: 0,
    deadLettered: 0,
    extended: 0,
    handedBack: 0,
    abandoned: 0,
    lost: 0,
  };
  private readonly stopping = new AbortController();
  private readonly buffer: { rec: ClaimRecord<T>; keeper: Keeper }[] = [];
  private active = 0;
  private wake: (() => void) | undefined;
  private readonly running = new Set<Promise<void>>();
  private readonly handlerControllers = new Set<AbortController>();
  private abandonTimer: NodeJS.Timeout | undefined;
  private abandonResolve!: () => void;
  private readonly abandoned = new Promise<void>((r) => (this.abandonResolve = r));
  private readonly acks: AckBatcher;
  private fatal: SluiceApiError | undefined;
  private readonly concurrency: number;
  private readonly visibilityMs: number;
  private readonly extendMs: number;

  constructor(
    private readonly group: ClaimGroup,
    private readonly handler: ClaimHandler<T>,
    private readonly opts: ClaimConsumeOptions,
  ) {
    this.concurrency = Math.max(1, opts.concurrency ?? 1);
    this.visibilityMs = opts.visibilityMs ?? 30_000;
    this.extendMs = opts.extendMs ?? this.visibilityMs;
    this.acks = new AckBatcher(group, opts.ackFlushMs ?? 10);
  }

  private report(
    e: unknown,
    phase: Parameters<NonNullable<ClaimConsumeOptions['onError']>>[1]['phase'],
    offset?: number,
  ): void {
    this.opts.onError?.(e, { phase, ...(offset !== undefined ? { offset } : {}) });
  }

  private readonly stop = (): void => {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort(this.opts.signal?.reason);
    this.wake?.();
    this.abandonTimer = setTimeout(() => {
      for (const c of this.handlerControllers)
        c.abort(new Error('consumer stopped: handler abandoned at the stop bound'));
      this.abandonResolve();
    }, this.opts.stopTimeoutMs ?? 30_000);
  };

  async run(): Promise<ClaimConsumeStats> {
    const o = this.opts;
    const session = o.consumer ? (o.session ?? randomUUID()) : o.session;
    if (session) this.stats.session = session;
    if (o.signal?.aborted) return this.stats;
    o.signal?.addEventListener('abort', this.stop, { once: true });
    let first = true;
    let lastRecordAt = Date.now();
    try {
      while (!this.stopping.signal.aborted) {
        if (o.limit !== undefined && this.stats.records >= o.limit) break;
        if (this.buffer.length > 0 || this.active >= this.concurrency) {
          await new Promise<void>((r) => (this.wake = r));
          this.wake = undefined;
          continue;
        }
        let waitMs = o.waitMs ?? 20_000;
        if (o.idleMs !== undefined) {
          const left = o.idleMs - (Date.now() - lastRecordAt);
          if (left <= 0) break;
          waitMs = Math.min(waitMs, left);
        }
        let res: PollResult<T>;
        try {
          res = await this.group.poll<T>({
            max: o.max ?? this.concurrency,
            waitMs,
            visibilityMs: this.visibilityMs,
            ...(o.consumer
              ? { consumer: o.consumer, session: session as string, ...(first ? { reclaim: true } : {}) }
              : session
                ? { session }
                : {}),
            signal: this.stopping.signal,
          });
        } catch (e) {
          if (this.stopping.signal.aborted) break;
          if (e instanceof SluiceApiError && e.status >= 400 && e.status < 500 && e.status !== 429) {
            this.fatal = e;
            break;
          }
          this.report(e, 'poll');
          await sleep(1000, this.stopping.signal).catch(() => undefined);
          continue;
        }
        first = false;
        if (res.records.length === 0) continue;
        lastRecordAt = Date.now();
        this.stats.records += res.records.length;
        for (const rec of res.records) {
          const keeper = new Keeper(
            this.group,
            rec,
            this.extendMs,
            o.extendAt ?? 0.5,
            () => this.stats.extended++,
            (e) => {
              this.stats.lost++;
              this.report(e, 'extend', rec.offset);
            },
            (e) => this.report(e, 'extend', rec.offset),
          );
          keeper.arm(this.visibilityMs);
          this.buffer.push({ rec, keeper });
        }
        if (this.stopping.signal.aborted) break;
        this.dispatch();
      }
    } finally {
      o.signal?.removeEventListener('abort', this.stop);
    }
    // Stopping: hand back what was never started, let running handlers finish (bounded).
    const notStarted = this.buffer.splice(0);
    await Promise.all(
      notStarted.map(async ({ rec, keeper }) => {
        keeper.stop();
        try {
          await this.group.nack(rec.offset, { attempts: rec.attempts });
          this.stats.handedBack++;
        } catch (e) {
          this.report(e, 'nack', rec.offset);
        }
      }),
    );
    await Promise.all([...this.running]);
    await this.acks.flush();
    if (this.abandonTimer) clearTimeout(this.abandonTimer);
    if (this.fatal) throw this.fatal;
    return this.stats;
  }

  private dispatch(): void {
    while (this.active < this.concurrency && this.buffer.length > 0 && !this.stopping.signal.aborted) {
      const next = this.buffer.shift() as { rec: ClaimRecord<T>; keeper: Keeper };
      this.active++;
      const p = this.handle(next.rec, next.keeper).finally(() => {
        this.active--;
        this.running.delete(p);
        this.dispatch();
        this.wake?.();
      });
      this.running.add(p);
    }
  }

  private async handle(rec: ClaimRecord<T>, keeper: Keeper): Promise<void> {
    const ctl = new AbortController();
    this.handlerControllers.add(ctl);
    let settled = false;
    const once = async (what: string, fn: () => Promise<void>): Promise<void> => {
      if (settled) throw new Error(`record ${rec.offset} is already settled; cannot ${what} it`);
      settled = true;
      keeper.stop();
      await fn();
    };
    const ctx: ClaimContext<T> = {
      record: rec,
      signal: ctl.signal,
      get settled() {
        return settled;
      },
      ack: () =>
        once('ack', async () => {
          await this.acks.add(rec.offset);
          this.stats.acked++;
        }),
      nack: () =>
        once('nack', async () => {
          await this.group.nack(rec.offset, { attempts: rec.attempts });
          this.stats.nacked++;
        }),
      nackAfter: (delayMs: number) =>
        once('nack', async () => {
          await this.group.nack(rec.offset, { attempts: rec.attempts, delayMs });
          this.stats.nacked++;
        }),
      deadLetter: () =>
        once('dead-letter', async () => {
          await this.group.deadLetter(rec.offset, { attempts: rec.attempts });
          this.stats.deadLettered++;
        }),
      extend: async (ms = this.extendMs) => {
        const r = await this.group.extend(rec.offset, rec.attempts, ms);
        this.stats.extended++;
        keeper.arm(r.visibleMs);
        return r.visibleMs;
      },
    };
    keeper.bind(ctl);
    try {
      const run = (async (): Promise<{ ok: true } | { ok: false; error: unknown }> => {
        try {
          await this.handler(rec, ctx);
          return { ok: true };
        } catch (error) {
          return { ok: false, error };
        }
      })();
      const out = await Promise.race([run, this.abandoned.then(() => 'abandoned' as const)]);
      if (out === 'abandoned') {
        keeper.stop();
        this.stats.abandoned++;
        return;
      }
      if (!out.ok) this.report(out.error, 'handler', rec.offset);
      if (settled || this.opts.autoAck === false) {
        if (!settled) keeper.stop(); // manual mode, handler returned without settling: the claim lapses
        return;
      }
      if (out.ok) {
        await ctx.ack().catch((e: unknown) => this.report(e, 'ack', rec.offset));
      } else {
        const d =
          typeof this.opts.failureDelayMs === 'function'
            ? this.opts.failureDelayMs(rec, out.error)
            : (this.opts.failureDelayMs ?? 0);
        await (d > 0 ? ctx.nackAfter(d) : ctx.nack()).catch((e: unknown) => this.report(e, 'nack', rec.offset));
      }
    } finally {
      keeper.stop();
      this.handlerControllers.delete(ctl);
    }
  }
}
