import { describe, expect, it } from 'vitest';
import { isUuid, uuidv7 } from '../../lambdas/core/ids.js';

describe('unit: uuidv7', () => {
  it('is a version-7, RFC 4122-variant UUID carrying the millisecond time', () => {
    const now = Date.UTC(2026, 10, 29, 12, 0, 0, 123);
    const id = uuidv7(now);
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(now);
  });
  it('writes the dashes and both ends of the 48-bit time range', () => {
    expect(uuidv7(0)).toMatch(/^00000000-0000-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(uuidv7(2 ** 48 - 1)).toMatch(/^ffffffff-ffff-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(uuidv7(0x0123_4567_89ab).slice(0, 13)).toBe('01234567-89ab');
  });
  it('does not repeat within one millisecond (a push mints all its message ids with one now), across pool refills', () => {
    const now = 1_764_459_000_123;
    const ids = Array.from({ length: 5000 }, () => uuidv7(now));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => id.startsWith(uuidv7(now).slice(0, 13)))).toBe(true);
  });
  it('sorts by time and does not repeat', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => uuidv7(1_700_000_000_000 + i));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
