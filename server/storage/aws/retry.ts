/**
 * The adapter's own retries, each covering what the SDK's (3 attempts, then the error) does not:
 *
 * - throttling past the SDK's attempts ({@link throttled}): a throttled request was not
 *   applied, so repeating it is safe even for a conditional write;
 * - `TransactionConflict` cancellations ({@link CONTENTION_RETRIES}, in the item store): the
 *   SDK does not retry a cancelled transaction, yet nothing was written and it may be re-sent;
 * - unprocessed BatchGetItem keys ({@link BATCH_GET_STALLS}): a partial answer is a success to
 *   the SDK, the rest must be asked for again;
 * - S3's 409 on concurrent conditional writes ({@link S3_CONFLICT_RETRIES}): the retry sees
 *   the winner (412) or succeeds;
 * - and, not a retry but its consequence, recognising its own write after a lost answer
 *   ({@link attemptsOf}, with `sameItem`): the SDK's retry (or ours) of an applied guarded
 *   write fails its guard on our own item.
 *
 * What is left after them (throttling past every retry, 5xx answers, no answer at all) becomes
 * the port's `StoreUnavailableError` ({@link unavailable}), which the HTTP layer answers 503.
 */

import { StoreUnavailableError } from '../port.js';

/** Attempts past the SDK's own on a throttled request. */
export const THROTTLE_RETRIES = 4;
/** Re-sends of a transaction cancelled only by conflicts (or throttling) before giving up. */
export const CONTENTION_RETRIES = 5;
/** BatchGetItem rounds in a row that may make no progress before giving up. */
export const BATCH_GET_STALLS = 8;
/** Re-sends of an S3 conditional put answered 409 ConditionalRequestConflict. */
export const S3_CONFLICT_RETRIES = 5;
/** Suggested wait (`Retry-After`) after throttling outlasted the retries: they took seconds already. */
export const THROTTLED_RETRY_AFTER_S = 2;
/** Suggested wait after no answer or a 5xx: long enough for a failover or a network blip. */
export const UNREACHABLE_RETRY_AFTER_S = 5;

/**
 * Resolves after `ms` milliseconds.
 *
 * @example
 * ```ts
 * await sleep(backoff(attempt, 20, 1_000));
 * ```
 */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Full-jitter exponential backoff: a random delay below `min(capMs, baseMs * 2^attempt)`.
 *
 * @example
 * ```ts
 * await sleep(backoff(2, 50, 2_000)); // somewhere in [0, 200) ms
 * ```
 */
export const backoff = (attempt: number, baseMs: number, capMs: number): number =>
  Math.random() * Math.min(capMs, baseMs * 2 ** attempt);

const THROTTLED = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'SlowDown',
  'ServiceUnavailable',
]);

/**
 * The `name` of an SDK error (its exception type), if it has one.
 *
 * @example
 * ```ts
 * if (errorName(err) === 'ConditionalCheckFailedException') return { ok: false, current };
 * ```
 */
export const errorName = (err: unknown): string | undefined =>
  typeof err === 'object' && err !== null && 'name' in err && typeof err.name === 'string' ? err.name : undefined;

/**
 * The HTTP status of a failed SDK call, if it got an answer.
 *
 * @example
 * ```ts
 * if (statusOf(err) === 404) return undefined;
 * ```
 */
export function statusOf(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && '$metadata' in err) {
    return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  }
  return undefined;
}

/** Node's codes for a connection that failed or died (the SDK passes them through). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
/** The SDK's names for a request that got no answer in time. */
const TIMEOUT_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);

/**
 * Whether an SDK error, after every retry, means the store was throttling (the request was not
 * applied).
 *
 * @example
 * ```ts
 * if (isThrottling(err)) await sleep(backoff(attempt, 100, 2_000));
 * ```
 */
export const isThrottling = (err: unknown): boolean => THROTTLED.has(errorName(err) ?? '');

/**
 * The port's {@link StoreUnavailableError} for an SDK error that means the store could not take
 * the request (throttling, a 5xx, no answer), or `undefined` for any other error (a failed guard,
 * a missing key, a bad request), which callers handle or rethrow as it is.
 *
 * @example
 * ```ts
 * throw unavailable(err, 'PutItem') ?? err;
 * ```
 */
export function unavailable(err: unknown, what: string): StoreUnavailableError | undefined {
  const name = errorName(err) ?? '';
  const status = statusOf(err);
  const code = (err as { code?: unknown } | undefined)?.code;
  if (isThrottling(err)) {
    return new StoreUnavailableError('throttled', THROTTLED_RETRY_AFTER_S, `${what} was throttled past every retry`, {
      cause: err,
    });
  }
  if (status !== undefined && status >= 500) {
    return new StoreUnavailableError('failing', UNREACHABLE_RETRY_AFTER_S, `${what} failed with ${status} ${name}`, {
      cause: err,
    });
  }
  if (TIMEOUT_NAMES.has(name) || (typeof code === 'string' && NETWORK_CODES.has(code))) {
    return new StoreUnavailableError('unreachable', UNREACHABLE_RETRY_AFTER_S, `${what} got no answer (${name})`, {
      cause: err,
    });
  }
  return undefined;
}

/**
 * Runs `call`, retrying throttling past the SDK's own attempts (up to {@link THROTTLE_RETRIES}
 * more): a throttled request was not applied, so repeating it is safe even for a conditional
 * write. What still fails for want of the store is thrown as {@link unavailable} says; other
 * errors as they are. `call` gets the number of the send (0 first), so a guarded write can
 * tell that an earlier send of its own may have been applied.
 *
 * @example
 * ```ts
 * const out = await throttled('GetItem', () => ddb.send(new GetItemCommand(input)));
 * ```
 */
export async function throttled<T>(what: string, call: (send: number) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call(attempt);
    } catch (err) {
      if (attempt >= THROTTLE_RETRIES || !isThrottling(err)) throw unavailable(err, what) ?? err;
      await sleep(100 + backoff(attempt, 100, 2_000));
    }
  }
}

/**
 * The SDK's attempt count on a failed call (>1 means an earlier attempt may have applied).
 *
 * @example
 * ```ts
 * if (attemptsOf(err) > 1 && sameItem(found, sent)) return { ok: true };
 * ```
 */
export function attemptsOf(err: unknown): number {
  if (typeof err === 'object' && err !== null && '$metadata' in err) {
    const meta = (err as { $metadata?: { attempts?: number } }).$metadata;
    return meta?.attempts ?? 1;
  }
  return 1;
}
