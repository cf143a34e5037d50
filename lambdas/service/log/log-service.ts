import { decodeSegment, encodeSegment, type Frame } from '../../codec/segment.js';
import type { SluiceConfig } from '../../config.js';
import {
  firstOccurrences,
  judgeReservation,
  reservationJson,
  type MarkerState,
  type Reservation,
} from '../../core/dedup.js';
import { SluiceError } from '../../core/errors.js';
import { uuidv7 } from '../../core/ids.js';
import { DEFAULT_PARTITION, assertName } from '../../core/names.js';
import { IMPLICIT_QUEUE_OPTIONS, type QueueOptions } from '../../core/queue-options.js';
import {
  ConditionFailedError,
  ContentionError,
  type Item,
  type Json,
  type Storage,
  type WriteOp,
  type WriteResult,
} from '../../storage/port.js';
import {
  PARTITION_PREFIX,
  SEGMENT_BLOB_PREFIX,
  SEGMENT_PREFIX,
  keys,
  parseSegmentBlobKey,
  segmentBlobKey,
} from './log-store.js';
import { markerOrAbort, sweepBlobPage, type SweepReport } from '../maintenance/blob-sweep.js';
import type { Notifier } from '../notifier.js';
import type { Telemetry } from '../telemetry.js';

/** A queue as stored. */
export interface QueueRecord {
  name: string;
  queueId: string;
  namespace: string;
  task: string;
  createdAt: number;
  /** False for a queue a push created: it has no stored lease time. */
  configured: boolean;
  options: QueueOptions;
}

/** A partition: a name inside a queue and a globally unique, stable id. */
export interface PartitionRef {
  queue: string;
  name: string;
  id: string;
  createdAt: number;
  /**
   * The queue incarnation (its {@link QueueRecord.queueId}) the partition belongs to. A queue
   * deleted and created again under the same name is another incarnation: a partition of the
   * old one is dead even while its records are still stored. Absent on partitions written
   * before queue deletion existed; those belong to whichever incarnation exists.
   */
  queueId?: string | undefined;
}

/**
 * Set on a partition's name item by idle-partition retention before it retires the partition
 * (see `retention-service.ts`): a push that reads the item clears it.
 */
export interface RetiringMark {
  /** When the partition was marked (epoch ms). */
  at: number;
  /** The partition's last offset then (-1: empty). */
  end: number;
}

/**
 * How much older than its queue record a partition written before queue deletion existed (no
 * `queueId`) may be and still belong to it: clocks of different processes differ a little,
 * and a queue is always created before its partitions.
 */
const LEGACY_PARTITION_SKEW_MS = 5 * 60_000;

/**
 * Whether a partition record belongs to the queue incarnation `q`. A partition without
 * `queueId` (written before queue deletion existed) belongs to the incarnation it is not older
 * than: one created before the queue record is a deleted incarnation's.
 */
export function belongsTo(ref: PartitionRef, q: QueueRecord): boolean {
  if (ref.queue !== q.name) return false;
  return ref.queueId === undefined
    ? ref.createdAt >= q.createdAt - LEGACY_PARTITION_SKEW_MS
    : ref.queueId === q.queueId;
}

/** A partition record as stored (a retiring mark is not part of the ref). */
export function partitionRefOf(item: Item): PartitionRef {
  const { retiring: _retiring, ...ref } = item.attrs as unknown as PartitionRef & { retiring?: RetiringMark };
  return ref;
}

/** Why a partition was retired: its queue was deleted, it sat idle, or a new incarnation of its queue took its name. */
export type RetireReason = 'deleted' | 'idle' | 'replaced';

/**
 * The ops that retire a partition, besides removing its name item (which the caller deletes
 * or replaces, guarded by the version it read): a tombstone that maintenance turns into the
 * removal of its data, and the removal of its by-id item. Written in one transaction with the
 * name item's change, so a partition is never unreachable without a tombstone.
 */
export function retireOps(ref: PartitionRef, now: number, reason: RetireReason): WriteOp[] {
  const attrs: Record<string, Json> = {
    kind: 'partition',
    queue: ref.queue,
    partition: ref.name,
    partitionId: ref.id,
    deletedAt: now,
    reason,
  };
  if (ref.queueId !== undefined) attrs.queueId = ref.queueId;
  return [
    { op: 'put', table: 'meta', item: { ...keys.partitionTombstone(ref.id), ver: 1, attrs } },
    { op: 'delete', table: 'meta', key: keys.partitionById(ref.id) },
  ];
}

/** What {@link LogService.read} reads. */
export interface ReadOptions {
  maxCount: number;
  /** Stop once this many payload bytes are collected (always at least one message). */
  maxBytes?: number;
  /**
   * May remembered segment index entries replace the index query? Only for a queue without
   * retention (`retentionOn`), whose segments are never deleted while the partition lives.
   */
  indexCache?: boolean;
}

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

/** A message read back from a partition. */
export interface StoredMessage {
  offset: number;
  id: string;
  transactionId: string;
  traceId: string | null;
  createdAt: number;
  payload: Uint8Array;
  sealed?: boolean | undefined;
}

/** Segment index item attributes. */
interface SegmentAttrs {
  base: number;
  end: number;
  count: number;
  /** Push time (epoch ms) of every message in it. */
  at: number;
  push: string;
  /** Compressed bytes. */
  size: number;
  /** Uncompressed bytes. */
  raw: number;
  /** Blob key when the segment is not inline. */
  blob?: string;
}

export interface SegmentMeta extends SegmentAttrs {
  sk: string;
}

/**
 * Extra atomic writes another service adds to every commit (an index entry, a guard on the
 * group list). When one of its ops' conditions fails, the commit calls the hook again with
 * `retry: true` (so it can re-read what it depends on) and tries once more.
 */
export type CommitHook = (c: {
  queue: QueueRecord;
  partition: PartitionRef;
  base: number;
  end: number;
  at: number;
  retry: boolean;
}) => Promise<WriteOp[] | HookOps> | WriteOp[] | HookOps;

/** A commit hook's answer: ops to write atomically with the segment, and work to do once it committed. */
export interface HookOps {
  ops: WriteOp[];
  /** Runs after the segment committed (not atomic with it). */
  after?: (() => Promise<void>) | undefined;
}

/** A segment ready to commit: see {@link LogService.prepareCommit}. */
export interface PreparedCommit {
  queue: QueueRecord;
  partition: PartitionRef;
  pushId: string;
  /** Push time of every message in it. */
  at: number;
  count: number;
  /** Whether the ops include a commit marker (at index 1). */
  needMarker: boolean;
  /** The messages' ids, in offset order from the base. */
  messages: { id: string; transactionId: string; traceId: string | null }[];
  /** Where to try first (the tail as last seen). */
  firstBase(): Promise<number>;
  /** After the segment put at a base failed: the next base to try. */
  nextBase(current: Item | undefined, collisions: number): Promise<number>;
  /** The ops committing the segment at `base`: segment put first, marker, then the commit hooks' ops. */
  ops(base: number, hookRetry: boolean): Promise<{ ops: WriteOp[]; hookStart: number } | 'hook-conflict'>;
  /** Records a commit at `base`. */
  done(base: number): void;
  /** Runs the commit hooks' after-commit work of the last built ops. */
  afterCommit(): Promise<void>;
}

/** Refuses a push to a partition by throwing a SluiceError (see {@link LogService.addPushGuard}). */
export type PushGuard = (c: { queue: QueueRecord; partition: PartitionRef; count: number }) => Promise<void>;

/** Seals and opens payloads (see `encryption.ts`). */
export interface PayloadCipherLike {
  seal(plain: Uint8Array): Promise<Uint8Array>;
  open(envelope: Uint8Array): Promise<Uint8Array>;
}

/**
 * Merges the ops several commit hooks contributed: identical ops on one key collapse into
 * one (two hooks may both guard the group-list version); different ops on one key mean a
 * hook read stale state, so the caller re-runs the hooks with `retry: true`.
 */
export function mergeOps(ops: readonly WriteOp[]): WriteOp[] | 'conflict' {
  const seen = new Map<string, string>();
  const out: WriteOp[] = [];
  for (const op of ops) {
    const key = op.op === 'put' ? op.item : op.key;
    const id = JSON.stringify([op.table, key.pk, key.sk]);
    const body = JSON.stringify(op, (_k, v: unknown) =>
      v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v,
    );
    const prev = seen.get(id);
    if (prev === undefined) {
      seen.set(id, body);
      out.push(op);
    } else if (prev !== body) return 'conflict';
  }
  return out;
}

export interface LogServiceDeps {
  storage: Storage;
  config: SluiceConfig;
  notifier: Notifier;
  /** Epoch ms; injected so tests can move time. */
  clock?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Where `MessagesPushed` and `DuplicatesRejected` are counted (every push: plain, transactional, replayed). */
  telemetry?: Telemetry;
}

const realSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
// Marker items outlive their reservations by this much, so a lookup never finds a
// reservation whose marker TTL already collected.
const MARKER_SLACK_S = 3600;
const MAX_COMMIT_ATTEMPTS = 200;
const SEGMENT_CACHE_BYTES = 32 * 1024 * 1024;
/** Segment index entries remembered per partition, and partitions remembered (see `indexCache`). */
const INDEX_CACHE_PER_PARTITION = 32;
const INDEX_CACHE_PARTITIONS = 4096;

/**
 * The log: queues, partitions, pushes committed as zstd segments, reads by offset, dedup by
 * transactionId, and the orphan-blob sweeper. Written once over the storage port.
 *
 * A push to a partition is committed with one put-if-absent of a segment item at the
 * partition's next base offset. Two pushes racing for the same base collide on that key; the
 * loser learns the winner's end from the failed write and tries the next base. So offsets
 * are dense, monotone, and each committed exactly once, with no head item to contend on.
 *
 * @example
 * ```ts
 * const log = new LogService({ storage, config, notifier });
 * const [r] = await log.push([{ queue: 'orders', payload: Buffer.from('{"id":1}') }]);
 * const msgs = await log.read(r.partitionId, 0, { maxCount: 10 });
 * ```
 */
export class LogService {
  readonly storage: Storage;
  readonly config: SluiceConfig;
  readonly notifier: Notifier;
  readonly clock: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly queueCache = new Map<string, { at: number; rec: QueueRecord }>();
  /**
   * Partitions by (queue, name) and by id, each entry trusted for `queueCacheMs` and only
   * while the queue's (equally briefly cached) record has the partition's `queueId`: a queue
   * deleted (or a partition retired) in another process is noticed within that time.
   */
  private readonly partitionCache = new Map<string, { at: number; ref: PartitionRef; unmarked: boolean }>();
  private readonly partitionByIdCache = new Map<string, { at: number; ref: PartitionRef }>();
  /** Next base offset per partition, as last seen: a hint, corrected on collision. */
  private readonly tailHint = new Map<string, number>();
  private readonly segmentCache = new Map<string, { frames: Frame[]; bytes: number }>();
  private segmentCacheBytes = 0;
  /**
   * Segment index entries as the last queries returned them, per partition (at most
   * {@link INDEX_CACHE_PER_PARTITION} each, without their bytes). A committed segment never
   * changes, so an entry is true for as long as the segment exists: a pop whose batch the
   * entries already cover skips the index query ({@link cachedRun}).
   */
  private readonly indexCache = new Map<string, SegmentMeta[]>();
  private readonly hooks: CommitHook[] = [];
  private readonly guards: PushGuard[] = [];
  private cipher: PayloadCipherLike | undefined;

  constructor(deps: LogServiceDeps) {
    this.storage = deps.storage;
    this.config = deps.config;
    this.notifier = deps.notifier;
    this.clock = deps.clock ?? Date.now;
    this.sleep = deps.sleep ?? realSleep;
    this.telemetry = deps.telemetry;
  }

  private readonly telemetry: Telemetry | undefined;

  /** Registers extra writes that commit atomically with every segment. */
  addCommitHook(hook: CommitHook): void {
    this.hooks.push(hook);
  }

  // ---------------------------------------------------------------- queues

  async getQueue(name: string, opts: { fresh?: boolean } = {}): Promise<QueueRecord | undefined> {
    const cached = this.queueCache.get(name);
    const now = this.clock();
    if (!opts.fresh && cached && now - cached.at < this.config.queueCacheMs) return cached.rec;
    const item = await this.storage.items.get('meta', keys.queue(name));
    if (!item) {
      this.queueCache.delete(name);
      return undefined;
    }
    const rec = item.attrs as unknown as QueueRecord;
    this.queueCache.set(name, { at: now, rec });
    return rec;
  }

  /** Forgets cached configuration and partitions (after `/configure` or a delete in this process). */
  invalidateQueue(name: string): void {
    this.queueCache.delete(name);
    for (const [k, p] of this.partitionCache) if (p.ref.queue === name) this.partitionCache.delete(k);
    for (const [k, p] of this.partitionByIdCache) if (p.ref.queue === name) this.partitionByIdCache.delete(k);
  }

  /** The queue, created with implicit options when it does not exist. */
  async ensureQueue(name: string): Promise<QueueRecord> {
    assertName(name, 'queue');
    const existing = await this.getQueue(name);
    if (existing) return existing;
    const now = this.clock();
    const rec: QueueRecord = {
      name,
      queueId: uuidv7(now),
      namespace: '',
      task: '',
      createdAt: now,
      configured: false,
      options: { ...IMPLICIT_QUEUE_OPTIONS },
    };
    try {
      await this.storage.items.transact([
        {
          op: 'put',
          table: 'meta',
          item: { ...keys.queue(name), ver: 1, attrs: rec as unknown as Record<string, Json> },
          cond: { kind: 'absent' },
        },
        { op: 'put', table: 'meta', item: { ...keys.queueIndex(name), ver: 1, attrs: { createdAt: now } } },
      ]);
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
      // Someone created it first: theirs stands.
    }
    const rec2 = await this.getQueue(name, { fresh: true });
    if (!rec2) throw new Error(`queue ${name} vanished while being created`);
    return rec2;
  }

  /**
   * Creates or replaces a queue's configuration (an upsert of the whole option set) and makes
   * sure its `Default` partition exists.
   */
  async configure(input: {
    queue: string;
    namespace?: string | null;
    task?: string | null;
    options: QueueOptions;
  }): Promise<{ queue: QueueRecord; defaultPartition: PartitionRef }> {
    assertName(input.queue, 'queue');
    if (input.options.encryptionEnabled && !this.cipher) {
      throw new SluiceError(
        'invalid_request',
        'options.encryptionEnabled needs an encryption key on the server: set SLUICE_ENCRYPTION_KEY (base64 of 32 bytes, e.g. `openssl rand -base64 32`) or, on AWS, SLUICE_KMS_KEY_ID',
        { field: 'options.encryptionEnabled' },
      );
    }
    for (let attempt = 0; ; attempt++) {
      const now = this.clock();
      const cur = await this.storage.items.get('meta', keys.queue(input.queue));
      const prev = cur?.attrs as unknown as QueueRecord | undefined;
      const rec: QueueRecord = {
        name: input.queue,
        queueId: prev?.queueId ?? uuidv7(now),
        namespace: input.namespace ?? '',
        task: input.task ?? '',
        createdAt: prev?.createdAt ?? now,
        configured: true,
        options: input.options,
      };
      const item: Item = {
        ...keys.queue(input.queue),
        ver: (cur?.ver ?? 0) + 1,
        attrs: rec as unknown as Record<string, Json>,
      };
      try {
        await this.storage.items.transact([
          { op: 'put', table: 'meta', item, cond: cur ? { kind: 'version', ver: cur.ver } : { kind: 'absent' } },
          {
            op: 'put',
            table: 'meta',
            item: { ...keys.queueIndex(input.queue), ver: 1, attrs: { createdAt: rec.createdAt } },
          },
        ]);
      } catch (e) {
        if (e instanceof ConditionFailedError && attempt < 20) continue;
        throw e;
      }
      this.invalidateQueue(input.queue);
      this.queueCache.set(input.queue, { at: now, rec });
      const defaultPartition = await this.ensurePartition(rec, DEFAULT_PARTITION);
      return { queue: rec, defaultPartition };
    }
  }

  // ------------------------------------------------------------ partitions

  private fresh(at: number): boolean {
    return this.clock() - at < this.config.queueCacheMs;
  }

  /** The partition of the queue's current incarnation, if it exists. */
  async getPartition(queue: string, name: string): Promise<PartitionRef | undefined> {
    const q = await this.getQueue(queue);
    if (!q) return undefined;
    return (await this.lookupPartition(q, name)).ref;
  }

  /**
   * The partition named `name` in `q`: `ref` when it belongs to `q` (or to the incarnation a
   * fresh read of the queue record finds: `q` may be a stale cached copy), `stale` when the name
   * item is a leftover of a deleted incarnation that its delete has not retired yet. `item` is
   * the name item as read (absent on a cache hit).
   */
  private async lookupPartition(
    q: QueueRecord,
    name: string,
    forPush = false,
  ): Promise<{ ref?: PartitionRef; item?: Item; stale?: boolean }> {
    const ck = `${q.name}\u0000${name}`;
    const hit = this.partitionCache.get(ck);
    // A push may only trust an entry whose read saw no retiring mark (see ensurePartition).
    if (hit && this.fresh(hit.at) && belongsTo(hit.ref, q) && (!forPush || hit.unmarked)) return { ref: hit.ref };
    const item = await this.storage.items.get('meta', keys.partition(q.name, name));
    if (!item) {
      this.partitionCache.delete(ck);
      return {};
    }
    const ref = partitionRefOf(item);
    if (!belongsTo(ref, q)) {
      const now = await this.getQueue(q.name, { fresh: true });
      if (!now || !belongsTo(ref, now)) {
        this.partitionCache.delete(ck);
        return { item, stale: true };
      }
    }
    this.cachePartition(ref, item.attrs.retiring === undefined);
    return { ref, item };
  }

  /** The partition with this id, while it belongs to its queue's current incarnation. */
  async partitionById(id: string): Promise<PartitionRef | undefined> {
    const hit = this.partitionByIdCache.get(id);
    let ref = hit && this.fresh(hit.at) ? hit.ref : undefined;
    const cached = ref !== undefined;
    if (!ref) {
      const item = await this.storage.items.get('meta', keys.partitionById(id));
      if (!item) {
        this.partitionByIdCache.delete(id);
        return undefined;
      }
      ref = partitionRefOf(item);
    }
    let q = await this.getQueue(ref.queue);
    // A mismatch may only mean this process's copy of the queue record is stale.
    if (!q || !belongsTo(ref, q)) q = await this.getQueue(ref.queue, { fresh: true });
    if (!q || !belongsTo(ref, q)) {
      this.partitionByIdCache.delete(id);
      return undefined;
    }
    // Only the by-id entry: this read says nothing about a retiring mark on the name item.
    if (!cached) this.partitionByIdCache.set(id, { at: this.clock(), ref });
    return ref;
  }

  /** Every partition of the queue's current incarnation, in name order. */
  async listPartitions(queue: string): Promise<PartitionRef[]> {
    const q = await this.getQueue(queue);
    if (!q) return [];
    const out: PartitionRef[] = [];
    let after: string | undefined;
    do {
      const page = await this.storage.items.query('meta', keys.queue(queue).pk, {
        prefix: PARTITION_PREFIX,
        after,
        limit: 500,
      });
      for (const it of page.items) {
        const ref = partitionRefOf(it);
        if (belongsTo(ref, q)) out.push(ref);
      }
      after = page.next;
    } while (after);
    return out;
  }

  /** Forgets a cached partition (after it was retired in this process). */
  forgetPartition(ref: PartitionRef): void {
    const ck = `${ref.queue}\u0000${ref.name}`;
    if (this.partitionCache.get(ck)?.ref.id === ref.id) this.partitionCache.delete(ck);
    this.partitionByIdCache.delete(ref.id);
    this.tailHint.delete(ref.id);
    this.indexCache.delete(ref.id);
  }

  /** `unmarked`: the name item was read (or written) without a retiring mark just now. */
  private cachePartition(ref: PartitionRef, unmarked: boolean): void {
    const at = this.clock();
    this.partitionCache.set(`${ref.queue}\u0000${ref.name}`, { at, ref, unmarked });
    this.partitionByIdCache.set(ref.id, { at, ref });
  }

  /**
   * The partition, created (with a fresh id) when it does not exist yet. A name item left by a
   * deleted incarnation of the queue is replaced (its partition retired: a tombstone for
   * maintenance, in the same transaction); a retiring mark left by idle-partition retention is
   * cleared, so retention will not retire a partition pushes are using.
   */
  async ensurePartition(queue: QueueRecord, name: string): Promise<PartitionRef> {
    assertName(name, 'partition');
    for (let attempt = 0; attempt < 20; attempt++) {
      const found = await this.lookupPartition(queue, name, true);
      if (found.ref) {
        const item = found.item;
        if (item?.attrs.retiring === undefined) return found.ref;
        const { retiring: _mark, ...attrs } = item.attrs;
        try {
          await this.storage.items.put(
            'meta',
            { ...item, ver: item.ver + 1, attrs },
            { kind: 'version', ver: item.ver },
          );
          this.cachePartition(found.ref, true);
          return found.ref;
        } catch (e) {
          if (!(e instanceof ConditionFailedError)) throw e;
          this.forgetPartition(found.ref);
          continue; // retired or revived meanwhile: look again
        }
      }
      const now = this.clock();
      const ref: PartitionRef = { queue: queue.name, name, id: uuidv7(now), createdAt: now, queueId: queue.queueId };
      const attrs = ref as unknown as Record<string, Json>;
      const ops: WriteOp[] = [
        {
          op: 'put',
          table: 'meta',
          item: { ...keys.partition(queue.name, name), ver: (found.item?.ver ?? 0) + 1, attrs },
          cond: found.item ? { kind: 'version', ver: found.item.ver } : { kind: 'absent' },
        },
        { op: 'put', table: 'meta', item: { ...keys.partitionById(ref.id), ver: 1, attrs }, cond: { kind: 'absent' } },
      ];
      if (found.stale && found.item) ops.push(...retireOps(partitionRefOf(found.item), now, 'replaced'));
      try {
        await this.storage.items.transact(ops);
        this.cachePartition(ref, true);
        this.tailHint.set(ref.id, 0);
        return ref;
      } catch (e) {
        if (!(e instanceof ConditionFailedError) && !(e instanceof ContentionError)) throw e;
        // Someone created (or replaced) it first: theirs stands; look again.
      }
    }
    throw new SluiceError('unavailable', `partition ${queue.name}/${name} is too contended to create; retry`);
  }

  // ------------------------------------------------------------------ push

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
    // Resolve every target and run the push guards (maxSize) before writing any segment.
    const targets = await Promise.all(
      [...groups.values()].map(async (g) => {
        const queue = await this.ensureQueue(g.queue);
        const part = await this.ensurePartition(queue, g.partition);
        this.assertCanSeal(queue);
        await this.runPushGuards(queue, part, g.idx.length);
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
        // Nothing of the push was written: a domain error answers the whole request (a 4xx,
        // or a 503 the client may retry as a whole).
        if (e instanceof SluiceError && !anyCommitted) throw e;
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
          error = `push to ${g.queue}/${g.partition} failed (internal error); retry it (repeated transactionIds are deduplicated)`;
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
    if (queued > 0) this.telemetry?.count('MessagesPushed', queued);
    const duplicates = results.filter((r) => r.status === 'duplicate').length;
    if (duplicates > 0) this.telemetry?.count('DuplicatesRejected', duplicates);
    return results;
  }

  /** Refuses (before anything is written) a push to an encrypted queue this process cannot seal for. */
  private assertCanSeal(queue: QueueRecord): void {
    if (queue.options.encryptionEnabled && !this.cipher) {
      throw new SluiceError(
        'unavailable',
        `queue ${queue.name} has encryptionEnabled, but this server has no encryption key (set SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID)`,
      );
    }
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
      const reserve: { i: number; txid: string; mid: string }[] = [];
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
          const found = await this.reserve(part, pushId, reserve, windowMs);
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
        if (reserve.length > 0) await this.abortMarker(part.id, pushId, windowMs);
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
        this.notifier.notify(queue.name, part.id);
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

  /**
   * Reserves transactionIds for `pushId`. Returns, for each one that is a duplicate of a
   * committed message inside the window, the original's message id.
   */
  private async reserve(
    part: PartitionRef,
    pushId: string,
    entries: { i: number; txid: string; mid: string }[],
    windowMs: number,
  ): Promise<Map<number, string>> {
    const dups = new Map<number, string>();
    const expiresAt = (now: number): number => Math.ceil((now + windowMs) / 1000) + MARKER_SLACK_S;
    const deadline = this.clock() + this.config.pushStallMs * 2 + 5000;
    // First round: put-if-absent every reservation.
    let now = this.clock();
    const exp = expiresAt(now);
    const absent = { kind: 'absent' } as const;
    const json = reservationJson(pushId, now);
    const ops: WriteOp[] = new Array<WriteOp>(entries.length);
    for (let j = 0; j < entries.length; j++) {
      const e = entries[j] as (typeof entries)[number];
      ops[j] = {
        op: 'put',
        table: 'dedup',
        item: {
          pk: part.id,
          sk: e.txid,
          ver: 1,
          attrs: { push: pushId, mid: e.mid, at: now },
          attrsJson: json(e.mid),
          expiresAt: exp,
        },
        cond: absent,
      };
    }
    const results = await this.storage.items.writeEach(ops);
    // Only the contested ones get an object: usually there are none.
    let contested: { e: (typeof entries)[number]; current: Item | undefined }[] = [];
    for (let j = 0; j < results.length; j++) {
      const r = results[j] as WriteResult;
      if (!r.ok) contested.push({ e: entries[j] as (typeof entries)[number], current: r.current });
    }
    while (contested.length > 0) {
      if (this.clock() > deadline)
        throw new SluiceError('unavailable', 'could not settle transactionId reservations in time; retry the push');
      now = this.clock();
      // Look up the holders' markers in one batch.
      const holders = [
        ...new Set(
          contested
            .map((c) => (c.current?.attrs as unknown as Reservation | undefined)?.push)
            .filter((p): p is string => !!p && p !== pushId),
        ),
      ];
      const markers = new Map<string, MarkerState>();
      for (let k = 0; k < holders.length; k += 100) {
        const chunk = holders.slice(k, k + 100);
        const got = await this.storage.items.getMany(
          'log',
          chunk.map((p) => keys.marker(part.id, p)),
        );
        chunk.forEach((p, j) => markers.set(p, (got[j]?.attrs.state as MarkerState | undefined) ?? 'absent'));
      }
      const replace: { e: (typeof contested)[number]['e']; ver: number | undefined }[] = [];
      const replacing = new Set<number>();
      const abort = new Set<string>();
      let waiting = false;
      for (const c of contested) {
        if (!c.current) {
          replace.push({ e: c.e, ver: undefined });
          replacing.add(c.e.i);
          continue;
        }
        const r = c.current.attrs as unknown as Reservation;
        if (r.push === pushId) continue; // already ours
        const d = judgeReservation({
          now,
          windowMs,
          stallMs: this.config.pushStallMs,
          reservation: r,
          marker: markers.get(r.push),
        });
        if (d.kind === 'duplicate') dups.set(c.e.i, d.messageId);
        else if (d.kind === 'take-over') {
          replace.push({ e: c.e, ver: c.current.ver });
          replacing.add(c.e.i);
        } else if (d.kind === 'abort-holder') abort.add(d.push);
        else waiting = true;
      }
      for (const p of abort) {
        try {
          await this.storage.items.put(
            'log',
            { ...keys.marker(part.id, p), ver: 1, attrs: { state: 'aborted', at: now }, expiresAt: expiresAt(now) },
            { kind: 'absent' },
          );
        } catch (e) {
          if (!(e instanceof ConditionFailedError)) throw e; // it committed or was aborted meanwhile
        }
      }
      const next: typeof contested = [];
      if (replace.length > 0) {
        const res = await this.storage.items.writeEach(
          replace.map(({ e, ver }) => ({
            op: 'put' as const,
            table: 'dedup' as const,
            item: {
              ...keys.dedup(part.id, e.txid),
              ver: (ver ?? 0) + 1,
              attrs: { push: pushId, mid: e.mid, at: now },
              expiresAt: expiresAt(now),
            },
            cond: ver === undefined ? { kind: 'absent' as const } : { kind: 'version' as const, ver },
          })),
        );
        replace.forEach((x, j) => {
          const r = res[j];
          if (r && !r.ok) next.push({ e: x.e, current: r.current });
        });
      }
      // Those we must look at again: aborted holders, waiting holders, lost replaces.
      for (const c of contested) {
        if (dups.has(c.e.i) || replacing.has(c.e.i)) continue;
        const r = c.current?.attrs as unknown as Reservation | undefined;
        if (r && r.push === pushId) continue;
        const fresh = await this.storage.items.get('dedup', keys.dedup(part.id, c.e.txid));
        next.push({ e: c.e, current: fresh });
      }
      if (waiting && abort.size === 0) await this.sleep(50);
      contested = next;
    }
    return dups;
  }

  /** Best effort: marks a push that will not commit as `aborted` (put-if-absent), so its reservations can be taken over. */
  private async abortMarker(partitionId: string, pushId: string, windowMs: number): Promise<void> {
    const now = this.clock();
    try {
      await this.storage.items.put(
        'log',
        {
          ...keys.marker(partitionId, pushId),
          ver: 1,
          attrs: { state: 'aborted', at: now },
          expiresAt: Math.ceil((now + windowMs) / 1000) + MARKER_SLACK_S,
        },
        { kind: 'absent' },
      );
    } catch {
      // It committed after all, or storage is down: then others abort it after the stall budget.
    }
  }

  /** Encodes, stores and commits one segment. Returns its base, or 'aborted'. */
  private async commit(
    queue: QueueRecord,
    part: PartitionRef,
    pushId: string,
    msgs: { item: PushItem; txid: string; mid: string }[],
    reserved: boolean,
  ): Promise<{ base: number } | 'aborted'> {
    const prep = await this.prepareSegment(queue, part, pushId, msgs, reserved);
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
        if (ops.length === 1) await this.storage.items.put('log', (ops[0] as { item: Item }).item, { kind: 'absent' });
        else await this.storage.items.transact(ops);
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

  /**
   * Everything needed to commit one segment, short of the write itself: frames encoded (and
   * sealed on an encrypted queue), the blob uploaded for a large segment, and the ops for a
   * given base. `commit` uses it for pushes; {@link prepareCommit} exposes it so a
   * transaction can put the same ops into one atomic write with other changes.
   */
  private async prepareSegment(
    queue: QueueRecord,
    part: PartitionRef,
    pushId: string,
    msgs: { item: PushItem; txid: string; mid: string }[],
    reserved: boolean,
  ): Promise<PreparedCommit> {
    const at = this.clock();
    const sealed = queue.options.encryptionEnabled;
    const cipher = this.cipher;
    if (sealed && !cipher)
      throw new SluiceError(
        'unavailable',
        `queue ${queue.name} has encryptionEnabled, but this server has no encryption key (set SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID)`,
      );
    const frames: Frame[] = await Promise.all(
      msgs.map(async (m) => ({
        id: m.mid,
        transactionId: m.txid,
        traceId: m.item.traceId ?? null,
        createdAt: at,
        payload: sealed && cipher ? await cipher.seal(m.item.payload) : m.item.payload,
        sealed: sealed ? true : undefined,
      })),
    );
    const raw = frames.reduce((n, f) => n + f.payload.byteLength + 64, 0);
    const bytes = await encodeSegment(frames);
    const inline = bytes.byteLength <= (this.config.inlineMaxBytes ?? 4096);
    const blob = inline ? undefined : segmentBlobKey(part.id, pushId);
    // The blob goes first: a crash before the commit leaves an unreferenced blob for the
    // sweeper, never a segment pointing at nothing.
    if (blob) await this.storage.blobs.put(blob, bytes);
    const needMarker = reserved || blob !== undefined;
    const windowS = queue.options.dedupWindowSeconds ?? 0;
    const count = msgs.length;
    let afters: (() => Promise<void>)[] = [];
    return {
      queue,
      partition: part,
      pushId,
      at,
      count,
      needMarker,
      messages: msgs.map((m) => ({ id: m.mid, transactionId: m.txid, traceId: m.item.traceId ?? null })),
      // On a queue with retention the hint may point into a prefix retention has deleted since
      // (another process pushed on meanwhile): a segment put there would find its key free and
      // reuse offsets below the head. So such queues read the tail (one query); retention never
      // deletes the newest segment, so a put at the tail collides with any segment after it.
      firstBase: async () =>
        (queue.options.retentionEnabled ? undefined : this.tailHint.get(part.id)) ??
        (await this.readTail(part.id)).next,
      // A stale hint (another process has been pushing here) would walk one segment per
      // failed write, so after two collisions in a row ask for the tail instead.
      nextBase: async (current, collisions) => {
        const cur = current?.attrs as unknown as SegmentAttrs | undefined;
        return cur && collisions <= 2 ? cur.end + 1 : (await this.readTail(part.id)).next;
      },
      ops: async (base, hookRetry) => {
        const seg: SegmentAttrs = { base, end: base + count - 1, count, at, push: pushId, size: bytes.byteLength, raw };
        if (blob) seg.blob = blob;
        const segItem: Item = {
          ...keys.segment(part.id, base),
          ver: 1,
          attrs: seg as unknown as Record<string, Json>,
          bin: inline ? bytes : undefined,
        };
        const ops: WriteOp[] = [{ op: 'put', table: 'log', item: segItem, cond: { kind: 'absent' } }];
        if (needMarker) {
          ops.push({
            op: 'put',
            table: 'log',
            item: {
              ...keys.marker(part.id, pushId),
              ver: 1,
              attrs: { state: 'committed', base, count, at },
              // A marker guarding a blob lives as long as the segment; a dedup-only one, as long as its reservations.
              expiresAt: blob ? undefined : Math.ceil(at / 1000) + windowS + MARKER_SLACK_S,
            },
            cond: { kind: 'absent' },
          });
        }
        const hookStart = ops.length;
        const extra: WriteOp[] = [];
        afters = [];
        for (const hook of this.hooks) {
          const r = await hook({ queue, partition: part, base, end: seg.end, at, retry: hookRetry });
          if (Array.isArray(r)) extra.push(...r);
          else {
            extra.push(...r.ops);
            if (r.after) afters.push(r.after);
          }
        }
        const merged = mergeOps(extra);
        if (merged === 'conflict') return 'hook-conflict';
        ops.push(...merged);
        return { ops, hookStart };
      },
      done: (base) => {
        this.tailHint.set(part.id, base + count);
      },
      afterCommit: async () => {
        // The segment is committed: its after-work (not atomic with it) failing must not turn
        // an acknowledged commit into an error the client would retry (storing it twice).
        for (const f of afters) {
          try {
            await f();
          } catch (e) {
            console.error(
              JSON.stringify({
                level: 'ERROR',
                message: 'after-commit work failed',
                partitionId: part.id,
                error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
              }),
            );
          }
        }
      },
    };
  }

  /**
   * Prepares (but does not write) the commit of `items` to one partition as one segment, for
   * a caller that commits it atomically with other writes (transactions). Transaction ids are
   * minted, so no dedup reservations are taken; the push guards run first.
   */
  async prepareCommit(queue: QueueRecord, part: PartitionRef, items: readonly PushItem[]): Promise<PreparedCommit> {
    await this.runPushGuards(queue, part, items.length);
    const now = this.clock();
    const msgs = items.map((item) => ({ item, txid: uuidv7(now), mid: uuidv7(now) }));
    return this.prepareSegment(queue, part, uuidv7(now), msgs, false);
  }

  /** Records a segment a caller of {@link prepareCommit} committed at `base`, runs the hooks' after-commit work and wakes waiting pops. */
  async committed(prep: PreparedCommit, base: number): Promise<void> {
    this.telemetry?.count('MessagesPushed', prep.count);
    prep.done(base);
    await prep.afterCommit();
    this.notifier.notify(prep.queue.name, prep.partition.id);
  }

  // ------------------------------------------------------------ extensions

  /**
   * Registers a check run before any segment of a push is written, once per target
   * partition (the lease service enforces `maxSize` here). A guard refuses by throwing a
   * SluiceError, and then nothing of the push is written.
   */
  addPushGuard(guard: PushGuard): void {
    this.guards.push(guard);
  }

  private async runPushGuards(queue: QueueRecord, part: PartitionRef, count: number): Promise<void> {
    for (const g of this.guards) await g({ queue, partition: part, count });
  }

  /** Seals payloads of queues with `encryptionEnabled` (and opens them on read). */
  setCipher(cipher: PayloadCipherLike | undefined): void {
    this.cipher = cipher;
  }

  /** Whether payloads can be sealed (an encryption key is configured). */
  get canSeal(): boolean {
    return this.cipher !== undefined;
  }

  /** A stored payload as plaintext (opens a sealed one). */
  async openPayload(m: { payload: Uint8Array; sealed?: boolean | undefined }): Promise<Uint8Array> {
    if (!m.sealed) return m.payload;
    if (!this.cipher)
      throw new SluiceError(
        'unavailable',
        'a stored payload is sealed, but this server has no encryption key (set SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID)',
      );
    return this.cipher.open(m.payload);
  }

  private async opened(m: StoredMessage): Promise<StoredMessage> {
    return m.sealed ? { ...m, payload: await this.openPayload(m), sealed: undefined } : m;
  }

  /**
   * One page of segment items from the segment whose base is `fromBase` (or the first one
   * after it) on, with their inline bytes: what a pop reads in one query when it knows where
   * its cursor's segment starts.
   */
  async segmentPage(
    partitionId: string,
    fromBase: number,
    limit: number,
  ): Promise<{ segs: (SegmentMeta & { bin?: Uint8Array | undefined })[]; more: boolean }> {
    const page = await this.storage.items.query('log', partitionId, {
      prefix: SEGMENT_PREFIX,
      gte: keys.segment(partitionId, fromBase).sk,
      limit: Math.max(1, Math.min(100, Math.ceil(limit))),
    });
    const segs = page.items.map((it) => ({ ...(it.attrs as unknown as SegmentAttrs), sk: it.sk, bin: it.bin }));
    this.rememberSegments(partitionId, segs);
    return { segs, more: page.next !== undefined };
  }

  private rememberSegments(partitionId: string, segs: readonly SegmentMeta[]): void {
    if (segs.length === 0) return;
    // The page just read is what its reader needs next: it stays (its first entries, when it is
    // longer than the cap); older entries fill what room is left, the newest of them first.
    const fresh = segs.slice(0, INDEX_CACHE_PER_PARTITION).map((s): SegmentMeta => ({
      base: s.base,
      end: s.end,
      count: s.count,
      at: s.at,
      push: s.push,
      size: s.size,
      raw: s.raw,
      sk: s.sk,
      ...(s.blob !== undefined ? { blob: s.blob } : {}),
    }));
    const taken = new Set(fresh.map((s) => s.base));
    const older = (this.indexCache.get(partitionId) ?? [])
      .filter((s) => !taken.has(s.base))
      .sort((a, b) => b.base - a.base);
    this.indexCache.delete(partitionId); // re-inserted last: the map's order is least recently used first
    this.indexCache.set(
      partitionId,
      [...fresh, ...older.slice(0, INDEX_CACHE_PER_PARTITION - fresh.length)].sort((a, b) => a.base - b.base),
    );
    if (this.indexCache.size > INDEX_CACHE_PARTITIONS) {
      const oldest = this.indexCache.keys().next().value;
      if (oldest !== undefined) this.indexCache.delete(oldest);
    }
  }

  /**
   * Remembered segments that cover offsets `from` to `from + want - 1` without a gap, or
   * undefined when they do not: then only a query can tell what follows. Only for queues
   * without retention (`retentionOn`): retention in another process may have deleted a
   * remembered segment whose frames this process still holds, and nothing would tell.
   */
  cachedRun(partitionId: string, from: number, want: number): SegmentMeta[] | undefined {
    const known = this.indexCache.get(partitionId);
    if (!known || want <= 0) return undefined;
    const out: SegmentMeta[] = [];
    let next = from;
    for (const s of known) {
      if (s.end < next) continue;
      if (s.base > next) return undefined; // a gap: what lies there only a query can tell
      // An inline segment's bytes come with the query: without its frames cached, reading it
      // alone would cost as much as the query.
      if (s.blob === undefined && !this.segmentCache.has(`${partitionId}:${s.base}`)) return undefined;
      out.push(s);
      next = s.end + 1;
      if (next - from >= want) return out;
    }
    return undefined;
  }

  /** The segment holding `offset` (the last one whose base is at or below it), if any. */
  async segmentAt(partitionId: string, offset: number): Promise<SegmentMeta | undefined> {
    const page = await this.storage.items.query('log', partitionId, {
      prefix: SEGMENT_PREFIX,
      lte: keys.segment(partitionId, Math.max(0, offset)).sk,
      reverse: true,
      limit: 1,
    });
    const it = page.items[0];
    return it ? { ...(it.attrs as unknown as SegmentAttrs), sk: it.sk } : undefined;
  }

  // ------------------------------------------------------------------ read

  /** The next offset to be written (the tail) and the push time of the newest message. */
  async readTail(partitionId: string): Promise<{ next: number; lastAt: number | undefined }> {
    const page = await this.storage.items.query('log', partitionId, {
      prefix: SEGMENT_PREFIX,
      reverse: true,
      limit: 1,
    });
    const last = page.items[0]?.attrs as unknown as SegmentAttrs | undefined;
    const next = last ? last.end + 1 : 0;
    this.tailHint.set(partitionId, Math.max(this.tailHint.get(partitionId) ?? 0, next));
    return { next, lastAt: last?.at };
  }

  /** The oldest offset still stored (retention may have removed a prefix), or the tail when empty. */
  async readHead(partitionId: string): Promise<number> {
    const page = await this.storage.items.query('log', partitionId, { prefix: SEGMENT_PREFIX, limit: 1 });
    const first = page.items[0]?.attrs as unknown as SegmentAttrs | undefined;
    return first ? first.base : (await this.readTail(partitionId)).next;
  }

  /**
   * Segment index entries covering offsets from `from` onward, in order, until `maxCount`
   * offsets are covered or the log ends.
   */
  async segmentsFrom(
    partitionId: string,
    from: number,
    maxCount: number,
  ): Promise<(SegmentMeta & { bin?: Uint8Array | undefined })[]> {
    const out: (SegmentMeta & { bin?: Uint8Array | undefined })[] = [];
    const first = await this.storage.items.query('log', partitionId, {
      prefix: SEGMENT_PREFIX,
      lte: keys.segment(partitionId, from).sk,
      reverse: true,
      limit: 1,
    });
    let after: string | undefined;
    const f = first.items[0];
    if (f) {
      const a = f.attrs as unknown as SegmentAttrs;
      if (a.end >= from) out.push({ ...a, sk: f.sk, bin: f.bin });
      after = f.sk;
    }
    let covered = out.reduce((n, s) => n + (s.end - Math.max(s.base, from) + 1), 0);
    while (covered < maxCount) {
      const page = await this.storage.items.query('log', partitionId, {
        prefix: SEGMENT_PREFIX,
        ...(after ? { after } : { gte: keys.segment(partitionId, from).sk }),
        limit: Math.min(100, Math.max(1, maxCount - covered)),
      });
      for (const it of page.items) {
        const a = it.attrs as unknown as SegmentAttrs;
        out.push({ ...a, sk: it.sk, bin: it.bin });
        covered += a.end - Math.max(a.base, from) + 1;
      }
      if (!page.next || page.items.length === 0) break;
      after = page.next;
    }
    this.rememberSegments(partitionId, out);
    return out;
  }

  /** Decoded frames of one segment (cached per process: many groups read the same bytes). */
  async loadSegment(partitionId: string, seg: SegmentMeta, bin?: Uint8Array): Promise<Frame[]> {
    const ck = `${partitionId}:${seg.base}`;
    const hit = this.segmentCache.get(ck);
    if (hit && hit.frames.length === seg.count) {
      this.segmentCache.delete(ck);
      this.segmentCache.set(ck, hit);
      return hit.frames;
    }
    let bytes = bin;
    if (!bytes) {
      if (seg.blob) bytes = await this.storage.blobs.get(seg.blob);
      else bytes = (await this.storage.items.get('log', keys.segment(partitionId, seg.base)))?.bin;
    }
    if (!bytes) throw new Error(`segment ${partitionId}@${seg.base} has no data (removed by retention?)`);
    const frames = await decodeSegment(bytes);
    if (frames.length !== seg.count)
      throw new Error(`segment ${partitionId}@${seg.base} holds ${frames.length} frames, index says ${seg.count}`);
    this.segmentCache.set(ck, { frames, bytes: seg.raw });
    this.segmentCacheBytes += seg.raw;
    for (const [k, v] of this.segmentCache) {
      if (this.segmentCacheBytes <= SEGMENT_CACHE_BYTES) break;
      this.segmentCache.delete(k);
      this.segmentCacheBytes -= v.bytes;
    }
    return frames;
  }

  /** Drops cached segments of a partition (after retention deleted some). */
  forgetSegments(partitionId: string): void {
    this.indexCache.delete(partitionId);
    for (const [k, v] of this.segmentCache) {
      if (k.startsWith(`${partitionId}:`)) {
        this.segmentCache.delete(k);
        this.segmentCacheBytes -= v.bytes;
      }
    }
  }

  /**
   * Messages from offset `from` on, in order: at most `maxCount`, and stopping once
   * `maxBytes` of payload are collected (always at least one message).
   */
  async read(partitionId: string, from: number, opts: ReadOptions): Promise<StoredMessage[]> {
    const raw = await this.readRaw(partitionId, from, opts);
    return raw.some((m) => m.sealed) ? Promise.all(raw.map((m) => this.opened(m))) : raw;
  }

  /** As {@link read}, but sealed payloads stay sealed (`sealed: true`): for verbatim snapshots. */
  async readRaw(partitionId: string, from: number, opts: ReadOptions): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    if (opts.maxCount <= 0) return out;
    const maxBytes = opts.maxBytes ?? Number.POSITIVE_INFINITY;
    // Segments remembered from earlier queries (they never change) save the index query when
    // they cover the range (queues without retention only: see cachedRun).
    const cached = opts.indexCache ? this.cachedRun(partitionId, from, opts.maxCount) : undefined;
    if (cached) {
      try {
        return await this.collect(partitionId, cached, from, opts.maxCount, maxBytes);
      } catch {
        this.forgetSegments(partitionId);
      }
    }
    return this.collect(
      partitionId,
      await this.segmentsFrom(partitionId, from, opts.maxCount),
      from,
      opts.maxCount,
      maxBytes,
    );
  }

  private async collect(
    partitionId: string,
    segs: readonly (SegmentMeta & { bin?: Uint8Array | undefined })[],
    from: number,
    maxCount: number,
    maxBytes: number,
  ): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    let bytes = 0;
    for (const seg of segs) {
      const frames = await this.loadSegment(partitionId, seg, seg.bin);
      for (let j = Math.max(0, from - seg.base); j < frames.length; j++) {
        const f = frames[j] as Frame;
        if (out.length >= maxCount || (out.length > 0 && bytes + f.payload.byteLength > maxBytes)) return out;
        out.push({
          offset: seg.base + j,
          id: f.id,
          transactionId: f.transactionId,
          traceId: f.traceId,
          createdAt: f.createdAt,
          payload: f.payload,
          sealed: f.sealed,
        });
        bytes += f.payload.byteLength;
      }
    }
    return out;
  }

  /**
   * Finds a message by transactionId: through its dedup reservation inside the queue's
   * window, else by scanning the newest `scanSegments` segments.
   */
  async findByTransactionId(
    partitionId: string,
    transactionId: string,
    scanSegments = 64,
  ): Promise<StoredMessage | undefined> {
    const m = await this.findRawByTransactionId(partitionId, transactionId, scanSegments);
    return m ? this.opened(m) : undefined;
  }

  private async findRawByTransactionId(
    partitionId: string,
    transactionId: string,
    scanSegments: number,
  ): Promise<StoredMessage | undefined> {
    const res = await this.storage.items.get('dedup', keys.dedup(partitionId, transactionId));
    if (res) {
      const r = res.attrs as unknown as Reservation;
      const marker = await this.storage.items.get('log', keys.marker(partitionId, r.push));
      if (marker?.attrs.state === 'committed') {
        const base = marker.attrs.base as number;
        const segItem = await this.storage.items.get('log', keys.segment(partitionId, base));
        if (segItem) {
          const seg = { ...(segItem.attrs as unknown as SegmentAttrs), sk: segItem.sk };
          const frames = await this.loadSegment(partitionId, seg, segItem.bin);
          const j = frames.findIndex((f) => f.id === r.mid);
          const f = frames[j];
          if (f)
            return {
              offset: seg.base + j,
              id: f.id,
              transactionId: f.transactionId,
              traceId: f.traceId,
              createdAt: f.createdAt,
              payload: f.payload,
              sealed: f.sealed,
            };
        }
      }
    }
    let after: string | undefined;
    let scanned = 0;
    while (scanned < scanSegments) {
      const page = await this.storage.items.query('log', partitionId, {
        prefix: SEGMENT_PREFIX,
        reverse: true,
        limit: Math.min(16, scanSegments - scanned),
        after,
      });
      for (const it of page.items) {
        scanned++;
        const seg = { ...(it.attrs as unknown as SegmentAttrs), sk: it.sk };
        const frames = await this.loadSegment(partitionId, seg, it.bin);
        for (let j = frames.length - 1; j >= 0; j--) {
          const f = frames[j] as Frame;
          if (f.transactionId === transactionId) {
            return {
              offset: seg.base + j,
              id: f.id,
              transactionId: f.transactionId,
              traceId: f.traceId,
              createdAt: f.createdAt,
              payload: f.payload,
              sealed: f.sealed,
            };
          }
        }
      }
      if (!page.next) break;
      after = page.next;
    }
    return undefined;
  }

  // ----------------------------------------------------------- maintenance

  /**
   * Removes segment blobs that no commit references: a push that crashed (or was aborted)
   * between writing its blob and committing. A blob is only judged once older than the grace
   * period; it is deleted only after its push's marker says `aborted`, which this sweeper
   * writes itself (put-if-absent) when there is none, so a late commit can never win after
   * the blob is gone. Resumes where the previous run stopped.
   */
  async sweepOrphanBlobs(opts: { limit?: number } = {}): Promise<SweepReport> {
    const now = this.clock();
    return sweepBlobPage(this.storage, {
      prefix: SEGMENT_BLOB_PREFIX,
      cursor: keys.sweepCursor(),
      now,
      graceMs: this.config.sweepGraceMs,
      limit: opts.limit ?? 1000,
      orphaned: async (key) => {
        const ref = parseSegmentBlobKey(key);
        if (!ref) return false;
        const marker = await markerOrAbort(this.storage, 'log', keys.marker(ref.partitionId, ref.pushId), now, {
          by: 'sweeper',
        });
        return marker?.attrs.state === 'aborted';
      },
    });
  }
}
