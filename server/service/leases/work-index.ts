/**
 * The work index: which partitions of a queue may have work for some lease group, so a
 * wildcard pop (`GET /api/v1/pop/queue/:queue`) costs a bounded number of storage requests
 * however many idle partitions the queue has (docs/STORAGE.md, "What a commit costs").
 *
 * - Item: table `leases`, pk `WORK#<queueId>` (the queue's incarnation), sk partitionId. One
 *   per partition, whatever the number of groups.
 * - The flag: attribute `w` on the partition's offset sequencer (`log` `SEQ#<partitionId>`),
 *   set by every push's take in the same atomic write that hands out its offsets. `w` set means
 *   the item exists (or the push that set it is writing it). Only the push whose take found `w`
 *   unset (the partition was drained) writes the item, in its commit: pushes into a partition
 *   with work write no index at all.
 * - Read by wildcard pops of every group: one query (up to {@link PAGE} items, starting after
 *   the partition this process served last, for fairness), one `getMany` of the group's cursor
 *   rows and one of the partitions' sequencers (their ends), then the pop of a free partition
 *   with work for the group.
 * - Cleared by a pop that finds every lease group past a partition's end: one transaction
 *   that writes the sequencer back with `w` unset (guarded by its version: no push since),
 *   deletes the item (guarded by the version read before the cursors: no seek or scan marked
 *   it since) and checks the queue's group-list version (no group registered since).
 * - Marked outside pushes (a seek that moves a cursor back, a new group's registration scan):
 *   the item is written with a new version after the cursor or registration changed, so a
 *   clear that read the cursors before fails on the item's version.
 */
import { isLive } from '../../core/leases.js';
import {
  ConditionFailedError,
  ContentionError,
  MAX_GET_MANY,
  type Item,
  type Storage,
  type WriteOp,
} from '../../storage/port.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import { versionCheck, type GroupRecord } from '../groups/group-store.js';
import { decodeCursor, decodeScanState, leaseKeys, scanStateItem, workItem, workPk } from './lease-store.js';
import { PARTITION_PREFIX, logKeys, partitionRefOf, type QueueRecord } from '../log/log-store.js';
import { belongsTo, type QueueDirectory } from '../log/queue-directory.js';
import type { CommitHook } from '../log/segment-commit.js';
import type { SegmentReader } from '../log/segments.js';
import type { SelectorWork } from './selector-work.js';

/** Work items read per query. */
export const PAGE = 20;
/** Partitions examined per wildcard pop while a new group's existing partitions are being marked. */
export const SCAN_PAGE = 25;
/**
 * How long this process reuses the page it read last, so back-to-back wildcard pops skip the
 * index query. Only discovery of newly marked partitions can wait this long (a pop that finds
 * nothing free in the cached page reads the index again); correctness never depends on it.
 */
export const WORK_CACHE_MS = 250;
/** Candidates a pop checks from the cached page (the next ones in rotation order). */
const CACHED_PICK = 4;
/** Partitions one pop tries to clear at most (each: one query of its cursors, one transaction). */
const CLEARS_PER_POP = 2;
/** How long a partition found with a group behind is left alone by this process's clears. */
const RECHECK_CLEAR_MS = 5_000;
/** The sequencer attribute saying the partition's work item exists (see the module doc). */
export const WORK_FLAG = 'w';

export interface WorkCandidate {
  partitionId: string;
  /** The partition's last offset handed out, as just read (`-1`: none). */
  ver: number;
  /** The group's cursor row for it, as just read (undefined: none yet). */
  row: Item | undefined;
}

export interface WorkIndexDeps {
  storage: Storage;
  queues: QueueDirectory;
  /** Tail reads: which partitions hold messages when a new group's scan marks them. */
  segments: SegmentReader;
  groups: GroupRegistry;
  clock: () => number;
  /** How long a group's finished scan is trusted before it is confirmed again (`queueCacheMs`). */
  recheckMs: number;
  /** The selector work index: told when a queue's work index gains an item (namespace/task pops). */
  selectors: SelectorWork;
}

/** The queue incarnation a wildcard pop or a mark is for. */
export interface QueueRefLike {
  name: string;
  queueId: string;
}

/** A queue a mark is for: its namespace and task say which selector items it also updates. */
export type MarkedQueueRef = Pick<QueueRecord, 'name' | 'queueId' | 'namespace' | 'task'>;

/**
 * The work index (see the module doc): marked by pushes that find a partition drained, read by
 * wildcard pops of every group, cleared when every group is past a partition's end.
 *
 * @example
 * ```ts
 * pushes.addCommitHook(work.hook);
 * const free = await work.candidates(queue, 'billing', now);
 * ```
 */
export class WorkIndex {
  /** Per (queue incarnation, group): the partition this process served last, and whether the whole set fit in one page. */
  private readonly rotation = new Map<string, { last?: string | undefined; whole: boolean }>();
  /**
   * Groups whose existing partitions are known to be marked (keyed with the registration
   * time), and when that was last confirmed. Re-confirmed (one read of the scan state) after
   * `recheckMs`: a delete in another process clears the scan state while keeping the
   * registration (`deleteMetadata=false`), and the partitions that hold data must then be
   * marked again for the group to re-consume them.
   */
  private readonly scanned = new Map<string, number>();
  /** Per (queue incarnation, group): the candidates read last (partition id and end) and when (monotonic ms). */
  private readonly pageCache = new Map<string, { at: number; items: { sk: string; ver: number }[] }>();
  /**
   * Partitions found not clearable at a sequencer version, the groups that were behind, and
   * when: not checked again by other groups until a push moves the sequencer or
   * {@link RECHECK_CLEAR_MS} passed (a group that was behind checks as soon as it is done).
   */
  private readonly unclearable = new Map<string, { ver: number; at: number; behind: Set<string> }>();

  /** Per queue incarnation: when this process last issued a query that found its work index empty (`performance.now()`). */
  private readonly emptyAt = new Map<string, number>();

  constructor(private readonly deps: WorkIndexDeps) {}

  /**
   * Whether this process found the queue's work index empty with a query issued at or after
   * `t` (`performance.now()`): what a namespace pop needs before it removes a selector item
   * it read at `t`.
   */
  foundEmptySince(queueId: string, t: number): boolean {
    return (this.emptyAt.get(queueId) ?? -Infinity) >= t;
  }

  /**
   * The commit hook: every push's take sets the flag; the push whose take (any of its attempts)
   * found it unset writes the work item in its commit. No read, whatever the number of groups.
   */
  readonly hook: CommitHook = ({ queue, partition }) => {
    let flipped = false;
    return {
      set: { [WORK_FLAG]: true },
      ops: (base, _end, befores) => {
        flipped = befores.some((b) => b?.attrs[WORK_FLAG] !== true);
        return flipped ? [{ op: 'put', table: 'leases', item: workItem(queue.queueId, partition.id, base) }] : [];
      },
      // After the commit, whose work item must exist first (see selector-work.ts).
      after: async () => {
        if (flipped) await this.deps.selectors.markQueue(queue);
      },
      abandoned: async (befores) => {
        // A push that flipped the flag and then failed: the item must exist all the same.
        if (befores.some((b) => b?.attrs[WORK_FLAG] !== true)) await this.mark(queue, partition.id);
      },
    };
  };

  /**
   * Marks a partition as having work (outside a push): writes the item with a version no
   * earlier read of it saw, so a clear that read it before fails.
   */
  async mark(queue: MarkedQueueRef, partitionId: string): Promise<void> {
    await this.markPartition(queue.queueId, partitionId);
    await this.deps.selectors.markQueue(queue);
  }

  private async markPartition(queueId: string, partitionId: string): Promise<void> {
    const key = leaseKeys.work(queueId, partitionId);
    for (let attempt = 0; attempt < 10; attempt++) {
      const cur = await this.deps.storage.items.get('leases', key);
      try {
        await this.deps.storage.items.put(
          'leases',
          workItem(queueId, partitionId, (cur?.ver ?? 0) + 1),
          cur ? { kind: 'version', ver: cur.ver } : { kind: 'absent' },
        );
        return;
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
      }
    }
  }

  /**
   * Free partitions that may have work for the group, read with one query (two when this
   * process's rotation wraps around) and two `getMany`s (cursor rows, sequencers). Partitions
   * drained for this group are checked for every group, and cleared when all are past the end.
   */
  async candidates(
    queue: QueueRefLike,
    group: string,
    now: number,
    skip: (partitionId: string) => boolean = () => false,
  ): Promise<WorkCandidate[]> {
    const k = `${queue.queueId}\u0000${group}`;
    const cached = this.pageCache.get(k);
    if (cached && cached.items.some((it) => !skip(it.sk)) && performance.now() - cached.at < WORK_CACHE_MS) {
      // Only the next few in rotation order: fewer rows to read and decode per pop.
      const last = this.rotation.get(k)?.last;
      const order =
        last === undefined
          ? cached.items
          : [...cached.items.filter((it) => it.sk > last), ...cached.items.filter((it) => it.sk <= last)];
      const next = order.filter((it) => !skip(it.sk)).slice(0, CACHED_PICK);
      const rows = await this.deps.storage.items.getMany(
        'leases',
        next.map((it) => leaseKeys.cursor(it.sk, group)),
      );
      const free: WorkCandidate[] = [];
      next.forEach((it, i) => {
        const st = rows[i] ? decodeCursor(rows[i]) : undefined;
        if (st && (isLive(st.lease, now) || st.committed >= it.ver)) return;
        free.push({ partitionId: it.sk, ver: it.ver, row: rows[i] });
      });
      if (free.length > 0) return this.rotate(k, free);
    }
    const pos = this.rotation.get(k) ?? { whole: false };
    const startAfter = pos.whole ? undefined : pos.last;
    for (let pass = 0; pass < 2; pass++) {
      const after = pass === 0 ? startAfter : undefined;
      const issuedAt = performance.now();
      const page = await this.deps.storage.items.query('leases', workPk(queue.queueId), { after, limit: PAGE });
      if (page.items.length === 0) {
        if (after !== undefined) continue; // wrap around
        this.rotation.set(k, { whole: true });
        if (this.emptyAt.size > 10_000) this.emptyAt.clear();
        this.emptyAt.set(queue.queueId, issuedAt);
        return [];
      }
      const items = page.items.slice(0, MAX_GET_MANY);
      const [rows, seqs] = await Promise.all([
        this.deps.storage.items.getMany(
          'leases',
          items.map((it) => leaseKeys.cursor(it.sk, group)),
        ),
        this.deps.storage.items.getMany(
          'log',
          items.map((it) => logKeys.sequencer(it.sk)),
        ),
      ]);
      const free: WorkCandidate[] = [];
      const drained: { item: Item; seq: Item | undefined }[] = [];
      items.forEach((it, i) => {
        const row = rows[i];
        const seq = seqs[i];
        const end = (seq?.ver ?? 0) - 1;
        const st = row ? decodeCursor(row) : undefined;
        if (st && isLive(st.lease, now)) return;
        if (st && st.committed >= end) drained.push({ item: it, seq });
        else free.push({ partitionId: it.sk, ver: end, row });
      });
      if (drained.length > 0) await this.clearDrained(queue, group, drained);
      this.pageCache.set(k, { at: performance.now(), items: free.map((f) => ({ sk: f.partitionId, ver: f.ver })) });
      const whole = after === undefined && page.next === undefined;
      if (free.length > 0) {
        this.rotation.set(k, { last: pos.last, whole });
        return this.rotate(k, free);
      }
      // Nothing free on this page: continue after it next time (bounded work per call).
      this.rotation.set(k, { last: page.items[page.items.length - 1]?.sk, whole });
      if (page.next !== undefined || after === undefined) return [];
    }
    return [];
  }

  /**
   * Clears the work items of partitions every lease group has consumed to the end (a few per
   * call). A partition found with a group behind is left to that group, or to a push that
   * moves its sequencer, or to {@link RECHECK_CLEAR_MS} passing.
   */
  private async clearDrained(
    queue: QueueRefLike,
    group: string,
    drained: { item: Item; seq: Item | undefined }[],
  ): Promise<void> {
    let tried = 0;
    for (const { item, seq } of drained) {
      if (tried >= CLEARS_PER_POP) return;
      const seqVer = seq?.ver ?? 0;
      const now = performance.now();
      const known = this.unclearable.get(item.sk);
      if (known && known.ver === seqVer && !known.behind.has(group) && now - known.at < RECHECK_CLEAR_MS) continue;
      tried++;
      const behind = await this.tryClear(queue, item, seq);
      if (behind.length > 0) {
        if (this.unclearable.size > 10_000) this.unclearable.clear();
        this.unclearable.set(item.sk, { ver: seqVer, at: now, behind: new Set(behind) });
      } else this.unclearable.delete(item.sk);
    }
  }

  /**
   * Clears one partition's work item when every lease group's cursor is past its end: one
   * transaction guarded by the sequencer's version, the item's version and the group list's.
   * Answers the groups still behind (none: cleared, or a guard failed because something moved
   * and the next read decides again).
   */
  async tryClear(queue: QueueRefLike, item: Item, seq: Item | undefined): Promise<string[]> {
    const { ver: groupsVer, groups } = await this.deps.groups.list(queue.name);
    const lease = groups.filter((g) => g.kind === 'lease');
    const end = (seq?.ver ?? 0) - 1;
    // One query: every group's cursor row of the partition shares its pk.
    const rows = await this.deps.storage.items.query('leases', item.sk, { limit: 1000 });
    const committed = new Map(rows.items.map((r) => [r.sk, decodeCursor(r).committed]));
    const behind = lease.filter((g) => (committed.get(g.group) ?? -1) < end).map((g) => g.group);
    if (behind.length > 0) return behind;
    const ops: WriteOp[] = [
      { op: 'delete', table: 'leases', key: { pk: item.pk, sk: item.sk }, cond: { kind: 'version', ver: item.ver } },
      versionCheck(queue.name, groupsVer),
    ];
    // Never pushed to (only a mark): nothing to write back, the item goes alone.
    if (seq)
      ops.unshift({
        op: 'put',
        table: 'log',
        item: { ...seq, attrs: { ...seq.attrs, [WORK_FLAG]: false } },
        cond: { kind: 'version', ver: seq.ver },
      });
    try {
      await this.deps.storage.items.transact(ops);
    } catch (e) {
      if (!(e instanceof ConditionFailedError) && !(e instanceof ContentionError)) throw e;
      // A group registered since this process cached the list: read it again for the next try.
      if (e instanceof ConditionFailedError && e.failed.some((f) => f.index === ops.length - 1))
        await this.deps.groups.list(queue.name, { fresh: true });
    }
    return [];
  }

  /** Rotation: partitions after the one served last come first, so one busy partition does not starve the others. */
  private rotate(k: string, free: WorkCandidate[]): WorkCandidate[] {
    const last = this.rotation.get(k)?.last;
    if (last !== undefined)
      free.sort(
        (a, b) =>
          Number(a.partitionId <= last) - Number(b.partitionId <= last) || (a.partitionId < b.partitionId ? -1 : 1),
      );
    return free;
  }

  /** Remembers the partition this process just served (for the rotation). */
  served(queue: QueueRefLike, group: string, partitionId: string): void {
    const k = `${queue.queueId}\u0000${group}`;
    const cur = this.rotation.get(k);
    this.rotation.set(k, { last: partitionId, whole: cur?.whole ?? false });
  }

  /** Deletes a work item whatever its version (its partition is gone), and forgets the page it was read with. */
  async remove(queue: QueueRefLike, group: string, partitionId: string): Promise<void> {
    this.pageCache.delete(`${queue.queueId}\u0000${group}`);
    await this.deps.storage.items.delete('leases', leaseKeys.work(queue.queueId, partitionId));
  }

  /**
   * One bounded step of marking the partitions that existed before `reg` (a group's first
   * registration on the queue): nothing to do for `new` subscriptions, whose start is after
   * every message that existed then — unless a rescan was requested for them (see
   * {@link requestRescan}). True once every partition is marked. `fresh`: read the scan state
   * even if this process saw the scan finished moments ago.
   */
  async scanStep(reg: GroupRecord, opts: { fresh?: boolean } = {}): Promise<boolean> {
    const k = `${reg.queue}\u0000${reg.group}\u0000${reg.createdAt}`;
    const now = this.deps.clock();
    const seen = this.scanned.get(k);
    if (!opts.fresh && seen !== undefined && now - seen < this.deps.recheckMs) return true;
    const key = leaseKeys.scan(reg.queue, reg.group);
    const st = await this.deps.storage.items.get('leases', key);
    const state = st ? decodeScanState(st) : undefined;
    const requested = state !== undefined && state.regAt === reg.createdAt && state.done === false;
    if (
      (reg.subscription.mode === 'new' && !requested) ||
      (state && state.regAt === reg.createdAt && state.done === true)
    ) {
      this.scanned.set(k, now);
      return true;
    }
    this.scanned.delete(k);
    const fresh = !state || state.regAt !== reg.createdAt;
    const after = fresh ? undefined : (state.after ?? undefined);
    const page = await this.deps.storage.items.query('meta', logKeys.queue(reg.queue).pk, {
      prefix: PARTITION_PREFIX,
      after,
      limit: SCAN_PAGE,
    });
    const queue = await this.deps.queues.getQueue(reg.queue);
    await Promise.all(
      page.items.map(async (it) => {
        const ref = partitionRefOf(it);
        // A partition of a deleted incarnation of the queue, not retired yet: not this queue's.
        if (!queue || !belongsTo(ref, queue)) return;
        const tail = await this.deps.segments.readTail(ref.id);
        if (tail.next > 0) await this.mark(queue, ref.id);
      }),
    );
    const done = page.next === undefined;
    const next = scanStateItem(reg.queue, reg.group, (st?.ver ?? 0) + 1, {
      regAt: reg.createdAt,
      after: page.next ?? null,
      done,
    });
    try {
      await this.deps.storage.items.put('leases', next, st ? { kind: 'version', ver: st.ver } : { kind: 'absent' });
      if (done) this.scanned.set(k, now);
      return done;
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e; // another pop advanced it
      return false;
    }
  }

  /**
   * Asks for the group's existing partitions to be marked again, from the first: after a
   * delete that kept the registration (`deleteMetadata=false`), the group re-consumes from
   * its stored subscription, and partitions other groups had finished have no work item.
   * Needed for `new` subscriptions too: messages pushed after their start are owed again.
   */
  async requestRescan(reg: GroupRecord): Promise<void> {
    // A version no earlier state carried, so a scan step that read the old state cannot
    // overwrite this request with its progress.
    await this.deps.storage.items.put(
      'leases',
      scanStateItem(reg.queue, reg.group, Math.max(1, Math.floor(this.deps.clock())), {
        regAt: reg.createdAt,
        after: null,
        done: false,
      }),
    );
    this.forget(reg.queue, reg.group);
  }

  /** Forgets what this process knows about a group on a queue (after a delete). */
  forget(queue: string, group: string): void {
    for (const m of [this.rotation, this.pageCache])
      for (const k of m.keys()) if (k.endsWith(`\u0000${group}`)) m.delete(k);
    for (const k of this.scanned.keys()) if (k.startsWith(`${queue}\u0000${group}\u0000`)) this.scanned.delete(k);
  }

  /** Deletes a group's scan state on a queue (the work items are every group's and stay). */
  async purge(queue: string, group: string): Promise<void> {
    await this.deps.storage.items.delete('leases', leaseKeys.scan(queue, group));
    this.forget(queue, group);
  }

  /** The group's pops by the queue's namespace/task prepare it on every matching queue again. */
  async resetSelectors(queue: string, group: string): Promise<void> {
    const q = await this.deps.queues.getQueue(queue);
    if (q) await this.deps.selectors.resetGroup(q, group);
  }
}
