/**
 * Instants as the answers write them: epoch ms as ISO-8601 UTC (the contract's `isoTime`).
 *
 * @example
 * ```ts
 * iso(0); // '1970-01-01T00:00:00.000Z'
 * ```
 */
export const iso = (ms: number | undefined | null): string | null =>
  ms === undefined || ms === null ? null : new Date(ms).toISOString();
