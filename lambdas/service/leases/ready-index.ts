/**
 * The READY index: which partitions of a queue may have work for a lease group, so a
 * wildcard pop (`GET /api/v1/pop/queue/:queue`) costs a bounded number of storage requests
 * however many idle partitions the queue has.
 *
 * - Item: table `leases`, pk `READY#<queue>#<group>`, sk partitionId, `ver` = the partition's
 *   last offset when it was marked.
 * - Marked by every push, atomically with its segment: the commit hook adds a `check` of the
 *   queue's group-list version (so a group registered meanwhile is never missed: the check
 *   fails and the commit re-runs the hook) and one unconditional put per registered lease
 *   group. Cost per push: +1 check and +G puts inside the commit transaction.
 * - Read by a wildcard pop: one query (up to {@link PAGE} items, starting after the
 *   partition this process served or tried last, for fairness), one `getMany` of those
 *   partitions' cursor rows, then the pop of a free partition with work.
 * - Cleaned by the wildcard pop: an item whose partition's cursor has reached `ver` (and has
 *   no live lease) is deleted with a guard `ver = that end`, so a push in between (which
 *   bumps `ver`) makes the delete fail harmlessly.
 * - Seeded lazily for a group registered on a queue that already has data: one page of
 *   {@link SCAN_PAGE} partitions per wildcard pop marks those holding messages
 *   (put-if-absent), with progress in the group's scan-state item, until done.
 */
import { isLive } from '../../core/leases.js';
import { ConditionFailedError, MAX_GET_MANY, type Item, type Storage, type WriteOp } from '../../storage/port.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import { versionCheck, type GroupRecord } from '../groups/group-store.js';
import { decodeCursor, decodeScanState, leaseKeys, readyItem, readyPk, scanStateItem } from './lease-store.js';
import { PARTITION_PREFIX, logKeys, partitionRefOf } from '../log/log-store.js';
import { belongsTo, type QueueDirectory } from '../log/queue-directory.js';
import type { CommitHook } from '../log/segment-commit.js';
import type { SegmentReader } from '../log/segments.js';

/** READY items read per query. */
export const PAGE = 20;
/** Partitions examined per wildcard pop while a new group's existing partitions are being marked. */
export const SCAN_PAGE = 25;
/**
 * How long this process reuses the READY page it read last, so back-to-back wildcard pops
 * skip the index query. Only discovery of newly marked partitions can wait this long (a
 * pop that finds nothing free in the cached page reads the index again); correctness never
 * depends on it, and entries are only deleted on a fresh read.
 */
export const READY_CACHE_MS = 250;
/** Candidates a pop checks from the cached page (the next ones in rotation order). */
const CACHED_PICK = 4;

export interface ReadyCandidate {
  partitionId: string;
  /** The partition's last offset when marked. */
  ver: number;
  /** The group's cursor row for it, as just read (undefined: none yet). */
  row: Item | undefined;
}

export interface ReadyIndexDeps {
  storage: Storage;
  queues: QueueDirectory;
  /** Tail reads: which partitions hold messages when a new group's scan marks them. */
  segments: SegmentReader;
  groups: GroupRegistry;
  clock: () => number;
  /** How long a group's finished scan is trusted before it is confirmed again (`queueCacheMs`). */
  recheckMs: number;
}

/**
 * The READY index (see the module doc): marked by pushes, read and cleaned by wildcard pops.
 *
 * @example
 * ```ts
 * pushes.addCommitHook(ready.hook);
 * const free = await ready.candidates('orders', 'billing', now);
 * ```
 */
export class ReadyIndex {
  /** Per (queue, group): the partition this process served last, and whether the whole set fit in one page. */
  private readonly rotation = new Map<string, { last?: string | undefined; whole: boolean }>();
  /**
   * Groups whose existing partitions are known to be marked (keyed with the registration
   * time), and when that was last confirmed. Re-confirmed (one read of the scan state) after
   * `recheckMs`: a delete in another process clears the scan state and the READY entries
   * while keeping the registration (`deleteMetadata=false`), and the partitions that hold
   * data must then be marked again for the group to re-consume them.
   */
  private readonly scanned = new Map<string, number>();
  /** Per (queue, group): the READY items read last (partition id and ver) and when (monotonic ms). */
  private readonly pageCache = new Map<string, { at: number; items: { sk: string; ver: number }[] }>();

  constructor(private readonly deps: ReadyIndexDeps) {}

  /**
   * The commit hook (see the module doc). With lease groups on the queue, the READY puts and
   * a check of the group-list version join the segment's commit. With none, the push stays a
   * single conditional put, and once it has committed one read of the version tells whether
   * a group registered meanwhile (whose registration scan may have run before this segment
   * existed); then that group's mark is written.
   */
  readonly hook: CommitHook = async ({ queue, partition, retry }) => {
    const { ver, groups } = await this.deps.groups.list(queue.name, { fresh: retry });
    const lease = groups.filter((g) => g.kind === 'lease');
    if (lease.length === 0) {
      return {
        ops: () => [],
        after: async (_base, end) => {
          if ((await this.deps.groups.listVersion(queue.name)) === ver) return;
          const fresh = await this.deps.groups.list(queue.name, { fresh: true });
          for (const g of fresh.groups)
            if (g.kind === 'lease') await this.markAtLeast(queue.name, g.group, partition.id, end);
        },
      };
    }
    return {
      ops: (_base, end) => [
        versionCheck(queue.name, ver),
        ...lease.map((g): WriteOp => ({
          op: 'put',
          table: 'leases',
          item: readyItem(queue.name, g.group, partition.id, end),
        })),
      ],
    };
  };

  /**
   * Marks a partition READY up to at least `end` (outside a commit): creates the item, or
   * raises a lower `ver`, never lowers one (a lower mark could let the entry be cleaned
   * while messages up to `end` are still owed).
   */
  async markAtLeast(queue: string, group: string, partitionId: string, end: number): Promise<void> {
    const key = leaseKeys.ready(queue, group, partitionId);
    for (let attempt = 0; attempt < 10; attempt++) {
      const cur = await this.deps.storage.items.get('leases', key);
      if (cur && cur.ver >= end) return;
      try {
        await this.deps.storage.items.put(
          'leases',
          readyItem(queue, group, partitionId, end),
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
   * process's rotation wraps around) and one `getMany`. Drained items found on the way are
   * deleted (guarded by their `ver`).
   */
  async candidates(
    queue: string,
    group: string,
    now: number,
    skip: (partitionId: string) => boolean = () => false,
  ): Promise<ReadyCandidate[]> {
    const k = `${queue}\u0000${group}`;
    const cached = this.pageCache.get(k);
    if (cached && cached.items.some((it) => !skip(it.sk)) && performance.now() - cached.at < READY_CACHE_MS) {
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
      const free: ReadyCandidate[] = [];
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
      const page = await this.deps.storage.items.query('leases', readyPk(queue, group), { after, limit: PAGE });
      if (page.items.length === 0) {
        if (after !== undefined) continue; // wrap around
        this.rotation.set(k, { whole: true });
        return [];
      }
      const rows = await this.deps.storage.items.getMany(
        'leases',
        page.items.slice(0, MAX_GET_MANY).map((it) => leaseKeys.cursor(it.sk, group)),
      );
      const free: ReadyCandidate[] = [];
      const drained: Item[] = [];
      page.items.forEach((it, i) => {
        const row = rows[i];
        const st = row ? decodeCursor(row) : undefined;
        if (st && isLive(st.lease, now)) return;
        if (st && st.committed >= it.ver) drained.push(it);
        else free.push({ partitionId: it.sk, ver: it.ver, row });
      });
      if (drained.length > 0) await this.removeDrained(queue, group, drained);
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

  /** Rotation: partitions after the one served last come first, so one busy partition does not starve the others. */
  private rotate(k: string, free: ReadyCandidate[]): ReadyCandidate[] {
    const last = this.rotation.get(k)?.last;
    if (last !== undefined)
      free.sort(
        (a, b) =>
          Number(a.partitionId <= last) - Number(b.partitionId <= last) || (a.partitionId < b.partitionId ? -1 : 1),
      );
    return free;
  }

  /** Remembers the partition this process just served (for the rotation). */
  served(queue: string, group: string, partitionId: string): void {
    const k = `${queue}\u0000${group}`;
    const cur = this.rotation.get(k);
    this.rotation.set(k, { last: partitionId, whole: cur?.whole ?? false });
  }

  private async removeDrained(queue: string, group: string, items: Item[]): Promise<void> {
    await this.deps.storage.items.writeEach(
      items.map((it) => ({
        op: 'delete' as const,
        table: 'leases' as const,
        key: leaseKeys.ready(queue, group, it.sk),
        cond: { kind: 'version' as const, ver: it.ver },
      })),
    );
  }

  /** Deletes a READY item whatever its version (its partition is gone), and forgets the page it was read with. */
  async remove(queue: string, group: string, partitionId: string): Promise<void> {
    this.pageCache.delete(`${queue}\u0000${group}`);
    await this.deps.storage.items.delete('leases', leaseKeys.ready(queue, group, partitionId));
  }

  /**
   * One bounded step of marking the partitions that existed before `reg` (a group's first
   * registration on the queue): nothing to do for `new` subscriptions, whose start is after
   * every message that existed then — unless a rescan was requested for them (see
   * {@link requestRescan}).
   */
  async scanStep(reg: GroupRecord): Promise<void> {
    const k = `${reg.queue}\u0000${reg.group}\u0000${reg.createdAt}`;
    const now = this.deps.clock();
    const seen = this.scanned.get(k);
    if (seen !== undefined && now - seen < this.deps.recheckMs) return;
    const key = leaseKeys.scan(reg.queue, reg.group);
    const st = await this.deps.storage.items.get('leases', key);
    const state = st ? decodeScanState(st) : undefined;
    const requested = state !== undefined && state.regAt === reg.createdAt && state.done === false;
    if (
      (reg.subscription.mode === 'new' && !requested) ||
      (state && state.regAt === reg.createdAt && state.done === true)
    ) {
      this.scanned.set(k, now);
      return;
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
        const pid = ref.id;
        const tail = await this.deps.segments.readTail(pid);
        if (tail.next > 0) await this.markAtLeast(reg.queue, reg.group, pid, tail.next - 1);
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
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e; // another pop advanced it
    }
  }

  /**
   * Asks for the group's existing partitions to be marked again, from the first: after a
   * delete that kept the registration (`deleteMetadata=false`), the group re-consumes from
   * its stored subscription, and the READY entries that would lead its wildcard pops to the
   * data went with the delete. Needed for `new` subscriptions too: messages pushed after
   * their start are owed again.
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
    this.rotation.delete(`${queue}\u0000${group}`);
    this.pageCache.delete(`${queue}\u0000${group}`);
    for (const k of this.scanned.keys()) if (k.startsWith(`${queue}\u0000${group}\u0000`)) this.scanned.delete(k);
  }

  /** Deletes every READY item and the scan state of a group on a queue; returns how many items went. */
  async purge(queue: string, group: string): Promise<number> {
    let n = 0;
    for (let guard = 0; guard < 100_000; guard++) {
      const page = await this.deps.storage.items.query('leases', readyPk(queue, group), { limit: 100 });
      if (page.items.length === 0) break;
      await this.deps.storage.items.writeEach(
        page.items.map((it) => ({ op: 'delete' as const, table: 'leases' as const, key: { pk: it.pk, sk: it.sk } })),
      );
      n += page.items.length;
      if (!page.next) break;
    }
    await this.deps.storage.items.delete('leases', leaseKeys.scan(queue, group));
    this.forget(queue, group);
    return n;
  }
}
