/**
 * The pure rules of idempotent producers (server/core/producer-sequence.ts): slot texts sort so
 * that the take's string-range refusal means "this producer, this sequence or later", slots are
 * chosen without growing past their bound, and a refusal and a first attempt are judged right.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  PRODUCER_SLOTS,
  chooseSlot,
  decodeEntry,
  encodeEntry,
  judgeFirstAttempt,
  judgeRefusal,
  refusalRange,
  slotAttr,
  slotBaseAttr,
  type ProducerEntry,
} from '../../server/core/producer-sequence.js';

const entry = (o: Partial<ProducerEntry> = {}): ProducerEntry => ({
  producerId: 'c9Vb2kq0aLxE.0',
  sequence: 41,
  count: 100,
  at: 1_764_000_000_000,
  attempt: 0,
  taken: 100,
  ...o,
});
const inRange = (text: string, r: { after: string; upTo: string }): boolean => text > r.after && text <= r.upTo;

describe('producer slots', () => {
  it('round-trips an entry, and refuses foreign text', () => {
    const e = entry({ sequence: Number.MAX_SAFE_INTEGER, count: 10_000, attempt: 7, taken: 9_000 });
    expect(decodeEntry(encodeEntry(e))).toEqual(e);
    expect(decodeEntry('nonsense')).toBeUndefined();
    expect(decodeEntry(7)).toBeUndefined();
  });

  it('refuses a take on this producer at this sequence or later, and on nothing else', () => {
    const stamp = { producerId: 'p-1', sequence: 41 };
    const r = refusalRange(stamp);
    expect(inRange(encodeEntry(entry({ producerId: 'p-1', sequence: 41 })), r)).toBe(true);
    expect(inRange(encodeEntry(entry({ producerId: 'p-1', sequence: 41, count: 3, attempt: 9 })), r)).toBe(true);
    expect(inRange(encodeEntry(entry({ producerId: 'p-1', sequence: 1_000_000 })), r)).toBe(true);
    expect(inRange(encodeEntry(entry({ producerId: 'p-1', sequence: 40 })), r)).toBe(false);
    expect(inRange(encodeEntry(entry({ producerId: 'p-1', sequence: 9 })), r)).toBe(false);
    // Ids that extend or precede this one, in every character producer ids may hold.
    for (const other of ['p-1.x', 'p-1z', 'p-10', 'p-', 'P-1', 'p-1_', 'p-1-', 'p-0', 'p-2'])
      expect(inRange(encodeEntry(entry({ producerId: other, sequence: 99 })), r)).toBe(false);
  });

  it('lets a re-store pass the entry it replaces, and only a later attempt or sequence refuse it', () => {
    const past = entry({ producerId: 'p', sequence: 5, attempt: 0 });
    const r = refusalRange({ producerId: 'p', sequence: 5 }, past);
    expect(inRange(encodeEntry(past), r)).toBe(false);
    expect(inRange(encodeEntry({ ...past, attempt: 1, at: past.at - 10_000 }), r)).toBe(true);
    expect(inRange(encodeEntry({ ...past, sequence: 6 }), r)).toBe(true);
  });

  it("picks the producer's own slot, else an empty one, else the least recently used", () => {
    const attrs: Record<string, unknown> = {};
    for (let i = 0; i < PRODUCER_SLOTS; i++)
      attrs[slotAttr(i)] = encodeEntry(entry({ producerId: `p${i}`, at: 1000 + ((i * 5) % PRODUCER_SLOTS) }));
    expect(chooseSlot('p3', attrs)).toBe(3);
    expect(chooseSlot('new', attrs)).toBe(0); // at 1000, the oldest
    delete attrs[slotAttr(6)];
    expect(chooseSlot('new', attrs)).toBe(6);
    const h = chooseSlot('anyone', undefined);
    expect(h).toBeGreaterThanOrEqual(0);
    expect(h).toBeLessThan(PRODUCER_SLOTS);
    expect(chooseSlot('anyone', undefined)).toBe(h);
  });

  it('the client guide gives the bound the slots set: past it, use transactionIds', () => {
    const guide = readFileSync(new URL('../../docs/CLIENT.md', import.meta.url), 'utf8');
    expect(guide).toContain(`Past ${PRODUCER_SLOTS} producers per partition, use transactionIds`);
    expect(guide).toContain(`its ${PRODUCER_SLOTS} most recent producers`);
  });
});

describe('judging a refused take', () => {
  const stamp = { producerId: 'p', sequence: 5 };
  const attrs = (...es: { e: ProducerEntry; base?: number }[]): Record<string, unknown> =>
    Object.fromEntries(
      es.flatMap(({ e, base }, i): [string, string | number][] => [
        [slotAttr(i), encodeEntry(e)],
        [slotBaseAttr(i), base ?? 0],
      ]),
    );

  it('is a retry of the same push, with its base', () => {
    const e = entry({ producerId: 'p', sequence: 5, count: 3 });
    expect(judgeRefusal(stamp, 3, attrs({ e: entry({ producerId: 'q' }), base: 1 }, { e, base: 70 }))).toEqual({
      kind: 'retry',
      entry: e,
      base: 70,
    });
  });

  it('takes the latest attempt when one producer sits in two slots', () => {
    const a = entry({ producerId: 'p', sequence: 5, count: 3, attempt: 0 });
    const b = { ...a, attempt: 1 };
    expect(judgeRefusal(stamp, 3, attrs({ e: b, base: 90 }, { e: a, base: 70 }))).toMatchObject({ base: 90 });
  });

  it('is stale below the remembered sequence, and a misuse with another count', () => {
    expect(judgeRefusal(stamp, 3, attrs({ e: entry({ producerId: 'p', sequence: 8 }) }))).toEqual({
      kind: 'stale',
      last: 8,
    });
    expect(judgeRefusal(stamp, 4, attrs({ e: entry({ producerId: 'p', sequence: 5, count: 3 }) }))).toEqual({
      kind: 'reused',
      count: 3,
    });
  });
});

describe("judging a retry's first attempt", () => {
  const e = entry({ at: 10_000 });
  it('is committed, closed, in flight or abandoned', () => {
    expect(judgeFirstAttempt({ now: 10_001, entry: e, segment: { count: 100 }, gapCloseMs: 60_000 })).toBe('committed');
    expect(judgeFirstAttempt({ now: 10_001, entry: e, segment: { count: 0 }, gapCloseMs: 60_000 })).toBe('closed');
    expect(judgeFirstAttempt({ now: 69_999, entry: e, segment: undefined, gapCloseMs: 60_000 })).toBe('in-flight');
    expect(judgeFirstAttempt({ now: 70_000, entry: e, segment: undefined, gapCloseMs: 60_000 })).toBe('abandoned');
  });
});
