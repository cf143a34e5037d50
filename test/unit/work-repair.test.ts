// The work-index repair sweep's pure decisions (server/core/work-repair.ts).
import { describe, expect, it } from 'vitest';
import { afterPass, hiddenWork, NO_SWEEP } from '../../server/core/work-repair.js';

describe('work-index repair decisions', () => {
  it('a partition hides work only when its flag is set and no item names it', () => {
    expect(hiddenWork(true, false)).toBe(true);
    expect(hiddenWork(true, true)).toBe(false);
    expect(hiddenWork(false, false)).toBe(false);
    expect(hiddenWork(undefined, false)).toBe(false);
    expect(hiddenWork('true', false)).toBe(false);
  });

  it('a pass that stops keeps the sweep’s start; one that reaches the end records when', () => {
    const first = afterPass(NO_SWEEP, 1_000, { queue: 'b', after: 'P#x' });
    expect(first).toEqual({ sweptAt: null, cursor: { startedAt: 1_000, queue: 'b', after: 'P#x' } });
    const second = afterPass(first, 2_000, { queue: 'c', after: null });
    expect(second.cursor).toEqual({ startedAt: 1_000, queue: 'c', after: null });
    expect(afterPass(second, 3_000, null)).toEqual({ sweptAt: 3_000, cursor: null });
    expect(afterPass({ sweptAt: 3_000, cursor: null }, 4_000, { queue: 'a', after: null })).toEqual({
      sweptAt: 3_000,
      cursor: { startedAt: 4_000, queue: 'a', after: null },
    });
  });
});
