// Retention boundaries (seed 004) and payload sealing, as pure functions.
import { describe, expect, it } from 'vitest';
import {
  consumedFloor,
  deletableSegments,
  expiredByRetention,
  idleStep,
  partitionRemovable,
  retentionWindows,
  unreadKeepFrom,
} from '../../server/core/retention.js';
import { envelopeKeyId, localKeyId, open, parseKey, seal } from '../../server/core/sealing.js';

const T0 = Date.UTC(2026, 10, 1);
const segs = [
  { base: 0, end: 9, at: T0 },
  { base: 10, end: 19, at: T0 + 5_000 },
  { base: 20, end: 29, at: T0 + 20_000 },
];
const opts = (
  o: Partial<{ retentionEnabled: boolean; retentionSeconds: number; completedRetentionSeconds: number }>,
) => ({ retentionEnabled: true, retentionSeconds: 0, completedRetentionSeconds: 0, ...o });

describe('unit: seed 004 — retention', () => {
  it('004.6 retention is opt-in: without retentionEnabled nothing goes', () => {
    const w = retentionWindows(opts({ retentionEnabled: false, retentionSeconds: 1 }), T0 + 1e9);
    expect(deletableSegments(segs, w, null, false)).toBe(0);
  });

  it('004.7 retentionSeconds deletes whole segments by age, consumed or not', () => {
    const w = retentionWindows(opts({ retentionSeconds: 10 }), T0 + 15_000);
    expect(deletableSegments(segs, w, null, false)).toBe(2);
    expect(deletableSegments(segs, w, 0, false)).toBe(2);
  });

  it('004.8 completedRetentionSeconds deletes only below MIN(committed) + 1; no cursor rows keep everything', () => {
    const w = retentionWindows(opts({ completedRetentionSeconds: 1 }), T0 + 60_000);
    expect(consumedFloor([25, 14, 40])).toBe(15);
    expect(deletableSegments(segs, w, consumedFloor([25, 14, 40]), false)).toBe(1);
    expect(deletableSegments(segs, w, consumedFloor([29]), false)).toBe(3);
    expect(deletableSegments(segs, w, consumedFloor([]), false)).toBe(0);
  });

  it('004.8 a registered group without a cursor row on the partition keeps what it is owed: all of it, or what was pushed from its instant on', () => {
    const w = retentionWindows(opts({ completedRetentionSeconds: 1 }), T0 + 60_000);
    const floor = consumedFloor([29]);
    expect(unreadKeepFrom([])).toBeNull();
    expect(deletableSegments(segs, w, floor, false, unreadKeepFrom([]))).toBe(3);
    expect(
      unreadKeepFrom([
        { mode: 'all', from: null },
        { mode: 'new', from: T0 },
      ]),
    ).toBe(Number.NEGATIVE_INFINITY);
    expect(deletableSegments(segs, w, floor, false, unreadKeepFrom([{ mode: 'all', from: null }]))).toBe(0);
    // A `new` / `from` group starts after the last message pushed before its instant.
    expect(
      unreadKeepFrom([
        { mode: 'from', from: T0 + 20_000 },
        { mode: 'new', from: T0 + 5_000 },
      ]),
    ).toBe(T0 + 5_000);
    expect(deletableSegments(segs, w, floor, false, T0 + 5_000)).toBe(1);
    expect(deletableSegments(segs, w, floor, false, T0 + 5_001)).toBe(2);
    // Retention by age is not affected: it deletes regardless of consumption.
    const age = retentionWindows(opts({ retentionSeconds: 10 }), T0 + 60_000);
    expect(deletableSegments(segs, age, null, false, Number.NEGATIVE_INFINITY)).toBe(3);
  });

  it('004.9 the newest segment always stays (it anchors the next offset); reads filter what expired', () => {
    const w = retentionWindows(opts({ retentionSeconds: 1 }), T0 + 60_000);
    expect(deletableSegments(segs, w, null, true)).toBe(2);
    expect(expiredByRetention(T0 + 20_000, w)).toBe(true);
    expect(expiredByRetention(T0 + 59_500, w)).toBe(false);
  });

  it('004.10 an empty partition is removed only after 30 idle days', () => {
    const day = 86_400_000;
    expect(partitionRemovable({ lastActivityAt: T0, liveMessages: false }, T0 + 30 * day)).toBe(true);
    expect(partitionRemovable({ lastActivityAt: T0, liveMessages: false }, T0 + 30 * day - 1)).toBe(false);
    expect(partitionRemovable({ lastActivityAt: T0, liveMessages: true }, T0 + 300 * day)).toBe(false);
  });

  it('completedRetentionSeconds counts record-claim groups: their position, or a redriven record below it, holds the floor', () => {
    const w = retentionWindows(opts({ completedRetentionSeconds: 1 }), T0 + 60_000);
    // Lease groups are past everything; a claim group still needs offset 12.
    expect(consumedFloor([29], [12])).toBe(12);
    expect(deletableSegments(segs, w, consumedFloor([29], [12]), false)).toBe(1);
    expect(deletableSegments(segs, w, consumedFloor([29]), false)).toBe(3);
    // Claim groups alone set a floor too (no lease cursor rows on the partition).
    expect(consumedFloor([], [20])).toBe(20);
    expect(deletableSegments(segs, w, consumedFloor([], [20]), false)).toBe(2);
    expect(consumedFloor([], [])).toBeNull();
  });

  it('004.10 an idle partition is marked first and retired only once the grace period passed with the mark standing and the partition unchanged', () => {
    const grace = 900_000;
    const mark = { at: T0, end: 7 };
    expect(idleStep({ removable: false, mark: undefined, end: 7 }, T0, grace)).toBe('keep');
    expect(idleStep({ removable: true, mark: undefined, end: 7 }, T0, grace)).toBe('mark');
    expect(idleStep({ removable: true, mark, end: 7 }, T0 + grace - 1, grace)).toBe('wait');
    expect(idleStep({ removable: true, mark, end: 7 }, T0 + grace, grace)).toBe('retire');
    // A push that found the partition before the mark committed since: the grace starts over.
    expect(idleStep({ removable: true, mark, end: 8 }, T0 + grace, grace)).toBe('mark');
    expect(idleStep({ removable: false, mark, end: 8 }, T0 + grace, grace)).toBe('unmark');
  });
});

describe('unit: payload sealing (encryptionEnabled)', () => {
  const key = Buffer.alloc(32, 9);

  it('seals with AES-256-GCM under a named key and opens back to the exact bytes', () => {
    const plain = Buffer.from('{"card":"4111"}');
    const id = localKeyId(key);
    const env = seal(key, id, plain);
    expect(env.includes(plain)).toBe(false);
    expect(envelopeKeyId(env)).toBe(id);
    expect(open(key, env).equals(plain)).toBe(true);
  });

  it('refuses a tampered envelope and a wrong key', () => {
    const env = seal(key, 'k1', Buffer.from('x'));
    env[env.length - 1] = (env[env.length - 1] as number) ^ 1;
    expect(() => open(key, env)).toThrow();
    expect(() => open(Buffer.alloc(32, 1), seal(key, 'k1', Buffer.from('x')))).toThrow();
  });

  it('parses SLUICE_ENCRYPTION_KEY as base64 of 32 bytes, with a usable message otherwise', () => {
    expect(parseKey(key.toString('base64'))).toEqual(key);
    expect(() => parseKey('c2hvcnQ=')).toThrow(/32 bytes.*openssl rand -base64 32/);
  });
});
