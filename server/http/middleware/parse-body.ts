/**
 * Reads a route's JSON body, refusing one over the deployment's `maxBodyBytes` before parsing
 * it. Routes without a body schema take none: their body is never read.
 */
import { SluiceError } from '../../core/errors.js';
import { keptBodyBytes } from '../body-bytes.js';
import type { HttpEvent } from '../types.js';
import { stateOf, type ApiMiddleware } from './request-state.js';

/** The request body's bytes (decoded from base64 when API Gateway encoded it). */
export function requestBodyBytes(event: HttpEvent): Buffer {
  const kept = keptBodyBytes(event);
  if (kept) return kept;
  const raw = event.body ?? '';
  return event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
}

/** Reads the request body as JSON, enforcing the size limit before parsing. */
function parseBody(event: HttpEvent, maxBytes: number): unknown {
  const raw = event.body;
  if (raw === undefined || raw === null || raw === '') return undefined;
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  // The exact byte count scans the whole body; three bytes per UTF-16 unit bounds it.
  const size = text.length * 3 <= maxBytes ? 0 : Buffer.byteLength(text);
  if (size > maxBytes) {
    throw new SluiceError('payload_too_large', `request body is ${size} bytes; the limit is ${maxBytes}`, {
      limit: maxBytes,
    });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new SluiceError(
      'invalid_json',
      `request body is not valid JSON: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/** @example `chain.use(matchRoutes(routes, services)).use(parseJsonBody)` */
export const parseJsonBody: ApiMiddleware = {
  before: (request) => {
    const state = stateOf(request.event);
    if (state.route!.def.body) state.body = parseBody(request.event, state.runtime!.config.maxBodyBytes);
  },
};
