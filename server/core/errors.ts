/**
 * Typed domain errors. Handlers never pick status codes themselves: `http/errors.ts` maps
 * each {@link ErrorCode} to the status the contract's error table gives it, and anything else becomes a generic 500.
 *
 * @example
 * ```ts
 * throw new SluiceError('invalid_request', 'queue name must be 1-128 bytes');
 * ```
 */
import type { ApiErrorCode } from '../../contract/errors.js';

/**
 * The codes a domain error carries: the contract's table (`contract/errors.ts`) but for the two
 * only the HTTP edge answers, for failures that are not domain errors (`internal`, `storage_full`).
 */
export type ErrorCode = Exclude<ApiErrorCode, 'internal' | 'storage_full'>;

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
