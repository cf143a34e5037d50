import { describe, expect, it } from 'vitest';
import { mapBounded } from '../../server/core/map-bounded.js';

/** Resolves after `ms` of real time: enough for the other workers to start theirs. */
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('unit: mapBounded', () => {
  it('never has more than `limit` calls unfinished, and uses all of them', async () => {
    let running = 0;
    let peak = 0;
    const out = await mapBounded(
      Array.from({ length: 25 }, (_, i) => i),
      4,
      async (i) => {
        running++;
        peak = Math.max(peak, running);
        // Uneven durations: a worker that finishes early takes the next item.
        await tick(i % 3);
        running--;
        return i * 2;
      },
    );
    expect(peak).toBe(4);
    expect(out).toEqual(Array.from({ length: 25 }, (_, i) => i * 2));
  });

  it('keeps the items’ order whatever order the calls finish in', async () => {
    const out = await mapBounded([30, 0, 10, 5], 4, async (ms) => {
      await tick(ms);
      return ms;
    });
    expect(out).toEqual([30, 0, 10, 5]);
  });

  it('answers an empty list without calling, and treats a limit below 1 as 1', async () => {
    let calls = 0;
    expect(await mapBounded([], 4, async () => ++calls)).toEqual([]);
    expect(calls).toBe(0);
    let running = 0;
    let peak = 0;
    const out = await mapBounded([1, 2, 3], 0, async (x) => {
      peak = Math.max(peak, ++running);
      await tick(1);
      running--;
      return x;
    });
    expect(out).toEqual([1, 2, 3]);
    expect(peak).toBe(1);
  });

  it('rejects with the first failure', async () => {
    await expect(
      mapBounded([1, 2, 3], 2, async (x) => {
        if (x === 2) throw new Error('two');
        return x;
      }),
    ).rejects.toThrow('two');
  });
});
