/**
 * Pops by namespace and task (`GET /api/v1/pop?namespace=…&task=…`, docs/LEASES.md): one pop
 * leases from exactly one of the queues the selector matches, the first in
 * {@link popOrder} (highest priority; equal priorities round-robin per process) whose wildcard
 * pop delivers. The matches come from the index `/configure` keeps (`QueueDirectory.matching`,
 * one query per selector per process every few seconds).
 */
import type { SluiceConfig } from '../../config.js';
import { SluiceError } from '../../core/errors.js';
import { popOrder } from '../../core/queue-match.js';
import { queueMatchPk, type QueueRecord, type QueueSelector } from '../log/log-store.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { LongPoll } from './long-poll.js';
import type { PopAnswer, PopRequest, PopResult, PopService, PopTally } from './pop.js';

/** A pop by namespace and/or task: {@link PopRequest} without a queue, and which queues the caller may consume. */
export interface MatchingPopRequest extends Omit<PopRequest, 'queue' | 'partition'> {
  namespace?: string | undefined;
  task?: string | undefined;
  allowed: (queue: string) => boolean;
}

/** Whether a queue answers a selector (a missing namespace or task matches any). */
export const matchesSelector = (q: Pick<QueueRecord, 'namespace' | 'task'>, sel: QueueSelector): boolean =>
  (!sel.namespace || q.namespace === sel.namespace) && (!sel.task || q.task === sel.task);

export interface MatchingPopDeps {
  config: Pick<SluiceConfig, 'maxPopWaitMs'>;
  queues: QueueDirectory;
  pops: PopService;
  longPoll: LongPoll;
}

/**
 * Pops across the queues a namespace and/or task selects.
 *
 * @example
 * ```ts
 * const r = await matchingPops.answer({ namespace: 'shop', group: 'billing', batch: 10, partitions: 1,
 *   autoAck: false, wait: false, timeoutMs: 0, allowed: () => true });
 * r.result?.queue; // the queue it leased from
 * ```
 */
export class MatchingPopService {
  /** Per (selector, group): the queue that served the last pop here (round-robin among equals). */
  private readonly lastServed = new Map<string, string>();

  constructor(private readonly deps: MatchingPopDeps) {}

  /**
   * A pop, long-polling when asked. `allowed` leaves out queues the caller may not consume.
   * Long polls re-read storage every second (a push in this process does not wake them early).
   */
  async answer(req: MatchingPopRequest, signal?: AbortSignal): Promise<PopAnswer> {
    const sel: QueueSelector = { namespace: req.namespace || undefined, task: req.task || undefined };
    const key = `\u0000match\u0000${queueMatchPk(sel)}`;
    const tally: PopTally = new Map();
    const { value: r, capped } = await this.deps.longPoll.wait({
      queue: key,
      budgetMs: req.wait ? Math.max(0, Math.min(req.timeoutMs, this.deps.config.maxPopWaitMs)) : 0,
      signal,
      baton: `${key}\u0000${req.group}`,
      look: () => this.popOnce(sel, req, tally),
    });
    return this.deps.pops.settle(r, capped, tally);
  }

  private async popOnce(sel: QueueSelector, req: MatchingPopRequest, tally: PopTally): Promise<PopResult | null> {
    const matches = await this.deps.queues.matching(sel);
    const turn = `${queueMatchPk(sel)}\u0000${req.group}`;
    for (const name of popOrder(matches, this.lastServed.get(turn))) {
      if (!req.allowed(name)) continue;
      let q = await this.deps.queues.getQueue(name);
      if (!q || !matchesSelector(q, sel)) q = await this.deps.queues.getQueue(name, { fresh: true });
      if (!q || !matchesSelector(q, sel)) {
        // Left by a deleted queue, or one configured away from this selector.
        await this.deps.queues.forgetMatch(sel, name);
        continue;
      }
      const r = await this.deps.pops
        .popOnce({ ...req, queue: name, partition: undefined }, tally)
        .catch((e: unknown) => {
          // The group name is a record-claim group on this queue: not a candidate (a 409 here
          // would fail a pop that other queues may answer, after it registered on earlier ones).
          if (e instanceof SluiceError && e.code === 'conflict' && e.details?.['kind'] === 'claim') return null;
          throw e;
        });
      if (r) {
        this.lastServed.set(turn, name);
        return r;
      }
    }
    return null;
  }
}
