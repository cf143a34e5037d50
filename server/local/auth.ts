/**
 * Authentication for the local server: bearer tokens from the grants file stand in for API
 * Gateway's authorizer. The principal a token maps to is handed to the handlers exactly where
 * a Lambda authorizer would put it (`requestContext.authorizer.lambda.principal`), so the
 * grants are enforced by the same code as on AWS.
 */
import { ERRORS } from '../../contract/errors.js';
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { copyBodyBytes } from '../http/body-bytes.js';
import { toJson } from '../codec/json-writer.js';
import type { HttpEvent, HttpResponse } from '../http/types.js';
import type { LambdaHttpHandler } from './server.js';

/** True for addresses only this machine can reach: 127.0.0.0/8, ::1, `localhost`. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1' || h === '::ffff:127.0.0.1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/**
 * Refuses to serve without authentication on an address other machines can reach.
 *
 * @example
 * ```ts
 * assertSafeBind('0.0.0.0', false); // throws: ... pass --grants FILE ...
 * ```
 */
export function assertSafeBind(host: string, hasGrants: boolean): void {
  if (hasGrants || isLoopback(host)) return;
  throw new Error(
    `refusing to listen on ${host} without a grants file: anyone who can reach it could read and write every queue. ` +
      'Pass --grants FILE (or set SLUICE_GRANTS_FILE) with bearer tokens and grants (docs/DEPLOYING.md#grants), or listen on 127.0.0.1.',
  );
}

const digest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

function unauthorized(message: string): HttpResponse {
  return {
    statusCode: ERRORS.unauthorized.status,
    headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer' },
    body: toJson({ error: message, code: 'unauthorized' }),
  };
}

/**
 * Bearer-token authentication from the `Authorization` header alone: the principal a token
 * from `tokens` (token to principal) maps to, or the 401 to answer. The local server runs it
 * on the request's headers, before reading the body (see edge.ts).
 *
 * @example
 * ```ts
 * const authenticate = bearerAuthenticator(config.tokens ?? {});
 * authenticate('Bearer a-long-random-secret-of-16-or-more-characters'); // { principal: 'billing-service' }
 * ```
 */
export function bearerAuthenticator(
  tokens: Record<string, string>,
): (authorization: string | undefined) => { principal: string } | { respond: HttpResponse } {
  // Compared by digest, so the lookup's timing says nothing about how much of a token matched.
  const byDigest = new Map(Object.entries(tokens).map(([token, principal]) => [digest(token), principal]));
  return (header) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m)
      return {
        respond: unauthorized(
          'missing bearer token: send "Authorization: Bearer <token>" with a token from the grants file',
        ),
      };
    const principal = byDigest.get(digest(m[1] as string));
    return principal === undefined ? { respond: unauthorized('unknown bearer token') } : { principal };
  };
}

/**
 * The principal as the handlers read it: where API Gateway's Lambda authorizer puts it
 * (`requestContext.authorizer.lambda.principal`).
 *
 * @example
 * ```ts
 * const authed = asPrincipal(event, 'billing-service');
 * ```
 */
export function asPrincipal(event: HttpEvent, principal: string): HttpEvent {
  const authed: HttpEvent = {
    ...event,
    requestContext: { ...event.requestContext, authorizer: { lambda: { principal } } } as HttpEvent['requestContext'],
  };
  // The received bytes are kept per event object: hand them to the copy.
  copyBodyBytes(event, authed);
  return authed;
}

/**
 * Wraps a handler so every request needs `Authorization: Bearer <token>` with a token from
 * `tokens` (token to principal); anything else is answered 401 before the handler runs. The
 * local server itself authenticates earlier, from the headers (edge.ts); this is for running
 * handlers without it.
 *
 * @example
 * ```ts
 * const handler = withBearerTokens(makeHandler(ALL_ROUTES, { grants }), config.tokens ?? {});
 * ```
 */
export function withBearerTokens(handler: LambdaHttpHandler, tokens: Record<string, string>): LambdaHttpHandler {
  const authenticate = bearerAuthenticator(tokens);
  return async (event, context) => {
    const who = authenticate(event.headers?.['authorization']);
    if ('respond' in who) return who.respond;
    return handler(asPrincipal(event, who.principal), context);
  };
}
