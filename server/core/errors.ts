/**
 * Typed domain errors. Handlers never pick status codes themselves: `http/errors.ts` maps
 * each {@link ErrorCode} to a status in one place, and anything else becomes a generic 500.
 *
 * @example
 * ```ts
 * throw new SluiceError('invalid_request', 'queue name must be 1-128 bytes');
 * ```
 */
export type ErrorCode =
  | 'invalid_request'
  | 'invalid_json'
  | 'payload_too_large'
  | 'not_found'
  | 'conflict'
  | 'stale_claim'
  | 'stale_sequence'
  | 'forbidden'
  | 'unauthorized'
  | 'limit_exceeded'
  | 'queue_full'
  | 'method_not_allowed'
  | 'unavailable';

export class SluiceError extends Error {
  override readonly name = 'SluiceError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra machine-readable fields echoed in the error body. */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const invalid = (message: string, details?: Record<string, unknown>): SluiceError =>
  new SluiceError('invalid_request', message, details);
/** `details.missing` names what is missing (`queue`, `partition`, `group`) where a caller may need to tell. */
export const notFound = (message: string, details?: Record<string, unknown>): SluiceError =>
  new SluiceError('not_found', message, details);
export const conflict = (message: string): SluiceError => new SluiceError('conflict', message);
