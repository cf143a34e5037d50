/**
 * Every error code the server answers, with its HTTP status, in one table. An error answer is
 * `{error, code}` ({@link ErrorBody}) plus, for some codes, machine-readable details (`limit`,
 * `index`, `missing`, `retryAfterSeconds`). The server maps codes to statuses from this table
 * (`server/http/errors.ts`); the client's list of codes is held to it (test/unit/error-codes.test.ts).
 *
 * @example
 * ```ts
 * ERRORS.stale_claim.status; // 409
 * ```
 */
import { z } from 'zod';

/** A code's status and what it means to a caller. */
export interface ErrorSpec {
  status: number;
  meaning: string;
}

export const ERRORS = {
  invalid_request: { status: 400, meaning: 'The request is malformed: a field, name, path segment or query value.' },
  invalid_json: { status: 400, meaning: 'The body is not valid JSON.' },
  unauthorized: { status: 401, meaning: 'No credentials, or credentials the server does not know.' },
  forbidden: { status: 403, meaning: 'The caller lacks the grant the route needs on a queue it names.' },
  not_found: { status: 404, meaning: 'No such route, queue, partition, group or message (`missing` may say which).' },
  method_not_allowed: { status: 405, meaning: 'The path exists, with other methods.' },
  conflict: { status: 409, meaning: 'The request contradicts what is stored.' },
  stale_claim: { status: 409, meaning: "The record claim is no longer the caller's (lapsed, reclaimed or settled)." },
  stale_sequence: { status: 409, meaning: "An idempotent push's sequence is older than the last one committed." },
  payload_too_large: { status: 413, meaning: 'The body, a payload or an item count is over its limit (`limit`).' },
  unsupported_media_type: {
    status: 415,
    meaning: "A body not sent as application/json (the local server's edge answers it).",
  },
  limit_exceeded: { status: 429, meaning: 'A limit on concurrent work was reached; retry later.' },
  queue_full: { status: 429, meaning: 'The partition holds its `maxSize` of unconsumed messages.' },
  internal: { status: 500, meaning: 'An unexpected failure; the request may be retried.' },
  unavailable: { status: 503, meaning: 'Storage is busy or unreachable; retry after `retryAfterSeconds`.' },
  storage_full: { status: 507, meaning: 'The store has no room (a full disk on the local server).' },
} as const satisfies Record<string, ErrorSpec>;

/** Every code an error answer may carry. */
export type ApiErrorCode = keyof typeof ERRORS;

/** The codes, in table order. */
export const API_ERROR_CODES = Object.keys(ERRORS) as ApiErrorCode[];

/**
 * An error answer: what went wrong in words, its code, and any details the code carries.
 *
 * @example
 * ```ts
 * ErrorBody.parse({ error: 'queue name must not be empty', code: 'invalid_request' });
 * ```
 */
export const ErrorBody = z
  .object({
    error: z.string().describe('What went wrong, in words.'),
    code: z.enum(API_ERROR_CODES as [ApiErrorCode, ...ApiErrorCode[]]).describe('The error code (the ERRORS table).'),
    retryAfterSeconds: z.number().int().min(1).optional().describe('On a 503: when to try again.'),
  })
  .catchall(z.unknown());
