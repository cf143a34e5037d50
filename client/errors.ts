/**
 * Errors the client throws. Every failure the server reports becomes a {@link SluiceApiError}
 * carrying the HTTP status, the API's machine-readable `code` and its message; failures to get
 * an answer at all become a {@link SluiceNetworkError} (or its {@link SluiceTimeoutError}).
 *
 * @example
 * ```ts
 * try {
 *   await sluice.queue('orders').partition('eu').claimGroup('billing').ack([7]);
 * } catch (e) {
 *   if (e instanceof SluiceApiError && e.code === 'invalid_request') console.error(e.message);
 *   else throw e;
 * }
 * ```
 */

import type { ApiErrorCode } from './wire.js';

/**
 * Codes the Sluice API puts in error bodies (the contract's table, generated into wire.ts as
 * `API_ERROR_CODES`), plus the client's own for replies it could not read.
 */
export type SluiceErrorCode =
  | ApiErrorCode
  /** A 2xx whose body reported failure (a transaction that was not applied, a failed push item). */
  | 'operation_failed'
  /** Anything else: a gateway's own error, an unknown code. */
  | 'http_error'
  | (string & {});

/** Base class of every error this client throws on purpose. */
export class SluiceError extends Error {
  override name = 'SluiceError';
}

/** The server (or the gateway in front of it) answered with an error. */
export class SluiceApiError extends SluiceError {
  override name = 'SluiceApiError';
  constructor(
    /** HTTP status (200 for a 2xx reply whose body reported failure). */
    readonly status: number,
    /** The API's `code` (`stale_claim`, `not_found`, …), or one derived from the status. */
    readonly code: SluiceErrorCode,
    message: string,
    /** The parsed error body, with any extra fields the server sent (`limit`, `offset`, …). */
    readonly body: unknown = undefined,
    /** `METHOD /path` of the request. */
    readonly request: string = '',
  ) {
    super(message);
  }
}

/** No answer: the connection failed or was reset. `cause` is the underlying error. */
export class SluiceNetworkError extends SluiceError {
  override name = 'SluiceNetworkError';
  constructor(
    message: string,
    readonly request: string = '',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
  /** True when the request never reached the server (connection refused, DNS failure): safe to repeat. */
  get notSent(): boolean {
    const code = errnoOf(this.cause);
    return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
  }
}

/** The per-request timeout passed before an answer came. */
export class SluiceTimeoutError extends SluiceNetworkError {
  override name = 'SluiceTimeoutError';
}

/** The error code of a Node network error, looking through `cause` chains (undici wraps them). */
export function errnoOf(e: unknown): string | undefined {
  for (let cur = e, depth = 0; cur && depth < 5; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The code of a reply without one (a gateway's own error), by its status. */
const CODE_BY_STATUS: Record<number, ApiErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'limit_exceeded',
  500: 'internal',
  503: 'unavailable',
  507: 'storage_full',
};

/**
 * Builds the error for a non-2xx reply. Sluice answers `{error, code}`; API Gateway's own
 * errors (IAM or JWT failures, throttling, 504s) answer `{message}`.
 */
export function apiErrorFrom(status: number, body: unknown, request: string): SluiceApiError {
  const b = (body && typeof body === 'object' ? body : {}) as { error?: unknown; code?: unknown; message?: unknown };
  const code = typeof b.code === 'string' ? b.code : (CODE_BY_STATUS[status] ?? 'http_error');
  let message: string;
  if (typeof b.error === 'string' && b.error) message = b.error;
  else if (typeof b.message === 'string' && b.message) message = b.message;
  else if (typeof body === 'string' && body.trim()) message = body.trim().slice(0, 500);
  else message = `HTTP ${status}`;
  if (status === 403 && typeof b.message === 'string' && b.error === undefined) {
    message +=
      ' (API Gateway refused the request: check the SigV4 credentials and region, or the token, and that your IAM policy allows execute-api:Invoke)';
  }
  return new SluiceApiError(status, code, message, body, request);
}
