/**
 * Lease-group administration (docs/LEASES.md, "Consumer groups and subscriptions"): lag views,
 * delete (cursors, scan watermark and optionally the registration), the
 * subscription start time, seeks, and per-message group progress.
 *
 * These are admin paths: they walk a queue's partitions (O(partitions) requests), unlike
 * pop and ack.
 */
import { SluiceError, conflict, notFound } from '../../core/errors.js';
import { emptyCursor, isLive, laneLag, messageProgress, type CursorState } from '../../core/leases.js';
import { mapBounded } from '../../core/map-bounded.js';
import type { Storage } from '../../storage/port.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import type { GroupRecord } from '../groups/group-store.js';
import { cursorRows, decodeCursor, leaseKeys, putCursor } from './lease-store.js';
import type { WorkIndex } from './work-index.js';
import type { PartitionRef } from '../log/log-store.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import { firstCommittedAfter } from '../log/seek-by-time.js';
import type { SegmentReader } from '../log/segments.js';
import type { Notifier } from '../notifier.js';

/**
 * The queues an admin call covers: a caller's view when it may not see every queue (the
 * handlers pass what its grants let it see), so a group elsewhere is neither shown nor touched.
 */
export type QueueScope = (queue: string) => boolean;
const everyQueue: QueueScope = () => true;

export interface PartitionLag {
  partition: string;
  partitionId: string;
  /** Last completed offset (-1: none); null when the group has not read this partition yet. */
  committed: number | null;
  /** Next offset to be written. */
  next: number;
  lagMessages: number;
  lagSeconds: number;
  /** ISO time the live lease lapses, null when none. */
  leaseExpiresAt: number | null;
  retryCount: number;
  redeliveries: number;
}

export interface QueueLag {
  queue: string;
  subscription: GroupRecord['subscription'];
  partitions: number;
  lagMessages: number;
  /** Age of the oldest message the group has not completed, in seconds. */
  lagSeconds: number;
  leased: number;
  detail?: PartitionLag[];
}

export interface GroupView {
  name: string;
  queues: QueueLag[];
  lagMessages: number;
  maxLagSeconds: number;
}

export interface LeaseGroupAdminDeps {
  storage: Storage;
  queues: QueueDirectory;
  segments: SegmentReader;
  groups: GroupRegistry;
  work: WorkIndex;
  notifier: Notifier;
  clock: () => number;
}

/**
 * Lease-group administration: lag views, delete, subscription, seek and per-message progress.
 *
 * @example
 * ```ts
 * const view = await leaseGroups.describe('billing'); // lag per queue, with per-partition detail
 * await leaseGroups.seek('billing', 'orders', { toEnd: true });
 * ```
 */
export class LeaseGroupAdmin {
  constructor(private readonly deps: LeaseGroupAdminDeps) {}

  /** Lag of one lease group on one queue. */
  async lagOf(reg: GroupRecord, withDetail: boolean): Promise<QueueLag> {
    const now = this.deps.clock();
    const parts = await this.deps.queues.listPartitions(reg.queue);
    const rows = await cursorRows(
      this.deps.storage,
      parts.map((p) => p.id),
      reg.group,
    );
    const detail = await mapBounded(parts, 16, async (p): Promise<PartitionLag> => {
      const i = parts.indexOf(p);
      const row = rows[i];
      const st = row ? decodeCursor(row) : undefined;
      const tail = await this.deps.segments.readTail(p.id);
      // A lane never read: `all` owes everything retained; `new`/`from` count from the tail (approximate).
      const committed = st ? st.committed : reg.subscription.mode === 'all' ? -1 : tail.next - 1;
      let oldest: { base: number; at: number } | undefined;
      if (tail.next - 1 > committed) {
        // The segment holding the next wanted offset, or (retention removed it) the first one after.
        const holding = await this.deps.segments.segmentAt(p.id, committed + 1);
        oldest =
          holding && holding.end >= committed + 1
            ? holding
            : (await this.deps.segments.segmentPage(p.id, committed + 1, 1)).segs[0];
      }
      const { lagMessages, lagSeconds } = laneLag({ committed, next: tail.next, oldest, now });
      return {
        partition: p.name,
        partitionId: p.id,
        committed: st ? st.committed : null,
        next: tail.next,
        lagMessages,
        lagSeconds,
        leaseExpiresAt: st && isLive(st.lease, now) ? st.lease.exp : null,
        retryCount: st?.retry ?? 0,
        redeliveries: st?.redeliveries ?? 0,
      };
    });
    return {
      queue: reg.queue,
      subscription: reg.subscription,
      partitions: parts.length,
      lagMessages: detail.reduce((n, d) => n + d.lagMessages, 0),
      lagSeconds: detail.reduce((n, d) => Math.max(n, d.lagSeconds), 0),
      leased: detail.filter((d) => d.leaseExpiresAt !== null).length,
      ...(withDetail ? { detail } : {}),
    };
  }

  /**
   * The lease registrations of a group (claim groups are left to their own routes), on the
   * queues `among` admits.
   */
  private async registrations(group: string, among: QueueScope = everyQueue): Promise<GroupRecord[]> {
    const out: GroupRecord[] = [];
    for (const q of await this.deps.groups.queuesOf(group)) {
      if (!among(q)) continue;
      const reg = await this.deps.groups.get(q, group);
      if (reg?.kind === 'lease') out.push(reg);
    }
    return out;
  }

  /**
   * A group's lag on every queue it consumes that `among` admits: a group on no such queue is
   * answered as one that does not exist (a caller learns nothing of queues it may not see).
   */
  async describe(group: string, withDetail = true, among: QueueScope = everyQueue): Promise<GroupView> {
    const regs = await this.registrations(group, among);
    if (regs.length === 0)
      throw notFound(`no consumer group ${JSON.stringify(group)} consumes any queue by partition leases`);
    const queues = await mapBounded(regs, 4, (r) => this.lagOf(r, withDetail));
    return {
      name: group,
      queues,
      lagMessages: queues.reduce((n, q) => n + q.lagMessages, 0),
      maxLagSeconds: queues.reduce((n, q) => Math.max(n, q.lagSeconds), 0),
    };
  }

  /** Every lease group with its per-queue lag. */
  async list(): Promise<GroupView[]> {
    const names = await this.deps.groups.allGroups();
    const views = await mapBounded(names, 4, async (g) => {
      try {
        return await this.describe(g, false);
      } catch (e) {
        if (e instanceof SluiceError && e.code === 'not_found') return undefined;
        throw e;
      }
    });
    return views.filter((v): v is GroupView => v !== undefined);
  }

  /** Groups with a queue whose oldest unfinished message is at least `minLagSeconds` old. */
  async lagging(minLagSeconds: number): Promise<GroupView[]> {
    return (await this.list()).filter((g) => g.queues.some((q) => q.lagMessages > 0 && q.lagSeconds >= minLagSeconds));
  }

  /**
   * Deletes a group's cursors (every partition) and scan watermark, on every
   * queue (that `among` admits) or on one; with `deleteMetadata` also its registration, so the
   * name starts over with a new subscription.
   */
  async delete(
    group: string,
    opts: { queue?: string | undefined; deleteMetadata: boolean; among?: QueueScope | undefined },
  ): Promise<{ deletedPartitions: number; metadataDeleted: boolean }> {
    const among = opts.among ?? everyQueue;
    const queues = opts.queue !== undefined ? [opts.queue] : (await this.deps.groups.queuesOf(group)).filter(among);
    let deletedPartitions = 0;
    let metadataDeleted = false;
    for (const q of queues) {
      const reg = await this.deps.groups.get(q, group);
      if (reg?.kind === 'claim') {
        if (opts.queue !== undefined)
          throw conflict(
            `consumer group ${JSON.stringify(group)} on ${q} consumes by record claims; delete it under /api/v1/groups`,
          );
        continue;
      }
      const parts = await this.deps.queues.listPartitions(q);
      const rows = await cursorRows(
        this.deps.storage,
        parts.map((p) => p.id),
        group,
      );
      const present = parts.filter((_, i) => rows[i] !== undefined);
      for (let i = 0; i < present.length; i += 25) {
        await this.deps.storage.items.writeEach(
          present
            .slice(i, i + 25)
            .map((p) => ({ op: 'delete' as const, table: 'leases' as const, key: leaseKeys.cursor(p.id, group) })),
        );
      }
      deletedPartitions += present.length;
      await this.deps.work.purge(q, group);
      if (opts.deleteMetadata && reg && (await this.deps.groups.remove(q, group))) metadataDeleted = true;
      // Kept registration: the group starts over from its stored subscription, so the
      // partitions holding data must be found again by its wildcard pops.
      else if (reg && !opts.deleteMetadata) await this.deps.work.requestRescan(reg);
      // Last: a preparation that ran before the registration went would count otherwise.
      await this.deps.work.resetSelectors(q, group);
      this.deps.groups.forget(q, group);
    }
    return { deletedPartitions, metadataDeleted };
  }

  /**
   * Sets the stored start time of a group on every queue it consumes (that `among` admits):
   * partitions it has not read yet start after the last message before `at`; existing cursors
   * stay put.
   */
  async updateSubscription(group: string, at: number, among: QueueScope = everyQueue): Promise<number> {
    let n = 0;
    for (const reg of await this.registrations(group, among)) {
      if (await this.deps.groups.updateSubscription(reg.queue, group, { mode: 'from', from: at })) {
        n++;
        // Partitions with messages after `at` must be findable by wildcard pops: re-run the scan.
        await this.deps.storage.items.delete('leases', leaseKeys.scan(reg.queue, group));
        await this.deps.work.resetSelectors(reg.queue, group);
        this.deps.work.forget(reg.queue, group);
      }
    }
    return n;
  }

  /**
   * Moves a group on a queue: to the end (each cursor to its partition's newest message) or
   * to a time (the next delivery is the first message committed after it, docs/STORAGE.md,
   * "Seeking by time"). Releases the group's
   * leases there; acks for them are refused afterwards.
   */
  async seek(group: string, queue: string, to: { toEnd: true } | { timestamp: number }): Promise<number> {
    const q = await this.deps.queues.getQueue(queue);
    if (!q) throw notFound(`no queue ${JSON.stringify(queue)}`);
    await this.deps.groups.register(queue, group, 'lease', { mode: 'all', from: null });
    const parts = await this.deps.queues.listPartitions(queue);
    const done = await mapBounded(parts, 8, async (p: PartitionRef) => {
      const tail = await this.deps.segments.readTail(p.id);
      const target =
        'toEnd' in to ? tail.next - 1 : (await firstCommittedAfter(this.deps.segments, p.id, to.timestamp)) - 1;
      await this.setCursor(p, group, target, tail.next);
      return 1;
    });
    return done.length;
  }

  /**
   * Moves a group on one partition of a queue to the partition's newest message (Queen's
   * "skip to end" of one partition); returns the offset the cursor moved to (-1: the partition
   * is empty). Registers the group as a lease group, as a seek on the queue does.
   */
  async seekPartition(group: string, queue: string, partition: string): Promise<number> {
    const part = await this.deps.queues.getPartition(queue, partition);
    if (!part) throw notFound(`queue ${JSON.stringify(queue)} has no partition ${JSON.stringify(partition)}`);
    await this.deps.groups.register(queue, group, 'lease', { mode: 'all', from: null });
    const tail = await this.deps.segments.readTail(part.id);
    await this.setCursor(part, group, tail.next - 1, tail.next);
    return tail.next - 1;
  }

  /**
   * Moves a group's cursor on one partition (seek): the lease goes, the next delivery is
   * `committed + 1`. The partition is marked as having work when it has messages after the cursor.
   */
  private async setCursor(part: PartitionRef, group: string, committed: number, tailNext: number): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const row = await this.deps.storage.items.get('leases', leaseKeys.cursor(part.id, group));
      const state = row ? decodeCursor(row) : emptyCursor();
      const next: CursorState = {
        ...state,
        committed,
        lease: null,
        retry: 0,
        redeliveries: 0,
        lastStart: null,
        hint: null,
      };
      if (await putCursor(this.deps.storage, part, group, next, row)) {
        if (committed < tailNext - 1) {
          const queue = await this.deps.queues.getQueue(part.queue);
          if (queue) await this.deps.work.mark(queue, part.id);
        }
        this.deps.notifier.notify(part.queue, part.id);
        return;
      }
    }
    throw new SluiceError(
      'unavailable',
      `could not move ${group}'s cursor on ${part.queue}/${part.name}: too contended; retry`,
    );
  }

  /**
   * Per-group progress of one message (`GET /api/v1/messages/{p}/{t}`): for every lease group of its queue,
   * whether its cursor has passed the message and when a lease on it lapses. `completed` once
   * every group has passed it.
   */
  async messageProgress(
    part: PartitionRef,
    offset: number,
  ): Promise<{
    consumerGroups: { name: string; consumed: boolean; leaseExpiresAt: string | null }[];
    status: 'completed' | 'processing' | 'pending';
  }> {
    const now = this.deps.clock();
    const { groups } = await this.deps.groups.list(part.queue);
    const lease = groups.filter((g) => g.kind === 'lease');
    const rows =
      lease.length === 0
        ? []
        : await this.deps.storage.items.getMany(
            'leases',
            lease.map((g) => leaseKeys.cursor(part.id, g.group)),
          );
    const p = messageProgress(
      lease.map((g, i) => ({ group: g.group, state: rows[i] ? decodeCursor(rows[i]) : undefined })),
      offset,
      now,
    );
    return {
      status: p.status,
      consumerGroups: p.consumerGroups.map((g) => ({
        ...g,
        leaseExpiresAt: g.leaseExpiresAt === null ? null : new Date(g.leaseExpiresAt).toISOString(),
      })),
    };
  }
}
