import { describe, expect, it } from 'vitest';
import {
  FAILURE_CAP_MS,
  RETRY_AFTER_CAP_MS,
  THROTTLE_CAP_MS,
  failureDelayMs,
  throttleDelayMs,
} from '../../server/core/targets/index.js';

const lowest = () => 0;
const highest = () => 0.999;

describe('targets: backoff after a throttle (or an unreachable target)', () => {
  // [consecutive, ceiling]: 1 s doubling, capped at 60 s. Full jitter: the delay is in [0, ceiling).
  const ceilings: [number, number][] = [
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [6, 32_000],
    [7, 60_000],
    [8, 60_000],
    [1_000, 60_000],
  ];
  it.each(ceilings)('throttle %i in a row: full jitter under %i ms', (consecutive, ceiling) => {
    expect(throttleDelayMs(consecutive, undefined, lowest)).toBe(0);
    expect(throttleDelayMs(consecutive, undefined, highest)).toBe(Math.floor(0.999 * ceiling));
    expect(throttleDelayMs(consecutive, undefined, () => 0.5)).toBe(ceiling / 2);
  });

  it('never drops below the Retry-After the target sent, capped at five minutes', () => {
    expect(throttleDelayMs(1, 5_000, lowest)).toBe(5_000);
    expect(throttleDelayMs(1, 5_000, highest)).toBe(5_000);
    // A Retry-After below the jittered delay changes nothing.
    expect(throttleDelayMs(7, 5_000, highest)).toBe(Math.floor(0.999 * THROTTLE_CAP_MS));
    expect(throttleDelayMs(1, 3_600_000, lowest)).toBe(RETRY_AFTER_CAP_MS);
    expect(throttleDelayMs(1, 1_500.2, lowest)).toBe(1_501);
    for (const ignored of [0, -5, Number.NaN]) expect(throttleDelayMs(1, ignored, lowest)).toBe(0);
  });

  it('counts a consecutive below 1 as the first throttle', () => {
    expect(throttleDelayMs(0, undefined, highest)).toBe(999);
    expect(throttleDelayMs(-3, undefined, highest)).toBe(999);
  });
});

describe('targets: backoff after a charged failure', () => {
  // [consecutive, ceiling]: 1 s doubling, capped at 30 s; the delay is in [ceiling / 2, ceiling).
  const ceilings: [number, number][] = [
    [1, 1_000],
    [2, 2_000],
    [5, 16_000],
    [6, 30_000],
    [50, 30_000],
  ];
  it.each(ceilings)('failure %i in a row: in [½, 1) of %i ms', (consecutive, ceiling) => {
    expect(failureDelayMs(consecutive, lowest)).toBe(ceiling / 2);
    expect(failureDelayMs(consecutive, highest)).toBe(Math.floor(ceiling / 2 + 0.999 * (ceiling / 2)));
    expect(failureDelayMs(consecutive, highest)).toBeLessThan(ceiling);
  });

  it('never exceeds its cap and never reaches zero', () => {
    for (let c = 0; c < 100; c++) {
      expect(failureDelayMs(c, highest)).toBeLessThan(FAILURE_CAP_MS);
      expect(failureDelayMs(c, lowest)).toBeGreaterThanOrEqual(500);
    }
  });
});
