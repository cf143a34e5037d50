// One concept past 500 lines: queues and their partitions (cached lookups, creation, configure and PATCH, the namespace/task index).
import { randomInt } from 'node:crypto';
import type { SluiceConfig } from '../../config.js';
import { SluiceError } from '../../core/errors.js';
import { uuidv7 } from '../../core/ids.js';
import { DEFAULT_PARTITION, assertName } from '../../core/names.js';
import {
  IMPLICIT_QUEUE_OPTIONS,
  mergeQueueOptions,
  queueOptionsProblem,
  type QueueOptions,
  type QueueOptionsInput,
} from '../../core/queue-options.js';
import {
  ConditionFailedError,
  ContentionError,
  type Item,
  type Json,
  type Storage,
  type WriteOp,
} from '../../storage/port.js';
import {
  PARTITION_PREFIX,
  decodeQueue,
  logKeys,
  partitionAttrs,
  partitionRefOf,
  queueIndexItem,
  queueItem,
  queueMatchItem,
  selectorConfiguredItem,
  queueMatchPk,
  selectorsOf,
  type PartitionRef,
  type QueueRecord,
  type QueueSelector,
} from './log-store.js';

/**
 * How long this process trusts a page of the namespace/task index: a namespace pop reads it
 * once per this long, whatever the number of pops (a queue configured in another process joins
 * the matches within it; one configured here at once).
 */
export const MATCH_CACHE_MS = 5_000;
/** Most queues one namespace/task selector matches (one index query of up to this many entries). */
export const MAX_MATCHING_QUEUES = 1_000;

/** A queue a namespace/task selector matches, with its priority as the index holds it. */
export interface MatchingQueue {
  name: string;
  priority: number;
  /** When it was configured under the selector (0: before this was recorded). */
  at: number;
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

/**
 * The version a partition name item starts at where none exists. Not 1: a queue delete removes
 * name items, and a writer still holding a removed item read at version v guards its replace
 * (or retiring mark) with v; an item created since, had it restarted the count, could match
 * and be replaced without being retired (ABA). A random start never matches in practice.
 */
const firstVersion = (): number => randomInt(1, 2 ** 47);

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
    { op: 'put', table: 'meta', item: { ...logKeys.partitionTombstone(ref.id), ver: 1, attrs } },
    { op: 'delete', table: 'meta', key: logKeys.partitionById(ref.id) },
  ];
}

export interface QueueDirectoryDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'queueCacheMs'>;
  /** Epoch ms; injected so tests can move time. */
  clock: () => number;
  /** A retired partition's remembered segment index goes with it. */
  segments: { forgetIndex(partitionId: string): void };
  /** Whether payloads can be sealed here: `/configure` refuses `encryptionEnabled` without a key. */
  canSeal: boolean;
}

/**
 * Queues and their partitions: lookups (cached per process for `queueCacheMs`), creation on
 * first push, `/configure`, and what a retired partition leaves cached. A queue deleted and
 * created again is a new incarnation (`queueId`); lookups only return partitions of the
 * current one (docs/STORAGE.md, "Deleting a queue").
 *
 * @example
 * ```ts
 * const queue = await queues.ensureQueue('orders');
 * const part = await queues.ensurePartition(queue, 'Default');
 * ```
 */
export class QueueDirectory {
  private readonly queueCache = new Map<string, { at: number; rec: QueueRecord }>();
  /**
   * Partitions by (queue, name) and by id, each entry trusted for `queueCacheMs` and only
   * while the queue's (equally briefly cached) record has the partition's `queueId`: a queue
   * deleted (or a partition retired) in another process is noticed within that time.
   */
  private readonly partitionCache = new Map<string, { at: number; ref: PartitionRef; unmarked: boolean }>();
  private readonly partitionByIdCache = new Map<string, { at: number; ref: PartitionRef }>();
  private readonly matchCache = new Map<string, { at: number; queues: MatchingQueue[] }>();

  constructor(private readonly deps: QueueDirectoryDeps) {}

  // ---------------------------------------------------------------- queues

  async getQueue(name: string, opts: { fresh?: boolean } = {}): Promise<QueueRecord | undefined> {
    const cached = this.queueCache.get(name);
    const now = this.deps.clock();
    if (!opts.fresh && cached && now - cached.at < this.deps.config.queueCacheMs) return cached.rec;
    const item = await this.deps.storage.items.get('meta', logKeys.queue(name));
    if (!item) {
      this.queueCache.delete(name);
      return undefined;
    }
    const rec = decodeQueue(item);
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
    const now = this.deps.clock();
    const rec: QueueRecord = {
      name,
      queueId: uuidv7(now),
      namespace: '',
      task: '',
      createdAt: now,
      configured: false,
      options: { ...IMPLICIT_QUEUE_OPTIONS },
      explicit: [],
    };
    try {
      await this.deps.storage.items.transact([
        { op: 'put', table: 'meta', item: queueItem(rec, 1), cond: { kind: 'absent' } },
        { op: 'put', table: 'meta', item: queueIndexItem(name, now) },
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
   * sure its `Default` partition exists. `explicit` names the options the client set.
   */
  async configure(input: {
    queue: string;
    namespace?: string | null;
    task?: string | null;
    options: QueueOptions;
    explicit?: string[] | undefined;
  }): Promise<{ queue: QueueRecord; defaultPartition: PartitionRef }> {
    assertName(input.queue, 'queue');
    this.assertSealable(input.options);
    const rec = await this.writeConfig(input.queue, (prev, now) => ({
      name: input.queue,
      queueId: prev?.queueId ?? uuidv7(now),
      namespace: input.namespace ?? '',
      task: input.task ?? '',
      createdAt: prev?.createdAt ?? now,
      configured: true,
      options: input.options,
      explicit: input.explicit ?? [],
    }));
    const defaultPartition = await this.ensurePartition(rec, DEFAULT_PARTITION);
    return { queue: rec, defaultPartition };
  }

  /**
   * Changes some options of an existing queue (PATCH): the given ones over the stored ones, a
   * null puts one back to its default; `namespace` and `task` change when given. Validated
   * completely before the one guarded write. Throws not_found for a queue that does not exist.
   *
   * @example
   * ```ts
   * await queues.patch('orders', { options: { ttl: 600 } }); // only ttl changes, and it now applies
   * ```
   */
  async patch(
    queue: string,
    change: { namespace?: string | null; task?: string | null; options?: QueueOptionsInput | null },
    defaults: Partial<QueueOptions> = {},
  ): Promise<QueueRecord> {
    assertName(queue, 'queue');
    return this.writeConfig(queue, (prev) => {
      if (!prev)
        throw new SluiceError('not_found', `queue ${JSON.stringify(queue)} does not exist`, { missing: 'queue' });
      const merged = mergeQueueOptions(prev, change.options ?? {}, defaults);
      const problem = queueOptionsProblem(merged.options);
      if (problem) throw new SluiceError('invalid_request', problem);
      this.assertSealable(merged.options);
      return {
        ...prev,
        namespace: change.namespace === undefined ? prev.namespace : (change.namespace ?? ''),
        task: change.task === undefined ? prev.task : (change.task ?? ''),
        configured: true,
        options: merged.options,
        explicit: merged.explicit,
      };
    });
  }

  private assertSealable(options: QueueOptions): void {
    if (options.encryptionEnabled && !this.deps.canSeal) {
      throw new SluiceError(
        'invalid_request',
        'options.encryptionEnabled needs an encryption key on the server: set SLUICE_ENCRYPTION_KEY ' +
          '(base64 of 32 bytes, e.g. `openssl rand -base64 32`) or, on AWS, SLUICE_KMS_KEY_ID',
        { field: 'options.encryptionEnabled' },
      );
    }
  }

  /**
   * Writes a queue record built from the stored one, guarded by its version (read again and
   * rebuilt when another write won), with its directory entry and its namespace/task index
   * entries in the same transaction.
   */
  private async writeConfig(
    name: string,
    build: (prev: QueueRecord | undefined, now: number) => QueueRecord,
  ): Promise<QueueRecord> {
    for (let attempt = 0; ; attempt++) {
      const now = this.deps.clock();
      const cur = await this.deps.storage.items.get('meta', logKeys.queue(name));
      const prev = cur ? decodeQueue(cur) : undefined;
      const built = build(prev, now);
      const next = selectorsOf(built.namespace, built.task);
      const keep = new Set(next.map(queueMatchPk));
      const gone = prev ? selectorsOf(prev.namespace, prev.task).filter((sel) => !keep.has(queueMatchPk(sel))) : [];
      // A configure that keeps the namespace and task keeps their time: pops by those
      // selectors prepare their groups only on queues that joined since they last looked.
      const same = prev !== undefined && prev.namespace === built.namespace && prev.task === built.task;
      const rec: QueueRecord = { ...built, selectorsAt: same ? (prev.selectorsAt ?? 0) : now };
      const ops: WriteOp[] = [
        {
          op: 'put',
          table: 'meta',
          item: queueItem(rec, (cur?.ver ?? 0) + 1),
          cond: cur ? { kind: 'version', ver: cur.ver } : { kind: 'absent' },
        },
        { op: 'put', table: 'meta', item: queueIndexItem(name, rec.createdAt) },
        ...next.map((sel): WriteOp => ({
          op: 'put',
          table: 'meta',
          item: queueMatchItem(sel, name, rec.options.priority, rec.selectorsAt ?? 0),
        })),
        ...(same
          ? []
          : next.map((sel): WriteOp => ({ op: 'put', table: 'meta', item: selectorConfiguredItem(sel, now) }))),
        ...gone.map((sel): WriteOp => ({ op: 'delete', table: 'meta', key: logKeys.queueMatch(sel, name) })),
      ];
      try {
        await this.deps.storage.items.transact(ops);
      } catch (e) {
        if (e instanceof ConditionFailedError && attempt < 20) continue;
        // Configures of other queues under the same selector write its `selectorConfigured` item.
        if (e instanceof ContentionError && attempt < 20) {
          await new Promise((r) => setTimeout(r, 5 + randomInt(20 * (attempt + 1))));
          continue;
        }
        throw e;
      }
      this.invalidateQueue(name);
      this.queueCache.set(name, { at: now, rec });
      for (const sel of [...next, ...gone]) this.matchCache.delete(queueMatchPk(sel));
      return rec;
    }
  }

  /**
   * The queues a namespace/task selector matches, highest priority first (then by name), from
   * the index `/configure` keeps: one query, cached for {@link MATCH_CACHE_MS}. Entries are
   * hints: the caller checks each queue's record (a deleted queue leaves its entries behind
   * until {@link forgetMatch}).
   */
  async matching(sel: QueueSelector, opts: { fresh?: boolean } = {}): Promise<MatchingQueue[]> {
    const pk = queueMatchPk(sel);
    const now = this.deps.clock();
    const hit = this.matchCache.get(pk);
    if (hit && !opts.fresh && now - hit.at < MATCH_CACHE_MS) return hit.queues;
    const page = await this.deps.storage.items.query('meta', pk, { limit: MAX_MATCHING_QUEUES });
    const queues = page.items
      .map((it) => ({
        name: it.sk,
        priority: typeof it.attrs.priority === 'number' ? it.attrs.priority : 0,
        at: typeof it.attrs.at === 'number' ? it.attrs.at : 0,
      }))
      .sort((a, b) => b.priority - a.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.matchCache.set(pk, { at: now, queues });
    return queues;
  }

  /** When a queue was last configured under the selector (0: never recorded). One read, not cached. */
  async selectorConfiguredAt(sel: QueueSelector): Promise<number> {
    const it = await this.deps.storage.items.get('meta', logKeys.selectorConfigured(sel));
    return typeof it?.attrs.at === 'number' ? it.attrs.at : 0;
  }

  /** Removes a queue's stale entry under a selector (its record is gone or no longer matches). */
  async forgetMatch(sel: QueueSelector, queue: string): Promise<void> {
    await this.deps.storage.items.delete('meta', logKeys.queueMatch(sel, queue));
    this.matchCache.delete(queueMatchPk(sel));
  }

  /** One page of the queue directory, names in order: for passes over every queue. */
  async queueNames(after: string | undefined, limit: number): Promise<{ names: string[]; next?: string | undefined }> {
    const page = await this.deps.storage.items.query('meta', logKeys.queueIndex('').pk, { after, limit });
    return { names: page.items.map((it) => it.sk), next: page.next };
  }

  // ------------------------------------------------------------ partitions

  private fresh(at: number): boolean {
    return this.deps.clock() - at < this.deps.config.queueCacheMs;
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
    const item = await this.deps.storage.items.get('meta', logKeys.partition(q.name, name));
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
      const item = await this.deps.storage.items.get('meta', logKeys.partitionById(id));
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
    if (!cached) this.partitionByIdCache.set(id, { at: this.deps.clock(), ref });
    return ref;
  }

  /** Every partition of the queue's current incarnation, in name order. */
  async listPartitions(queue: string): Promise<PartitionRef[]> {
    const q = await this.getQueue(queue);
    if (!q) return [];
    const out: PartitionRef[] = [];
    let after: string | undefined;
    do {
      const page = await this.deps.storage.items.query('meta', logKeys.queue(queue).pk, {
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
    this.deps.segments.forgetIndex(ref.id);
  }

  /** `unmarked`: the name item was read (or written) without a retiring mark just now. */
  private cachePartition(ref: PartitionRef, unmarked: boolean): void {
    const at = this.deps.clock();
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
          await this.deps.storage.items.put(
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
      const now = this.deps.clock();
      const ref: PartitionRef = { queue: queue.name, name, id: uuidv7(now), createdAt: now, queueId: queue.queueId };
      const attrs = partitionAttrs(ref);
      const ops: WriteOp[] = [
        {
          op: 'put',
          table: 'meta',
          item: {
            ...logKeys.partition(queue.name, name),
            ver: found.item ? found.item.ver + 1 : firstVersion(),
            attrs,
          },
          cond: found.item ? { kind: 'version', ver: found.item.ver } : { kind: 'absent' },
        },
        {
          op: 'put',
          table: 'meta',
          item: { ...logKeys.partitionById(ref.id), ver: 1, attrs },
          cond: { kind: 'absent' },
        },
      ];
      if (found.stale && found.item) ops.push(...retireOps(partitionRefOf(found.item), now, 'replaced'));
      try {
        await this.deps.storage.items.transact(ops);
        this.cachePartition(ref, true);
        return ref;
      } catch (e) {
        if (!(e instanceof ConditionFailedError) && !(e instanceof ContentionError)) throw e;
        // Someone created (or replaced) it first: theirs stands; look again.
      }
    }
    throw new SluiceError('unavailable', `partition ${queue.name}/${name} is too contended to create; retry`);
  }
}
