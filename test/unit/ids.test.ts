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
  it('sorts by time and does not repeat', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => uuidv7(1_700_000_000_000 + i));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
