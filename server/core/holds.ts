/**
 * Expiring holds as pure decisions over stored `{ holder, until }` and an explicit `now`: the
 * maintenance lease (one pass at a time, deployment-wide) and the wait slots (a cap on how
 * many long polls wait at once, deployment-wide). A process that dies while holding one
 * leaves it behind; it frees itself when `until` passes, because every reader compares
 * `until` with its own `now` (TTL only collects the item later).
 *
 * @example
 * ```ts
 * holdFree(undefined, now);                        // true: nobody holds it
 * holdFree({ holder: 'a', until: now + 1 }, now);  // false
 * takePlan({ holder: 'a', until: now }, 3, now);   // { kind: 'replace', ver: 3 }
 * ```
 */

/** Who holds something, and until when (epoch ms). */
export interface Hold {
  holder: string;
  until: number;
}

/** Free when nobody holds it or the holder's `until` has passed. */
export const holdFree = (h: Hold | undefined, now: number): boolean => h === undefined || h.until <= now;

/**
 * How to take a hold given what is stored: put-if-absent, a replace guarded by the expired
 * hold's version, or nothing (still held).
 */
export type TakePlan = { kind: 'create' } | { kind: 'replace'; ver: number } | { kind: 'held'; hold: Hold };

export function takePlan(current: Hold | undefined, ver: number, now: number): TakePlan {
  if (current === undefined) return { kind: 'create' };
  if (holdFree(current, now)) return { kind: 'replace', ver };
  return { kind: 'held', hold: current };
}

/**
 * Whether a lease taken for `leaseMs` should be renewed now: once less than half of it is
 * left, so a step that runs up to half a lease long still ends inside it.
 */
export const renewDue = (until: number, leaseMs: number, now: number): boolean => until - now < leaseMs / 2;

// ------------------------------------------------------------------ wait slots

/**
 * Slots one take looks at (one query): small enough that the page stays within one 4 KB read
 * unit, whatever the cap. Caps up to this are checked exactly.
 */
export const SLOT_WINDOW = 32;

/** The first slot of a window: 0 when the cap fits one window, else a random start (`rand` in [0, 1)). */
export const windowStart = (cap: number, rand: number): number =>
  cap <= SLOT_WINDOW ? 0 : Math.floor(rand * (cap - SLOT_WINDOW + 1));

/** A stored slot in a window: its index, its hold and its version. */
export interface StoredSlot {
  index: number;
  hold: Hold;
  ver: number;
}

/** A slot a waiter may take: an absent one (put-if-absent) or an expired one (replace at `ver`). */
export type FreeSlot = { index: number; ver?: number | undefined };

/**
 * The free slots of the window `[start, start + SLOT_WINDOW)` clamped to `cap`, given the
 * slots stored there: absent ones, then expired ones (replacing costs as much, but taking an
 * absent one first leaves the expired ones to whoever collects them).
 *
 * @example
 * ```ts
 * freeSlots([{ index: 0, hold: { holder: 'a', until: now + 9 }, ver: 1 }], 0, 2, now); // [{ index: 1 }]
 * ```
 */
export function freeSlots(stored: readonly StoredSlot[], start: number, cap: number, now: number): FreeSlot[] {
  const byIndex = new Map(stored.map((s) => [s.index, s]));
  const absent: FreeSlot[] = [];
  const expired: FreeSlot[] = [];
  for (let i = start; i < Math.min(cap, start + SLOT_WINDOW); i++) {
    const s = byIndex.get(i);
    if (!s) absent.push({ index: i });
    else if (holdFree(s.hold, now)) expired.push({ index: i, ver: s.ver });
  }
  return [...absent, ...expired];
}

// ------------------------------------------------------------------ the default cap

/**
 * Share of the account's unreserved Lambda concurrency that waiting requests may hold by
 * default. Under half, so producers, acks and maintenance always keep the larger share: on
 * a new account's 10 executions, 4 waiters leave 6, which serve ~100 pushes a second at
 * ~50 ms each (docs/DEPLOYING.md, "Quotas").
 */
export const WAITER_SHARE = 0.4;

/** What a deployment without an explicit cap uses when it cannot read its account's quota. */
export const FALLBACK_MAX_WAITERS = 4;

/** Wait slot indexes are zero-padded in their keys, so a window of indexes is one range of sort keys. */
export const SLOT_DIGITS = 6;
/** Largest cap the slot keys can express (SLUICE_MAX_WAITERS allows as much; the stack checks it). */
export const MAX_WAITERS = 10 ** SLOT_DIGITS - 1;

/**
 * The default cap on concurrent waits for an account with `unreserved` unreserved concurrent
 * executions: {@link WAITER_SHARE} of them, at least one.
 *
 * @example
 * ```ts
 * defaultMaxWaiters(10);   // 4
 * defaultMaxWaiters(1000); // 400
 * ```
 */
export const defaultMaxWaiters = (unreserved: number): number =>
  Math.max(1, Math.floor(Math.max(0, unreserved) * WAITER_SHARE));
