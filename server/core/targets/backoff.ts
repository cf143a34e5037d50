/**
 * When to try a target again. Pure: the randomness is injected (`random` in [0, 1), as
 * `Math.random`), so a test pins the jitter.
 *
 * The model, on one page:
 * - A throttled or unreachable target did not run. Its loop backs off exponentially with full
 *   jitter (a delay uniform in [0, base)): many dispatchers throttled at once spread out rather
 *   than return together. A `Retry-After` the target sent is a floor, since it said when.
 * - A charged failure (the target ran and failed) is retried sooner: a record that fails once
 *   often passes the next time. The delay still doubles, with jitter in [base/2, base), so it
 *   never drops to nothing: a target that fails everything is not hammered.
 * - `consecutive` counts the throttles (or charged failures) in a row, this one included: 1 for
 *   the first. A success resets it.
 *
 * @example
 * ```ts
 * throttleDelayMs(3, undefined, Math.random); // in [0, 4000)
 * failureDelayMs(1, Math.random);             // in [500, 1000)
 * ```
 */

/** A throttled target's first delay ceiling: one second lets a burst limit refill. */
export const THROTTLE_BASE_MS = 1_000;
/** Throttle delays stop doubling here: a target whose limit was raised is tried within a minute. */
export const THROTTLE_CAP_MS = 60_000;
/** A target's Retry-After is honoured up to five minutes: a bogus one cannot park the target for good. */
export const RETRY_AFTER_CAP_MS = 300_000;
/** A charged failure's first delay ceiling: one second, so a transient failure is retried soon. */
export const FAILURE_BASE_MS = 1_000;
/** Failure delays stop doubling here: a record fixed by a deploy is retried within half a minute. */
export const FAILURE_CAP_MS = 30_000;

/** base · 2^(consecutive - 1), capped; `consecutive` below 1 counts as 1. */
function ceiling(consecutive: number, base: number, cap: number): number {
  // Past 2^30 the cap has long won; bounding the exponent keeps the arithmetic finite.
  const doublings = Math.min(Math.max(0, Math.floor(consecutive) - 1), 30);
  return Math.min(cap, base * 2 ** doublings);
}

/**
 * How long a target's loop waits after its `consecutive`-th throttle (or unreachable answer)
 * in a row: full jitter under 1 s · 2^(consecutive - 1), capped at 60 s, but never less than the
 * target's Retry-After (itself capped at 300 s).
 *
 * @example
 * ```ts
 * throttleDelayMs(1, undefined, () => 0.5); // 500
 * throttleDelayMs(1, 5_000, () => 0.5);     // 5000: Retry-After is a floor
 * throttleDelayMs(20, undefined, () => 0.5); // 30000: the ceiling is capped at 60 s
 * ```
 */
export function throttleDelayMs(consecutive: number, retryAfterMs: number | undefined, random: () => number): number {
  const jittered = Math.floor(random() * ceiling(consecutive, THROTTLE_BASE_MS, THROTTLE_CAP_MS));
  const floor = retryAfterMs !== undefined && retryAfterMs > 0 ? Math.min(retryAfterMs, RETRY_AFTER_CAP_MS) : 0;
  return Math.max(jittered, Math.ceil(floor));
}

/**
 * How long failed records wait before they go out again after the `consecutiveCharged`-th
 * charged failure in a row: in [base/2, base) for base = 1 s · 2^(consecutiveCharged - 1),
 * capped at 30 s.
 *
 * @example
 * ```ts
 * failureDelayMs(1, () => 0);     // 500
 * failureDelayMs(3, () => 0.5);   // 3000
 * failureDelayMs(10, () => 0.999); // 29985: the ceiling is capped at 30 s
 * ```
 */
export function failureDelayMs(consecutiveCharged: number, random: () => number): number {
  const base = ceiling(consecutiveCharged, FAILURE_BASE_MS, FAILURE_CAP_MS);
  return Math.floor(base / 2 + random() * (base / 2));
}
