/**
 * The partition-lease dead letters seen across queues: counts per partition (from the queue's
 * list pointers, the same items a listing reads) and one listing over several queues, merged
 * newest first. Record claims keep their own dead letters (counted from their positions in
 * `queue-stats.ts`).
 *
 * @example
 * ```ts
 * const { total, byPartition } = await deadLetters.countByPartition('orders');
 * const page = await deadLetters.listAcross(['orders', 'billing'], { limit: 50, offset: 0 });
 * ```
 */
import { mapBounded } from '../../core/map-bounded.js';
import type { Storage } from '../../storage/port.js';
import type { DlqEntry, DlqService } from '../leases/dlq-service.js';
import { dlqKeys } from '../leases/dlq-store.js';
import type { QueueDirectory } from '../log/queue-directory.js';

/**
 * Most dead letters counted per queue: a count reads the queue's list pointers (small items,
 * ~150 bytes), so this bounds what one admin request reads. Past it the count says so.
 */
export const DEAD_LETTER_COUNT_CAP = 10_000;

/**
 * Queues whose dead letters one cross-queue listing reads at once: each read may page through
 * `offset + limit` rows, and a listing of every queue would otherwise start them all together.
 */
const LIST_CONCURRENCY = 4;

export interface DeadLetterOverviewDeps {
  storage: Storage;
  queues: QueueDirectory;
  dlq: DlqService;
}

export class DeadLetterOverview {
  constructor(private readonly deps: DeadLetterOverviewDeps) {}

  /**
   * A queue's dead letters by partition id, counted from its list pointers (a list pointer's
   * sort key is `<failedAt>#<partitionId>#<offset>#…`), up to {@link DEAD_LETTER_COUNT_CAP};
   * rows of a deleted incarnation of the queue are not counted. `offsets` holds
   * `<partitionId>#<offset>` of each (the message browser marks them `dead_letter`).
   */
  async countByPartition(
    queue: string,
    cap = DEAD_LETTER_COUNT_CAP,
  ): Promise<{ total: number; byPartition: Map<string, number>; offsets: Set<string>; capped: boolean }> {
    const q = await this.deps.queues.getQueue(queue);
    const byPartition = new Map<string, number>();
    const offsets = new Set<string>();
    let total = 0;
    let after: string | undefined;
    do {
      const page = await this.deps.storage.items.query('dlq', dlqKeys.listPk(queue), {
        after,
        limit: Math.min(1000, cap - total + 1),
      });
      for (const it of page.items) {
        const incarnation = it.attrs.queueId;
        if (incarnation !== undefined && incarnation !== q?.queueId) continue;
        if (total === cap) return { total, byPartition, offsets, capped: true };
        const [, pid = '', offset = ''] = it.sk.split('#');
        byPartition.set(pid, (byPartition.get(pid) ?? 0) + 1);
        offsets.add(`${pid}#${Number(offset)}`);
        total++;
      }
      after = page.items.length > 0 ? page.next : undefined;
    } while (after !== undefined);
    return { total, byPartition, offsets, capped: false };
  }

  /**
   * One page of the dead letters of several queues (optionally one group's), newest first:
   * each queue's newest `offset + limit` are read and merged, so a deep page costs reads.
   */
  async listAcross(
    queues: readonly string[],
    q: { consumerGroup?: string | undefined; limit: number; offset: number },
  ): Promise<DlqEntry[]> {
    if (queues.length === 1)
      return this.deps.dlq.list({
        queue: queues[0]!,
        consumerGroup: q.consumerGroup,
        limit: q.limit,
        offset: q.offset,
      });
    const all = (
      await mapBounded(queues, LIST_CONCURRENCY, (queue) =>
        this.deps.dlq.list({ queue, consumerGroup: q.consumerGroup, limit: q.offset + q.limit, offset: 0 }),
      )
    ).flat();
    all.sort((a, b) => b.failedAt - a.failedAt || (a.transactionId < b.transactionId ? -1 : 1));
    return all.slice(q.offset, q.offset + q.limit);
  }
}
