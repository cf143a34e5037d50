/**
 * Retention (seed 004), run by `runMaintenance`: for every queue with `retentionEnabled`,
 * whole segments (their blobs and commit markers too) are deleted oldest first by the rules
 * in `core/retention.ts`, and partitions that hold nothing deliverable and have been idle for
 * 30 days are removed with their cursors and READY entries. Dead-letter rows are never
 * touched. Reads filter expired messages themselves, so a late sweep never delivers one.
 *
 * Known limit: another process that cached a removed partition (by name) before its removal
 * would push into the retired partition id; partitions are only removed after 30 idle days,
 * longer than Lambda containers live.
 */
import { QUEUE_MODE_GROUP } from '../core/names.js';
import { consumedFloor, deletableSegments, expiredByRetention, partitionRemovable, retentionWindows, unreadKeepFrom } from '../core/retention.js';
import type { WriteOp } from '../storage/port.js';
import type { GroupRecord, GroupRegistry } from './groups.js';
import { keys } from './keys.js';
import { leaseKeys } from './lease-keys.js';
import { decodeCursor } from './lease-service.js';
import type { LogService, PartitionRef, QueueRecord } from './log-service.js';

export interface RetentionReport {
  queues: number;
  partitions: number;
  segmentsDeleted: number;
  partitionsRemoved: number;
}

export class RetentionService {
  constructor(
    private readonly log: LogService,
    private readonly groups: GroupRegistry,
    private readonly clock: () => number,
  ) {}

  /** One pass over every queue with retention enabled. */
  async run(): Promise<RetentionReport> {
    const report: RetentionReport = { queues: 0, partitions: 0, segmentsDeleted: 0, partitionsRemoved: 0 };
    let after: string | undefined;
    do {
      const page = await this.log.storage.items.query('meta', keys.queueIndex('').pk, { after, limit: 100 });
      for (const it of page.items) {
        const q = await this.log.getQueue(it.sk, { fresh: true });
        if (!q || !q.options.retentionEnabled) continue;
        report.queues++;
        const groups = q.options.completedRetentionSeconds > 0 ? (await this.groups.list(q.name, { fresh: true })).groups : [];
        for (const part of await this.log.listPartitions(q.name)) {
          report.partitions++;
          const r = await this.partition(q, part, groups);
          report.segmentsDeleted += r.segmentsDeleted;
          if (r.removed) report.partitionsRemoved++;
        }
      }
      after = page.next;
    } while (after);
    return report;
  }

  /** Applies retention to one partition; `groups` are the queue's registered groups (read when not given). */
  async partition(q: QueueRecord, part: PartitionRef, groups?: readonly GroupRecord[]): Promise<{ segmentsDeleted: number; removed: boolean }> {
    const storage = this.log.storage;
    const now = this.clock();
    const w = retentionWindows(q.options, now);
    const rows = await storage.items.query('leases', part.id, { limit: 1000 });
    const floor = consumedFloor(rows.items.map((r) => decodeCursor(r).committed));
    // Lease groups registered on the queue without a cursor row here have passed nothing yet.
    const withRow = new Set(rows.items.map((r) => r.sk));
    const registered = groups ?? (w.completedRetentionMs > 0 ? (await this.groups.list(q.name, { fresh: true })).groups : []);
    const keepFrom = unreadKeepFrom(registered.filter((g) => g.kind === 'lease' && !withRow.has(g.group)).map((g) => (g.group === QUEUE_MODE_GROUP ? { mode: 'all' as const, from: null } : g.subscription)));
    let deleted = 0;
    for (let guard = 0; guard < 10_000; guard++) {
      const page = await this.log.segmentPage(part.id, 0, 100);
      const n = deletableSegments(page.segs, w, floor, !page.more, keepFrom);
      const gone = page.segs.slice(0, n);
      for (const s of gone) if (s.blob) await storage.blobs.delete(s.blob);
      const ops: WriteOp[] = gone.flatMap((s) => [
        { op: 'delete' as const, table: 'log' as const, key: keys.segment(part.id, s.base) },
        { op: 'delete' as const, table: 'log' as const, key: keys.marker(part.id, s.push) },
      ]);
      if (ops.length > 0) await storage.items.writeEach(ops);
      deleted += n;
      if (n < page.segs.length || !page.more) break;
    }
    if (deleted > 0) this.log.forgetSegments(part.id);

    const tail = await this.log.segmentAt(part.id, Number.MAX_SAFE_INTEGER);
    const live = tail !== undefined && !expiredByRetention(tail.at, w) && (w.completedRetentionMs === 0 || floor === null || tail.end >= floor || (keepFrom !== null && tail.at >= keepFrom));
    const lastActivityAt = Math.max(part.createdAt, tail?.at ?? 0);
    if (!partitionRemovable({ lastActivityAt, liveMessages: live }, now)) return { segmentsDeleted: deleted, removed: false };
    await this.removePartition(part, rows.items.map((r) => r.sk));
    return { segmentsDeleted: deleted, removed: true };
  }

  /** Removes a partition: its names, every segment, its cursors and READY entries (DLQ rows stay). */
  private async removePartition(part: PartitionRef, groupsWithCursors: string[]): Promise<void> {
    const storage = this.log.storage;
    // Retire the name first: a push from now on creates a new partition (new id, offsets from 0).
    await storage.items.writeEach([
      { op: 'delete', table: 'meta', key: keys.partition(part.queue, part.name) },
      { op: 'delete', table: 'meta', key: keys.partitionById(part.id) },
    ]);
    this.log.forgetPartition(part);
    for (;;) {
      const page = await this.log.segmentPage(part.id, 0, 100);
      if (page.segs.length === 0) break;
      for (const s of page.segs) if (s.blob) await storage.blobs.delete(s.blob);
      await storage.items.writeEach(page.segs.flatMap((s) => [
        { op: 'delete' as const, table: 'log' as const, key: keys.segment(part.id, s.base) },
        { op: 'delete' as const, table: 'log' as const, key: keys.marker(part.id, s.push) },
      ]));
    }
    this.log.forgetSegments(part.id);
    const { groups } = await this.groups.list(part.queue, { fresh: true });
    const names = new Set([...groupsWithCursors, ...groups.filter((g) => g.kind === 'lease').map((g) => g.group)]);
    const ops: WriteOp[] = [];
    for (const g of names) {
      ops.push({ op: 'delete', table: 'leases', key: leaseKeys.cursor(part.id, g) });
      ops.push({ op: 'delete', table: 'leases', key: leaseKeys.ready(part.queue, g, part.id) });
    }
    if (ops.length > 0) await storage.items.writeEach(ops);
  }
}
