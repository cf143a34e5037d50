/**
 * Queues and partitions as the admin views show them, derived from items Sluice keeps anyway:
 * the queue directory and records (`meta`), each partition's first and last segment items
 * (`log`: stored offsets and push times), the lease cursors on it (`leases`, one query per
 * partition), the record-claim positions (`claims`, one batched read) and the dead-letter list
 * pointers (`dlq`). Nothing here writes, and no request scans a table: a queue costs one query
 * for its partitions plus three reads per partition, so listings page over queues.
 *
 * @example
 * ```ts
 * const page = await stats.listQueues({ visible: (q) => true, limit: 100, offset: 0 });
 * const detail = await stats.queueDetail(page[0]!);
 * ```
 */
import {
  claimLane,
  leaseLane,
  partitionCounters,
  sumCounters,
  type Lane,
  type MessageCounters,
} from '../../core/queue-stats.js';
import { mapBounded } from '../../core/map-bounded.js';
import { MAX_GET_MANY, type Storage } from '../../storage/port.js';
import { claimKeys, decodeState } from '../claims/claim-store.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import { partitionCursors } from '../leases/lease-store.js';
import {
  SEGMENT_PREFIX,
  decodeQueue,
  logKeys,
  segmentAttrsOf,
  type PartitionRef,
  type QueueRecord,
} from '../log/log-store.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { DeadLetterOverview } from './dead-letters.js';

/** Which queues a caller may see (the routes pass what its grants allow). */
export type Visible = (queue: string) => boolean;

export interface PartitionStats {
  ref: PartitionRef;
  /** Stored offsets: `[head, tail)`. */
  head: number;
  tail: number;
  /** Push times (epoch ms) of the oldest and newest stored messages; null when empty. */
  oldestAt: number | null;
  newestAt: number | null;
  counters: MessageCounters;
  /** Every group's position here (lease cursors, claim positions). */
  lanes: Lane[];
  /** Messages the groups finished here, summed over groups (Queen's `cursor.totalConsumed`). */
  consumed: number;
}

export interface QueueStatsView {
  queue: QueueRecord;
  partitions: PartitionStats[];
  totals: MessageCounters;
  /** Whether the dead-letter count stopped at its cap. */
  deadLetterCapped: boolean;
  /** `<partitionId>#<offset>` of each dead letter counted (partition leases). */
  deadOffsets: Set<string>;
}

export interface QueueStatsDeps {
  storage: Storage;
  queues: QueueDirectory;
  groups: GroupRegistry;
  deadLetters: DeadLetterOverview;
  clock: () => number;
}

export class QueueStats {
  constructor(private readonly deps: QueueStatsDeps) {}

  /** The names of the queues a caller may see, in name order (the queue directory, paged). */
  async names(visible: Visible): Promise<string[]> {
    const names: string[] = [];
    let after: string | undefined;
    do {
      const page = await this.deps.queues.queueNames(after, 500);
      names.push(...page.names.filter(visible));
      after = page.next;
    } while (after !== undefined);
    return names;
  }

  /**
   * The queues a caller may see, newest first, filtered by namespace and task, one page of
   * them (`offset`, `limit`). Records are read in batches of 100; a queue deleted between the
   * directory read and the batch read is left out.
   */
  async listQueues(q: {
    visible: Visible;
    namespace?: string | undefined;
    task?: string | undefined;
    limit?: number | undefined;
    offset?: number | undefined;
  }): Promise<QueueRecord[]> {
    const names = await this.names(q.visible);
    const records: QueueRecord[] = [];
    for (let i = 0; i < names.length; i += MAX_GET_MANY) {
      const items = await this.deps.storage.items.getMany(
        'meta',
        names.slice(i, i + MAX_GET_MANY).map((n) => logKeys.queue(n)),
      );
      for (const it of items) if (it) records.push(decodeQueue(it));
    }
    const kept = records
      .filter(
        (r) =>
          (q.namespace === undefined || r.namespace === q.namespace) && (q.task === undefined || r.task === q.task),
      )
      .sort((a, b) => b.createdAt - a.createdAt || (a.name < b.name ? -1 : 1));
    const offset = q.offset ?? 0;
    return kept.slice(offset, q.limit === undefined ? undefined : offset + q.limit);
  }

  /** One queue's record, or undefined when it does not exist. */
  getQueue(name: string): Promise<QueueRecord | undefined> {
    return this.deps.queues.getQueue(name);
  }

  /**
   * A queue with every partition's counters. `withDeadLetters` also counts its dead letters
   * (one query over its dead-letter list, capped), which the listings leave out.
   */
  async queueDetail(queue: QueueRecord, opts: { withDeadLetters?: boolean } = {}): Promise<QueueStatsView> {
    const [parts, { groups }, dead] = await Promise.all([
      this.deps.queues.listPartitions(queue.name),
      this.deps.groups.list(queue.name),
      opts.withDeadLetters
        ? this.deps.deadLetters.countByPartition(queue.name)
        : Promise.resolve({
            total: 0,
            byPartition: new Map<string, number>(),
            offsets: new Set<string>(),
            capped: false,
          }),
    ]);
    const claimGroups = groups.filter((g) => g.kind === 'claim').map((g) => g.group);
    const claimStates = await this.claimStates(parts, claimGroups);
    const now = this.deps.clock();
    // 8 partitions at once, 3 queries each (two bounds, the cursors): a queue with hundreds of
    // partitions does not open a query per partition together.
    const partitions = await mapBounded(parts, 8, async (ref): Promise<PartitionStats> => {
      const [bounds, cursors] = await Promise.all([this.bounds(ref.id), partitionCursors(this.deps.storage, ref.id)]);
      const lanes: Lane[] = cursors.map((c) => leaseLane(c.group, c.state, now));
      let claimDead = 0;
      for (const g of claimGroups) {
        const s = claimStates.get(`${ref.id}\u0000${g}`);
        if (!s) continue;
        lanes.push(claimLane(g, s));
        claimDead += s.dead;
      }
      const counters = partitionCounters({
        head: bounds.head,
        tail: bounds.tail,
        lanes,
        deadLetter: (dead.byPartition.get(ref.id) ?? 0) + claimDead,
      });
      const consumed =
        cursors.reduce((n, c) => n + c.state.completed, 0) +
        lanes.filter((l) => l.kind === 'claim').reduce((n, l) => n + Math.max(0, l.doneBelow - bounds.head), 0);
      return { ref, ...bounds, counters, lanes, consumed };
    });
    return {
      queue,
      partitions,
      totals: sumCounters(partitions.map((p) => p.counters)),
      deadLetterCapped: dead.capped,
      deadOffsets: dead.offsets,
    };
  }

  /** Stored offsets and push times of a partition: its first and last segment items. */
  private async bounds(
    pid: string,
  ): Promise<{ head: number; tail: number; oldestAt: number | null; newestAt: number | null }> {
    const [first, last] = await Promise.all([
      this.deps.storage.items.query('log', pid, { prefix: SEGMENT_PREFIX, limit: 1 }),
      this.deps.storage.items.query('log', pid, { prefix: SEGMENT_PREFIX, reverse: true, limit: 1 }),
    ]);
    const a = first.items[0] ? segmentAttrsOf(first.items[0]) : undefined;
    const b = last.items[0] ? segmentAttrsOf(last.items[0]) : undefined;
    if (!a || !b) return { head: 0, tail: 0, oldestAt: null, newestAt: null };
    return { head: a.base, tail: b.end + 1, oldestAt: a.at, newestAt: b.at };
  }

  /** The record-claim positions of `groups` on `parts` (batched reads of their state items). */
  private async claimStates(
    parts: readonly PartitionRef[],
    groups: readonly string[],
  ): Promise<Map<string, { committed: number; frontier: number; dead: number }>> {
    const keys = parts.flatMap((p) => groups.map((g) => ({ pid: p.id, group: g })));
    const out = new Map<string, { committed: number; frontier: number; dead: number }>();
    for (let i = 0; i < keys.length; i += MAX_GET_MANY) {
      const chunk = keys.slice(i, i + MAX_GET_MANY);
      const items = await this.deps.storage.items.getMany(
        'claims',
        chunk.map((k) => claimKeys.state(k.pid, k.group)),
      );
      items.forEach((it, j) => {
        if (!it) return;
        const { state } = decodeState(it);
        const k = chunk[j]!;
        out.set(`${k.pid}\u0000${k.group}`, { committed: state.committed, frontier: state.frontier, dead: state.dead });
      });
    }
    return out;
  }
}
