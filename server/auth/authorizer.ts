/**
 * The API Gateway Lambda REQUEST authorizer of `auth=tokens` deployments (simple responses,
 * payload format 2.0): it checks the bearer token of `Authorization: Bearer <token>` against
 * the {@link TokenStore} and hands the token's principal to the route handlers in its
 * context, where `principalOf` (server/http/route.ts) reads it as
 * `requestContext.authorizer.lambda.principal` — the place the local server's bearer tokens
 * put it too, so the grants apply the same way.
 *
 * API Gateway answers 401 itself when the header is missing (it is the identity source) and
 * 403 when this answers `isAuthorized: false`; both before any route function runs.
 *
 * @example
 * ```ts
 * const authorize = makeTokenAuthorizer(async () => new TokenStore(storage.items));
 * await authorize({ headers: { authorization: `Bearer ${token}` } });
 * // { isAuthorized: true, context: { principal: 'billing-service', tokenId: '…' } }
 * ```
 */
import type { TokenStore } from './token-store.js';

/** The parts of API Gateway's authorizer event (payload format 2.0) this reads. */
export interface TokenAuthorizerEvent {
  headers?: Record<string, string | undefined> | null;
  identitySource?: string[] | null;
}

/** A simple-response answer; `context` reaches the route handlers as `authorizer.lambda`. */
export type TokenAuthorizerResult =
  { isAuthorized: true; context: { principal: string; tokenId: string } } | { isAuthorized: false };

/** The token of an `Authorization: Bearer <token>` header value, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m ? m[1] : undefined;
}

export function makeTokenAuthorizer(
  store: () => TokenStore | Promise<TokenStore>,
): (event: TokenAuthorizerEvent) => Promise<TokenAuthorizerResult> {
  return async (event) => {
    const header = event.headers?.['authorization'] ?? event.identitySource?.[0];
    const token = bearerToken(header);
    if (token === undefined) return { isAuthorized: false };
    const info = await (await store()).verify(token);
    return info
      ? { isAuthorized: true, context: { principal: info.principal, tokenId: info.id } }
      : { isAuthorized: false };
  };
}
