/**
 * The work-index repair pass (docs/STORAGE.md, "The work index"), run by `runMaintenance` on
 * every pass: it finds partitions whose sequencer has the has-work flag `w` set but that no
 * work item names, and marks them, so wildcard pops see them again.
 *
 * - Why: on AWS a push's take (one UpdateItem on the sequencer: its offsets, and `w` set) and
 *   its commit (the segment, and the work item when the take found `w` unset) are two
 *   requests. A process that dies between them leaves `w` set and no item; later pushes find
 *   `w` set and write none, so wildcard pops skip the partition until something marks it. On
 *   the embedded backend both are one transaction and the pass only ever reads.
 * - Walk: the queue index (100 names a query), each queue's partition name items (100 a
 *   query), the sequencers of up to 100 partitions per `getMany`, then, for those with `w` set
 *   only, their queue's record (once per queue and pass) and their work items (one `getMany`).
 *   A flagged partition with no item is marked with `WorkIndex.mark`, the same guarded put
 *   seeks and registration scans use (plus the queue's selector items).
 * - Budget: {@link REQUESTS_PER_PASS} requests a pass; a sweep that needs more goes on in the
 *   next pass from where this one stopped, its position in `leases` `WREPAIR` / `SEED`
 *   (version-guarded, so a pass that ran past its maintenance lease cannot rewind the one that
 *   took over). Within the budget every pass sweeps everything: a hidden partition is found
 *   within one maintenance interval.
 * - Races. The pass writes work items (put-if-absent, or over an item a mark wrote meanwhile a
 *   version bump) and never the flag, and every removal of a work item is a clear that sets
 *   `w` unset in the same transaction, guarded by the sequencer's version. So the pass can
 *   never produce "`w` set, no item"; at worst it writes an item nothing needed, which the next
 *   wildcard pop that finds the partition drained clears (`w` unset, item gone) like any other.
 *   With a concurrent push: one whose take found `w` set writes no item, and the pass's item
 *   covers its messages; one still between its take and its commit (alive) is found as hidden
 *   too, and its commit's unconditional put of the item lands over the pass's: one spare write.
 *   With a concurrent clear: the pass reads the sequencer before the item, so a clear landing
 *   between the reads (item gone, `w` unset) makes the pass write a spare item; a clear that
 *   read the item before the pass wrote it fails on the item's version or succeeds only when
 *   the sequencer is unchanged since its reads, i.e. every group is past the end and no push
 *   came: either way the state it leaves is right.
 *
 * @example
 * ```ts
 * const r = await svc.workRepair.run(svc.clock()); // { partitions: 120, repaired: 1, complete: true }
 * ```
 */
import { afterPass, hiddenWork, NO_SWEEP, type SweepCursor } from '../../core/work-repair.js';
import { ConditionFailedError, MAX_GET_MANY, type Storage } from '../../storage/port.js';
import { decodeSweepState, leaseKeys, sweepStateItem } from '../leases/lease-store.js';
import { WORK_FLAG, type WorkIndex } from '../leases/work-index.js';
import { PARTITION_PREFIX, logKeys, partitionRefOf, type PartitionRef, type QueueRecord } from '../log/log-store.js';
import { belongsTo, type QueueDirectory } from '../log/queue-directory.js';
import type { Telemetry } from '../telemetry.js';

/**
 * Storage requests one pass spends at most on the sweep: about 15 s of DynamoDB round trips,
 * far inside the maintenance lease and the function's 5-minute timeout. Covers ~100,000
 * partitions of big queues, or ~2,800 single-partition queues, per pass.
 */
export const REQUESTS_PER_PASS = 3_000;
/** Queue names or partition name items read per query (one `getMany` of sequencers holds 100). */
const PAGE = 100;

/** Where a pass stopped in its sweep. */
type SweepStop = Pick<SweepCursor, 'queue' | 'after'>;

export interface WorkRepairReport {
  /** Partitions whose sequencer this pass read. */
  partitions: number;
  /** Hidden partitions found and marked. */
  repaired: number;
  /** The sweep reached the last queue (false: the next pass goes on from where this one stopped). */
  complete: boolean;
}

export interface WorkRepairDeps {
  storage: Storage;
  queues: QueueDirectory;
  work: WorkIndex;
  telemetry?: Telemetry | undefined;
  /** The pass's budget in requests ({@link REQUESTS_PER_PASS} unless given). */
  requestsPerPass?: number | undefined;
}

/**
 * The repair pass (see the module doc).
 *
 * @example
 * ```ts
 * const repair = new WorkRepair({ storage, queues, work, telemetry });
 * const { repaired } = await repair.run(Date.now());
 * ```
 */
export class WorkRepair {
  constructor(private readonly deps: WorkRepairDeps) {}

  /** One pass: sweeps on from the stored position until done or out of budget, and stores where it got. */
  async run(now: number): Promise<WorkRepairReport> {
    const items = this.deps.storage.items;
    const stored = await items.get('leases', leaseKeys.workRepair());
    const prev = stored ? decodeSweepState(stored) : NO_SWEEP;
    const report: WorkRepairReport = { partitions: 0, repaired: 0, complete: false };
    const owners = new Map<string, QueueRecord | undefined>();
    const pending: PartitionRef[] = [];
    const budget = this.deps.requestsPerPass ?? REQUESTS_PER_PASS;
    let spent = 1;
    const flush = async (): Promise<void> => {
      if (pending.length > 0) spent += await this.check(pending.splice(0), owners, report);
    };
    /** Sweeps one queue's partitions after `from`: where it stopped when the budget ran out, else null. */
    const sweepQueue = async (queue: string, from: string | null): Promise<SweepStop | null> => {
      let after = from ?? undefined;
      for (;;) {
        if (spent >= budget) return { queue, after: after ?? null };
        const page = await items.query('meta', logKeys.queue(queue).pk, {
          prefix: PARTITION_PREFIX,
          after,
          limit: PAGE,
        });
        spent++;
        for (const it of page.items) {
          pending.push(partitionRefOf(it));
          if (pending.length >= MAX_GET_MANY) await flush();
        }
        after = page.items[page.items.length - 1]?.sk ?? after;
        if (page.next === undefined) return null;
      }
    };
    let stop = prev.cursor ? await sweepQueue(prev.cursor.queue, prev.cursor.after) : null;
    // Name pages are not gated: each is followed by at least one gated partition query.
    for (let namesAfter = prev.cursor?.queue; stop === null;) {
      const page = await this.deps.queues.queueNames(namesAfter, PAGE);
      spent++;
      for (const name of page.names) if ((stop = await sweepQueue(name, null))) break;
      if (page.next === undefined) break;
      namesAfter = page.next;
    }
    await flush();
    const next = afterPass(prev, now, stop);
    report.complete = next.cursor === null;
    try {
      await items.put(
        'leases',
        sweepStateItem(next, (stored?.ver ?? 0) + 1),
        stored ? { kind: 'version', ver: stored.ver } : { kind: 'absent' },
      );
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e; // a pass that took the lease over moved it: its position stands
    }
    return report;
  }

  /**
   * Checks a batch of partitions (at most {@link MAX_GET_MANY}) and marks the hidden ones.
   * Answers the requests it made. The sequencers are read before the work items (see the
   * module doc, "Races").
   */
  private async check(
    refs: PartitionRef[],
    owners: Map<string, QueueRecord | undefined>,
    report: WorkRepairReport,
  ): Promise<number> {
    const items = this.deps.storage.items;
    report.partitions += refs.length;
    const seqs = await items.getMany(
      'log',
      refs.map((r) => logKeys.sequencer(r.id)),
    );
    let spent = 1;
    const flagged: { ref: PartitionRef; flag: unknown }[] = [];
    refs.forEach((ref, i) => {
      const flag = seqs[i]?.attrs[WORK_FLAG];
      if (flag === true) flagged.push({ ref, flag });
    });
    if (flagged.length === 0) return spent;
    for (const name of new Set(flagged.map((f) => f.ref.queue)))
      if (!owners.has(name)) {
        // Fresh: the incarnation decides which work index the item belongs in.
        owners.set(name, await this.deps.queues.getQueue(name, { fresh: true }));
        spent++;
      }
    // A partition of a deleted incarnation, not retired yet: no pop reads its index any more.
    const live = flagged.flatMap((f) => {
      const q = owners.get(f.ref.queue);
      return q && belongsTo(f.ref, q) ? [{ ...f, queue: q }] : [];
    });
    if (live.length === 0) return spent;
    const works = await items.getMany(
      'leases',
      live.map((f) => leaseKeys.work(f.queue.queueId, f.ref.id)),
    );
    spent++;
    for (const [i, f] of live.entries()) {
      if (!hiddenWork(f.flag, works[i] !== undefined)) continue;
      await this.deps.work.mark(f.queue, f.ref.id);
      spent += 2;
      report.repaired++;
      this.deps.telemetry?.warn('work index repaired: a partition had its has-work flag set and no work item', {
        queue: f.queue.name,
        partition: f.ref.name,
        partitionId: f.ref.id,
      });
    }
    return spent;
  }
}
