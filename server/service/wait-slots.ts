/**
 * The deployment-wide cap on concurrent long-poll waits (docs/DEPLOYING.md, "Quotas"). On
 * Lambda one instance serves one request, so a waiting pop or claim poll holds one of the
 * account's concurrent executions for its whole wait, and a count kept in a process means
 * nothing. The count lives in storage instead: `cap` slot items, each held by one waiter until
 * it releases it or its `until` passes (a killed instance's slot frees itself).
 *
 * Per admitted wait: one query (a window of at most {@link SLOT_WINDOW} slots), one guarded
 * put (put-if-absent, or a replace of an expired slot guarded by its version) and one guarded
 * delete. A wait turned away costs the query only.
 *
 * @example
 * ```ts
 * const slots = new WaitSlots({ storage, clock: Date.now, maxWaiters: 4 });
 * const admission = await slots.take(20_000);
 * if (admission.admitted) try { await waitForWork(); } finally { await admission.release(); }
 * ```
 */
import { randomUUID } from 'node:crypto';
import {
  FALLBACK_MAX_WAITERS,
  MAX_WAITERS,
  SLOT_DIGITS,
  SLOT_WINDOW,
  freeSlots,
  windowStart,
  type FreeSlot,
  type StoredSlot,
} from '../core/holds.js';
import { ConditionFailedError, type Item, type ItemKey, type Storage } from '../storage/port.js';
import type { Telemetry } from './telemetry.js';

// ------------------------------------------------------------------ store

/** meta: one pk holds every slot, so a window is one query. */
export const WAIT_SLOTS_PK = 'WAITSLOTS';
export { MAX_WAITERS };

export const waitSlotKeys = {
  /** meta: wait slot `index` (0 to cap − 1), `{ holder, until }` while held. */
  slot: (index: number): ItemKey => ({ pk: WAIT_SLOTS_PK, sk: String(index).padStart(SLOT_DIGITS, '0') }),
};

function decodeSlot(item: Item): StoredSlot {
  const a = item.attrs as { holder?: unknown; until?: unknown };
  return {
    index: Number(item.sk),
    ver: item.ver,
    hold: { holder: typeof a.holder === 'string' ? a.holder : '', until: typeof a.until === 'number' ? a.until : 0 },
  };
}

/**
 * A held slot item. Its version is the taker's clock (at least one above the version it
 * replaces): a slot released and taken again never returns to an earlier holder's version, so
 * a late release by a holder whose slot expired and moved on can never delete the new one.
 */
function slotItem(index: number, holder: string, until: number, now: number, prevVer = 0): Item {
  return {
    ...waitSlotKeys.slot(index),
    ver: Math.max(prevVer + 1, now),
    attrs: { holder, until },
    // TTL only collects: readers compare `until` with their own clock.
    expiresAt: Math.ceil(until / 1000),
  };
}

// ------------------------------------------------------------------ service

/** A wait's admission: waiting is allowed (release the slot when done) or the cap is reached. */
export type WaitAdmission = { admitted: true; release(): Promise<void> } | { admitted: false };

export interface WaitSlotsDeps {
  storage: Storage;
  clock: () => number;
  /**
   * The cap: a number (0: no cap, and no slot is ever written), or a function that finds it
   * once per process (the account's Lambda concurrency; see `adapters/lambda-account.ts`).
   */
  maxWaiters: number | (() => Promise<number>);
  telemetry?: Telemetry | undefined;
  /** Picks windows and slots; `Math.random` by default. */
  random?: () => number;
}

/** Added to a wait's budget in its slot's `until`: the last look, the answer, clocks apart. */
export const SLOT_MARGIN_MS = 5000;
/** Writes one take tries at most before it counts the cap as reached (other waiters took the slots it saw). */
const MAX_TAKE_WRITES = 3;
/** After failing to find the cap, how long a process uses {@link FALLBACK_MAX_WAITERS} before asking again. */
const CAP_RETRY_MS = 5 * 60_000;

/**
 * Wait slots: see the module doc.
 *
 * @example
 * ```ts
 * const a = await slots.take(budgetMs);
 * if (!a.admitted) return holdBriefly();
 * ```
 */
export class WaitSlots {
  private cap: { value: Promise<number>; retryAt: number } | undefined;
  private readonly random: () => number;

  constructor(private readonly deps: WaitSlotsDeps) {
    this.random = deps.random ?? Math.random;
  }

  /** The cap in force: the configured number, or the one found for this process (cached). */
  maxWaiters(): Promise<number> {
    const m = this.deps.maxWaiters;
    if (typeof m === 'number') return Promise.resolve(m);
    const now = this.deps.clock();
    if (!this.cap || now >= this.cap.retryAt) {
      const entry: { value: Promise<number>; retryAt: number } = {
        value: m().then(
          (n) => Math.max(1, Math.min(MAX_WAITERS, Math.floor(n))),
          (e: unknown) => {
            // Ask again later; meanwhile a cap that is safe on the smallest account.
            entry.retryAt = this.deps.clock() + CAP_RETRY_MS;
            this.deps.telemetry?.warn('wait cap: the account concurrency could not be read; using the fallback', {
              fallback: FALLBACK_MAX_WAITERS,
              error: e instanceof Error ? e.message : String(e),
            });
            return FALLBACK_MAX_WAITERS;
          },
        ),
        retryAt: Number.POSITIVE_INFINITY,
      };
      this.cap = entry;
    }
    return this.cap.value;
  }

  /**
   * Takes a slot for a wait of up to `budgetMs`, or answers that the cap is reached. The slot
   * is held until released, or until `budgetMs` + {@link SLOT_MARGIN_MS} from now at most.
   */
  async take(budgetMs: number): Promise<WaitAdmission> {
    const cap = await this.maxWaiters();
    if (cap <= 0) return { admitted: true, release: () => Promise.resolve() };
    const holder = randomUUID();
    let writes = 0;
    const starts = [windowStart(cap, this.random())];
    // A large cap is looked at one window at a time: a second window before counting it full.
    if (cap > SLOT_WINDOW) starts.push(windowStart(cap, this.random()));
    for (const start of starts) {
      const candidates = await this.freeIn(start, cap);
      while (candidates.length > 0 && writes < MAX_TAKE_WRITES) {
        // A random free slot: waiters that read the same window at once rarely pick the same one.
        const [slot] = candidates.splice(Math.floor(this.random() * candidates.length), 1) as [FreeSlot];
        writes++;
        const now = this.deps.clock();
        const item = slotItem(slot.index, holder, now + Math.max(0, budgetMs) + SLOT_MARGIN_MS, now, slot.ver);
        try {
          await this.deps.storage.items.put(
            'meta',
            item,
            slot.ver === undefined ? { kind: 'absent' } : { kind: 'version', ver: slot.ver },
          );
          return { admitted: true, release: () => this.release(item) };
        } catch (e) {
          if (!(e instanceof ConditionFailedError)) throw e;
        }
      }
      if (writes >= MAX_TAKE_WRITES) break;
    }
    this.deps.telemetry?.count('WaitsCapped');
    return { admitted: false };
  }

  private async freeIn(start: number, cap: number): Promise<FreeSlot[]> {
    const last = Math.min(cap, start + SLOT_WINDOW) - 1;
    const page = await this.deps.storage.items.query('meta', WAIT_SLOTS_PK, {
      gte: waitSlotKeys.slot(start).sk,
      lte: waitSlotKeys.slot(last).sk,
      limit: SLOT_WINDOW,
    });
    return freeSlots(page.items.map(decodeSlot), start, cap, this.deps.clock());
  }

  /** Deletes the slot if it is still this holder's (guarded by the version written). */
  private async release(item: Item): Promise<void> {
    try {
      await this.deps.storage.items.delete('meta', { pk: item.pk, sk: item.sk }, { kind: 'version', ver: item.ver });
    } catch (e) {
      // Expired and taken by another waiter meanwhile: theirs now. Any other failure only
      // leaves the slot held until its `until`; the answer must not fail for it.
      if (!(e instanceof ConditionFailedError))
        this.deps.telemetry?.warn('wait slot not released; it frees itself when its time passes', {
          slot: item.sk,
          error: e instanceof Error ? e.message : String(e),
        });
    }
  }
}
