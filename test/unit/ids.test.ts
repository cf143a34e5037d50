import { describe, expect, it } from 'vitest';
import { isUuid, randomFromPool, uuidv7, uuidv7Derived } from '../../server/core/ids.js';

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
  it('strictly increases within one millisecond in one process (the counter), and without a time', () => {
    const now = 1_764_459_000_456;
    const same = Array.from({ length: 5000 }, () => uuidv7(now));
    expect(same.every((id, i) => i === 0 || id > same[i - 1]!)).toBe(true);
    const wall = Array.from({ length: 5000 }, () => uuidv7());
    expect(wall.every((id, i) => i === 0 || id > wall[i - 1]!)).toBe(true);
  });
  it('sorts by time and does not repeat', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => uuidv7(1_700_000_000_000 + i));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('randomFromPool', () => {
  it('hands out distinct copies across pool refills, interleaved with uuidv7', () => {
    const seen = new Set<string>();
    const kept: Buffer[] = [];
    for (let i = 0; i < 3000; i++) {
      const b = randomFromPool(16);
      expect(b.length).toBe(16);
      kept.push(b);
      seen.add(b.toString('hex'));
      if (i % 3 === 0) uuidv7();
    }
    expect(seen.size).toBe(3000);
    // Copies: a refill of the pool does not change what was handed out.
    expect(new Set(kept.map((b) => b.toString('hex'))).size).toBe(3000);
  });

  it('refuses sizes outside 1..64', () => {
    expect(() => randomFromPool(0)).toThrow(/1 to 64/);
    expect(() => randomFromPool(65)).toThrow(/1 to 64/);
  });
});

describe('unit: uuidv7Derived', () => {
  it('gives the same id for the same time, seed and index, a version-7 UUID, distinct across indexes', () => {
    const now = Date.UTC(2026, 11, 1, 21, 0, 0, 7);
    const seed = Buffer.from('00112233445566778899ffffffff', 'hex');
    const ids = Array.from({ length: 1000 }, (_, i) => uuidv7Derived(now, seed, i));
    expect(uuidv7Derived(now, seed, 5)).toBe(ids[5]);
    expect(new Set(ids).size).toBe(1000);
    for (const id of [ids[0]!, ids[999]!]) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe('7');
      expect(['8', '9', 'a', 'b']).toContain(id[19]);
      expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(now);
    }
    // Another time changes only the time part: a stamped push's attempts share the rest.
    expect(uuidv7Derived(now + 1, seed, 5).slice(14)).toBe(ids[5]!.slice(14));
    expect(uuidv7Derived(now, Buffer.from('ff112233445566778899', 'hex'), 5)).not.toBe(ids[5]);
  });
});
