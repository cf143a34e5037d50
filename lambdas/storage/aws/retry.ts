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
 *   ({@link attemptsOf}, with `sameItem`): the SDK's retry of an applied put-if-absent fails
 *   its guard on our own item.
 */

/** Attempts past the SDK's own on a throttled request. */
export const THROTTLE_RETRIES = 4;
/** Re-sends of a transaction cancelled only by conflicts (or throttling) before giving up. */
export const CONTENTION_RETRIES = 5;
/** BatchGetItem rounds in a row that may make no progress before giving up. */
export const BATCH_GET_STALLS = 8;
/** Re-sends of an S3 conditional put answered 409 ConditionalRequestConflict. */
export const S3_CONFLICT_RETRIES = 5;

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

/**
 * Runs `call`, retrying throttling past the SDK's own attempts (up to {@link THROTTLE_RETRIES}
 * more): a throttled request was not applied, so repeating it is safe even for a conditional write.
 *
 * @example
 * ```ts
 * const out = await throttled(() => ddb.send(new GetItemCommand(input)));
 * ```
 */
export async function throttled<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= THROTTLE_RETRIES || !THROTTLED.has(errorName(err) ?? '')) throw err;
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
