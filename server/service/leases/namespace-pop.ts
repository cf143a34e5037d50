/**
 * Pops by namespace and task (`GET /api/v1/pop?namespace=…&task=…`, docs/LEASES.md): one pop
 * leases from exactly one of the queues the selector matches, the first in
 * {@link popOrder} (highest priority; equal priorities round-robin per process) whose wildcard
 * pop delivers. Only queues the selector work index names are tried (`selector-work.ts`), so an
 * idle queue costs a pop nothing; the group is first prepared on every matching queue there.
 */
import type { SluiceConfig } from '../../config.js';
import { SluiceError } from '../../core/errors.js';
import { parseSubscription } from '../../core/leases.js';
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import { popOrder } from '../../core/queue-match.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import { queueMatchPk, type QueueRecord, type QueueSelector } from '../log/log-store.js';
import type { MatchingQueue, QueueDirectory } from '../log/queue-directory.js';
import type { LongPoll } from './long-poll.js';
import type { PopAnswer, PopRequest, PopResult, PopService, PopTally } from './pop.js';
import type { SelectorWork } from './selector-work.js';
import type { WorkIndex } from './work-index.js';

/** Registration scan steps one pop spends on a queue while preparing a group there. */
const SCAN_STEPS_PER_QUEUE = 8;

/** A pop by namespace and/or task: {@link PopRequest} without a queue, and which queues the caller may consume. */
export interface MatchingPopRequest extends Omit<PopRequest, 'queue' | 'partition'> {
  namespace?: string | undefined;
  task?: string | undefined;
  allowed: (queue: string) => boolean;
  /** Who is popping: a group's preparation is kept per caller, as grants differ (default `anonymous`). */
  principal?: string | undefined;
}

/** Whether a queue answers a selector (a missing namespace or task matches any). */
export const matchesSelector = (q: Pick<QueueRecord, 'namespace' | 'task'>, sel: QueueSelector): boolean =>
  (!sel.namespace || q.namespace === sel.namespace) && (!sel.task || q.task === sel.task);

export interface MatchingPopDeps {
  config: Pick<SluiceConfig, 'maxPopWaitMs'>;
  queues: QueueDirectory;
  pops: PopService;
  longPoll: LongPoll;
  groups: GroupRegistry;
  work: WorkIndex;
  selectors: SelectorWork;
  clock: () => number;
}

/** A record-claim group's name met on a queue: that queue is not a candidate (see {@link MatchingPopService}). */
const isClaimGroupConflict = (e: unknown): boolean =>
  e instanceof SluiceError && e.code === 'conflict' && e.details?.['kind'] === 'claim';

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
    const { queues, selectors, work } = this.deps;
    await selectors.maintain(sel, req.group, req.principal ?? 'anonymous', (m) => this.prepare(sel, m, req));
    const { queues: marked, readAt } = await selectors.withWork(sel);
    const live: { rec: QueueRecord; ver: number; queueId: string }[] = [];
    for (const m of marked) {
      if (!req.allowed(m.name)) continue;
      let q = await queues.getQueue(m.name);
      if (!q || !matchesSelector(q, sel)) q = await queues.getQueue(m.name, { fresh: true });
      if (!q || !matchesSelector(q, sel)) {
        // Left by a deleted queue, or one configured away from this selector.
        await queues.forgetMatch(sel, m.name);
        await selectors.unmark(sel, m);
        continue;
      }
      live.push({ rec: q, ver: m.ver, queueId: m.queueId });
    }
    const byName = new Map(live.map((l) => [l.rec.name, l]));
    const turn = `${queueMatchPk(sel)}\u0000${req.group}`;
    const order = popOrder(
      live.map((l) => ({ name: l.rec.name, priority: l.rec.options.priority })),
      this.lastServed.get(turn),
    );
    for (const name of order) {
      const l = byName.get(name)!;
      const r = await this.deps.pops
        .popOnce({ ...req, queue: name, partition: undefined }, tally)
        .catch((e: unknown) => {
          // The group name is a record-claim group on this queue: not a candidate (a 409 here
          // would fail a pop that other queues may answer, after it registered on earlier ones).
          if (isClaimGroupConflict(e)) return null;
          throw e;
        });
      if (r) {
        this.lastServed.set(turn, name);
        return r;
      }
      // Its work index was empty when looked at after the item was read: the item goes (a
      // mark since changed its version and keeps it).
      if (work.foundEmptySince(l.rec.queueId, readAt))
        await selectors.unmark(sel, { name, queueId: l.queueId, ver: l.ver });
    }
    return null;
  }

  /**
   * Prepares the group on one matching queue (see `selector-work.ts`): registers it as the
   * queue's first pop would, marks the partitions holding messages it has not seen, and names
   * the queue in the selector index if its work index has items. False: not finished here.
   */
  private async prepare(sel: QueueSelector, m: MatchingQueue, req: MatchingPopRequest): Promise<boolean> {
    const q = await this.deps.queues.getQueue(m.name, { fresh: true });
    if (!q || !matchesSelector(q, sel)) {
      await this.deps.queues.forgetMatch(sel, m.name);
      return true;
    }
    // A caller's grants decide which queues it is prepared on (its progress is its own).
    if (!req.allowed(q.name)) return true;
    const sub =
      req.group === QUEUE_MODE_GROUP
        ? { mode: 'all' as const, from: null }
        : parseSubscription(req.subscriptionMode, req.subscriptionFrom, this.deps.clock());
    let reg;
    try {
      reg = await this.deps.groups.register(q.name, req.group, 'lease', sub);
    } catch (e) {
      if (isClaimGroupConflict(e)) return true;
      throw e;
    }
    let scanned = false;
    // Fresh: this process's memory of a finished scan may predate a reset that asked for another.
    for (let i = 0; i < SCAN_STEPS_PER_QUEUE && !scanned; i++)
      scanned = await this.deps.work.scanStep(reg, { fresh: true });
    if (!scanned) return false;
    await this.deps.selectors.markIfWork(sel, q);
    return true;
  }
}
