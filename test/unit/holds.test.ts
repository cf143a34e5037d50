import { describe, expect, it } from 'vitest';
import {
  defaultMaxWaiters,
  FALLBACK_MAX_WAITERS,
  freeSlots,
  holdFree,
  renewDue,
  SLOT_WINDOW,
  takePlan,
  windowStart,
} from '../../server/core/holds.js';

const now = Date.UTC(2026, 10, 1);

describe('holds: free, taken, expired', () => {
  it('a hold is free when absent or once its until has passed (until itself included)', () => {
    expect(holdFree(undefined, now)).toBe(true);
    expect(holdFree({ holder: 'a', until: now + 1 }, now)).toBe(false);
    expect(holdFree({ holder: 'a', until: now }, now)).toBe(true);
    expect(holdFree({ holder: 'a', until: now - 1 }, now)).toBe(true);
  });

  it('takes an absent hold with put-if-absent, an expired one by its version, never a live one', () => {
    expect(takePlan(undefined, 0, now)).toEqual({ kind: 'create' });
    expect(takePlan({ holder: 'a', until: now }, 7, now)).toEqual({ kind: 'replace', ver: 7 });
    const live = { holder: 'a', until: now + 10 };
    expect(takePlan(live, 7, now)).toEqual({ kind: 'held', hold: live });
  });

  it('renews a lease once less than half of it is left', () => {
    expect(renewDue(now + 60_000, 100_000, now)).toBe(false);
    expect(renewDue(now + 50_000, 100_000, now)).toBe(false);
    expect(renewDue(now + 49_999, 100_000, now)).toBe(true);
    expect(renewDue(now - 1, 100_000, now)).toBe(true);
  });
});

describe('holds: wait slots', () => {
  const held = (index: number, until: number, ver = 1) => ({ index, hold: { holder: `h${index}`, until }, ver });

  it('a cap within one window is looked at whole, from slot 0', () => {
    expect(windowStart(1, 0.99)).toBe(0);
    expect(windowStart(SLOT_WINDOW, 0.99)).toBe(0);
  });

  it('a larger cap is looked at one window at a time, the window inside the cap', () => {
    const cap = SLOT_WINDOW * 10;
    expect(windowStart(cap, 0)).toBe(0);
    expect(windowStart(cap, 0.999999)).toBe(cap - SLOT_WINDOW);
    for (const r of [0.1, 0.5, 0.9]) {
      const s = windowStart(cap, r);
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s + SLOT_WINDOW).toBeLessThanOrEqual(cap);
    }
  });

  it('finds absent slots first, then expired ones (with their version), never live ones or slots past the cap', () => {
    const stored = [held(0, now + 5), held(1, now - 1, 9), held(3, now + 5), held(5, now)];
    expect(freeSlots(stored, 0, 4, now)).toEqual([{ index: 2 }, { index: 1, ver: 9 }]);
    // A slot above a lowered cap is never handed out.
    expect(freeSlots(stored, 0, 6, now)).toEqual([
      { index: 2 },
      { index: 4 },
      { index: 1, ver: 9 },
      { index: 5, ver: 1 },
    ]);
  });

  it('reports the cap reached when every slot of the window is live', () => {
    expect(freeSlots([held(0, now + 1), held(1, now + 1)], 0, 2, now)).toEqual([]);
  });

  it('only looks inside its window', () => {
    const cap = SLOT_WINDOW * 2;
    const stored = Array.from({ length: SLOT_WINDOW }, (_, i) => held(SLOT_WINDOW + i, now + 1));
    expect(freeSlots(stored, SLOT_WINDOW, cap, now)).toEqual([]);
    expect(freeSlots(stored, 0, cap, now)).toHaveLength(SLOT_WINDOW);
  });
});

describe('holds: the default cap', () => {
  it('is 40% of the unreserved concurrency, at least one', () => {
    expect(defaultMaxWaiters(10)).toBe(4);
    expect(defaultMaxWaiters(50)).toBe(20);
    expect(defaultMaxWaiters(1000)).toBe(400);
    expect(defaultMaxWaiters(2)).toBe(1);
    expect(defaultMaxWaiters(0)).toBe(1);
    expect(defaultMaxWaiters(-5)).toBe(1);
  });

  it('falls back to what the rule gives the smallest (new) account', () => {
    expect(FALLBACK_MAX_WAITERS).toBe(defaultMaxWaiters(10));
  });
});
