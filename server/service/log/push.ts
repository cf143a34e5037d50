// One concept past 500 lines: a push from request to per-item results (grouping, dedup, coalescing per partition, the commit loop).
import type { SluiceConfig } from '../../config.js';
import { firstOccurrences } from '../../core/dedup.js';
import { SluiceError } from '../../core/errors.js';
import { uuidv7 } from '../../core/ids.js';
import type { ProducerStamp } from '../../core/producer-sequence.js';
import { DEFAULT_PARTITION, assertName } from '../../core/names.js';
import {
  ConditionFailedError,
  ContentionError,
  StoreFullError,
  StoreUnavailableError,
  TakeRefusedError,
  TakeWriteError,
  type Item,
  type Storage,
  type TakeOptions,
} from '../../storage/port.js';
import type { PayloadCipherLike } from '../encryption.js';
import type { Notifier } from '../notifier.js';
import type { Telemetry } from '../telemetry.js';
import { DedupReservations, type ReservationEntry } from './dedup-reservations.js';
import { logKeys, skipSegmentItem, type PartitionRef, type QueueRecord } from './log-store.js';
import { ProducerSequences, stampIds, type StampedShare } from './producer-sequences.js';
import type { QueueDirectory } from './queue-directory.js';
import {
  HookConflictError,
  assertCanSeal,
  prepareSegment,
  type CommitHook,
  type PreparedCommit,
  type SegmentMessage,
} from './segment-commit.js';

/** One message to push. `payload` is the message's JSON text. */
export interface PushItem {
  queue: string;
  partition?: string | undefined;
  payload: Uint8Array;
  /** Client-supplied id; deduplicated within the queue's window. Minted when absent. */
  transactionId?: string | undefined;
  traceId?: string | null | undefined;
}

export interface PushResult {
  index: number;
  status: 'queued' | 'duplicate' | 'failed';
  queue: string;
  partition: string;
  partitionId: string;
  transactionId: string;
  /** The stored message's id; for a duplicate, the original's. */
  messageId: string;
  traceId: string | null;
  /** Offset of a message queued by this push. */
  offset?: number | undefined;
  error?: string | undefined;
}

/** Options of {@link PushService.push}. */
export interface PushOptions {
  /**
   * The producer stamp of an idempotent push (docs/DELIVERY.md): per partition, a repeat of the
   * last stamp this producer committed there gets the first attempt's answer and stores nothing.
   */
  stamp?: ProducerStamp | undefined;
}

/**
 * Refuses a push to a partition by throwing a SluiceError (see {@link PushService.addPushGuard});
 * or lets it through with a bound on the partition's sequencer that the commit's take must
 * respect, so concurrent pushes cannot all pass a check made before any of them committed.
 */
export type PushGuard = (c: {
  queue: QueueRecord;
  partition: PartitionRef;
  count: number;
}) => Promise<PushBound | void>;

/** The highest value the partition's sequencer may reach with this push, and the error when it would not fit. */
export interface PushBound {
  atMost: number;
  refusal: () => Error;
}

/** The tighter of two bounds. */
const tighter = (a: PushBound | undefined, b: PushBound | undefined): PushBound | undefined =>
  a === undefined ? b : b === undefined || a.atMost <= b.atMost ? a : b;

export interface PushServiceDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'inlineMaxBytes' | 'compressMinBytes' | 'pushStallMs'> &
    Partial<Pick<SluiceConfig, 'gapCloseMs'>>;
  notifier: Notifier;
  queues: QueueDirectory;
  /** Seals payloads of queues with `encryptionEnabled`; absent without a key. */
  cipher?: PayloadCipherLike | undefined;
  /** Epoch ms; injected so tests can move time. */
  clock?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /**
   * Where `MessagesPushed` and `DuplicatesRejected` are counted (every push: plain,
   * transactional, replayed), and `StampEvicted` (a producer forgotten by a partition); and where
   * a failed share or an offset range left open is logged.
   */
  telemetry: Telemetry;
}

const realSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Commits of one segment tried before the push gives up (each retry has a cause: see `commit`). */
const MAX_COMMIT_ATTEMPTS = 8;
/** Most messages, and payload bytes, concurrent pushes to one partition are coalesced into. */
const MAX_COALESCED_MESSAGES = 10_000;
const MAX_COALESCED_BYTES = 4 * 1024 * 1024;

/** A push waiting to join the next commit to its partition. */
interface Waiter {
  queue: QueueRecord;
  items: readonly PushItem[];
  bytes: number;
  /** A stamped push commits alone: its take carries its producer's entry. */
  stamp: ProducerStamp | undefined;
  /** The tightest bound the push guards set on the partition's sequencer (maxSize). */
  bound: PushBound | undefined;
  resolve: (r: PushResult[]) => void;
  reject: (e: unknown) => void;
}
const isStorageFailure = (e: unknown): boolean =>
  e instanceof StoreUnavailableError || e instanceof StoreFullError || e instanceof ContentionError;

/**
 * Pushes: messages grouped by (queue, partition), each partition's share committed as one
 * zstd segment at offsets taken from the partition's sequencer (one atomic increment that
 * never fails for contention), then written at them. Pushes to one partition that arrive while
 * a commit to it is running join the next one: concurrent producers in a process batch instead
 * of contending (docs/STORAGE.md, "How a push commits").
 *
 * @example
 * ```ts
 * const [r] = await pushes.push([{ queue: 'orders', payload: Buffer.from('{"id":1}') }]);
 * r.offset; // 0 on a new partition
 * ```
 */
export class PushService {
  private readonly clock: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly reservations: DedupReservations;
  private readonly hooks: CommitHook[] = [];
  private readonly guards: PushGuard[] = [];
  /** Per partition id: pushes waiting for the commit in progress to finish. */
  private readonly lanes = new Map<string, { waiting: Waiter[] }>();
  private readonly sequences: ProducerSequences;

  constructor(private readonly deps: PushServiceDeps) {
    this.clock = deps.clock ?? Date.now;
    this.sleep = deps.sleep ?? realSleep;
    this.reservations = new DedupReservations({
      storage: this.deps.storage,
      config: this.deps.config,
      clock: this.clock,
      sleep: this.sleep,
    });
    this.sequences = new ProducerSequences({
      storage: this.deps.storage,
      gapCloseMs: this.deps.config.gapCloseMs ?? 60_000,
      clock: this.clock,
      sleep: this.sleep,
      closeRange: (pid, first, count, at) => this.closeRange(pid, first, count, at),
      telemetry: this.deps.telemetry,
    });
  }

  /** Registers extra writes that commit atomically with every segment. */
  addCommitHook(hook: CommitHook): void {
    this.hooks.push(hook);
  }

  /**
   * Registers a check run before any segment of a push is written, once per target
   * partition (the lease `maxSize` limit is one). A guard refuses by throwing a SluiceError,
   * and then nothing of the push is written.
   */
  addPushGuard(guard: PushGuard): void {
    this.guards.push(guard);
  }

  private async runPushGuards(queue: QueueRecord, part: PartitionRef, count: number): Promise<PushBound | undefined> {
    let bound: PushBound | undefined;
    for (const g of this.guards) bound = tighter(bound, (await g({ queue, partition: part, count })) ?? undefined);
    return bound;
  }

  /**
   * Pushes messages, possibly to several queues and partitions. Each partition's share is
   * committed atomically as one segment; results come back in input order. With a producer
   * stamp, a repeat of a push gets its first attempt's answer (docs/DELIVERY.md).
   */
  async push(items: readonly PushItem[], opts: PushOptions = {}): Promise<PushResult[]> {
    const results: PushResult[] = new Array<PushResult>(items.length);
    // Group by (queue, partition), validating every distinct name before anything is written.
    // One pass, and no key string built while an item has its predecessor's target (the
    // common case: a batch for one partition).
    const groups = new Map<string, { queue: string; partition: string; idx: number[] }>();
    let last: { queue: string; partition: string; idx: number[] } | undefined;
    for (let i = 0; i < items.length; i++) {
      const it = items[i] as PushItem;
      const partition = it.partition ?? DEFAULT_PARTITION;
      if (last === undefined || last.queue !== it.queue || last.partition !== partition) {
        const k = `${it.queue}\u0000${partition}`;
        last = groups.get(k);
        if (!last) {
          assertName(it.queue, 'queue');
          assertName(partition, 'partition');
          groups.set(k, (last = { queue: it.queue, partition, idx: [] }));
        }
      }
      last.idx.push(i);
    }
    // Refusals before any write: the targets that exist already are checked first (sealing,
    // push guards such as maxSize), so that a refused push has not created another target's
    // queue or partition. Then every target is resolved (created when missing) and the new
    // ones checked, all before any segment is written.
    const all = [...groups.values()];
    const checked = await Promise.all(
      all.map(async (g) => {
        const part = await this.deps.queues.getPartition(g.queue, g.partition);
        const queue = part && (await this.deps.queues.getQueue(g.queue));
        if (!part || !queue) return false;
        assertCanSeal(queue, this.deps.cipher);
        return { bound: await this.runPushGuards(queue, part, g.idx.length) };
      }),
    );
    const targets = await Promise.all(
      all.map(async (g, k) => {
        const queue = await this.deps.queues.ensureQueue(g.queue);
        const part = await this.deps.queues.ensurePartition(queue, g.partition);
        const done = checked[k];
        if (done) return { g, queue, part, bound: done.bound };
        assertCanSeal(queue, this.deps.cipher);
        return { g, queue, part, bound: await this.runPushGuards(queue, part, g.idx.length) };
      }),
    );
    // Every partition's share runs to its end before the push answers: a reply must never go
    // out while another share is still committing (a client retrying it would race that share).
    const settled = await Promise.allSettled(
      targets.map(({ queue, part, g, bound }) =>
        this.pushPartition(
          queue,
          part,
          g.idx.map((i) => items[i] as PushItem),
          opts.stamp,
          bound,
        ),
      ),
    );
    const anyCommitted = settled.some((s) => s.status === 'fulfilled' && s.value.some((r) => r.status === 'queued'));
    settled.forEach((s, k) => {
      const { g, part } = targets[k] as (typeof targets)[number];
      let out: PushResult[];
      if (s.status === 'fulfilled') out = s.value;
      else {
        const e: unknown = s.reason;
        // Nothing of the push was written: a domain or storage error answers the whole request
        // (a 4xx, a 503 the client may retry as a whole, a 507), so a client that trusts the
        // status does not drop the batch.
        if (!anyCommitted && (e instanceof SluiceError || isStorageFailure(e))) throw e;
        // Other shares are committed, so this one is reported per item ('failed'), never as
        // an error status whose retry would store the committed shares again. The reason a
        // person sees is the domain message; anything else stays in the log, not the reply.
        let error: string;
        if (e instanceof SluiceError) error = `push to ${g.queue}/${g.partition} failed: ${e.message}`;
        else {
          this.deps.telemetry.error('push to a partition failed', {
            queue: g.queue,
            partition: g.partition,
            error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
          });
          const what =
            e instanceof StoreFullError
              ? 'storage full'
              : isStorageFailure(e)
                ? 'storage unavailable'
                : 'internal error';
          error = opts.stamp
            ? `push to ${g.queue}/${g.partition} failed (${what}); retry the request with the same producerId and sequence (committed shares are not stored again)`
            : `push to ${g.queue}/${g.partition} failed (${what}); retry it (repeated transactionIds are deduplicated)`;
        }
        out = g.idx.map((i) => {
          const it = items[i] as PushItem;
          return {
            index: 0,
            status: 'failed' as const,
            queue: g.queue,
            partition: g.partition,
            partitionId: part.id,
            transactionId: it.transactionId ?? '',
            messageId: '',
            traceId: it.traceId ?? null,
            error,
          };
        });
      }
      g.idx.forEach((i, j) => {
        const r = out[j] as PushResult;
        r.index = i;
        results[i] = r;
      });
    });
    const queued = results.filter((r) => r.status === 'queued').length;
    if (queued > 0) this.deps.telemetry.count('MessagesPushed', queued);
    const duplicates = results.filter((r) => r.status === 'duplicate').length;
    if (duplicates > 0) this.deps.telemetry.count('DuplicatesRejected', duplicates);
    return results;
  }

  /**
   * Commits one partition's share of a push, coalesced with the other pushes to the partition
   * that wait for the commit in progress (one segment, one take, one write for all of them).
   * Each push gets its own results, its messages consecutive.
   */
  private pushPartition(
    queue: QueueRecord,
    part: PartitionRef,
    items: readonly PushItem[],
    stamp: ProducerStamp | undefined,
    bound?: PushBound,
  ): Promise<PushResult[]> {
    let bytes = 0;
    for (const it of items) bytes += it.payload.byteLength;
    return new Promise((resolve, reject) => {
      const running = this.lanes.get(part.id);
      const waiter: Waiter = { queue, items, bytes, stamp, bound, resolve, reject };
      if (running) running.waiting.push(waiter);
      else {
        const lane = { waiting: [waiter] };
        this.lanes.set(part.id, lane);
        void this.drain(part, lane);
      }
    });
  }

  /** Commits what waits on a partition, batch by batch, until nothing does. */
  private async drain(part: PartitionRef, lane: { waiting: Waiter[] }): Promise<void> {
    while (lane.waiting.length > 0) {
      let n = 0;
      let msgs = 0;
      let bytes = 0;
      for (const w of lane.waiting) {
        if (n > 0 && (msgs + w.items.length > MAX_COALESCED_MESSAGES || bytes + w.bytes > MAX_COALESCED_BYTES)) break;
        // A stamped push commits on its own (its take carries its producer's entry and base).
        if (n > 0 && (w.stamp || (lane.waiting[0] as Waiter).stamp)) break;
        n++;
        msgs += w.items.length;
        bytes += w.bytes;
      }
      const batch = lane.waiting.splice(0, n);
      const bound = batch.reduce<PushBound | undefined>((b, w) => tighter(b, w.bound), undefined);
      try {
        const results = await this.commitItems(
          (batch[0] as Waiter).queue,
          part,
          batch.map((w) => w.items),
          (batch[0] as Waiter).stamp,
          bound,
        );
        let k = 0;
        for (const w of batch) {
          w.resolve(results.slice(k, k + w.items.length));
          k += w.items.length;
        }
      } catch (e) {
        if (!(e instanceof BoundExceeded) || batch.length === 1) {
          for (const w of batch) w.reject(e instanceof BoundExceeded ? e.refusal : e);
          continue;
        }
        // Together they pass a bound: each on its own, so those that fit still commit.
        for (const w of batch)
          await this.commitItems(w.queue, part, [w.items], w.stamp, w.bound).then(w.resolve, (e2: unknown) =>
            w.reject(e2 instanceof BoundExceeded ? e2.refusal : e2),
          );
      }
    }
    this.lanes.delete(part.id);
  }

  /**
   * Commits the items of one or more pushes to one partition as one segment. A transactionId
   * repeated across the pushes is stored once (the later ones are `duplicate`) when the queue
   * deduplicates; with the window at 0 only repeats inside one push collapse, as when the
   * pushes commit one by one. A stamped push (always alone) whose stamp the partition has
   * committed before is answered as its first attempt was (docs/DELIVERY.md).
   */
  private async commitItems(
    queue: QueueRecord,
    part: PartitionRef,
    requests: readonly (readonly PushItem[])[],
    stamp?: ProducerStamp,
    bound?: PushBound,
  ): Promise<PushResult[]> {
    const windowMs = (queue.options.dedupWindowSeconds ?? 0) * 1000;
    const now0 = this.clock();
    const items = requests.length === 1 ? (requests[0] as readonly PushItem[]) : requests.flat();
    const share = stamp ? { current: this.sequences.share(part, stamp, items.length, now0) } : undefined;
    const seed = share?.current.seed;
    const prepared = items.map((it, i) => {
      const ids = seed ? stampIds(seed, now0, i) : undefined;
      return {
        item: it,
        txid: it.transactionId ?? ids?.txid ?? uuidv7(now0),
        supplied: it.transactionId !== undefined,
        mid: ids?.mid ?? uuidv7(now0),
      };
    });
    const firstIndex = firstIndexes(
      prepared.map((p) => p.txid),
      windowMs > 0 ? [items.length] : requests.map((r) => r.length),
    );
    for (let attempt = 0; ; attempt++) {
      const pushId = uuidv7(this.clock());
      // i -> id of the committed original when item i is a duplicate of an earlier push.
      const dupOf = new Map<number, string>();
      const reserve: ReservationEntry[] = [];
      if (windowMs > 0) {
        for (let i = 0; i < prepared.length; i++) {
          const p = prepared[i] as (typeof prepared)[number];
          if (p.supplied && firstIndex[i] === i) reserve.push({ i, txid: p.txid, mid: p.mid });
        }
      }
      let committed: { base: number } | 'aborted' | { refused: Item | undefined } | undefined;
      const store: number[] = [];
      // A stamped push the sequencer would refuse (stale, reused, or a retry it answers for) is
      // answered before it reserves anything: a refusal then writes nothing (one read, only for
      // stamped pushes that reserve transactionIds).
      const refusedEarly =
        attempt === 0 && share && reserve.length > 0 ? await this.sequences.remembered(part, share.current) : undefined;
      const reserving = reserve.length > 0 && refusedEarly === undefined;
      try {
        let ownEarlier: Item | undefined = refusedEarly;
        if (reserving) {
          const found = await this.reservations.reserve(part, pushId, reserve, windowMs);
          // A stamped push's ids differ between attempts only in their time: one of ours found
          // committed is this push's earlier attempt, which the sequencer answers for while it
          // remembers the stamp (else they are duplicates, as without a stamp).
          const own = [...found].filter(([i, mid]) => seed && sameStampedId(mid, prepared[i]!.mid));
          if (own.length > 0 && share) ownEarlier = await this.sequences.remembered(part, share.current);
          for (const [i, mid] of found) if (!ownEarlier || !own.some(([j]) => j === i)) dupOf.set(i, mid);
        }
        for (let i = 0; i < prepared.length; i++) if (firstIndex[i] === i && !dupOf.has(i)) store.push(i);
        if (ownEarlier) committed = { refused: ownEarlier };
        else if (store.length > 0)
          committed = await this.commit(
            queue,
            part,
            pushId,
            store.map((i) => prepared[i]!),
            reserve.length > 0 && reserve.some((r) => !dupOf.has(r.i)),
            share,
            bound,
          );
      } catch (e) {
        // This push will not commit: say so in its marker at once, so pushes of the same
        // transactionIds take its reservations over now instead of waiting out the stall
        // budget. Put-if-absent: if the commit did land (its reply was lost), the marker says
        // `committed` and stays.
        if (reserving) await this.reservations.abortMarker(part.id, pushId, windowMs);
        throw e;
      }
      let base = 0;
      // Set when this push repeats a committed stamp: the ids derive from the first attempt's time.
      let firstAt: number | undefined;
      if (committed !== undefined) {
        if (committed === 'aborted') {
          if (attempt < 3) continue; // someone judged us stalled; our reservations are void
          throw new SluiceError(
            'unavailable',
            'push was aborted repeatedly by concurrent pushes of the same transactionIds; retry it',
          );
        }
        if ('refused' in committed) {
          if (reserving) await this.reservations.abortMarker(part.id, pushId, windowMs);
          const s = share as { current: StampedShare };
          const answer = await this.sequences.answerRefusal(part, s.current, committed.refused);
          if (answer.kind === 'store') {
            if (attempt >= 3) throw new SluiceError('unavailable', 'this push could not be stored again; retry it');
            s.current = answer.share;
            continue;
          }
          base = answer.base;
          firstAt = answer.at;
        } else {
          base = committed.base;
          this.deps.notifier.notify(queue.name, part.id);
        }
      }
      const out: PushResult[] = new Array<PushResult>(prepared.length);
      // `store` lists the stored items in index order: the k-th of them is at base + k.
      let stored = 0;
      for (let i = 0; i < prepared.length; i++) {
        const p = prepared[i] as (typeof prepared)[number];
        if (firstAt !== undefined && seed && firstAt !== now0) {
          const ids = stampIds(seed, firstAt, i);
          p.mid = ids.mid;
          if (!p.supplied) p.txid = ids.txid;
        }
        const first = firstIndex[i] as number;
        const dup = dupOf.get(first) ?? (first !== i ? (prepared[first] as (typeof prepared)[number]).mid : undefined);
        // Plain literals, not spreads: this runs once per message on the push path.
        out[i] = {
          index: i,
          status: dup === undefined ? 'queued' : 'duplicate',
          queue: queue.name,
          partition: part.name,
          partitionId: part.id,
          transactionId: p.txid,
          messageId: dup ?? p.mid,
          traceId: p.item.traceId ?? null,
          offset: dup === undefined ? base + stored++ : undefined,
        };
      }
      return out;
    }
  }

  /**
   * Encodes, stores and commits one segment: takes its offsets from the partition's sequencer
   * and writes it there in the same call (docs/STORAGE.md, "How a push commits"). Returns its
   * base, or 'aborted' when a concurrent push of the same transactionIds aborted this one.
   */
  private async commit(
    queue: QueueRecord,
    part: PartitionRef,
    pushId: string,
    msgs: SegmentMessage[],
    reserved: boolean,
    share?: { current: StampedShare },
    bound?: PushBound,
  ): Promise<{ base: number } | 'aborted' | { refused: Item | undefined }> {
    let prep: PreparedCommit;
    try {
      const beforeUpload = share && (() => this.sequences.precheck(part, share.current));
      prep = await this.prepare({ queue, partition: part, pushId, messages: msgs, reserved, beforeUpload });
    } catch (e) {
      if (e instanceof TakeRefusedError) return { refused: e.current };
      throw e;
    }
    try {
      return await this.commitAttempts(prep, share, bound);
    } catch (e) {
      // Given up after taking offsets: the hooks may owe a write their takes promised.
      await prep.abandon();
      throw e;
    }
  }

  private async commitAttempts(
    prep: PreparedCommit,
    share: { current: StampedShare } | undefined,
    bound: PushBound | undefined,
  ): Promise<{ base: number } | 'aborted' | { refused: Item | undefined }> {
    const part = prep.partition;
    let hookRetry = false;
    for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
      await prep.planHooks(hookRetry);
      // The entry names the offsets its take hands out (the stored messages, duplicates left out).
      if (share) share.current = { ...share.current, entry: { ...share.current.entry, taken: prep.count } };
      try {
        const taken = await this.deps.storage.items
          .take('log', logKeys.sequencer(part.id), prep.count, (t) => prep.build(t), {
            ...withStamp(prep.takeOptions(), share && this.sequences.takeOptions(share.current)),
            atMost: bound?.atMost,
          })
          .catch((e: unknown) => {
            // Only a bounded take fails with a bare ConditionFailedError: nothing was taken.
            throw bound && e instanceof ConditionFailedError ? new BoundExceeded(bound.refusal()) : e;
          });
        if (share) this.sequences.took(part, taken.before, share.current, taken.first);
        await prep.afterCommit(taken.first);
        return { base: taken.first };
      } catch (e) {
        // The partition has this producer's stamp already: the caller answers it as a retry.
        if (e instanceof TakeRefusedError) return { refused: e.current };
        if (!(e instanceof TakeWriteError)) throw e;
        // Offsets that stayed taken but will not hold this segment: close them now, so readers
        // need not wait for them. The stamp's entry stayed too: the next take must pass it.
        if (e.taken) await this.closeRange(part.id, e.first, e.count, prep.at);
        if (e.taken && share) share.current = this.sequences.next(part, share.current, share.current.entry);
        const cause = e.cause;
        if (cause instanceof ContentionError) {
          await this.sleep(5 + Math.random() * 20);
          continue;
        }
        if (cause instanceof HookConflictError) {
          hookRetry = true;
          continue;
        }
        if (!(cause instanceof ConditionFailedError)) throw cause;
        if (cause.failed.some((f) => f.index === 1 && prep.needMarker)) return 'aborted';
        if (cause.failed.some((f) => f.index >= prep.hookStart)) {
          hookRetry = true;
          continue;
        }
        // The segment's key was taken: a reader closed the range while this push was too slow
        // to write it. Take new offsets.
        if (cause.failed.some((f) => f.index === 0)) continue;
        throw cause;
      }
    }
    throw new SluiceError('unavailable', `partition ${part.queue}/${part.name} could not commit the push; retry it`);
  }

  private prepare(c: Parameters<typeof prepareSegment>[1]): Promise<PreparedCommit> {
    return prepareSegment(
      {
        storage: this.deps.storage,
        config: this.deps.config,
        clock: this.clock,
        cipher: this.deps.cipher,
        hooks: this.hooks,
        log: this.deps.telemetry,
      },
      c,
    );
  }

  /**
   * Checks a push of `count` messages to one partition for a caller that commits it with
   * {@link prepareCommit}: refuses it (sealing, push guards such as maxSize) by throwing, or
   * answers the bound its offset take must respect (`atMost`; past it, answer `refusal()`).
   *
   * @example
   * ```ts
   * const bound = await pushes.checkPush(queue, part, items.length);
   * const prep = await pushes.prepareCommit(queue, part, items);
   * await storage.items.take('log', logKeys.sequencer(part.id), prep.count, undefined, { ...prep.takeOptions(), atMost: bound?.atMost });
   * ```
   */
  async checkPush(queue: QueueRecord, part: PartitionRef, count: number): Promise<PushBound | undefined> {
    assertCanSeal(queue, this.deps.cipher);
    return this.runPushGuards(queue, part, count);
  }

  /**
   * Prepares (but does not write) the commit of `items` to one partition as one segment, for
   * a caller that commits it atomically with other writes (transactions). Transaction ids are
   * minted, so no dedup reservations are taken. The caller runs {@link checkPush} first and
   * bounds its take by the answer.
   */
  async prepareCommit(queue: QueueRecord, part: PartitionRef, items: readonly PushItem[]): Promise<PreparedCommit> {
    const now = this.clock();
    const messages = items.map((item) => ({ item, txid: uuidv7(now), mid: uuidv7(now) }));
    return this.prepare({ queue, partition: part, pushId: uuidv7(now), messages, reserved: false });
  }

  /** Records a segment a caller of {@link prepareCommit} committed at `base`, runs the hooks' after-commit work and wakes waiting pops. */
  async committed(prep: PreparedCommit, base: number): Promise<void> {
    this.deps.telemetry.count('MessagesPushed', prep.count);
    await prep.afterCommit(base);
    this.deps.notifier.notify(prep.queue.name, prep.partition.id);
  }

  /**
   * Closes offsets `first..first+count-1`, taken but not to be written, with a skip (put if absent:
   * a reader may have closed them first). Best effort: readers close what this leaves.
   *
   * @example
   * ```ts
   * if (e instanceof TakeWriteError && e.taken) await pushes.closeRange(pid, e.first, e.count, now);
   * ```
   */
  async closeRange(partitionId: string, first: number, count: number, at: number): Promise<void> {
    try {
      const skip = skipSegmentItem(partitionId, first, first + count - 1, at);
      await this.deps.storage.items.put('log', skip, { kind: 'absent' });
    } catch (e) {
      if (e instanceof ConditionFailedError) return;
      this.deps.telemetry.warn('could not close a range a push took; readers close it after SLUICE_GAP_CLOSE_MS', {
        partitionId,
        first,
        count,
        error: e instanceof Error ? { name: e.name, message: e.message } : String(e),
      });
    }
  }
}

/** A bounded take found no room: nothing was taken (the push's `refusal` answers it). */
class BoundExceeded extends Error {
  constructor(readonly refusal: Error) {
    super(refusal.message);
  }
}

/** Whether two ids of a stamped push's item are the same but for their time (see `stampIds`). */
const sameStampedId = (a: string, b: string): boolean => a.length === 36 && a.slice(14) === b.slice(14);

/**
 * For each item, the index of the first item with its transactionId inside the same run
 * (`runs` are the lengths of consecutive runs that deduplicate among themselves).
 */
function firstIndexes(txids: readonly string[], runs: readonly number[]): number[] {
  const out: number[] = new Array<number>(txids.length);
  let start = 0;
  for (const len of runs) {
    const { firstIndex } = firstOccurrences(txids.slice(start, start + len));
    for (let j = 0; j < len; j++) out[start + j] = start + (firstIndex[j] as number);
    start += len;
  }
  return out;
}

/** The commit's take options (the work flag) with a stamped push's (its producer slot). */
function withStamp(commit: TakeOptions, stamp: TakeOptions | undefined): TakeOptions {
  return stamp ? { ...commit, ...stamp, set: { ...commit.set, ...stamp.set } } : commit;
}
