/**
 * Retention (docs/LEASES.md, "Retention"), run by `runMaintenance`: for every queue with `retentionEnabled`,
 * whole segments (their blobs and commit markers too) are deleted oldest first by the rules
 * in `core/retention.ts`, and partitions that hold nothing deliverable and have been idle for
 * 30 days are retired (their data then removed through a tombstone, see `queue-deletion.ts`).
 * Dead-letter rows are never touched. Reads filter expired messages themselves, so a late
 * sweep never delivers one.
 *
 * `completedRetentionSeconds` counts every group: lease groups by their cursor rows, record-claim
 * groups by their positions (`ClaimService.retentionNeeds`), and a registered group with no
 * position on the partition yet keeps what it is owed.
 *
 * Retiring an idle partition must not lose a push that is still committing to it. Pushes find a
 * partition through a per-process cache trusted for `SLUICE_QUEUE_CACHE_MS`, and a push can take
 * a while between finding it and committing (blob upload, reservations). So retirement takes two
 * passes (`idleStep`):
 * 1. the partition found removable is **marked** on its name item (with its last offset);
 * 2. a later pass, once `SLUICE_SWEEP_GRACE_MS` (15 min) has passed since the mark, retires it
 *    only if it is still removable and its last offset has not moved, with one transaction
 *    guarded by the version of the name item it read (so still marked).
 * Why no acknowledged message can land in a retired partition: a push either read the name
 * item from storage after the mark — then it cleared the mark (`QueueDirectory.ensurePartition`),
 * which changes the item's version and fails the retirement — or it found the partition before
 * the mark: from storage, or from a cache entry that only a read which saw no mark fills (a
 * consumer's lookup of a marked partition does not count) and that is only trusted for
 * `SLUICE_QUEUE_CACHE_MS`. Such
 * a push that committed before step 2 moved the last offset (then the mark is dropped); one
 * that commits after step 2 would have to have been running for the whole grace period, the
 * same bound the orphan-blob sweeper relies on for a push that is merely slow.
 */
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import {
  consumedFloor,
  deletableSegments,
  expiredByRetention,
  idleStep,
  partitionRemovable,
  retentionWindows,
  unreadKeepFrom,
} from '../../core/retention.js';
import type { SluiceConfig } from '../../config.js';
import { ConditionFailedError, ContentionError, type Json, type Storage, type WriteOp } from '../../storage/port.js';
import type { ClaimService } from '../claims/claim-service.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import type { GroupRecord } from '../groups/group-store.js';
import { partitionCursors } from '../leases/lease-store.js';
import {
  logKeys,
  skipSegmentItem,
  partitionRefOf,
  retiringMarkOf,
  type PartitionRef,
  type QueueRecord,
  type RetiringMark,
} from '../log/log-store.js';
import { retireOps, type QueueDirectory } from '../log/queue-directory.js';
import type { SegmentReader } from '../log/segments.js';

export interface RetentionReport {
  queues: number;
  partitions: number;
  segmentsDeleted: number;
  /** Idle partitions marked for retirement on this pass. */
  partitionsMarked: number;
  partitionsRemoved: number;
}

export interface RetentionDeps {
  storage: Storage;
  queues: QueueDirectory;
  segments: SegmentReader;
  groups: GroupRegistry;
  claims: ClaimService;
  config: SluiceConfig;
  clock: () => number;
}

/**
 * Retention passes (see the module doc), run by `runMaintenance`.
 *
 * @example
 * ```ts
 * const report = await retention.run(); // segments deleted, idle partitions marked or retired
 * ```
 */
export class RetentionService {
  constructor(private readonly deps: RetentionDeps) {}

  /** One pass over every queue with retention enabled. */
  async run(): Promise<RetentionReport> {
    const report: RetentionReport = {
      queues: 0,
      partitions: 0,
      segmentsDeleted: 0,
      partitionsMarked: 0,
      partitionsRemoved: 0,
    };
    let after: string | undefined;
    do {
      const page = await this.deps.queues.queueNames(after, 100);
      for (const name of page.names) {
        const q = await this.deps.queues.getQueue(name, { fresh: true });
        if (!q || !q.options.retentionEnabled) continue;
        report.queues++;
        const groups =
          q.options.completedRetentionSeconds > 0 ? (await this.deps.groups.list(q.name, { fresh: true })).groups : [];
        for (const part of await this.deps.queues.listPartitions(q.name)) {
          report.partitions++;
          const r = await this.partition(q, part, groups);
          report.segmentsDeleted += r.segmentsDeleted;
          if (r.idle === 'mark') report.partitionsMarked++;
          if (r.removed) report.partitionsRemoved++;
        }
      }
      after = page.next;
    } while (after);
    return report;
  }

  /** Applies retention to one partition; `groups` are the queue's registered groups (read when not given). */
  async partition(
    q: QueueRecord,
    part: PartitionRef,
    groups?: readonly GroupRecord[],
  ): Promise<{ segmentsDeleted: number; removed: boolean; idle?: 'mark' | 'retire' }> {
    const storage = this.deps.storage;
    const now = this.deps.clock();
    const w = retentionWindows(q.options, now);
    const cursors = await partitionCursors(storage, part.id);
    const registered =
      groups ?? (w.completedRetentionMs > 0 ? (await this.deps.groups.list(q.name, { fresh: true })).groups : []);
    // Record-claim groups hold the floor too: what they have not finished stays.
    const claimGroups =
      w.completedRetentionMs > 0 ? registered.filter((g) => g.kind === 'claim').map((g) => g.group) : [];
    const claims =
      claimGroups.length > 0 ? await this.deps.claims.retentionNeeds(part.id, claimGroups) : { needs: [], unread: 0 };
    const floor = consumedFloor(
      cursors.map((c) => c.state.committed),
      claims.needs,
    );
    // Groups registered on the queue without a position here have passed nothing yet.
    const withRow = new Set(cursors.map((c) => c.group));
    const unread = registered
      .filter((g) => g.kind === 'lease' && !withRow.has(g.group))
      .map((g) => (g.group === QUEUE_MODE_GROUP ? { mode: 'all' as const, from: null } : g.subscription));
    // A claim group's first poll of a partition starts at its earliest record: owed everything.
    if (claims.unread > 0) unread.push({ mode: 'all', from: null });
    const keepFrom = unreadKeepFrom(unread);
    let deleted = 0;
    for (let guard = 0; guard < 10_000; guard++) {
      const page = await this.deps.segments.segmentPage(part.id, 0, 100);
      const n = deletableSegments(page.segs, w, floor, !page.more, keepFrom);
      const gone = page.segs.slice(0, n);
      const lowest = gone[0];
      const newest = gone[gone.length - 1];
      // Only the floor itself is old enough to go: it already says what it would say.
      if (!lowest || !newest || (gone.length === 1 && lowest.skip)) break;
      for (const s of gone) if (s.blob) await storage.blobs.delete(s.blob);
      // The lowest key becomes (or stays) the floor: a skip over every offset removed, written
      // first, so a reader never finds offsets below the next segment uncovered (a gap it would
      // wait at, see SegmentReader.passGap).
      await storage.items.put('log', skipSegmentItem(part.id, lowest.base, newest.end, newest.at));
      const ops: WriteOp[] = gone.flatMap((s, i) => [
        ...(i > 0 ? [{ op: 'delete' as const, table: 'log' as const, key: logKeys.segment(part.id, s.base) }] : []),
        ...(s.skip ? [] : [{ op: 'delete' as const, table: 'log' as const, key: logKeys.marker(part.id, s.push) }]),
      ]);
      if (ops.length > 0) await storage.items.writeEach(ops);
      deleted += lowest.skip ? n - 1 : n;
      if (n < page.segs.length || !page.more) break;
    }
    if (deleted > 0) this.deps.segments.forgetSegments(part.id);

    const tail = await this.deps.segments.segmentAt(part.id, Number.MAX_SAFE_INTEGER);
    const live =
      tail !== undefined &&
      !expiredByRetention(tail.at, w) &&
      (w.completedRetentionMs === 0 ||
        floor === null ||
        tail.end >= floor ||
        (keepFrom !== null && tail.at >= keepFrom));
    const lastActivityAt = Math.max(part.createdAt, tail?.at ?? 0);
    if (!partitionRemovable({ lastActivityAt, liveMessages: live }, now))
      return { segmentsDeleted: deleted, removed: false };
    const idle = await this.retireIdle(part, tail?.end ?? -1, now);
    return {
      segmentsDeleted: deleted,
      removed: idle === 'retire',
      ...(idle === 'mark' || idle === 'retire' ? { idle } : {}),
    };
  }

  /**
   * One step of retiring a removable idle partition (see the module doc): mark it, or retire it
   * once the grace period has passed with the mark standing and the partition unchanged. The
   * data then goes through the partition's tombstone; DLQ rows stay.
   */
  private async retireIdle(part: PartitionRef, end: number, now: number): Promise<'mark' | 'retire' | undefined> {
    const storage = this.deps.storage;
    const item = await storage.items.get('meta', logKeys.partition(part.queue, part.name));
    if (!item || partitionRefOf(item).id !== part.id) return undefined; // retired or replaced meanwhile
    const mark = retiringMarkOf(item);
    const step = idleStep({ removable: true, mark, end }, now, this.deps.config.sweepGraceMs);
    try {
      if (step === 'mark') {
        const retiring: RetiringMark = { at: now, end };
        await storage.items.put(
          'meta',
          { ...item, ver: item.ver + 1, attrs: { ...item.attrs, retiring: retiring as unknown as Json } },
          { kind: 'version', ver: item.ver },
        );
        return 'mark';
      }
      if (step === 'unmark') {
        const { retiring: _mark, ...attrs } = item.attrs;
        await storage.items.put('meta', { ...item, ver: item.ver + 1, attrs }, { kind: 'version', ver: item.ver });
        return undefined;
      }
      if (step !== 'retire') return undefined;
      // Guarded by the version read: a push that cleared the mark meanwhile keeps the partition.
      await storage.items.transact([
        { op: 'delete', table: 'meta', key: { pk: item.pk, sk: item.sk }, cond: { kind: 'version', ver: item.ver } },
        ...retireOps(part, now, 'idle'),
      ]);
    } catch (e) {
      if (e instanceof ConditionFailedError || e instanceof ContentionError) return undefined; // a push got there first
      throw e;
    }
    this.deps.queues.forgetPartition(part);
    this.deps.segments.forgetSegments(part.id);
    return 'retire';
  }
}
