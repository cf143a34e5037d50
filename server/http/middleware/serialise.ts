/**
 * Turns what a route answered into API Gateway's response, and any error of any kind into the
 * `{error, code}` body its status says, in one place ({@link errorResponse}). What that logs goes
 * to the services' telemetry.
 */
import { toJson } from '../../codec/json-writer.js';
import { errorResponse, type ErrorLog } from '../errors.js';
import type { HttpResponse, HttpResult } from '../types.js';
import { stateOf, type ApiMiddleware } from './request-state.js';

/**
 * A result as a response: JSON unless the body is already text; `raw` bodies hold payload
 * splices that only `toJson` writes verbatim.
 *
 * @example
 * ```ts
 * serialiseResult({ statusCode: 200, body: { ok: true } }); // { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }
 * ```
 */
export function serialiseResult(result: HttpResult): HttpResponse {
  const headers: Record<string, string> = { ...(result.headers ?? {}) };
  if (result.statusCode === 204 || result.body === undefined) return { statusCode: result.statusCode, headers };
  headers['content-type'] ??= 'application/json';
  return {
    statusCode: result.statusCode,
    headers,
    body:
      typeof result.body === 'string' ? result.body : result.raw ? toJson(result.body) : JSON.stringify(result.body),
  };
}

/**
 * `beforeServices` logs what fails before the services exist (building them failed), when
 * there is no telemetry of theirs to log to.
 *
 * @example `middy(run).use(meter()).use(serialise(new MemoryTelemetry()))`
 */
export const serialise = (beforeServices: ErrorLog): ApiMiddleware => ({
  after: (request) => {
    request.response = serialiseResult(request.response as unknown as HttpResult);
  },
  onError: (request) => {
    const log = stateOf(request.event).runtime?.telemetry ?? beforeServices;
    request.response = serialiseResult(errorResponse(request.error, log));
  },
});
