/**
 * `POST /api/v1/transaction`: pushes and acks applied atomically, all or nothing, in ONE
 * `storage.items.transact` (at most 100 ops, DynamoDB's TransactWriteItems limit).
 *
 * Each (queue, partition) of the pushes becomes one segment, prepared by the push service
 * exactly as a push would commit it (blob uploaded first, commit hooks' ops included), at
 * offsets taken from the partition's sequencer before the transaction (bounded by the push
 * guards, so `maxSize` holds under concurrency: a take past the bound takes nothing and the
 * transaction is refused `queue_full`, none of it applied); each (partition, group)
 * of the acks becomes one cursor write, planned by the ack service (a transactional `failed`
 * or `dlq` files the message at once, its DLQ items in the same transaction). When a guard
 * fails — the group list moved, a lane's row changed — the affected part is prepared again and
 * the whole set is retried with the same offsets; nothing is ever half-applied. Offsets taken
 * for a transaction that gives up are closed with skips (docs/STORAGE.md, "How a push commits").
 */
import { SluiceError, invalid } from '../core/errors.js';
import { uuidv7 } from '../core/ids.js';
import { parseAckStatus, type AckStatus } from '../core/leases.js';
import { DEFAULT_PARTITION, QUEUE_MODE_GROUP } from '../core/names.js';
import {
  ConditionFailedError,
  ContentionError,
  MAX_TRANSACT_OPS,
  type Storage,
  type Taken,
  type WriteOp,
} from '../storage/port.js';
import type { AckService, LanePrep } from './leases/ack.js';
import type { PushBound, PushItem, PushService } from './log/push.js';
import type { QueueDirectory } from './log/queue-directory.js';
import { logKeys, type PartitionRef, type QueueRecord } from './log/log-store.js';
import { HookConflictError, mergeOps, type PreparedCommit } from './log/segment-commit.js';

export type TxOp =
  | { type: 'push'; items: PushItem[] }
  | {
      type: 'ack';
      transactionId: string;
      partitionId: string;
      status?: unknown;
      consumerGroup?: string | null | undefined;
      error?: string | null | undefined;
    };

export type TxOpResult =
  | {
      index: number;
      type: 'push';
      success: true;
      transactionId: string;
      messageId: string;
      partitionId: string;
      queueName: string;
      messages: {
        transactionId: string;
        messageId: string;
        partitionId: string;
        queueName: string;
        partition: string;
      }[];
    }
  | { index: number; type: 'ack'; success: true; transactionId: string; error: null; dlq: boolean };

export interface TxResult {
  transactionId: string;
  success: boolean;
  error?: string;
  results: TxOpResult[];
}

interface PushGroup {
  items: { op: number; pos: number; item: PushItem }[];
  /** The push guards' bound on the segment's take (maxSize): past it the transaction is refused. */
  bound?: PushBound | undefined;
  prep?: PreparedCommit;
  /** The first of the offsets taken for the segment (undefined: none taken yet). */
  base: number | undefined;
  /** The take that gave `base`, with the sequencer as it found it. */
  taken?: Taken | undefined;
}

interface Lane {
  partitionId: string;
  group: string;
  items: { op: number; transactionId: string; status: AckStatus; error?: string | null | undefined }[];
  prep?: LanePrep;
}

const fail = (transactionId: string, error: string): TxResult => ({
  transactionId,
  success: false,
  error,
  results: [],
});

export interface TransactionServiceDeps {
  storage: Storage;
  queues: QueueDirectory;
  pushes: PushService;
  /** Plans the acks' lanes and wakes pops after they were written. */
  acks: AckService;
  clock: () => number;
}

/**
 * Runs one `POST /api/v1/transaction` (see the module doc).
 *
 * @example
 * ```ts
 * const r = await transactions.run([
 *   { type: 'push', items: [{ queue: 'out', payload: Buffer.from('{}') }] },
 *   { type: 'ack', partitionId, transactionId, status: 'completed', consumerGroup: 'billing' },
 * ]);
 * ```
 */
export class TransactionService {
  constructor(private readonly deps: TransactionServiceDeps) {}

  async run(ops: readonly TxOp[]): Promise<TxResult> {
    const txId = uuidv7(this.deps.clock());
    if (ops.length === 0) throw invalid('operations must not be empty');
    const pushes = new Map<string, PushGroup>();
    const lanes = new Map<string, Lane>();
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as TxOp;
      if (op.type === 'push') {
        op.items.forEach((item, pos) => {
          const k = `${item.queue}\u0000${item.partition ?? 'Default'}`;
          const g = pushes.get(k) ?? { items: [], base: undefined };
          g.items.push({ op: i, pos, item });
          pushes.set(k, g);
        });
      } else {
        const status = parseAckStatus(op.status);
        if (status === undefined || status === 'retry')
          return fail(
            txId,
            `ACK operation failed: status must be completed, success, failed or dlq (got ${JSON.stringify(op.status)})`,
          );
        const group = op.consumerGroup ?? QUEUE_MODE_GROUP;
        const k = `${op.partitionId}\u0000${group}`;
        const lane = lanes.get(k) ?? { partitionId: op.partitionId, group, items: [] };
        lane.items.push({ op: i, transactionId: op.transactionId, status, error: op.error });
        lanes.set(k, lane);
      }
    }

    // Lanes first: a bad ack fails the transaction before anything (a blob) is written.
    const laneError = await this.prepareLanes([...lanes.values()]);
    if (laneError) return fail(txId, laneError);
    const targets = await this.checkPushes([...pushes.values()]);
    for (const { g, queue, part } of targets) {
      g.prep = await this.deps.pushes.prepareCommit(
        queue,
        part,
        g.items.map((x) => x.item),
      );
    }
    try {
      const outcome = await this.commit(pushes, lanes);
      if (outcome !== undefined) {
        await this.closeTaken(pushes);
        return fail(txId, outcome);
      }
    } catch (e) {
      await this.closeTaken(pushes);
      throw e;
    }

    for (const g of pushes.values()) await this.deps.pushes.committed(g.prep as PreparedCommit, g.base as number);
    for (const lane of lanes.values()) this.deps.acks.afterLane(lane.prep as LanePrep);
    return { transactionId: txId, success: true, results: this.results(ops, pushes, lanes) };
  }

  /**
   * Checks every push target (sealing, push guards such as maxSize) before anything is written,
   * as a plain push does: the existing ones first, so a refused transaction has not created
   * another target's queue or partition; then the rest are created and checked.
   */
  private async checkPushes(groups: PushGroup[]): Promise<{ g: PushGroup; queue: QueueRecord; part: PartitionRef }[]> {
    const target = (g: PushGroup): { queue: string; partition: string } => {
      const first = (g.items[0] as PushGroup['items'][number]).item;
      return { queue: first.queue, partition: first.partition ?? DEFAULT_PARTITION };
    };
    const checked = await Promise.all(
      groups.map(async (g) => {
        const t = target(g);
        const part = await this.deps.queues.getPartition(t.queue, t.partition);
        const queue = part && (await this.deps.queues.getQueue(t.queue));
        if (!part || !queue) return false;
        g.bound = await this.deps.pushes.checkPush(queue, part, g.items.length);
        return true;
      }),
    );
    const out: { g: PushGroup; queue: QueueRecord; part: PartitionRef }[] = [];
    for (const [k, g] of groups.entries()) {
      const t = target(g);
      const queue = await this.deps.queues.ensureQueue(t.queue);
      const part = await this.deps.queues.ensurePartition(queue, t.partition);
      if (!checked[k]) g.bound = await this.deps.pushes.checkPush(queue, part, g.items.length);
      out.push({ g, queue, part });
    }
    return out;
  }

  /**
   * Takes a segment's offsets, bounded by its push guards: a take past the bound takes nothing
   * and refuses the transaction (`queue_full`), as it refuses a plain push.
   */
  private async take(g: PushGroup, prep: PreparedCommit): Promise<Taken> {
    try {
      return await this.deps.storage.items.take('log', logKeys.sequencer(prep.partition.id), prep.count, undefined, {
        ...prep.takeOptions(),
        atMost: g.bound?.atMost,
      });
    } catch (e) {
      // Only a bounded take fails with a bare ConditionFailedError: nothing was taken.
      throw g.bound && e instanceof ConditionFailedError ? g.bound.refusal() : e;
    }
  }

  /**
   * Writes the prepared pushes and lanes in one transaction, taking each segment's offsets first;
   * answers the transaction's error when a lane can no longer be applied.
   */
  private async commit(pushes: Map<string, PushGroup>, lanes: Map<string, Lane>): Promise<string | undefined> {
    let hookRetry = false;
    // Bounded segments take first: a refused take then leaves nothing behind when the others
    // are unbounded (offsets already taken for others are closed with skips).
    const order = [...pushes.values()].sort((a, b) => Number(!a.bound) - Number(!b.bound));
    for (let attempt = 0; ; attempt++) {
      if (attempt >= 50)
        throw new SluiceError(
          'unavailable',
          'transaction could not commit: too much contention on its partitions; retry it',
        );
      const writes: WriteOp[] = [];
      const owners: ({ kind: 'seg'; g: PushGroup } | { kind: 'marker' } | { kind: 'hook' } | { kind: 'lane' })[] = [];
      const hookOps: WriteOp[] = [];
      try {
        for (const g of order) {
          const prep = g.prep as PreparedCommit;
          await prep.planHooks(hookRetry);
          g.taken ??= await this.take(g, prep);
          g.base = g.taken.first;
          prep.build(g.taken).forEach((op, j) => {
            if (j >= prep.hookStart) hookOps.push(op);
            else {
              writes.push(op);
              owners.push(j === 0 ? { kind: 'seg', g } : { kind: 'marker' });
            }
          });
        }
      } catch (e) {
        if (!(e instanceof HookConflictError)) throw e;
        hookRetry = true;
        continue;
      }
      const merged = mergeOps(hookOps);
      if (merged === 'conflict') {
        hookRetry = true;
        continue;
      }
      for (const op of merged) {
        writes.push(op);
        owners.push({ kind: 'hook' });
      }
      for (const lane of lanes.values()) {
        for (const op of (lane.prep as LanePrep).ops) {
          writes.push(op);
          owners.push({ kind: 'lane' });
        }
      }
      if (writes.length > MAX_TRANSACT_OPS) {
        throw invalid(
          `this transaction needs ${writes.length} storage writes; the limit is ${MAX_TRANSACT_OPS} ` +
            `(DynamoDB TransactWriteItems): split it, or push to fewer partitions per transaction`,
          { limit: MAX_TRANSACT_OPS },
        );
      }
      try {
        if (writes.length > 0) await this.deps.storage.items.transact(writes);
        return undefined;
      } catch (e) {
        if (e instanceof ContentionError) continue;
        if (!(e instanceof ConditionFailedError)) throw e;
        let lanesMoved = false;
        for (const f of e.failed) {
          const o = owners[f.index];
          if (!o) continue;
          // A reader closed the offsets while this transaction was too slow: take new ones.
          if (o.kind === 'seg') o.g.base = o.g.taken = undefined;
          else if (o.kind === 'hook') hookRetry = true;
          else if (o.kind === 'lane') lanesMoved = true;
          else if (f.current?.attrs.state === 'aborted') {
            // The marker of a large segment is put-if-absent: the orphan-blob sweeper wrote it
            // `aborted` (and deleted the blob) because this transaction stalled past the sweep
            // grace. Nothing was applied; the client may send the whole transaction again.
            throw new SluiceError(
              'unavailable',
              'transaction took too long and was aborted before it committed (its large payload was cleaned up meanwhile); nothing was applied: retry it',
            );
          } else throw e;
        }
        if (lanesMoved) {
          const err = await this.prepareLanes([...lanes.values()]);
          if (err) return err;
        }
      }
    }
  }

  /** Closes the offsets taken for pushes that will not be written (best effort; readers close the rest). */
  private async closeTaken(pushes: Map<string, PushGroup>): Promise<void> {
    for (const g of pushes.values()) await g.prep?.abandon();
    for (const g of pushes.values()) {
      if (g.base === undefined || !g.prep) continue;
      await this.deps.pushes.closeRange(g.prep.partition.id, g.base, g.prep.count, g.prep.at);
      g.base = g.taken = undefined;
    }
  }

  /** Plans every ack lane; returns the first failure as the transaction's error. */
  private async prepareLanes(lanes: Lane[]): Promise<string | undefined> {
    for (const lane of lanes) {
      const part = await this.deps.queues.partitionById(lane.partitionId);
      if (!part) return 'ACK operation failed: Message not found';
      lane.prep = await this.deps.acks.prepareLane(
        part,
        lane.group,
        lane.items.map((it, j) => ({ index: j, transactionId: it.transactionId, status: it.status, error: it.error })),
        'transaction',
      );
      const bad = lane.prep.plan.results.find((r) => !r.success);
      if (bad) return `ACK operation failed: ${bad.error ?? 'unknown error'}`;
    }
    return undefined;
  }

  private results(ops: readonly TxOp[], pushes: Map<string, PushGroup>, lanes: Map<string, Lane>): TxOpResult[] {
    const pushed = new Map<
      number,
      { transactionId: string; messageId: string; partitionId: string; queueName: string; partition: string }[]
    >();
    for (const g of pushes.values()) {
      const prep = g.prep as PreparedCommit;
      g.items.forEach((x, j) => {
        const m = prep.messages[j] as PreparedCommit['messages'][number];
        const list = pushed.get(x.op) ?? [];
        list[x.pos] = {
          transactionId: m.transactionId,
          messageId: m.id,
          partitionId: prep.partition.id,
          queueName: prep.queue.name,
          partition: prep.partition.name,
        };
        pushed.set(x.op, list);
      });
    }
    const acked = new Map<number, { transactionId: string; dlq: boolean }>();
    for (const lane of lanes.values()) {
      lane.items.forEach((it, j) =>
        acked.set(it.op, {
          transactionId: it.transactionId,
          dlq: (lane.prep as LanePrep).plan.results[j]?.dlq ?? false,
        }),
      );
    }
    return ops.map((op, index): TxOpResult => {
      if (op.type === 'push') {
        const msgs = pushed.get(index) ?? [];
        const first = msgs[0];
        return {
          index,
          type: 'push',
          success: true,
          transactionId: first?.transactionId ?? '',
          messageId: first?.messageId ?? '',
          partitionId: first?.partitionId ?? '',
          queueName: first?.queueName ?? '',
          messages: msgs,
        };
      }
      const a = acked.get(index);
      return { index, type: 'ack', success: true, transactionId: op.transactionId, error: null, dlq: a?.dlq ?? false };
    });
  }
}
