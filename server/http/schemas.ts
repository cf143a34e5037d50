/**
 * Schema pieces and wire helpers the route modules share: names checked by the same rule as
 * `core/names.ts`, instants in and out (ISO-8601), the `{partitionId}/{transactionId}`
 * message address, bounded query-string integers.
 */
import { z } from 'zod';
import { nameProblem, newNameProblem, type NameKind } from '../core/names.js';

/**
 * A queue, partition or group name: the schema carries the same rule as `core/names.ts`.
 *
 * @example
 * ```ts
 * const Params = z.object({ queue: nameSchema('queue'), partition: nameSchema('partition') });
 * ```
 */
export const nameSchema = (kind: NameKind) =>
  z.string({ error: `${kind} is required and must be a string` }).superRefine((v, ctx) => {
    const problem = nameProblem(v, kind);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * A name a request may create a queue, partition or group under: {@link nameSchema}'s rule and
 * not `.` or `..` (`core/names.ts`, newNameProblem). For fields of routes that can create what
 * they name; reads and deletes take {@link nameSchema}, so older such names stay reachable.
 *
 * @example
 * ```ts
 * const Params = z.object({ queue: nameSchema('queue'), group: newNameSchema('consumer group') });
 * ```
 */
export const newNameSchema = (kind: NameKind) =>
  z.string({ error: `${kind} is required and must be a string` }).superRefine((v, ctx) => {
    const problem = newNameProblem(v, kind);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** The instants the API takes: ISO-8601's four-digit years, 0000-01-01 to 9999-12-31 (UTC). */
export const INSTANT_RANGE = { min: -62_167_219_200_000, max: 253_402_300_799_999 } as const;

/**
 * Why `v` is not an instant the API takes (ISO-8601 text, or epoch milliseconds), or undefined.
 * Range-checked so that everything done with it later, down to writing it back as ISO-8601,
 * works: a value outside what a date can hold used to pass and fail only after it was saved.
 */
export function instantProblem(v: unknown): string | undefined {
  const epochMs = typeof v === 'number' ? v : typeof v === 'string' ? Date.parse(v) : Number.NaN;
  if (!Number.isFinite(epochMs)) return `not a timestamp: ${JSON.stringify(v)} (use ISO-8601)`;
  if (epochMs < INSTANT_RANGE.min || epochMs > INSTANT_RANGE.max)
    return `timestamp ${JSON.stringify(v)} is outside the years 0000 to 9999`;
  return undefined;
}

/**
 * An instant: ISO-8601 text or epoch milliseconds, to epoch milliseconds, range-checked
 * ({@link instantProblem}). The one schema every time input uses.
 *
 * @example
 * ```ts
 * z.object({ timestamp: instant.optional() }).parse({ timestamp: '2026-01-31T12:00:00Z' }); // { timestamp: 1769860800000 }
 * instant.safeParse(9e15).success; // false
 * ```
 */
export const instant = z
  .union([z.string(), z.number()])
  // A refinement rather than an issue raised in the transform: inside a union (a claim group's
  // `start`), zod then reports this message instead of only the union's.
  .superRefine((v, ctx) => {
    const problem = instantProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((v) => (typeof v === 'number' ? v : Date.parse(v)));

/**
 * Epoch ms as ISO-8601 UTC; null stays null.
 *
 * @example
 * ```ts
 * iso(0); // '1970-01-01T00:00:00.000Z'
 * ```
 */
export const iso = (ms: number | undefined | null): string | null =>
  ms === undefined || ms === null ? null : new Date(ms).toISOString();

/**
 * A message's address in a path: `/api/v1/messages/{partitionId}/{transactionId}`.
 *
 * @example
 * ```ts
 * defineRoute({ method: 'GET', path: '/api/v1/messages/{partitionId}/{transactionId}', params: MessageParams, ... });
 * ```
 */
export const MessageParams = z.object({
  partitionId: z.string().min(1).max(64),
  transactionId: z.string().min(1).max(256),
});

/**
 * A whole number from the query string, between `min` and `max`, `fallback` when absent.
 *
 * @example
 * ```ts
 * z.object({ limit: boundedQueryInteger(1, 1000, 100) }); // ?limit=50 → 50, absent → 100
 * ```
 */
export const boundedQueryInteger = (min: number, max: number, fallback: number) =>
  z.coerce.number({ error: 'must be a number' }).int().min(min).max(max).default(fallback);
