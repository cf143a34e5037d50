// The roll-up arithmetic (core/activity-rollup.ts): blocks tile any span with few items, nest,
// and the writer's late rule and the pass's cutoff leave no raw item landing below the watermark.
import { describe, expect, it } from 'vitest';
import {
  blockEnd,
  childLevel,
  containing,
  cover,
  endingAt,
  firstWatermark,
  isLate,
  LEVELS,
  MINUTE_MS,
  rollCutoff,
  ROLL_AFTER_MS,
} from '../../server/core/activity-rollup.js';
import { bucketMinutes, bucketStarts } from '../../server/core/queue-stats.js';

/** A deterministic pseudo-random sequence (no flaky seeds). */
function* numbers(seed: number): Generator<number> {
  let x = seed;
  for (;;) yield (x = (x * 1_103_515_245 + 12_345) % 2 ** 31);
}

describe('activity roll-up blocks', () => {
  it('cover tiles a span exactly with aligned blocks, in few of them', () => {
    const rnd = numbers(7);
    for (let i = 0; i < 500; i++) {
      const from = (rnd.next().value as number) % 100_000;
      const to = from + ((rnd.next().value as number) % 12_000);
      const blocks = cover(from, to);
      let at = from;
      for (const b of blocks) {
        expect(b.start).toBe(at);
        expect(b.start % b.level).toBe(0);
        at = blockEnd(b);
      }
      expect(at).toBe(Math.max(from, to));
      // At most 4+2+3+5 blocks up to each larger boundary, on both sides, plus the 6-hour middle.
      expect(blocks.length).toBeLessThanOrEqual(2 * (4 + 2 + 3 + 5) + Math.ceil((to - from) / 360));
    }
  });

  it("every bucket of Queen's windows is one block once the window is past", () => {
    const now = 29_000_000 * MINUTE_MS + 17_000;
    for (const ms of [3_600_000, 6 * 3_600_000, 86_400_000, 7 * 86_400_000]) {
      const w = { from: now - ms, to: now };
      const minutes = bucketMinutes(w);
      for (const s of bucketStarts(w, minutes)) expect(cover(s / MINUTE_MS, s / MINUTE_MS + minutes)).toHaveLength(1);
    }
  });

  it('blocks nest: the ones ending at a boundary are made of the level below, and each minute has one per level', () => {
    expect(endingAt(60)).toEqual([
      { level: 5, start: 55 },
      { level: 15, start: 45 },
      { level: 60, start: 0 },
    ]);
    expect(endingAt(61)).toEqual([]);
    for (const l of LEVELS.slice(1)) expect(l % (childLevel(l) as number)).toBe(0);
    expect(childLevel(1)).toBeUndefined();
    expect(containing(361).map((b) => [b.level, b.start])).toEqual([
      [1, 361],
      [5, 360],
      [15, 360],
      [60, 360],
      [360, 360],
    ]);
  });

  it('the first watermark is a boundary of the largest block, and no later than what is kept', () => {
    const now = Date.UTC(2026, 4, 3, 13, 47, 12);
    const w = firstWatermark(now, 8 * 86_400_000);
    expect(w % 360).toBe(0);
    expect(w * MINUTE_MS).toBeLessThanOrEqual(now - 8 * 86_400_000);
    expect(w * MINUTE_MS).toBeGreaterThan(now - 8 * 86_400_000 - 360 * MINUTE_MS);
  });
});

describe('late items and the cutoff', () => {
  it('a minute the pass may roll is late to every writer that decided less than a minute before it', () => {
    // Puts decided earlier have landed by then (an API function runs at most 30 s); later ones
    // go in as late items, which the pass folds in. isLate only turns true as time goes on.
    for (let now = 10 * MINUTE_MS; now < 20 * MINUTE_MS; now += 7_001)
      for (let m = 0; m < rollCutoff(now); m++) expect(isLate(m, now - 60_000)).toBe(true);
    expect(ROLL_AFTER_MS).toBe(180_000);
  });

  it('isLate switches two minutes after the minute ends; the cutoff a minute later', () => {
    expect(isLate(10, 11 * MINUTE_MS + 119_999)).toBe(false);
    expect(isLate(10, 11 * MINUTE_MS + 120_000)).toBe(true);
    expect(rollCutoff(11 * MINUTE_MS + 179_999)).toBe(10);
    expect(rollCutoff(11 * MINUTE_MS + 180_000)).toBe(11);
  });
});
