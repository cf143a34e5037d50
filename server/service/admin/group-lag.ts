/**
 * Every consumer group on every queue, both designs side by side: partition-lease groups from
 * their cursors (`LeaseGroupAdmin.lagOf`), record-claim groups from their positions on each
 * partition. One row per (group, queue) with per-partition detail, which the consumer-group
 * routes turn into Queen's shapes and `/metrics` into lag gauges.
 *
 * Cost: O(groups × partitions) reads (a cursor or position, the partition's tail, and the
 * segment holding the oldest unfinished message when there is lag); nothing is scanned.
 *
 * @example
 * ```ts
 * for (const row of await groupLag.rows((q) => true)) console.log(row.group, row.queue, row.lagMessages);
 * ```
 */
import { laneLag } from '../../core/leases.js';
import { MAX_GET_MANY, type Storage } from '../../storage/port.js';
import { claimKeys, decodeState } from '../claims/claim-store.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import type { GroupKind, GroupRecord, Subscription } from '../groups/group-store.js';
import type { LeaseGroupAdmin } from '../leases/lease-groups.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { SegmentReader } from '../log/segments.js';
import { mapBounded } from '../../core/map-bounded.js';
import type { Visible } from './queue-stats.js';

export interface PartitionLagRow {
  partition: string;
  partitionId: string;
  /** Whether the group has a position here (a lease cursor, a claim position). */
  read: boolean;
  /** Next offset to be written. */
  next: number;
  lagMessages: number;
  /** Age (s) of the oldest message the group has not finished here; 0 without lag. */
  lagSeconds: number;
  /** Push time of that message (epoch ms), null without lag. */
  oldestUnfinishedAt: number | null;
  /** A live lease (lease groups) or records handed out (claim groups). */
  busy: boolean;
}

export interface GroupQueueRow {
  group: string;
  queue: string;
  kind: GroupKind;
  subscription: Subscription;
  createdAt: number;
  partitions: PartitionLagRow[];
  lagMessages: number;
  lagSeconds: number;
  /** Partitions where the group has a position. */
  members: number;
  partitionsWithLag: number;
  /** Whether it finished anything yet (Queen's `Stable` versus `Dead`). */
  everConsumed: boolean;
}

export interface GroupLagDeps {
  storage: Storage;
  queues: QueueDirectory;
  segments: SegmentReader;
  groups: GroupRegistry;
  leaseGroups: LeaseGroupAdmin;
  clock: () => number;
}

export class GroupLag {
  constructor(private readonly deps: GroupLagDeps) {}

  /** One row per (group, queue) the caller may see, ordered by group then queue. */
  async rows(visible: Visible): Promise<GroupQueueRow[]> {
    const names = await this.deps.groups.allGroups();
    // 4 groups, then 4 registrations, at once; each registration reads 8 partitions at once below.
    const regs = (
      await mapBounded(names, 4, async (g) => {
        const queues = (await this.deps.groups.queuesOf(g)).filter(visible);
        return Promise.all(queues.map((q) => this.deps.groups.get(q, g)));
      })
    )
      .flat()
      .filter((r): r is GroupRecord => r !== undefined);
    const rows = await mapBounded(regs, 4, (reg) => this.rowOf(reg));
    return rows.sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : a.queue < b.queue ? -1 : 1));
  }

  /** The row of one registration. */
  rowOf(reg: GroupRecord): Promise<GroupQueueRow> {
    return reg.kind === 'lease' ? this.leaseRow(reg) : this.claimRow(reg);
  }

  private async leaseRow(reg: GroupRecord): Promise<GroupQueueRow> {
    const now = this.deps.clock();
    const lag = await this.deps.leaseGroups.lagOf(reg, true);
    const partitions = (lag.detail ?? []).map((d): PartitionLagRow => ({
      partition: d.partition,
      partitionId: d.partitionId,
      read: d.committed !== null,
      next: d.next,
      lagMessages: d.lagMessages,
      lagSeconds: d.lagSeconds,
      oldestUnfinishedAt: d.lagMessages > 0 ? now - d.lagSeconds * 1000 : null,
      busy: d.leaseExpiresAt !== null,
    }));
    const everConsumed = (lag.detail ?? []).some((d) => d.committed !== null && d.committed >= 0);
    return summarise(reg, partitions, everConsumed);
  }

  private async claimRow(reg: GroupRecord): Promise<GroupQueueRow> {
    const now = this.deps.clock();
    const parts = await this.deps.queues.listPartitions(reg.queue);
    const states: (ReturnType<typeof decodeState>['state'] | undefined)[] = [];
    for (let i = 0; i < parts.length; i += MAX_GET_MANY) {
      const items = await this.deps.storage.items.getMany(
        'claims',
        parts.slice(i, i + MAX_GET_MANY).map((p) => claimKeys.state(p.id, reg.group)),
      );
      states.push(...items.map((it) => (it ? decodeState(it).state : undefined)));
    }
    const partitions = await mapBounded(parts, 8, async (p): Promise<PartitionLagRow> => {
      const s = states[parts.indexOf(p)];
      const tail = await this.deps.segments.readTail(p.id);
      // A partition the group has not polled yet: its first poll starts at the oldest record.
      const from = s ? s.committed : await this.deps.segments.readHead(p.id);
      let oldest: { base: number; at: number } | undefined;
      if (tail.next > from) {
        const holding = await this.deps.segments.segmentAt(p.id, from);
        oldest =
          holding && holding.end >= from ? holding : (await this.deps.segments.segmentPage(p.id, from, 1)).segs[0];
      }
      const { lagMessages, lagSeconds } = laneLag({ committed: from - 1, next: tail.next, oldest, now });
      return {
        partition: p.name,
        partitionId: p.id,
        read: s !== undefined,
        next: tail.next,
        lagMessages,
        lagSeconds,
        oldestUnfinishedAt: lagMessages > 0 && oldest ? oldest.at : null,
        busy: s !== undefined && s.frontier > s.committed,
      };
    });
    const everConsumed = states.some((s) => s !== undefined && s.committed > 0);
    return summarise(reg, partitions, everConsumed);
  }
}

function summarise(reg: GroupRecord, partitions: PartitionLagRow[], everConsumed: boolean): GroupQueueRow {
  return {
    group: reg.group,
    queue: reg.queue,
    kind: reg.kind,
    subscription: reg.subscription,
    createdAt: reg.createdAt,
    partitions,
    lagMessages: partitions.reduce((n, p) => n + p.lagMessages, 0),
    lagSeconds: partitions.reduce((n, p) => Math.max(n, p.lagSeconds), 0),
    members: partitions.filter((p) => p.read).length,
    partitionsWithLag: partitions.filter((p) => p.lagMessages > 0).length,
    everConsumed,
  };
}
