/**
 * Schema pieces the routes share. Requests: names checked by the naming rule (`names.ts`),
 * instants (ISO-8601 or epoch ms), the `{partitionId}/{transactionId}` message address, query
 * string integers (bounded, or lenient as Queen's admin routes are). Answers: instants as
 * ISO-8601 text, counts, payloads.
 */
import { z } from 'zod';
import { nameProblem, newNameProblem, type NameKind } from './names.js';

// ----------------------------------------------------------------- requests

/**
 * A queue, partition or group name: the schema carries the naming rule (names.ts).
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
 * not `.` or `..` (names.ts, newNameProblem). For fields of routes that can create what they
 * name; reads and deletes take {@link nameSchema}, so older such names stay reachable.
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
 * A message's address in a path: `/api/v1/messages/{partitionId}/{transactionId}`.
 *
 * @example
 * ```ts
 * route({ method: 'GET', path: '/api/v1/messages/{partitionId}/{transactionId}', params: MessageParams, ... });
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

/**
 * An optional instant in a query string: ISO-8601 (or epoch ms); unparsable values fall back to
 * the default, as in Queen.
 *
 * @example
 * ```ts
 * z.object({ from: optionalInstant }).parse({ from: 'soon' }); // { from: undefined }
 * ```
 */
export const optionalInstant = z
  .string()
  .optional()
  .transform((v) => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = /^\d+$/.test(v) ? Number(v) : v;
    return instantProblem(n) === undefined ? (typeof n === 'number' ? n : Date.parse(n)) : undefined;
  });

/**
 * A query integer that falls back to its default when missing or unparsable (Queen's rule for
 * its admin routes), clamped to `[min, max]`.
 *
 * @example
 * ```ts
 * z.object({ limit: lenientInteger(1, 1000, 100) }).parse({ limit: 'x' }); // { limit: 100 }
 * ```
 */
export const lenientInteger = (min: number, max: number, fallback: number) =>
  z
    .string()
    .optional()
    .transform((v) => {
      const n = v === undefined ? Number.NaN : Number(v);
      return Number.isInteger(n) ? Math.max(min, Math.min(max, n)) : fallback;
    });

/** An optional name filter from the query string: empty counts as absent. */
export const optionalFilter = z
  .string()
  .max(256)
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

// ------------------------------------------------------------------ answers

/** An instant as answers write it: ISO-8601 in UTC (`2026-01-31T12:00:00.000Z`). */
export const isoTime = z.iso.datetime();
/** {@link isoTime}, or null where there is none. */
export const isoTimeOrNull = isoTime.nullable();
/** A count: a whole number, 0 or more. */
export const count = z.number().int().min(0);
/** A whole number (an offset, which may be -1 for "none yet"). */
export const integer = z.number().int();
/** A user's payload, as it was pushed. */
export const payload = z.unknown();
