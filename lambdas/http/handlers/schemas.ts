/**
 * Schema pieces and wire helpers the route modules share: names checked by the same rule as
 * `core/names.ts`, times as ISO-8601, the `{partitionId}/{transactionId}` message address,
 * bounded query-string integers.
 */
import { z } from 'zod';
import { nameProblem, type NameKind } from '../../core/names.js';

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
