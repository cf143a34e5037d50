/**
 * BisectBatchOnFunctionError within one lease or one set of claims: a batch of two or more
 * that failed as a whole is split, and the halves are invoked while the dispatcher still holds
 * the records, so a poison record is found without settling (and charging) its neighbours.
 * A pure state machine: the dispatcher asks {@link nextRange}, invokes those records, and
 * feeds the outcome to {@link bisectStep} until `nextRange` is null.
 *
 * The model, on one page:
 * - Ranges are half-open index spans of the original batch, halved with the left half the
 *   larger (⌈len/2⌉), and explored depth first, left before right, so ranges are tried in
 *   offset order.
 * - `first-failure` (leases, which ack by prefix): a range that succeeds extends the known-good
 *   prefix (it is always contiguous with it, left being tried first); the first single record
 *   that fails alone, or the first failure a partial answer names, ends the bisect. That record
 *   and everything after it are retried in order, one attempt charged.
 * - `all-failures` (claims): every range that succeeds is acked; every single record that
 *   fails alone, and every failure a partial answer names, is nacked (charged); the bisect
 *   runs until no range is left.
 * - A failed range of two or more is split; a partial answer ends splitting for its range.
 * - A range the target did not run (throttled, unreachable) stops the whole bisect: leases
 *   complete the prefix so far and release the rest; claims ack what succeeded and hand the
 *   rest back uncharged.
 *
 * Invocations, the whole-batch call included, when a record fails every batch holding it and
 * no other record fails one: `first-failure` ≤ 2·⌈log2 n⌉ + 1 (at each of the ⌈log2 n⌉ levels,
 * at most the left half, which passes, and the half holding the failure); `all-failures` with
 * f failing records ≤ 2·f·⌈log2 n⌉ + 1. Either way never more than 2n − 1, every range of the
 * halving tree: the worst case, reached by a target that fails every batch of two or more.
 *
 * @example
 * ```ts
 * let s = startBisect(records.length, 'first-failure', outcome.error);
 * for (let r = nextRange(s); r; r = nextRange(s)) s = bisectStep(s, await deliver(records.slice(r.from, r.to)));
 * const settle = leaseBisectResult(s); // { completed, rest, error, failedAt }
 * ```
 */
import { firstFailure, type ClaimSettlement, type LeaseSettlement, type Outcome } from './outcome.js';

/** `first-failure` for leases (stop at the first record that fails alone), `all-failures` for claims. */
export type BisectOrder = 'first-failure' | 'all-failures';

/** Records `from` .. `to` - 1 of the original batch. */
export interface BisectRange {
  from: number;
  to: number;
}

export interface BisectState {
  readonly n: number;
  readonly order: BisectOrder;
  /** Ranges still to invoke; the last is next (a stack, so left halves are tried first). */
  readonly pending: readonly BisectRange[];
  /** Indexes known to have succeeded, ascending. For `first-failure` always 0 .. ok.length - 1. */
  readonly ok: readonly number[];
  /** Indexes that failed on their own (or were named failed by a partial answer) → error. */
  readonly failed: ReadonlyMap<number, string>;
  /** Why the bisect stopped early: the target did not run a range. */
  readonly notRun?: string | undefined;
  /** Ranges invoked so far (the whole-batch call not counted). */
  readonly invocations: number;
}

const span = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

/** The two halves of a range, pushed so the left one is next. */
function halves(r: BisectRange): BisectRange[] {
  const mid = r.from + Math.ceil((r.to - r.from) / 2);
  return [
    { from: mid, to: r.to },
    { from: r.from, to: mid },
  ];
}

/**
 * Starts bisecting a batch of `n` records whose whole call failed with `error`. A batch of one
 * has nothing to split: it is that failure, and no range is invoked.
 *
 * @example
 * ```ts
 * const s = startBisect(8, 'all-failures', 'TypeError: x is undefined');
 * nextRange(s); // { from: 0, to: 4 }
 * ```
 */
export function startBisect(n: number, order: BisectOrder, error: string): BisectState {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`a bisect needs a batch of at least one record (n = ${n})`);
  const base = { n, order, ok: [], invocations: 0 };
  if (n === 1) return { ...base, pending: [], failed: new Map([[0, error]]) };
  return { ...base, pending: halves({ from: 0, to: n }), failed: new Map() };
}

/**
 * The range to invoke next, or null when the bisect is done.
 *
 * @example
 * ```ts
 * nextRange(startBisect(5, 'first-failure', 'e')); // { from: 0, to: 3 }
 * ```
 */
export function nextRange(state: BisectState): BisectRange | null {
  return state.pending[state.pending.length - 1] ?? null;
}

/**
 * Applies the outcome of invoking {@link nextRange}'s records (read against that range's own
 * transactionIds, so a partial answer's indexes count from `from`).
 *
 * @example
 * ```ts
 * let s = startBisect(4, 'first-failure', 'e');      // next: [0, 2)
 * s = bisectStep(s, { kind: 'ok' });                 // next: [2, 4)
 * s = bisectStep(s, { kind: 'failed', error: 'e' }); // next: [2, 3)
 * ```
 */
export function bisectStep(state: BisectState, outcome: Outcome): BisectState {
  const range = nextRange(state);
  if (range === null) throw new Error('the bisect is done: there is no range to apply an outcome to');
  const pending = state.pending.slice(0, -1);
  const invocations = state.invocations + 1;
  const first = state.order === 'first-failure';
  switch (outcome.kind) {
    case 'ok':
      return { ...state, pending, invocations, ok: [...state.ok, ...span(range.from, range.to)] };
    case 'partial': {
      const failed = new Map(state.failed);
      if (first) {
        const f = firstFailure(outcome.failed);
        if (f === undefined) return bisectStep(state, { kind: 'ok' });
        failed.set(range.from + f.index, f.error);
        const ok = [...state.ok, ...span(range.from, range.from + f.index)];
        return { ...state, pending: [], invocations, ok, failed };
      }
      for (const [i, error] of outcome.failed) failed.set(range.from + i, error);
      const ok = [...state.ok, ...span(range.from, range.to).filter((i) => !failed.has(i))];
      return { ...state, pending, invocations, ok, failed };
    }
    case 'failed': {
      if (range.to - range.from > 1) return { ...state, pending: [...pending, ...halves(range)], invocations };
      const failed = new Map(state.failed).set(range.from, outcome.error);
      return { ...state, pending: first ? [] : pending, invocations, failed };
    }
    case 'not-run':
      return { ...state, pending: [], invocations, notRun: outcome.error };
  }
}

/** A lease's settlement from a bisect, and the record that failed alone (null: none did). */
export interface LeaseBisectResult extends LeaseSettlement {
  failedAt: number | null;
}

function done(state: BisectState, order: BisectOrder): void {
  if (state.order !== order) throw new Error(`this bisect looks for ${state.order}, not ${order}`);
  if (nextRange(state) !== null) throw new Error('the bisect is not done: nextRange still has a range to invoke');
}

/**
 * What a finished `first-failure` bisect settles: the good prefix completed, then the failure
 * charged, the rest released (the target stopped running), or nothing left.
 *
 * @example
 * ```ts
 * leaseBisectResult(s); // { completed: 5, rest: 'charge', error: 'boom', failedAt: 5 }
 * ```
 */
export function leaseBisectResult(state: BisectState): LeaseBisectResult {
  done(state, 'first-failure');
  const completed = state.ok.length;
  const failure = state.failed.get(completed);
  if (failure !== undefined) return { completed, rest: 'charge', error: failure, failedAt: completed };
  if (state.notRun !== undefined) return { completed, rest: 'release', error: state.notRun, failedAt: null };
  // Every half passed: the batch failed only as a whole (a flaky target, or records failing together).
  return { completed, rest: 'none', failedAt: null };
}

/**
 * What a finished `all-failures` bisect settles: what succeeded is acked, what failed alone is
 * nacked and charged, and what the target did not get to (it stopped running) is nacked uncharged.
 *
 * @example
 * ```ts
 * claimBisectResult(s); // { ack: [0, 1, 3], nack: [{ index: 2, error: 'boom', charge: true }] }
 * ```
 */
export function claimBisectResult(state: BisectState): ClaimSettlement {
  done(state, 'all-failures');
  const ok = new Set(state.ok);
  const nack: ClaimSettlement['nack'] = [];
  for (let index = 0; index < state.n; index++) {
    const error = state.failed.get(index);
    if (error !== undefined) nack.push({ index, error, charge: true });
    else if (!ok.has(index)) nack.push({ index, error: state.notRun ?? 'not delivered', charge: false });
  }
  return { ack: [...state.ok], nack };
}
