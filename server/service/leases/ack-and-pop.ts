/**
 * An ack and the next pop in one request (a steady consumer makes one request per batch, not two:
 * docs/LEASES.md, "`POST /api/v1/queues/{queue}/ack-and-pop`"). The acks are applied exactly as
 * `/ack/batch` applies them; the pop runs only when every one of them succeeded, so a consumer
 * whose ack was refused (its lease lapsed) learns that before it is handed more work.
 */
import { invalid } from '../../core/errors.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { AckRequestItem, AckResult, AckService } from './ack.js';
import type { PopAnswer, PopRequest, PopService } from './pop.js';

export interface AckAndPopResult {
  /** One per ack item, in order, as `/ack/batch` answers them. */
  acks: AckResult[];
  /** The pop's answer; undefined when it was not made (an ack failed). */
  pop: PopAnswer | undefined;
}

/**
 * @example
 * ```ts
 * const r = await svc.ackAndPop.run(acks, { queue: 'orders', group: 'billing', batch: 1000, ... });
 * if (r.pop?.result) handle(r.pop.result.messages);
 * ```
 */
export class AckAndPop {
  constructor(private readonly deps: { queues: QueueDirectory; acks: AckService; pops: PopService }) {}

  /**
   * Acks `items` for `pop.group`, then pops. Every acked partition must belong to `pop.queue`
   * (checked before the first write: an `invalid_request` otherwise); an unknown partition is an
   * ack that fails, as on `/ack`.
   */
  async run(items: readonly AckRequestItem[], pop: PopRequest, signal?: AbortSignal): Promise<AckAndPopResult> {
    for (const pid of new Set(items.map((i) => i.partitionId))) {
      const part = await this.deps.queues.partitionById(pid);
      if (part && part.queue !== pop.queue)
        throw invalid(`partition ${pid} belongs to queue ${part.queue}, not ${pop.queue}: ack it with /ack/batch`);
    }
    const acks = items.length > 0 ? await this.deps.acks.ack(items, pop.group) : [];
    if (acks.some((a) => !a.success)) return { acks, pop: undefined };
    return { acks, pop: await this.deps.pops.answer(pop, signal) };
  }
}
