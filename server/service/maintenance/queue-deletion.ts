/**
 * Queue deletion (`DELETE /api/v1/resources/queues/{queue}`, Queen §2.2) and the maintenance
 * work it leaves behind: removing the data of deleted queues and of retired partitions.
 *
 * What a delete removes: the queue, its partitions, their messages (segments, blobs, commit
 * markers), dedup reservations, lease cursors and leases, work items and scan state,
 * record-claim state (positions, batches, members, dead-letter pointers) and the queue's DLQ
 * rows. What it keeps: group registrations (their kind and subscription), as Queen keeps a
 * group's subscription, so a queue created again under the same name inherits them.
 *
 * The request does the small part, so the name is free at once:
 * 1. one transaction deletes the queue record and its directory entry and writes a **queue
 *    tombstone** (`meta` `TOMB` / `Q#<queueId>`);
 * 2. the scan state of the queue's lease groups goes (so their wildcard pops look at the
 *    queue afresh);
 * 3. up to {@link SYNC_RETIRE_PARTITIONS} partitions are **retired**: per partition one
 *    transaction deletes its name and id items (the name guarded by the version read) and
 *    writes a **partition tombstone** (`TOMB` / `P#<partitionId>`).
 * A push right after creates a new incarnation (a new `queueId`) with new partition ids; a
 * partition name item the request did not get to is recognised as another incarnation's
 * (`queueId`) and replaced by the first push that needs the name (retiring it the same way).
 *
 * Maintenance (`run`, from `runMaintenance`) then works through the tombstones in bounded
 * pages per pass. A queue tombstone retires the incarnation's remaining partitions and removes
 * its DLQ rows; a partition tombstone removes the partition's segments, blobs, markers,
 * reservations, cursors, work items and claim state. Progress (stage and cursor) is saved
 * in the tombstone, every step only deletes what belongs to the dead incarnation, and the
 * tombstone goes last, so a crash anywhere leaves work that the next pass repeats safely.
 *
 * Another process may still push into a deleted partition for as long as it trusts its cached
 * copy of the queue (`SLUICE_QUEUE_CACHE_MS`) plus the push's own duration. So a tombstone
 * stays until a sweep that started at least `SLUICE_SWEEP_GRACE_MS` after the delete found
 * nothing left: what such a late push wrote goes with the deleted queue, never into the new one.
 *
 * Idle-partition retention retires partitions through the same partition tombstones.
 */
import type { SluiceConfig } from '../../config.js';
import { SluiceError } from '../../core/errors.js';
import { assertName } from '../../core/names.js';
import {
  ConditionFailedError,
  ContentionError,
  type Item,
  type Json,
  type Storage,
  type TableName,
  type WriteOp,
} from '../../storage/port.js';
import { claimKeys } from '../claims/claim-store.js';
import type { DlqService } from '../leases/dlq-service.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import type { GroupRecord } from '../groups/group-store.js';
import { leaseKeys } from '../leases/lease-store.js';
import {
  PARTITION_PREFIX,
  SEGMENT_BLOB_PREFIX,
  SEGMENT_PREFIX,
  TOMBSTONE_PK,
  decodeQueue,
  logKeys,
  partitionRefOf,
  type PartitionRef,
} from '../log/log-store.js';
import { belongsTo, retireOps, type QueueDirectory, type RetireReason } from '../log/queue-directory.js';
import type { WorkIndex } from '../leases/work-index.js';

/** Most partitions a delete request retires itself; maintenance retires the rest. */
export const SYNC_RETIRE_PARTITIONS = 500;
/** Storage pages (one query or list, with the writes it leads to) one maintenance pass spends on tombstones. */
export const PAGES_PER_PASS = 2000;
/** Partitions retired per page (one transaction each, in parallel). */
const RETIRE_PAGE = 25;
/** Items deleted per page. */
const PAGE = 100;

interface TombstoneProgress {
  /** When the queue was deleted or the partition retired (epoch ms). */
  deletedAt: number;
  /** When a sweep last finished (the next one waits for the grace period to pass). */
  cleanedAt?: number;
  /** The sweep in progress: its stage, the stage's cursor, what it removed so far, when it began. */
  stage?: number;
  cursor?: string | null;
  found?: number;
  sweepFrom?: number;
}

export interface QueueTombstone extends TombstoneProgress {
  kind: 'queue';
  queue: string;
  queueId: string;
}

export interface PartitionTombstone extends TombstoneProgress {
  kind: 'partition';
  queue: string;
  partition: string;
  partitionId: string;
  queueId?: string;
  reason: RetireReason;
}

export type Tombstone = QueueTombstone | PartitionTombstone;

export interface DeletionReport {
  /** Tombstones worked on in this pass. */
  tombstones: number;
  /** Tombstones whose work is done (removed). */
  finished: number;
  /** Items, blobs, partitions and DLQ rows removed. */
  removed: number;
  /** The page budget ran out: the next pass continues. */
  pending: boolean;
}

interface Budget {
  left: number;
}

/** One page (or a few) of one stage of a sweep: what it removed, and where to continue (undefined: the stage is done). */
type Stage<T> = (
  t: T,
  cursor: string | undefined,
  budget: Budget,
  run: RunContext,
) => Promise<{ found: number; next?: string | undefined }>;

/** What one maintenance pass reads once. */
interface RunContext {
  groups: Map<string, GroupRecord[]>;
}

export interface QueueDeletionDeps {
  storage: Storage;
  queues: QueueDirectory;
  groups: GroupRegistry;
  work: WorkIndex;
  dlq: DlqService;
  config: SluiceConfig;
  clock: () => number;
}

/** Whether a partition record belongs to the deleted incarnation a queue tombstone names. */
function ofIncarnation(ref: PartitionRef, t: { queueId: string; deletedAt: number }): boolean {
  // Partitions written before queue deletion existed carry no queueId: those created up to the delete were its.
  return ref.queueId !== undefined ? ref.queueId === t.queueId : ref.createdAt <= t.deletedAt;
}

/**
 * Deletes queues and, in maintenance passes, the data they and retired partitions left (see
 * the module doc).
 *
 * @example
 * ```ts
 * await deletion.deleteQueue('orders'); // { existed: true }; the name is free at once
 * const report = await deletion.run(); // a bounded share of the tombstones' work
 * ```
 */
export class QueueDeletion {
  constructor(private readonly deps: QueueDeletionDeps) {}

  // ------------------------------------------------------------------ delete

  /**
   * Deletes a queue (see the module doc). Returns whether it existed. Repeating it is safe: a
   * queue that no longer exists answers `existed: false` and changes nothing.
   */
  async deleteQueue(queue: string): Promise<{ existed: boolean }> {
    assertName(queue, 'queue');
    for (let attempt = 0; attempt < 20; attempt++) {
      const cur = await this.deps.storage.items.get('meta', logKeys.queue(queue));
      if (!cur) {
        this.deps.queues.invalidateQueue(queue);
        return { existed: false };
      }
      const rec = decodeQueue(cur);
      const now = this.deps.clock();
      const tomb: QueueTombstone = { kind: 'queue', queue, queueId: rec.queueId, deletedAt: now };
      try {
        await this.deps.storage.items.transact([
          { op: 'delete', table: 'meta', key: logKeys.queue(queue), cond: { kind: 'version', ver: cur.ver } },
          { op: 'delete', table: 'meta', key: logKeys.queueIndex(queue) },
          {
            op: 'put',
            table: 'meta',
            item: { ...logKeys.queueTombstone(rec.queueId), ver: 1, attrs: tomb as unknown as Record<string, Json> },
          },
        ]);
      } catch (e) {
        if (e instanceof ConditionFailedError || e instanceof ContentionError) continue; // reconfigured meanwhile: read again
        throw e;
      }
      this.deps.queues.invalidateQueue(queue);
      const { groups } = await this.deps.groups.list(queue, { fresh: true });
      for (const g of groups) {
        this.deps.groups.forget(queue, g.group);
        this.deps.work.forget(queue, g.group);
      }
      const lease = groups.filter((g) => g.kind === 'lease');
      for (let i = 0; i < lease.length; i += PAGE) {
        await this.deps.storage.items.writeEach(
          lease
            .slice(i, i + PAGE)
            .map((g) => ({ op: 'delete' as const, table: 'leases' as const, key: leaseKeys.scan(queue, g.group) })),
        );
      }
      // Free the partition names now; what does not fit is the tombstone's work.
      let cursor: string | undefined;
      const budget = { left: Math.ceil(SYNC_RETIRE_PARTITIONS / RETIRE_PAGE) };
      do {
        cursor = (await this.retirePage(tomb, cursor, budget)).next;
      } while (cursor !== undefined && budget.left > 0);
      return { existed: true };
    }
    throw new SluiceError('unavailable', `queue ${queue} changed too often to be deleted right now; retry`);
  }

  /** One page of retiring a deleted incarnation's partitions, from after `cursor` (a partition name item's sort key). */
  private async retirePage(
    t: QueueTombstone,
    cursor: string | undefined,
    budget: Budget,
  ): Promise<{ found: number; next?: string | undefined }> {
    budget.left--;
    const page = await this.deps.storage.items.query('meta', logKeys.queue(t.queue).pk, {
      prefix: PARTITION_PREFIX,
      after: cursor,
      limit: RETIRE_PAGE,
    });
    const now = this.deps.clock();
    // A partition written before queue deletion existed (no queueId) that the queue's current
    // incarnation counts as its own (`belongsTo`) is not this tombstone's to retire.
    const current = page.items.some((it) => partitionRefOf(it).queueId === undefined)
      ? await this.deps.queues.getQueue(t.queue, { fresh: true })
      : undefined;
    const retired = await Promise.all(
      page.items.map(async (it) => {
        const ref = partitionRefOf(it);
        if (!ofIncarnation(ref, t) || (current && belongsTo(ref, current))) return 0;
        try {
          await this.deps.storage.items.transact([
            { op: 'delete', table: 'meta', key: { pk: it.pk, sk: it.sk }, cond: { kind: 'version', ver: it.ver } },
            ...retireOps(ref, now, 'deleted'),
          ]);
          this.deps.queues.forgetPartition(ref);
          return 1;
        } catch (e) {
          // Replaced or retired meanwhile (by a push of a new incarnation, or another pass).
          if (e instanceof ConditionFailedError || e instanceof ContentionError) return 0;
          throw e;
        }
      }),
    );
    return { found: retired.reduce((a: number, b) => a + b, 0), next: page.next };
  }

  // ------------------------------------------------------------- maintenance

  /**
   * One maintenance pass over the tombstones, spending at most `pages` storage pages: what is
   * left continues in the next pass.
   */
  async run(opts: { pages?: number } = {}): Promise<DeletionReport> {
    const budget: Budget = { left: opts.pages ?? PAGES_PER_PASS };
    const report: DeletionReport = { tombstones: 0, finished: 0, removed: 0, pending: false };
    const ctx: RunContext = { groups: new Map() };
    let after: string | undefined;
    do {
      if (budget.left <= 0) {
        report.pending = true;
        break;
      }
      budget.left--;
      const page = await this.deps.storage.items.query('meta', TOMBSTONE_PK, { after, limit: PAGE });
      for (const it of page.items) {
        if (budget.left <= 0) {
          report.pending = true;
          return report;
        }
        await this.process(it, budget, ctx, report);
      }
      after = page.next;
    } while (after !== undefined);
    return report;
  }

  /** Works on one tombstone: continues its sweep, and removes it once a sweep begun after the grace period found nothing. */
  private async process(item: Item, budget: Budget, ctx: RunContext, report: DeletionReport): Promise<void> {
    const t = item.attrs as unknown as Tombstone;
    const now = this.deps.clock();
    const graceEnd = t.deletedAt + this.deps.config.sweepGraceMs;
    if (t.cleanedAt !== undefined && now < graceEnd) return;
    report.tombstones++;
    const stages = (t.kind === 'queue' ? this.queueStages : this.partitionStages) as Stage<Tombstone>[];
    let stage = t.stage ?? 0;
    let cursor = t.cursor ?? undefined;
    let found = t.found ?? 0;
    const sweepFrom = t.sweepFrom ?? now;
    while (stage < stages.length) {
      if (budget.left <= 0) {
        report.pending = true;
        await this.save(item, { ...t, stage, cursor: cursor ?? null, found, sweepFrom });
        return;
      }
      const r = await (stages[stage] as Stage<Tombstone>)(t, cursor, budget, ctx);
      found += r.found;
      report.removed += r.found;
      if (r.next === undefined) {
        stage++;
        cursor = undefined;
      } else cursor = r.next;
    }
    if (found === 0 && sweepFrom >= graceEnd) {
      try {
        await this.deps.storage.items.delete('meta', { pk: item.pk, sk: item.sk }, { kind: 'version', ver: item.ver });
        report.finished++;
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e; // another pass moved it on: it decides
      }
      return;
    }
    const { stage: _stage, cursor: _cursor, found: _found, sweepFrom: _from, ...rest } = t;
    await this.save(item, { ...rest, cleanedAt: now });
  }

  private async save(item: Item, t: Tombstone): Promise<void> {
    try {
      await this.deps.storage.items.put(
        'meta',
        { pk: item.pk, sk: item.sk, ver: item.ver + 1, attrs: t as unknown as Record<string, Json> },
        { kind: 'version', ver: item.ver },
      );
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e; // another pass saved its own progress
    }
  }

  /** A deleted queue: its remaining partitions are retired, then its DLQ rows removed. */
  private readonly queueStages: Stage<QueueTombstone>[] = [
    (t, cursor, budget) => this.retirePage(t, cursor, budget),
    async (t, cursor, budget) => {
      budget.left--;
      const r = await this.deps.dlq.purgeIncarnation(t, cursor, PAGE);
      return { found: r.removed, next: r.next };
    },
  ];

  /** A retired partition: everything stored under its id. */
  private readonly partitionStages: Stage<PartitionTombstone>[] = [
    // Segments (and their blobs) and commit markers.
    (t, _c, budget) =>
      this.drain('log', t.partitionId, budget, async (items) => {
        for (const it of items)
          if (it.sk.startsWith(SEGMENT_PREFIX) && typeof it.attrs.blob === 'string')
            await this.deps.storage.blobs.delete(it.attrs.blob);
        return [];
      }),
    // Blobs no segment referenced (a push that crashed, or one that raced the delete).
    async (t, _c, budget) => {
      let found = 0;
      while (budget.left > 0) {
        budget.left--;
        const page = await this.deps.storage.blobs.list(`${SEGMENT_BLOB_PREFIX}${t.partitionId}/`, { limit: PAGE });
        for (const b of page.blobs) await this.deps.storage.blobs.delete(b.key);
        found += page.blobs.length;
        if (page.next === undefined || page.blobs.length === 0) return { found };
      }
      return { found, next: '' };
    },
    (t, _c, budget) => this.drain('dedup', t.partitionId, budget),
    // Lease cursors.
    (t, _c, budget) => this.drain('leases', t.partitionId, budget),
    // The partition's work item (a partition written before queue incarnations existed has no
    // queueId: wildcard pops drop its item when they find the partition gone).
    async (t, _c, budget) => {
      if (t.queueId === undefined) return { found: 0 };
      budget.left--;
      await this.deps.storage.items.delete('leases', leaseKeys.work(t.queueId, t.partitionId));
      return { found: 0 };
    },
    // Record-claim state of every claim group: positions and batches, members, dead-letter pointers.
    async (t, cursor, budget, ctx) => {
      const groups = (await this.groupsOf(t.queue, budget, ctx)).filter(
        (g) => g.kind === 'claim' && g.group > (cursor ?? ''),
      );
      let found = 0;
      let done = cursor ?? '';
      for (const g of groups) {
        for (const pk of [
          claimKeys.groupPk(t.partitionId, g.group),
          claimKeys.memberPk(t.partitionId, g.group),
          claimKeys.deadPk(t.partitionId, g.group),
        ]) {
          const r = await this.drain('claims', pk, budget);
          found += r.found;
          if (r.next !== undefined) return { found, next: done }; // out of budget: this group again next time
        }
        done = g.group;
        if (budget.left <= 0 && g !== groups.at(-1)) return { found, next: done };
      }
      return { found };
    },
  ];

  /** The groups registered on a queue (registrations outlive a delete), read once per pass. */
  private async groupsOf(queue: string, budget: Budget, ctx: RunContext): Promise<GroupRecord[]> {
    let groups = ctx.groups.get(queue);
    if (!groups) {
      budget.left--;
      groups = [...(await this.deps.groups.list(queue, { fresh: true })).groups].sort((a, b) =>
        a.group < b.group ? -1 : a.group > b.group ? 1 : 0,
      );
      ctx.groups.set(queue, groups);
    }
    return groups;
  }

  /**
   * Deletes every item under `pk`, a page at a time while the budget lasts (`extra` adds writes
   * for each page: blobs, related items). Returns `next` when items may remain.
   */
  private async drain(
    table: TableName,
    pk: string,
    budget: Budget,
    extra?: (items: Item[]) => Promise<WriteOp[]> | WriteOp[],
  ): Promise<{ found: number; next?: string | undefined }> {
    let found = 0;
    while (budget.left > 0) {
      budget.left--;
      const page = await this.deps.storage.items.query(table, pk, { limit: PAGE });
      if (page.items.length === 0) return { found };
      const more = extra ? await extra(page.items) : [];
      await this.deps.storage.items.writeEach([
        ...page.items.map((it): WriteOp => ({ op: 'delete', table, key: { pk: it.pk, sk: it.sk } })),
        ...more,
      ]);
      found += page.items.length;
      if (page.next === undefined) return { found };
    }
    return { found, next: '' };
  }
}
