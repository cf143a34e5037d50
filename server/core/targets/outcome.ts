/**
 * Reading a target's result as Lambda reads a function's (docs/TARGETS.md, "Retries"), and
 * what it settles: the acks of one partition's lease, or of each claimed record.
 *
 * The model, on one page:
 * - A run that returned is all ok, unless `ReportBatchItemFailures` is on and the answer's
 *   `batchItemFailures` names records (by transactionId): those failed, the rest are ok. With
 *   the flag off the answer is never read. An invalid list (not an array, or naming an id not
 *   in the batch) fails the whole batch; an empty list, or none, is all ok.
 * - A function error fails the whole batch. A throttled or unreachable target did not run, so
 *   nothing is charged: the records are handed back as they were.
 * - A lease settles by prefix (`planAck` in core/leases.ts): the records before the first
 *   failure are completed, the failed one and everything after it are retried in order, and
 *   one attempt is charged to the partition's retry budget. Claims settle each record.
 *
 * @example
 * ```ts
 * const outcome = readOutcome(result, event.records.map((r) => r.transactionId), reportBatchItemFailures);
 * leaseSettlement(event.records.length, outcome); // { completed: 3, rest: 'charge', error: '…' }
 * ```
 */
import { failuresOf } from '../../../client/batch-outcome.js';
import type { InvokeResult } from './invoke-result.js';

/**
 * How one delivery ended for its records: all ok, some failed (index in the event → error), all
 * failed, or not run at all (throttled, unreachable: never charged).
 *
 * @example
 * ```ts
 * const o: Outcome = { kind: 'partial', failed: new Map([[2, 'card declined']]) };
 * ```
 */
export type Outcome =
  | { kind: 'ok' }
  | { kind: 'partial'; failed: Map<number, string> }
  | { kind: 'failed'; error: string }
  | { kind: 'not-run'; error: string; retryAfterMs?: number };

/** The error a whole batch fails with when its answer's batchItemFailures cannot be read. */
const invalidAnswer = (ids: readonly string[]): string =>
  `the target's batchItemFailures is not an array of { itemIdentifier } naming transactionIds of this event (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''}); the whole batch failed`;

/**
 * Reads an invoke result against the event's transactionIds (in event order).
 *
 * @example
 * ```ts
 * readOutcome({ kind: 'answered', value: { batchItemFailures: [{ itemIdentifier: 't2' }] } }, ['t1', 't2'], true);
 * // { kind: 'partial', failed: Map { 1 => 'reported failed by the handler (batchItemFailures)' } }
 * readOutcome({ kind: 'throttled', error: 'HTTP 429', retryAfterMs: 2000 }, ['t1'], true);
 * // { kind: 'not-run', error: 'HTTP 429', retryAfterMs: 2000 }
 * ```
 */
export function readOutcome(
  result: InvokeResult,
  transactionIds: readonly string[],
  reportBatchItemFailures: boolean,
): Outcome {
  switch (result.kind) {
    case 'answered': {
      if (!reportBatchItemFailures) return { kind: 'ok' };
      const failed = failuresOf(result.value, transactionIds);
      if (failed === undefined) return { kind: 'failed', error: invalidAnswer(transactionIds) };
      return failed.size === 0 ? { kind: 'ok' } : { kind: 'partial', failed };
    }
    case 'function-error':
      return { kind: 'failed', error: result.error };
    case 'throttled':
      return result.retryAfterMs === undefined
        ? { kind: 'not-run', error: result.error }
        : { kind: 'not-run', error: result.error, retryAfterMs: result.retryAfterMs };
    case 'unreachable':
      return { kind: 'not-run', error: result.error };
  }
}

/**
 * The lowest failed index of a partial outcome (its first failure in offset order), with its error.
 *
 * @example
 * ```ts
 * firstFailure(new Map([[3, 'x'], [1, 'y']])); // { index: 1, error: 'y' }
 * ```
 */
export function firstFailure(failed: ReadonlyMap<number, string>): { index: number; error: string } | undefined {
  let first: { index: number; error: string } | undefined;
  for (const [index, error] of failed) if (first === undefined || index < first.index) first = { index, error };
  return first;
}

/**
 * What one partition's batch acks: the completed prefix, and what happens to the rest —
 * nothing left (`none`), retried in order with one attempt charged (`charge`), or handed back
 * uncharged (`release`).
 */
export interface LeaseSettlement {
  /** Records acked as completed: indexes 0 .. completed - 1. */
  completed: number;
  rest: 'none' | 'charge' | 'release';
  /** The first failed record's error (charge), or why the target did not run (release). */
  error?: string;
}

/**
 * Settles a lease's batch of `n` records (offset order) from its outcome.
 *
 * @example
 * ```ts
 * leaseSettlement(5, { kind: 'partial', failed: new Map([[3, 'x'], [1, 'y']]) });
 * // { completed: 1, rest: 'charge', error: 'y' }: 1..4 come back, in order
 * ```
 */
export function leaseSettlement(n: number, outcome: Outcome): LeaseSettlement {
  switch (outcome.kind) {
    case 'ok':
      return { completed: n, rest: 'none' };
    case 'partial': {
      const first = firstFailure(outcome.failed);
      if (first === undefined) return { completed: n, rest: 'none' };
      return { completed: first.index, rest: 'charge', error: first.error };
    }
    case 'failed':
      return { completed: 0, rest: 'charge', error: outcome.error };
    case 'not-run':
      return { completed: 0, rest: 'release', error: outcome.error };
  }
}

/** What a claimed batch settles: records acked, and records handed back (charged: they count an attempt). */
export interface ClaimSettlement {
  ack: number[];
  nack: { index: number; error: string; charge: boolean }[];
}

/**
 * Settles a batch of `n` claimed records from its outcome.
 *
 * @example
 * ```ts
 * claimSettlement(3, { kind: 'partial', failed: new Map([[1, 'x']]) });
 * // { ack: [0, 2], nack: [{ index: 1, error: 'x', charge: true }] }
 * ```
 */
export function claimSettlement(n: number, outcome: Outcome): ClaimSettlement {
  const all = Array.from({ length: n }, (_, i) => i);
  switch (outcome.kind) {
    case 'ok':
      return { ack: all, nack: [] };
    case 'partial':
      return {
        ack: all.filter((i) => !outcome.failed.has(i)),
        nack: all.flatMap((i) => {
          const error = outcome.failed.get(i);
          return error === undefined ? [] : [{ index: i, error, charge: true }];
        }),
      };
    case 'failed':
      return { ack: [], nack: all.map((index) => ({ index, error: outcome.error, charge: true })) };
    case 'not-run':
      return { ack: [], nack: all.map((index) => ({ index, error: outcome.error, charge: false })) };
  }
}
