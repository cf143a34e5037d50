import { describe, expect, it } from 'vitest';
import { INSTANT_RANGE } from '../../contract/schemas.js';
import { MAX_WINDOW_MS, windowOf } from '../../server/core/queue-stats.js';

describe('unit: admin series windows', () => {
  const now = Date.UTC(2026, 11, 1);
  it('defaults to the hour up to now and keeps a window within the limit', () => {
    expect(windowOf({}, now)).toEqual({ from: now - 3_600_000, to: now });
    expect(windowOf({ from: now - 86_400_000 }, now)).toEqual({ from: now - 86_400_000, to: now });
  });
  it('cuts a window of centuries to the last MAX_WINDOW_MS before its end (no millions of buckets)', () => {
    expect(windowOf({ from: -8.64e15, to: 8.64e15 }, now)).toEqual({ from: 8.64e15 - MAX_WINDOW_MS, to: 8.64e15 });
  });
  it('starts no earlier than the earliest instant the API takes (0000-01-01), and is never empty', () => {
    const earliest = INSTANT_RANGE.min;
    expect(windowOf({ to: earliest + 60_000 }, now)).toEqual({ from: earliest, to: earliest + 60_000 });
    expect(windowOf({ to: earliest }, now)).toEqual({ from: earliest, to: earliest + 3_600_000 });
    expect(windowOf({ from: earliest - 1, to: earliest + 1 }, now).from).toBe(earliest);
  });
});
