/**
 * The selector work index: which queues under a namespace/task selector may have work, so a
 * pop by namespace and task (`namespace-pop.ts`) costs a bounded number of storage requests
 * however many idle queues the selector matches (docs/LEASES.md, "Pops by namespace and task").
 *
 * - Item: table `leases`, pk `WSEL#<selector>`, sk `Q#<queue>`: one per queue and selector it
 *   answers (namespace, task, both), whatever its partitions and groups. Queues without a
 *   namespace or task have none, and their pushes never write one.
 * - Written with a version no reader has seen, after the queue's work index (`work-index.ts`)
 *   gained an item: by the push that found a partition drained, once its commit is in (in the
 *   commit, the partitions of one queue flipping together would contend on this item), and by
 *   marks outside pushes. Before the commit's item exists nothing may write it: a pop that read
 *   it and then found the work index empty may delete it.
 * - Deleted by a namespace pop that read it and then found the queue's work index empty with a
 *   query issued after that read, guarded by the version it read: a mark since keeps it.
 * - Repaired: a push that stopped between its commit and this put (a crash, a Lambda timeout)
 *   leaves work that no item names. A repair pass every {@link REPAIR_EVERY_MS} per selector
 *   (paged over the matching queues, its progress in the item with sk `SEED`, shared by every
 *   process; a stored key, so it keeps its old name) marks each matching queue whose work index
 *   has items.
 * - Groups: a consumer group's first pop by a selector registers it on every matching queue
 *   and marks the partitions that hold messages (what a queue's first wildcard pop does), so
 *   it finds the history of queues no push marks any more; then again on the queues configured
 *   under the selector since (the `selectorConfigured` time in `meta`), until
 *   {@link SETTLE_MS} after that configure (a push that read the queue's record before the
 *   configure marks only its old selectors). Progress per group and caller (grants differ):
 *   the `G#<group>#<principal hash>` item, void once the group's reset epoch (`E#<group>`,
 *   written when the group is deleted on a queue or its start moves) is not the one it began under.
 */
import { createHash, randomInt } from 'node:crypto';
import { ConditionFailedError, type Attrs, type Item, type Storage } from '../../storage/port.js';
import { queueMatchPk, selectorsOf, type QueueRecord, type QueueSelector } from '../log/log-store.js';
import type { MatchingQueue, QueueDirectory } from '../log/queue-directory.js';
import { SELECTOR_WORK_PREFIX, leaseKeys, selectorWorkPk, workPk } from './lease-store.js';

/** How often every matching queue's work index is checked again (repairs marks lost to crashes). */
export const REPAIR_EVERY_MS = 60 * 60_000;
/** How long after a configure its queue is still prepared again by each group's pops. */
export const SETTLE_MS = 15_000;
/** How often this process reads whether a selector's repair pass is due. */
const REPAIR_LOOK_MS = 60_000;
/** How often this process reads when a queue was last configured under a selector (a queue joins its pops within this). */
export const CONFIG_LOOK_MS = 5_000;
/** While a configure settles, how often this process prepares its queue again. */
const UNSETTLED_PASS_MS = 2_000;
/** Queues one pop prepares for its group, or checks in the periodic pass, at most. */
export const PREPARE_PER_POP = 16;
/** Pages of the index one read follows at most (each up to 1,000 queues with work). */
const MAX_PAGES = 10;

/** A queue named by the index, with the version its item was read at. */
export interface MarkedQueue {
  name: string;
  queueId: string;
  ver: number;
}

export interface SelectorWorkDeps {
  storage: Storage;
  queues: QueueDirectory;
  clock: () => number;
}

type QueueLike = Pick<QueueRecord, 'name' | 'queueId' | 'namespace' | 'task'>;

/**
 * The selector work index (see the module doc).
 *
 * @example
 * ```ts
 * await selectors.markQueue(queue); // after its work index gained an item
 * const { queues, readAt } = await selectors.withWork({ namespace: 'shop' });
 * ```
 */
export class SelectorWork {
  /** Per selector: when this process last found the periodic pass not due. */
  private readonly repairLooked = new Map<string, number>();
  /** Per (selector, group): the group's progress as last read or written here, and when. */
  private readonly groups = new Map<
    string,
    { item: Item | undefined; epoch: number; lookedAt: number; cfgAt: number; passAt: number }
  >();

  constructor(private readonly deps: SelectorWorkDeps) {}

  /** Marks the queue under every selector it answers (none: nothing written). */
  async markQueue(queue: QueueLike): Promise<void> {
    await Promise.all(selectorsOf(queue.namespace, queue.task).map((sel) => this.mark(queueMatchPk(sel), queue)));
  }

  /** The queues that may have work under the selector, and when the read returned (`performance.now()`). */
  async withWork(sel: QueueSelector): Promise<{ queues: MarkedQueue[]; readAt: number }> {
    const pk = selectorWorkPk(queueMatchPk(sel));
    const queues: MarkedQueue[] = [];
    let after: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = await this.deps.storage.items.query('leases', pk, { prefix: SELECTOR_WORK_PREFIX, after });
      for (const it of r.items)
        queues.push({
          name: it.sk.slice(SELECTOR_WORK_PREFIX.length),
          queueId: typeof it.attrs.queueId === 'string' ? it.attrs.queueId : '',
          ver: it.ver,
        });
      if (r.next === undefined) break;
      after = r.next;
    }
    return { queues, readAt: performance.now() };
  }

  /** Removes a queue's item if it is still the version read (a mark since keeps it). */
  async unmark(sel: QueueSelector, q: MarkedQueue): Promise<void> {
    try {
      await this.deps.storage.items.delete('leases', leaseKeys.selectorWork(queueMatchPk(sel), q.name), {
        kind: 'version',
        ver: q.ver,
      });
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
    }
  }

  /**
   * Keeps the index whole for this pop (see the module doc): one step of the periodic pass
   * when due, and the group's preparation on the queues configured since it last looked.
   * `prepare` registers the group on a queue and marks the partitions that hold messages;
   * false when it could not finish there (the next pop continues from that queue).
   */
  async maintain(
    sel: QueueSelector,
    group: string,
    principal: string,
    prepare: (q: MatchingQueue) => Promise<boolean>,
  ): Promise<void> {
    await this.repairStep(sel);
    await this.prepareGroup(sel, group, principalKey(principal), prepare);
  }

  /** Whether the queue's work index has an item (one query of at most one item). */
  async hasWork(queueId: string): Promise<boolean> {
    const r = await this.deps.storage.items.query('leases', workPk(queueId), { limit: 1 });
    return r.items.length > 0;
  }

  /** Marks the queue under one selector if its work index has an item. */
  async markIfWork(sel: QueueSelector, queue: QueueLike): Promise<void> {
    if (await this.hasWork(queue.queueId)) await this.mark(queueMatchPk(sel), queue);
  }

  /** A version no earlier read saw (ms and 10 random bits, within 2^53). */
  private freshVersion(): number {
    return Math.floor(this.deps.clock()) * 1024 + randomInt(1024);
  }

  private async mark(selPk: string, queue: QueueLike): Promise<void> {
    // A fresh version: a pop that read the item before this put cannot delete it.
    const ver = this.freshVersion();
    await this.deps.storage.items.put('leases', {
      ...leaseKeys.selectorWork(selPk, queue.name),
      ver,
      attrs: { queueId: queue.queueId },
    });
  }

  /** One page of the selector's repair pass when it is due (see the header). */
  private async repairStep(sel: QueueSelector): Promise<void> {
    const selPk = queueMatchPk(sel);
    const now = this.deps.clock();
    const looked = this.repairLooked.get(selPk);
    if (looked !== undefined && now - looked < REPAIR_LOOK_MS) return;
    const key = leaseKeys.selectorRepair(selPk);
    const cur = await this.deps.storage.items.get('leases', key);
    const at = typeof cur?.attrs.at === 'number' ? cur.attrs.at : undefined;
    const after = typeof cur?.attrs.after === 'string' ? cur.attrs.after : undefined;
    if (at !== undefined && after === undefined && now - at < REPAIR_EVERY_MS) {
      this.repairLooked.set(selPk, now);
      return;
    }
    const todo = (await this.deps.queues.matching(sel, { fresh: true }))
      .filter((m) => after === undefined || m.name > after)
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    const page = todo.slice(0, PREPARE_PER_POP);
    await Promise.all(
      page.map(async (m) => {
        const q = await this.deps.queues.getQueue(m.name);
        if (q) await this.markIfWork(sel, q);
      }),
    );
    const done = page.length === todo.length;
    const attrs: Attrs = done ? { at: now } : { at: at ?? 0, after: page[page.length - 1]?.name ?? null };
    try {
      await this.deps.storage.items.put(
        'leases',
        { ...key, ver: (cur?.ver ?? 0) + 1, attrs },
        cur ? { kind: 'version', ver: cur.ver } : { kind: 'absent' },
      );
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e; // another process took this step
    }
  }

  /**
   * The group's item (per caller: grants decide which queues its pops prepare): `upTo`, every
   * queue configured under the selector at or before it was prepared at least
   * {@link SETTLE_MS} after its configure; `epoch`, the group's reset epoch the preparation
   * began under (a later reset voids it); while a pass spans several pops, `after` (the last
   * queue prepared) and `from` (when the pass started).
   */
  private async prepareGroup(
    sel: QueueSelector,
    group: string,
    principal: string,
    prepare: (q: MatchingQueue) => Promise<boolean>,
  ): Promise<void> {
    const selPk = queueMatchPk(sel);
    const k = `${selPk}\u0000${group}\u0000${principal}`;
    const now = this.deps.clock();
    let st = this.groups.get(k);
    if (!st || now - st.lookedAt >= CONFIG_LOOK_MS) {
      // Read again too: a group deleted on a queue (or its start moved) resets it elsewhere.
      const [cfgAt, [item, epochItem]] = await Promise.all([
        this.deps.queues.selectorConfiguredAt(sel),
        this.deps.storage.items.getMany('leases', [
          leaseKeys.selectorGroup(selPk, group, principal),
          leaseKeys.selectorGroupEpoch(selPk, group),
        ]),
      ]);
      st = { item, epoch: epochItem?.ver ?? 0, lookedAt: now, cfgAt, passAt: st?.passAt ?? -Infinity };
      this.groups.set(k, st);
    }
    const a = st.item?.attrs ?? {};
    // Made before the group's last reset: as if there were none.
    const current = (typeof a.epoch === 'number' ? a.epoch : 0) === st.epoch;
    const upTo = current && typeof a.upTo === 'number' ? a.upTo : undefined;
    const after = current && typeof a.after === 'string' ? a.after : undefined;
    const from = current && typeof a.from === 'number' ? a.from : now;
    if (after === undefined && upTo !== undefined) {
      if (st.cfgAt <= upTo) return; // every configure under the selector is settled and prepared
      if (now - st.passAt < UNSETTLED_PASS_MS) return; // one settling: pass again, not at every pop
    }
    st.passAt = now;
    const todo = (await this.deps.queues.matching(sel, { fresh: true }))
      .filter((m) => (upTo === undefined || m.at > upTo) && (after === undefined || m.name > after))
      .sort((x, y) => (x.name < y.name ? -1 : 1));
    let last: string | undefined;
    let complete = true;
    for (const [i, m] of todo.entries()) {
      if (i >= PREPARE_PER_POP || !(await prepare(m))) {
        complete = false;
        break;
      }
      last = m.name;
    }
    // Complete: what was configured SETTLE_MS before the pass started is settled now.
    const attrs: Attrs = complete
      ? { upTo: Math.max(upTo ?? -Infinity, from - SETTLE_MS), epoch: st.epoch }
      : { upTo: upTo ?? null, after: last ?? after ?? null, from, epoch: st.epoch };
    const key = leaseKeys.selectorGroup(selPk, group, principal);
    // A fresh version after none: a process holding an older item's version cannot overwrite it.
    const next: Item = { ...key, ver: st.item ? st.item.ver + 1 : this.freshVersion(), attrs };
    try {
      await this.deps.storage.items.put(
        'leases',
        next,
        st.item ? { kind: 'version', ver: st.item.ver } : { kind: 'absent' },
      );
      st.item = next;
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
      this.groups.delete(k); // another process moved it: read it again next time
    }
  }

  /**
   * Makes the group's next pops by the queue's selectors prepare it on every matching queue
   * again (every caller's): after its cursors on the queue were deleted or its start moved,
   * the queue's history is owed again, and no selector item may name the queue. A new epoch
   * with a fresh version, so a preparation under way when it is written does not count,
   * whichever process finishes it.
   */
  async resetGroup(queue: QueueLike, group: string): Promise<void> {
    for (const sel of selectorsOf(queue.namespace, queue.task)) {
      const selPk = queueMatchPk(sel);
      for (const k of this.groups.keys()) if (k.startsWith(`${selPk}\u0000${group}\u0000`)) this.groups.delete(k);
      await this.deps.storage.items.put('leases', {
        ...leaseKeys.selectorGroupEpoch(selPk, group),
        ver: this.freshVersion(),
        attrs: {},
      });
    }
  }
}

/** A principal as a key part: short, and free of `#`. */
const principalKey = (principal: string): string =>
  createHash('sha256').update(principal).digest('base64url').slice(0, 16);
