import type { ZodError } from 'zod';
import { SluiceError, type ErrorCode } from '../core/errors.js';
import type { HttpResult } from './types.js';

/** The one place where domain errors become HTTP statuses. */
export const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  stale_claim: 409,
  payload_too_large: 413,
  limit_exceeded: 429,
  queue_full: 429,
  unavailable: 503,
};

/** A zod failure as one sentence a person can act on: `items[0].queue: expected string`. */
export function describeZodError(err: ZodError, where: string): string {
  const parts = err.issues.slice(0, 3).map((i) => {
    const path = i.path
      .map((p, n) => (typeof p === 'number' ? `[${p}]` : n === 0 ? String(p) : `.${String(p)}`))
      .join('');
    return path ? `${path}: ${i.message}` : i.message;
  });
  const more = err.issues.length > 3 ? ` (and ${err.issues.length - 3} more)` : '';
  return `invalid ${where}: ${parts.join('; ')}${more}`;
}

export interface ErrorLog {
  error(message: string, fields: Record<string, unknown>): void;
}

/** Error → response. Unknown errors become a 500 that says nothing about internals. */
export function errorResponse(err: unknown, log?: ErrorLog): HttpResult {
  if (err instanceof SluiceError) {
    return { statusCode: STATUS[err.code], body: { error: err.message, code: err.code, ...(err.details ?? {}) } };
  }
  log?.error('unhandled error', {
    error: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err),
  });
  return { statusCode: 500, body: { error: 'internal error; the request may be retried', code: 'internal' } };
}
