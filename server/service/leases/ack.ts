/**
 * Partition-lease acks and lease extends over the storage port (docs/LEASES.md, "Ack: an
 * offset commit, decided by the lowest explicit signal"). An ack reads the lane's row, asks
 * `core/leases.ts` for the plan and writes it with ONE version-guarded write, or one
 * transaction when a dead letter is filed with it: a get and a put in steady state — 2.
 */
import type { AckItem, AckPlan, AckStatus } from '../../core/leases.js';
import {
  decodeLeaseId,
  emptyCursor,
  ERR_NOT_FOUND,
  fingerprint,
  FP_CHARS,
  isLive,
  planAck,
  planExtend,
} from '../../core/leases.js';
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import { ConditionFailedError, ContentionError, type Item, type Storage, type WriteOp } from '../../storage/port.js';
import type { PartitionRef } from '../log/log-store.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { SegmentReader, StoredMessage } from '../log/segments.js';
import type { Notifier } from '../notifier.js';
import type { Telemetry } from '../telemetry.js';
import type { DlqService } from './dlq-service.js';
import { cursorItem, decodeCursor, leaseKeys, replacedCursor } from './lease-store.js';

export interface AckRequestItem {
  index: number;
  partitionId: string;
  transactionId: string;
  status: AckStatus;
  error?: string | null | undefined;
  leaseId?: string | null | undefined;
}

export interface AckResult {
  index: number;
  transactionId: string;
  success: boolean;
  error: string | null;
  queueName: string | null;
  partitionName: string | null;
  leaseReleased: boolean;
  dlq: boolean;
}

export interface ExtendResult {
  leaseId: string;
  success: boolean;
  renewed: number;
  /** Earliest expiry among the renewed rows (epoch ms), null when none. */
  expiresAt: number | null;
}

/** A prepared ack on one lane: the plan and the ops that apply it atomically. */
export interface LanePrep {
  part: PartitionRef;
  group: string;
  plan: AckPlan;
  ops: WriteOp[];
}

export interface AckServiceDeps {
  storage: Storage;
  queues: QueueDirectory;
  /** Reads the message a dead letter files, and spans whose fingerprints are ambiguous. */
  segments: SegmentReader;
  dlq: DlqService;
  notifier: Notifier;
  telemetry: Telemetry;
  clock: () => number;
}

/**
 * Acks (per (partition, group) lane: one plan, one write) and lease extends.
 *
 * @example
 * ```ts
 * await acks.ack(r.messages.map((m, index) => ({ index, partitionId: m.partitionId, transactionId: m.transactionId, status: 'completed' })), 'billing');
 * await acks.extend(r.leaseId, 60);
 * ```
 */
export class AckService {
  constructor(private readonly deps: AckServiceDeps) {}

  /**
   * Acks, grouped per (partition, group) lane: each lane is one plan and one write (a
   * transaction when a dead letter is filed with it). Results come back in input order.
   */
  async ack(items: readonly AckRequestItem[], group: string): Promise<AckResult[]> {
    const results: AckResult[] = items.map((it) => ({
      index: it.index,
      transactionId: it.transactionId,
      success: false,
      error: ERR_NOT_FOUND,
      queueName: null,
      partitionName: null,
      leaseReleased: false,
      dlq: false,
    }));
    const lanes = new Map<string, number[]>();
    items.forEach((it, i) => lanes.set(it.partitionId, [...(lanes.get(it.partitionId) ?? []), i]));
    await Promise.all(
      [...lanes.entries()].map(async ([pid, idx]) => {
        const part = await this.deps.queues.partitionById(pid);
        if (!part) return;
        const laneItems = idx.map((i) => items[i] as AckRequestItem);
        for (let attempt = 0; ; attempt++) {
          const prep = await this.prepareLane(part, group, laneItems, 'ack');
          try {
            await this.applyOps(prep.ops);
          } catch (e) {
            if ((e instanceof ConditionFailedError || e instanceof ContentionError) && attempt < 20) continue; // the row moved (pop, extend): plan again
            throw e;
          }
          this.afterLane(prep);
          prep.plan.results.forEach((r, j) => {
            const i = idx[j] as number;
            results[i] = {
              index: (items[i] as AckRequestItem).index,
              transactionId: (items[i] as AckRequestItem).transactionId,
              success: r.success,
              error: r.error,
              queueName: part.queue,
              partitionName: part.name,
              leaseReleased: r.leaseReleased,
              dlq: r.dlq,
            };
          });
          return;
        }
      }),
    );
    this.deps.telemetry.count('Acks', items.length);
    return results;
  }

  /** Reads a lane and plans an ack on it, returning the ops that apply it (not written). */
  async prepareLane(
    part: PartitionRef,
    group: string,
    items: readonly Omit<AckRequestItem, 'partitionId'>[],
    mode: 'ack' | 'transaction',
  ): Promise<LanePrep> {
    const now = this.deps.clock();
    const row = await this.deps.storage.items.get('leases', leaseKeys.cursor(part.id, group));
    const state = row ? decodeCursor(row) : emptyCursor();
    const lease = state.lease;
    const ackItems: AckItem[] = [];
    // Fingerprint -> offsets of the leased span, built once per lane (a batch ack is O(n)).
    const byFp = new Map<string, number[]>();
    if (isLive(lease, now)) {
      for (let i = 0; i + FP_CHARS <= lease.fp.length; i += FP_CHARS) {
        const f = lease.fp.slice(i, i + FP_CHARS);
        const offs = byFp.get(f);
        if (offs) offs.push(lease.start + i / FP_CHARS);
        else byFp.set(f, [lease.start + i / FP_CHARS]);
      }
    }
    for (let j = 0; j < items.length; j++) {
      const it = items[j] as Omit<AckRequestItem, 'partitionId'>;
      let offset: number | null = null;
      if (isLive(lease, now)) {
        const offs = byFp.get(fingerprint(it.transactionId)) ?? [];
        if (offs.length === 1) offset = offs[0] as number;
        else if (offs.length > 1) offset = await this.exactOffset(part.id, lease.start, lease.end, it.transactionId);
      }
      ackItems.push({ index: j, offset, status: it.status, error: it.error, leaseId: it.leaseId });
    }
    const plan = planAck(state, ackItems, { now, mode });
    const ops: WriteOp[] = [];
    if (plan.next)
      ops.push({
        op: 'put',
        table: 'leases',
        item: cursorItem(part, group, plan.next, (row?.ver ?? 0) + 1),
        cond: row ? { kind: 'version', ver: row.ver } : { kind: 'absent' },
      });
    if (plan.file) {
      const [found] = await this.deps.segments.readRaw(part.id, plan.file.offset, { maxCount: 1 });
      // A message retention already removed is filed without its payload.
      const msg: StoredMessage =
        found && found.offset === plan.file.offset
          ? found
          : {
              offset: plan.file.offset,
              id: '',
              transactionId: `offset-${plan.file.offset}`,
              traceId: null,
              createdAt: now,
              payload: Buffer.from('null'),
            };
      ops.push(
        ...(await this.deps.dlq.filingOps({
          part,
          group,
          msg,
          error: plan.file.error,
          retryCount: plan.file.retryCount,
          now,
        })),
      );
    }
    return { part, group, plan, ops };
  }

  /** Where a transactionId sits in a leased span when fingerprints alone are ambiguous. */
  private async exactOffset(pid: string, start: number, end: number, transactionId: string): Promise<number | null> {
    const msgs = await this.deps.segments.readRaw(pid, start, { maxCount: end - start + 1 });
    return msgs.find((m) => m.transactionId === transactionId)?.offset ?? null;
  }

  private async applyOps(ops: WriteOp[]): Promise<void> {
    if (ops.length === 0) return;
    const only = ops[0];
    if (ops.length === 1 && only?.op === 'put') await this.deps.storage.items.put(only.table, only.item, only.cond);
    else await this.deps.storage.items.transact(ops);
  }

  /** Telemetry and wake-ups after a lane's ops were written. */
  afterLane(prep: LanePrep): void {
    const { plan, part } = prep;
    if (plan.outcome === 'dead-lettered') this.deps.telemetry.count('DeadLettered');
    if (plan.outcome === 'dropped') this.deps.telemetry.count('MessagesDropped');
    // A released lease with work left: parked long polls get it at once.
    if (plan.outcome !== 'none' && plan.outcome !== 'partial') this.deps.notifier.notify(part.queue, part.id);
  }

  /**
   * Renews every live lease held by `leaseId` (every partition of a multi-partition pop):
   * never shortens, never revives an expired one. The id names its rows, so this is one
   * getMany and one guarded put per renewed row.
   */
  async extend(leaseId: string, seconds: number): Promise<ExtendResult> {
    const ref = decodeLeaseId(leaseId, QUEUE_MODE_GROUP);
    if (!ref) return { leaseId, success: false, renewed: 0, expiresAt: null };
    let renewed = 0;
    let earliest: number | null = null;
    let pending = ref.partitionIds;
    for (let attempt = 0; pending.length > 0 && attempt < 10; attempt++) {
      const now = this.deps.clock();
      const rows = await this.deps.storage.items.getMany(
        'leases',
        pending.map((p) => leaseKeys.cursor(p, ref.group)),
      );
      const writes: { pid: string; item: Item; cond: { kind: 'version'; ver: number }; exp: number }[] = [];
      rows.forEach((row, i) => {
        if (!row) return;
        const plan = planExtend(decodeCursor(row), leaseId, now, seconds);
        if (!plan.renewed) return;
        writes.push({
          pid: pending[i] as string,
          item: replacedCursor(row, plan.next),
          cond: { kind: 'version', ver: row.ver },
          exp: plan.exp,
        });
      });
      if (writes.length === 0) break;
      const res = await this.deps.storage.items.writeEach(
        writes.map((w) => ({ op: 'put' as const, table: 'leases' as const, item: w.item, cond: w.cond })),
      );
      const retry: string[] = [];
      res.forEach((r, i) => {
        const w = writes[i] as (typeof writes)[number];
        if (r.ok) {
          renewed++;
          earliest = earliest === null ? w.exp : Math.min(earliest, w.exp);
        } else retry.push(w.pid);
      });
      pending = retry;
    }
    if (renewed > 0) this.deps.telemetry.count('LeaseExtends', renewed);
    return { leaseId, success: renewed > 0, renewed, expiresAt: earliest };
  }
}
