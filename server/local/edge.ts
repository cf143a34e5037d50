/**
 * The local server's edge: what a request's headers must show before its body is read or any
 * handler runs (docs/SECURITY.md). It is what stands between a web page open in the user's
 * browser and the open loopback server, which trusts everyone who reaches it:
 *
 * - `Host` must be a loopback name or one configured (`--allowed-host`): a rebound DNS name
 *   (evil.example resolving to 127.0.0.1) reaches the socket but is refused.
 * - A request carrying an `Origin` other than the server's own or one configured
 *   (`--cors-origin`) is refused, whatever its method, bodyless POSTs included (CORS "simple
 *   requests" need no preflight); so is one a browser marks `Sec-Fetch-Site: cross-site` or
 *   `same-site` (an `<img>` or `<form>` sends no Origin on a GET).
 * - A request with a body must declare `Content-Type: application/json`: a `text/plain` or
 *   form POST, which a page may send anywhere, is refused (415).
 * - CORS is explicit and off by default: a configured origin gets its preflights answered and
 *   `Access-Control-Allow-Origin` on its answers, which is how a separately served dashboard
 *   reaches the server.
 * - Authentication (bearer tokens, `--grants`) runs here too, so that a request without a
 *   token is answered 401 from its headers instead of after its whole upload.
 */
import { ERRORS, type ApiErrorCode } from '../../contract/errors.js';
import type { IncomingHttpHeaders } from 'node:http';
import { toJson } from '../codec/json-writer.js';
import type { HttpResponse } from '../http/types.js';
import { isLoopback } from './auth.js';

/** What the edge decided: answer now (`respond`), or go on with a principal and extra response headers. */
export type GateVerdict =
  { respond: HttpResponse } | { principal?: string | undefined; headers?: Record<string, string> | undefined };

/** Checks a request from its method and headers alone, before its body is read. */
export type RequestGate = (req: { method: string; headers: IncomingHttpHeaders }) => GateVerdict;

/** Identifies the caller from the `Authorization` header: a principal, or the answer to refuse with. */
export type Authenticate = (authorization: string | undefined) => { principal: string } | { respond: HttpResponse };

export interface EdgePolicy {
  /**
   * Host names (`name` or `name:port`, case-insensitive) requests may address besides loopback
   * ones. With `checkHost` false the `Host` header is not checked at all.
   */
  allowedHosts: readonly string[];
  /** Whether `Host` is checked: always on the open server (no grants); with grants when hosts are configured. */
  checkHost: boolean;
  /** Origins (`scheme://host[:port]`) admitted for cross-origin reads and writes, with preflights answered. */
  corsOrigins: readonly string[];
  /** Bearer-token authentication; absent on the open server. */
  authenticate?: Authenticate | undefined;
}

const CORS_METHODS = 'GET, POST, PUT, PATCH, DELETE';
const CORS_HEADERS = 'authorization, content-type';

/** An error answer of `code`, with the status the contract's error table gives it. */
function answer(code: ApiErrorCode, error: string, headers: Record<string, string> = {}): HttpResponse {
  return {
    statusCode: ERRORS[code].status,
    headers: { 'content-type': 'application/json', ...headers },
    body: toJson({ error, code }),
  };
}

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** `Host` without its port, lower case, IPv6 brackets kept off. */
// A Host header is a name or an IPv4 address, or a bracketed IPv6 address, then at most a port:
// anything after `]` but a port (`[::1]evil.example`) is not a loopback host.
const HOST_FORM = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+))(?::\d{1,5})?$/;

/** The host a Host header names, without its port or brackets; undefined when it is malformed. */
function hostName(host: string): string | undefined {
  const m = HOST_FORM.exec(host.trim().toLowerCase());
  return m ? (m[1] ?? m[2]) : undefined;
}

/**
 * Checks `origin` names a web origin exactly (`https://dash.example:8443`): no path, no
 * wildcard. For validating `--cors-origin`.
 *
 * @example
 * ```ts
 * corsOriginProblem('http://localhost:5173'); // undefined
 * corsOriginProblem('*');                     // 'must be an origin such as http://localhost:5173 ...'
 * ```
 */
export function corsOriginProblem(origin: string): string | undefined {
  try {
    const u = new URL(origin);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && u.origin === origin) return undefined;
  } catch {
    // falls through to the message
  }
  return `must be an origin such as http://localhost:5173 (scheme, host and port only; no path, no "*"), got ${JSON.stringify(origin)}`;
}

/**
 * The edge as a {@link RequestGate} for the local server (see the module comment).
 *
 * @example
 * ```ts
 * const gate = requestGate({ allowedHosts: [], checkHost: true, corsOrigins: ['http://localhost:5173'] });
 * await startLocalServer({ handler, gate, host: '127.0.0.1', port: 6632, maxBodyBytes: 6 << 20 });
 * ```
 */
export function requestGate(policy: EdgePolicy): RequestGate {
  const allowedHosts = new Set(policy.allowedHosts.map((h) => h.trim().toLowerCase()));
  const corsOrigins = new Set(policy.corsOrigins);
  const hostAllowed = (host: string | undefined): boolean => {
    // HTTP/1.1 requires Host (Node answers 400 without it); a browser always sends it.
    if (!policy.checkHost || host === undefined) return true;
    const name = hostName(host);
    if (name === undefined) return false;
    return isLoopback(name) || allowedHosts.has(name) || allowedHosts.has(host.trim().toLowerCase());
  };
  return ({ method, headers }) => {
    const host = one(headers.host);
    if (!hostAllowed(host))
      return {
        respond: answer(
          'forbidden',
          `Host ${JSON.stringify(host)} is not a name this server answers to: use a loopback address, or start it with --allowed-host`,
        ),
      };
    const origin = one(headers.origin);
    const cors = origin !== undefined && corsOrigins.has(origin);
    const corsHeaders = cors ? { 'access-control-allow-origin': origin, vary: 'origin' } : undefined;
    if (method === 'OPTIONS' && origin !== undefined) {
      if (!cors)
        return {
          respond: answer('forbidden', `cross-origin requests from ${origin} are not allowed (--cors-origin)`),
        };
      return {
        respond: {
          statusCode: 204,
          headers: {
            ...corsHeaders,
            'access-control-allow-methods': CORS_METHODS,
            'access-control-allow-headers': CORS_HEADERS,
            'access-control-max-age': '600',
          },
        },
      };
    }
    if (origin !== undefined && !cors && !sameOrigin(origin, host))
      return {
        respond: answer(
          'forbidden',
          `cross-origin request from ${origin} refused: only this server's own pages, or origins given with --cors-origin, may call it`,
        ),
      };
    const site = one(headers['sec-fetch-site']);
    if (!cors && (site === 'cross-site' || site === 'same-site'))
      return { respond: answer('forbidden', `cross-site request refused (Sec-Fetch-Site: ${site})`) };
    let principal: string | undefined;
    if (policy.authenticate) {
      const who = policy.authenticate(one(headers.authorization));
      if ('respond' in who) return { respond: withHeaders(who.respond, corsHeaders) };
      principal = who.principal;
    }
    if (hasBody(headers) && !isJson(one(headers['content-type'])))
      return {
        respond: answer(
          'unsupported_media_type',
          `request bodies must be JSON sent as Content-Type: application/json (got ${JSON.stringify(one(headers['content-type']) ?? null)})`,
          corsHeaders,
        ),
      };
    return { principal, headers: corsHeaders };
  };
}

/** Whether `origin` is the server's own: the same host and port the request addressed. */
function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    return new URL(origin).host === host.trim().toLowerCase();
  } catch {
    return false; // `null` (sandboxed frames, file: pages) and anything unparsable
  }
}

function hasBody(headers: IncomingHttpHeaders): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = Number(headers['content-length'] ?? 0);
  return !(length === 0);
}

/** `application/json`, or a `+json` type, with any parameters (`; charset=utf-8`). */
function isJson(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

function withHeaders(out: HttpResponse, headers: Record<string, string> | undefined): HttpResponse {
  return headers ? { ...out, headers: { ...out.headers, ...headers } } : out;
}
