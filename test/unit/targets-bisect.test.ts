import { describe, expect, it } from 'vitest';
import {
  bisectStep,
  claimBisectResult,
  leaseBisectResult,
  nextRange,
  startBisect,
  type BisectOrder,
  type BisectRange,
  type BisectState,
  type Outcome,
} from '../../server/core/targets/index.js';
import { randomSource } from './json-random.js';

/** A target as the bisect sees it: the outcome of invoking records from .. to - 1 (call 0 is the whole batch). */
type Target = (r: BisectRange, call: number) => Outcome;

/** A target where each record in `failing` fails every batch holding it, and nothing else fails. */
const poisoned =
  (failing: ReadonlySet<number>): Target =>
  (r) => {
    for (let i = r.from; i < r.to; i++) if (failing.has(i)) return { kind: 'failed', error: `boom at ${i}` };
    return { kind: 'ok' };
  };

/** Runs a bisect of `n` records to its end the way the dispatcher does; returns the state and the ranges invoked. */
function drive(n: number, order: BisectOrder, target: Target): { state: BisectState; calls: BisectRange[] } {
  const whole = target({ from: 0, to: n }, 0);
  if (whole.kind !== 'failed') throw new Error('a bisect starts from a batch that failed as a whole');
  let state = startBisect(n, order, whole.error);
  const calls: BisectRange[] = [];
  for (let r = nextRange(state); r !== null; r = nextRange(state)) {
    calls.push(r);
    state = bisectStep(state, target(r, calls.length));
  }
  expect(state.invocations).toBe(calls.length);
  return { state, calls };
}

const log2ceil = (n: number): number => Math.ceil(Math.log2(n));
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

describe('targets: bisect, first-failure (leases)', () => {
  const sizes = range(17).map((i) => i + 1);
  const positions = sizes.flatMap((n) => range(n).map((p) => [n, p] as const));

  it.each(positions)('a batch of %i with the poison record at %i', (n, p) => {
    const { state, calls } = drive(n, 'first-failure', poisoned(new Set([p])));
    expect(leaseBisectResult(state)).toEqual({ completed: p, rest: 'charge', error: `boom at ${p}`, failedAt: p });
    // The whole-batch call, then at most two ranges per level of halving.
    expect(1 + calls.length).toBeLessThanOrEqual(2 * log2ceil(n) + 1);
    // Ranges are tried in offset order: nothing past the poison record is invoked.
    expect(calls.every((c) => c.from <= p)).toBe(true);
  });

  it('finds the first of several failing records (seeded random sets)', () => {
    const rnd = randomSource(17);
    for (let round = 0; round < 300; round++) {
      const n = 1 + rnd.below(40);
      const failing = new Set(range(n).filter(() => rnd.below(4) === 0));
      if (failing.size === 0) failing.add(rnd.below(n));
      const first = Math.min(...failing);
      const { state, calls } = drive(n, 'first-failure', poisoned(failing));
      expect(leaseBisectResult(state)).toMatchObject({ completed: first, rest: 'charge', failedAt: first });
      expect(1 + calls.length).toBeLessThanOrEqual(2 * log2ceil(n) + 1);
    }
  });

  it('a batch of one is its own failure: no range is invoked', () => {
    const s = startBisect(1, 'first-failure', 'whole');
    expect(nextRange(s)).toBeNull();
    expect(leaseBisectResult(s)).toEqual({ completed: 0, rest: 'charge', error: 'whole', failedAt: 0 });
  });

  it('halves that all pass complete the whole batch (the failure was the batch, not a record)', () => {
    const { state, calls } = drive(8, 'first-failure', (_r, call) =>
      call === 0 ? { kind: 'failed', error: 'flaky' } : { kind: 'ok' },
    );
    expect(calls).toEqual([
      { from: 0, to: 4 },
      { from: 4, to: 8 },
    ]);
    expect(leaseBisectResult(state)).toEqual({ completed: 8, rest: 'none', failedAt: null });
  });

  it('a partial answer ends splitting its range; its first failure is the failure', () => {
    // The target fails batches of more than 4 as a whole, and answers smaller ones record by record.
    const target: Target = (r) => {
      const bad = [9, 10].filter((i) => i >= r.from && i < r.to);
      if (bad.length === 0) return { kind: 'ok' };
      if (r.to - r.from > 4) return { kind: 'failed', error: 'whole' };
      return { kind: 'partial', failed: new Map(bad.reverse().map((i) => [i - r.from, `bad ${i}`])) };
    };
    const { state, calls } = drive(16, 'first-failure', target);
    expect(calls).toEqual([
      { from: 0, to: 8 },
      { from: 8, to: 16 },
      { from: 8, to: 12 },
    ]);
    expect(leaseBisectResult(state)).toEqual({ completed: 9, rest: 'charge', error: 'bad 9', failedAt: 9 });
  });

  it('a range the target did not run stops the bisect: the good prefix completes, the rest is released', () => {
    const poison = poisoned(new Set([5]));
    const { state, calls } = drive(8, 'first-failure', (r, call) =>
      call === 3 ? { kind: 'not-run', error: 'HTTP 429', retryAfterMs: 1_000 } : poison(r, call),
    );
    expect(calls).toEqual([
      { from: 0, to: 4 },
      { from: 4, to: 8 },
      { from: 4, to: 6 },
    ]);
    expect(leaseBisectResult(state)).toEqual({ completed: 4, rest: 'release', error: 'HTTP 429', failedAt: null });
  });
});

describe('targets: bisect, all-failures (claims)', () => {
  it('finds every failing record (seeded random sets), within the invocation bound', () => {
    const rnd = randomSource(4242);
    for (let round = 0; round < 400; round++) {
      const n = round < 200 ? 1 + (round % 17) : 1 + rnd.below(100);
      const failing = new Set(range(n).filter(() => rnd.below(5) === 0));
      if (failing.size === 0) failing.add(rnd.below(n));
      const { state, calls } = drive(n, 'all-failures', poisoned(failing));
      const settled = claimBisectResult(state);
      expect(settled.ack).toEqual(range(n).filter((i) => !failing.has(i)));
      expect(settled.nack).toEqual(
        [...failing].sort((a, b) => a - b).map((index) => ({ index, error: `boom at ${index}`, charge: true })),
      );
      expect(1 + calls.length).toBeLessThanOrEqual(Math.min(2 * n - 1, 2 * failing.size * log2ceil(n) + 1));
    }
  });

  it('a partial answer ends splitting its range and its failures are taken as they are', () => {
    const bad = new Set([1, 9, 10]);
    const target: Target = (r) => {
      const hit = range(r.to - r.from).filter((j) => bad.has(r.from + j));
      if (hit.length === 0) return { kind: 'ok' };
      if (r.to - r.from > 4) return { kind: 'failed', error: 'whole' };
      return { kind: 'partial', failed: new Map(hit.map((j) => [j, `bad ${r.from + j}`])) };
    };
    const { state, calls } = drive(16, 'all-failures', target);
    expect(calls).toEqual([
      { from: 0, to: 8 },
      { from: 0, to: 4 },
      { from: 4, to: 8 },
      { from: 8, to: 16 },
      { from: 8, to: 12 },
      { from: 12, to: 16 },
    ]);
    const settled = claimBisectResult(state);
    expect(settled.ack).toEqual(range(16).filter((i) => !bad.has(i)));
    expect(settled.nack).toEqual([1, 9, 10].map((index) => ({ index, error: `bad ${index}`, charge: true })));
  });

  it('a range the target did not run stops the bisect: what passed is acked, failures charged, the rest uncharged', () => {
    const poison = poisoned(new Set([0, 6]));
    const { state, calls } = drive(8, 'all-failures', (r, call) =>
      call === 7 ? { kind: 'not-run', error: 'ECONNREFUSED' } : poison(r, call),
    );
    expect(calls).toHaveLength(7);
    expect(calls[6]).toEqual({ from: 4, to: 6 });
    expect(claimBisectResult(state)).toEqual({
      ack: [1, 2, 3],
      nack: [
        { index: 0, error: 'boom at 0', charge: true },
        ...[4, 5, 6, 7].map((index) => ({ index, error: 'ECONNREFUSED', charge: false })),
      ],
    });
  });
});

describe('targets: bisect, the worst case and misuse', () => {
  // Fails every batch of two or more, passes every single record: the failure is the combination.
  const combination: Target = (r) => (r.to - r.from > 1 ? { kind: 'failed', error: 'together' } : { kind: 'ok' });

  it.each([2, 3, 8, 13])('a target failing every batch of two or more costs 2n - 1 invocations (n = %i)', (n) => {
    const claims = drive(n, 'all-failures', combination);
    expect(1 + claims.calls.length).toBe(2 * n - 1);
    expect(claimBisectResult(claims.state)).toEqual({ ack: range(n), nack: [] });
    const leases = drive(n, 'first-failure', combination);
    expect(1 + leases.calls.length).toBe(2 * n - 1);
    expect(leaseBisectResult(leases.state)).toEqual({ completed: n, rest: 'none', failedAt: null });
  });

  it('refuses what is not a bisect', () => {
    expect(() => startBisect(0, 'first-failure', 'e')).toThrow(RangeError);
    expect(() => startBisect(2.5, 'all-failures', 'e')).toThrow(RangeError);
    const done = startBisect(1, 'all-failures', 'e');
    expect(() => bisectStep(done, { kind: 'ok' })).toThrow(/done/);
    expect(() => leaseBisectResult(done)).toThrow(/all-failures/);
    const running = startBisect(4, 'first-failure', 'e');
    expect(() => leaseBisectResult(running)).toThrow(/not done/);
    expect(() => claimBisectResult(running)).toThrow(/first-failure/);
  });

  it('never changes the state it is given', () => {
    const s0 = startBisect(4, 'all-failures', 'e');
    const copy = structuredClone(s0);
    bisectStep(s0, { kind: 'failed', error: 'e' });
    bisectStep(s0, { kind: 'partial', failed: new Map([[0, 'x']]) });
    expect(s0).toEqual(copy);
  });
});
