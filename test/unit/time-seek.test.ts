// Seeking by time (core/time-seek.ts): one boundary rule for lease seeks, subscriptions and
// claim-group starts, and the binary search that applies it, on made-up segment lists.
import { describe, expect, it } from 'vitest';
import { committedAfter, startTimeSeek, stepTimeSeek, type SegmentTime } from '../../server/core/time-seek.js';

const T0 = Date.UTC(2026, 10, 1);

/** Runs the search over `segs` (contiguous, ascending by base) the way the service does. */
function seek(segs: readonly SegmentTime[], target: number): { first: number; probes: number } {
  const holding = (o: number): SegmentTime | undefined => segs.find((s) => s.base <= o && o <= s.end);
  let probes = 0;
  let step = startTimeSeek(target, segs[0], segs.at(-1));
  while (!('first' in step)) {
    probes++;
    step = stepTimeSeek(step.search, holding(step.probe));
  }
  return { first: step.first, probes };
}

/** Segments of `size` offsets, segment i committed at `at(i)`. */
function log(n: number, at: (i: number) => number, size = 10): SegmentTime[] {
  return Array.from({ length: n }, (_, i) => ({ base: i * size, end: i * size + size - 1, at: at(i) }));
}

/** A deterministic pseudo-random sequence (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('unit: seeking by time', () => {
  it('delivers from the first message committed after the instant: one committed at it is skipped', () => {
    expect(committedAfter(T0 + 1, T0)).toBe(true);
    expect(committedAfter(T0, T0)).toBe(false);
    const segs = log(100, (i) => T0 + i * 1000); // segment i (offsets 10i..10i+9) at T0 + i s
    expect(seek(segs, T0 + 42_000).first).toBe(430);
    expect(seek(segs, T0 + 42_000 - 1).first).toBe(420);
    expect(seek(segs, T0 + 42_500).first).toBe(430);
  });

  it('answers the head before every message, the tail after every one, 0 on an empty partition', () => {
    const segs = log(5, (i) => T0 + i * 1000).map((s) => ({ ...s, base: s.base + 300, end: s.end + 300 }));
    expect(seek(segs, T0 - 1)).toEqual({ first: 300, probes: 0 });
    expect(seek(segs, T0 + 4000)).toEqual({ first: 350, probes: 0 });
    expect(seek(segs, T0 + 10_000)).toEqual({ first: 350, probes: 0 });
    expect(seek([], T0)).toEqual({ first: 0, probes: 0 });
    expect(
      seek(
        log(1, () => T0),
        T0 - 1,
      ).first,
    ).toBe(0);
    expect(
      seek(
        log(1, () => T0),
        T0,
      ).first,
    ).toBe(10);
  });

  it('reads O(log n) segments', () => {
    const segs = log(10_000, (i) => T0 + i);
    for (const target of [T0 + 1, T0 + 4_321, T0 + 9_998]) {
      const r = seek(segs, target);
      expect(r.first).toBe((target - T0 + 1) * 10);
      expect(r.probes).toBeLessThanOrEqual(15);
    }
  });

  it('finds a crossing when commit times are out of offset order, between the two envelopes', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rnd = random(seed);
      // Pushes from instances whose clocks disagree by up to 5 s, and sizes from 1 to 20.
      let base = 0;
      const segs: SegmentTime[] = [];
      const n = 1 + Math.floor(rnd() * 200);
      for (let i = 0; i < n; i++) {
        const size = 1 + Math.floor(rnd() * 20);
        segs.push({ base, end: base + size - 1, at: T0 + i * 1000 + Math.floor((rnd() - 0.5) * 10_000) });
        base += size;
      }
      const tail = base;
      const target = T0 + Math.floor(rnd() * n * 1000);
      const { first } = seek(segs, target);
      // The rule: the segment before `first` was committed at or before the instant, the one at it after.
      const before = segs.find((s) => s.end === first - 1);
      const at = segs.find((s) => s.base === first);
      expect(before ? committedAfter(before.at, target) : first !== 0).toBe(false);
      expect(at ? committedAfter(at.at, target) : first === tail).toBe(true);
      // Between the first offset committed after the instant and the one after the last committed at or before it.
      const earliest = segs.find((s) => committedAfter(s.at, target))?.base ?? tail;
      const latest = (segs.findLast((s) => !committedAfter(s.at, target))?.end ?? -1) + 1;
      expect(first).toBeGreaterThanOrEqual(earliest);
      expect(first).toBeLessThanOrEqual(latest);
      // Seeking earlier by the largest disorder (how much earlier a later segment was committed
      // than an earlier one) replays everything committed after the instant.
      let disorder = 0;
      let highest = -Infinity;
      for (const s of segs) {
        disorder = Math.max(disorder, highest - s.at);
        highest = Math.max(highest, s.at);
      }
      expect(seek(segs, target - disorder).first).toBeLessThanOrEqual(earliest);
    }
  });

  it('answers what it has when a probed segment is gone (retention removed it meanwhile)', () => {
    const head = { base: 0, end: 9, at: T0 };
    let step = startTimeSeek(T0 + 50_500, head, { base: 990, end: 999, at: T0 + 99_000 });
    expect('probe' in step).toBe(true);
    if ('probe' in step) step = stepTimeSeek(step.search, undefined);
    expect(step).toEqual({ first: 990 });
  });
});
