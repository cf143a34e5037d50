/**
 * The retry policy: which failures are retried, and how long to wait before the next try.
 * Pure functions, so tests drive them with a fake clock and a fixed random source.
 *
 * A call is one of three kinds:
 * - `idempotent`: repeating it changes nothing (reads, acks and extends that name their lease
 *   or delivery, pushes that carry a transactionId, configure, seek, deletes). Retried on
 *   throttling (429), 5xx, network errors and timeouts.
 * - `unsafe`: a repeat could apply it twice (a transaction, a DLQ replay). Retried only when
 *   the server certainly did nothing: a 429 (refused before any write) or a connection that
 *   was never made.
 * - `none`: never retried.
 *
 * Other 4xx answers are never retried: the request is wrong and will stay wrong.
 */
import { SluiceApiError, SluiceNetworkError, SluiceTimeoutError } from './errors.js';

export type RetryKind = 'idempotent' | 'unsafe' | 'none';

export interface RetryPolicy {
  /** Tries in all, the first included (default 5; 1 turns retries off). */
  attempts: number;
  /** Wait before the first retry, before jitter (default 200 ms). */
  baseDelayMs: number;
  /** Ceiling of one wait (default 10 s). */
  maxDelayMs: number;
  /** Growth per retry (default 2). */
  factor: number;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  attempts: 5,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  factor: 2,
});

/** Whether `err` (from try number `attempt`, 1-based) is worth another try for a call of `kind`. */
export function isRetryable(err: unknown, kind: RetryKind): boolean {
  if (kind === 'none') return false;
  if (err instanceof SluiceApiError) {
    if (err.status === 429) return true;
    if (err.status >= 500 && err.status <= 599) return kind === 'idempotent';
    return false;
  }
  if (err instanceof SluiceTimeoutError) return kind === 'idempotent';
  if (err instanceof SluiceNetworkError) return kind === 'idempotent' || err.notSent;
  return false;
}

/**
 * Wait before retry number `retry` (1 = the first retry): exponential growth with "equal
 * jitter" (half fixed, half random), so clients that failed together do not retry together,
 * and no wait collapses to zero. A server's `Retry-After` is honoured as a floor.
 *
 * @example
 * ```ts
 * backoffDelay(1, DEFAULT_RETRY, () => 0.5); // 150: 100 fixed + 50 of jitter
 * ```
 */
export function backoffDelay(
  retry: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
  retryAfterMs?: number,
): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * policy.factor ** Math.max(0, retry - 1));
  const delay = cap / 2 + random() * (cap / 2);
  return Math.round(
    retryAfterMs !== undefined && retryAfterMs > delay
      ? Math.min(retryAfterMs, Math.max(policy.maxDelayMs, delay))
      : delay,
  );
}

/** `Retry-After` (seconds or an HTTP date) in milliseconds, if present and sane. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const s = Number(value);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const t = Date.parse(value);
  return Number.isFinite(t) ? Math.max(0, t - now) : undefined;
}

/** An abortable sleep; rejects with the signal's reason when aborted. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the signal's own reason, as node:timers/promises rejects
    const abort = (): void => reject(signal?.reason);
    if (signal?.aborted) {
      abort();
      return;
    }
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      abort();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
