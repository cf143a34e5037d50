import type { ZodError } from 'zod';
import { ERRORS } from '../../contract/errors.js';
import { SluiceError, type ErrorCode } from '../core/errors.js';
import { ContentionError, StoreFullError, StoreUnavailableError } from '../storage/port.js';
import type { HttpResult } from './types.js';

/** A domain error's status: the contract's error table says it, in one place. */
export const statusOf = (code: ErrorCode): number => ERRORS[code].status;

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

/** `Retry-After` on a 503 that does not suggest its own: contention and the like clear in moments. */
export const DEFAULT_RETRY_AFTER_S = 1;

const describe = (err: unknown): unknown =>
  err instanceof Error
    ? {
        name: err.name,
        message: err.message,
        stack: err.stack,
        ...(err.cause instanceof Error ? { cause: { name: err.cause.name, message: err.cause.message } } : {}),
      }
    : String(err);

/**
 * Error → response, for every route:
 *
 * | error | status | body `code` | `Retry-After` |
 * |---|---|---|---|
 * | `SluiceError` | by {@link statusOf} | its code | on a 503: {@link DEFAULT_RETRY_AFTER_S} |
 * | `StoreUnavailableError` (throttled, unreachable, failing) | 503 | `unavailable` | the adapter's suggestion |
 * | `ContentionError` (a transaction kept colliding) | 503 | `unavailable` | {@link DEFAULT_RETRY_AFTER_S} |
 * | `StoreFullError` (a full disk) | 507 | `storage_full` | none: it takes an operator |
 * | anything else | 500 | `internal` | none |
 *
 * Storage failures and unknown errors are logged; their bodies say nothing about internals.
 *
 * @example
 * ```ts
 * errorResponse(new StoreUnavailableError('throttled', 2, 'PutItem was throttled'));
 * // { statusCode: 503, headers: { 'retry-after': '2' }, body: { error: 'storage is busy…', code: 'unavailable', retryAfterSeconds: 2 } }
 * ```
 */
export function errorResponse(err: unknown, log?: ErrorLog): HttpResult {
  if (err instanceof SluiceError) {
    const statusCode = statusOf(err.code);
    const body = { error: err.message, code: err.code, ...(err.details ?? {}) };
    return statusCode === 503 ? unavailableResponse(body, DEFAULT_RETRY_AFTER_S) : { statusCode, body };
  }
  if (err instanceof StoreUnavailableError) {
    log?.error('storage unavailable', { reason: err.reason, error: describe(err) });
    const error =
      err.reason === 'throttled'
        ? 'storage is busy (throttled); retry the request later'
        : 'storage cannot be reached right now; retry the request later';
    return unavailableResponse({ error, code: 'unavailable' }, err.retryAfterSeconds);
  }
  if (err instanceof ContentionError) {
    const error = 'too many concurrent writes to the same items; retry the request';
    return unavailableResponse({ error, code: 'unavailable' }, DEFAULT_RETRY_AFTER_S);
  }
  if (err instanceof StoreFullError) {
    log?.error('storage full', { error: describe(err) });
    return {
      statusCode: ERRORS.storage_full.status,
      body: {
        error: 'storage is full; free space on the server, then retry',
        code: 'storage_full',
      },
    };
  }
  log?.error('unhandled error', { error: describe(err) });
  return {
    statusCode: ERRORS.internal.status,
    body: { error: 'internal error; the request may be retried', code: 'internal' },
  };
}

function unavailableResponse(body: Record<string, unknown>, retryAfterSeconds: number): HttpResult {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  return {
    statusCode: ERRORS.unavailable.status,
    headers: { 'retry-after': String(seconds) },
    body: { ...body, retryAfterSeconds: seconds },
  };
}
