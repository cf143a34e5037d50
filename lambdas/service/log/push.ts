import type { SluiceConfig } from '../../config.js';
import { firstOccurrences } from '../../core/dedup.js';
import { SluiceError } from '../../core/errors.js';
import { uuidv7 } from '../../core/ids.js';
import { DEFAULT_PARTITION, assertName } from '../../core/names.js';
import {
  ConditionFailedError,
  ContentionError,
  StoreFullError,
  StoreUnavailableError,
  type Item,
  type Storage,
} from '../../storage/port.js';
import type { PayloadCipherLike } from '../encryption.js';
import type { Notifier } from '../notifier.js';
import type { Telemetry } from '../telemetry.js';
import { DedupReservations, type ReservationEntry } from './dedup-reservations.js';
import type { PartitionRef, QueueRecord } from './log-store.js';
import type { QueueDirectory } from './queue-directory.js';
import {
  assertCanSeal,
  prepareSegment,
  type CommitHook,
  type PreparedCommit,
  type SegmentMessage,
} from './segment-commit.js';
import type { SegmentReader } from './segments.js';
import type { TailHints } from './tail-hints.js';

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

/** Refuses a push to a partition by throwing a SluiceError (see {@link PushService.addPushGuard}). */
export type PushGuard = (c: { queue: QueueRecord; partition: PartitionRef; count: number }) => Promise<void>;

export interface PushServiceDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'inlineMaxBytes' | 'pushStallMs'>;
  notifier: Notifier;
  queues: QueueDirectory;
  /** Reads the tail when the hint is missing or stale. */
  segments: SegmentReader;
  tails: TailHints;
  /** Seals payloads of queues with `encryptionEnabled`; absent without a key. */
  cipher?: PayloadCipherLike | undefined;
  /** Epoch ms; injected so tests can move time. */
  clock?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Where `MessagesPushed` and `DuplicatesRejected` are counted (every push: plain, transactional, replayed). */
  telemetry?: Telemetry | undefined;
}

const realSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const isStorageFailure = (e: unknown): boolean =>
  e instanceof StoreUnavailableError || e instanceof StoreFullError || e instanceof ContentionError;
const MAX_COMMIT_ATTEMPTS = 200;

/**
 * Pushes: messages grouped by (queue, partition), each partition's share committed as one
 * zstd segment with one put-if-absent at the partition's next base offset. Two pushes racing
 * for one base collide on that key; the loser learns the winner's end from the failed write
 * and tries the next base. So offsets are dense, monotone, and each committed exactly once,
 * with no head item to contend on (docs/STORAGE.md, "How a push commits").
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

  constructor(private readonly deps: PushServiceDeps) {
    this.clock = deps.clock ?? Date.now;
    this.sleep = deps.sleep ?? realSleep;
    this.reservations = new DedupReservations({
      storage: this.deps.storage,
      config: this.deps.config,
      clock: this.clock,
      sleep: this.sleep,
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

  private async runPushGuards(queue: QueueRecord, part: PartitionRef, count: number): Promise<void> {
    for (const g of this.guards) await g({ queue, partition: part, count });
  }

  /**
   * Pushes messages, possibly to several queues and partitions. Each partition's share is
   * committed atomically as one segment; results come back in input order.
   */
  async push(items: readonly PushItem[]): Promise<PushResult[]> {
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
        await this.runPushGuards(queue, part, g.idx.length);
        return true;
      }),
    );
    const targets = await Promise.all(
      all.map(async (g, k) => {
        const queue = await this.deps.queues.ensureQueue(g.queue);
        const part = await this.deps.queues.ensurePartition(queue, g.partition);
        if (!checked[k]) {
          assertCanSeal(queue, this.deps.cipher);
          await this.runPushGuards(queue, part, g.idx.length);
        }
        return { g, queue, part };
      }),
    );
    // Every partition's share runs to its end before the push answers: a reply must never go
    // out while another share is still committing (a client retrying it would race that share).
    const settled = await Promise.allSettled(
      targets.map(({ queue, part, g }) =>
        this.pushPartition(
          queue,
          part,
          g.idx.map((i) => items[i] as PushItem),
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
          console.error(
            JSON.stringify({
              level: 'ERROR',
              message: 'push to a partition failed',
              queue: g.queue,
              partition: g.partition,
              error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
            }),
          );
          const what =
            e instanceof StoreFullError
              ? 'storage full'
              : isStorageFailure(e)
                ? 'storage unavailable'
                : 'internal error';
          error = `push to ${g.queue}/${g.partition} failed (${what}); retry it (repeated transactionIds are deduplicated)`;
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
    if (queued > 0) this.deps.telemetry?.count('MessagesPushed', queued);
    const duplicates = results.filter((r) => r.status === 'duplicate').length;
    if (duplicates > 0) this.deps.telemetry?.count('DuplicatesRejected', duplicates);
    return results;
  }

  private async pushPartition(
    queue: QueueRecord,
    part: PartitionRef,
    items: readonly PushItem[],
  ): Promise<PushResult[]> {
    const windowMs = (queue.options.dedupWindowSeconds ?? 0) * 1000;
    const now0 = this.clock();
    const prepared = items.map((it) => ({
      item: it,
      txid: it.transactionId ?? uuidv7(now0),
      supplied: it.transactionId !== undefined,
      mid: uuidv7(now0),
    }));
    const { firstIndex } = firstOccurrences(prepared.map((p) => p.txid));
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
      let committed: { base: number } | 'aborted' | undefined;
      const store: number[] = [];
      try {
        if (reserve.length > 0) {
          const found = await this.reservations.reserve(part, pushId, reserve, windowMs);
          for (const [i, mid] of found) dupOf.set(i, mid);
        }
        for (let i = 0; i < prepared.length; i++) if (firstIndex[i] === i && !dupOf.has(i)) store.push(i);
        if (store.length > 0)
          committed = await this.commit(
            queue,
            part,
            pushId,
            store.map((i) => prepared[i]!),
            reserve.length > 0 && reserve.some((r) => !dupOf.has(r.i)),
          );
      } catch (e) {
        // This push will not commit: say so in its marker at once, so pushes of the same
        // transactionIds take its reservations over now instead of waiting out the stall
        // budget. Put-if-absent: if the commit did land (its reply was lost), the marker says
        // `committed` and stays.
        if (reserve.length > 0) await this.reservations.abortMarker(part.id, pushId, windowMs);
        throw e;
      }
      let base = 0;
      if (committed !== undefined) {
        if (committed === 'aborted') {
          if (attempt < 3) continue; // someone judged us stalled; our reservations are void
          throw new SluiceError(
            'unavailable',
            'push was aborted repeatedly by concurrent pushes of the same transactionIds; retry it',
          );
        }
        base = committed.base;
        this.deps.notifier.notify(queue.name, part.id);
      }
      const out: PushResult[] = new Array<PushResult>(prepared.length);
      // `store` lists the stored items in index order: the k-th of them is at base + k.
      let stored = 0;
      for (let i = 0; i < prepared.length; i++) {
        const p = prepared[i] as (typeof prepared)[number];
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

  /** Encodes, stores and commits one segment. Returns its base, or 'aborted'. */
  private async commit(
    queue: QueueRecord,
    part: PartitionRef,
    pushId: string,
    msgs: SegmentMessage[],
    reserved: boolean,
  ): Promise<{ base: number } | 'aborted'> {
    const prep = await this.prepare({ queue, partition: part, pushId, messages: msgs, reserved });
    let base = await prep.firstBase();
    let collisions = 0;
    let hookRetry = false;
    for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
      const built = await prep.ops(base, hookRetry);
      if (built === 'hook-conflict') {
        hookRetry = true;
        continue;
      }
      const { ops, hookStart } = built;
      try {
        // A lone segment put is one plain write; a transaction would cost twice the write units.
        if (ops.length === 1)
          await this.deps.storage.items.put('log', (ops[0] as { item: Item }).item, { kind: 'absent' });
        else await this.deps.storage.items.transact(ops);
        prep.done(base);
        await prep.afterCommit();
        return { base };
      } catch (e) {
        if (e instanceof ContentionError) {
          await this.sleep(5 + Math.random() * 20);
          continue;
        }
        if (!(e instanceof ConditionFailedError)) throw e;
        if (e.failed.some((f) => f.index === 1 && prep.needMarker)) return 'aborted';
        const segFail = e.failed.find((f) => f.index === 0);
        if (e.failed.some((f) => f.index >= hookStart)) hookRetry = true;
        if (!segFail) {
          if (hookRetry) continue;
          throw e;
        }
        collisions++;
        base = await prep.nextBase(segFail.current, collisions);
      }
    }
    throw new SluiceError(
      'unavailable',
      `partition ${part.queue}/${part.name} is too contended to commit; retry the push`,
    );
  }

  private prepare(c: Parameters<typeof prepareSegment>[1]): Promise<PreparedCommit> {
    return prepareSegment(
      {
        storage: this.deps.storage,
        config: this.deps.config,
        clock: this.clock,
        cipher: this.deps.cipher,
        segments: this.deps.segments,
        tails: this.deps.tails,
        hooks: this.hooks,
      },
      c,
    );
  }

  /**
   * Prepares (but does not write) the commit of `items` to one partition as one segment, for
   * a caller that commits it atomically with other writes (transactions). Transaction ids are
   * minted, so no dedup reservations are taken; the push guards run first.
   */
  async prepareCommit(queue: QueueRecord, part: PartitionRef, items: readonly PushItem[]): Promise<PreparedCommit> {
    await this.runPushGuards(queue, part, items.length);
    const now = this.clock();
    const messages = items.map((item) => ({ item, txid: uuidv7(now), mid: uuidv7(now) }));
    return this.prepare({ queue, partition: part, pushId: uuidv7(now), messages, reserved: false });
  }

  /** Records a segment a caller of {@link prepareCommit} committed at `base`, runs the hooks' after-commit work and wakes waiting pops. */
  async committed(prep: PreparedCommit, base: number): Promise<void> {
    this.deps.telemetry?.count('MessagesPushed', prep.count);
    prep.done(base);
    await prep.afterCommit();
    this.deps.notifier.notify(prep.queue.name, prep.partition.id);
  }
}
