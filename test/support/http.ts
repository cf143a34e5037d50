import { checkAnswers } from './check-answers.js';
import type { Grants } from '../../server/http/grants.js';
import { makeHandler } from '../../server/http/handler.js';
import type { RouteDef } from '../../server/http/route.js';
import { SERVER_ROUTES } from '../../server/http/routes.js';
import { withBearerTokens } from '../../server/local/auth.js';
import type { ConsoleFiles } from '../../server/local/console-assets.js';
import { requestGate, type EdgePolicy } from '../../server/local/edge.js';
import { startLocalServer, type LambdaHttpHandler, type LocalServer } from '../../server/local/server.js';
import type { Services } from '../../server/service/runtime.js';
import { asRouteFunction } from './iam/recorder.js';

/**
 * Runs each request as the function API Gateway would send it to, so the AWS requests it
 * makes are checked against that function's role (iam/recorder.ts).
 */
export const asRouteFunctions =
  (handler: LambdaHttpHandler): LambdaHttpHandler =>
  (event, context) =>
    asRouteFunction(event.requestContext.http.method, event.rawPath, () => handler(event, context));

/** The edge `npm start` runs without a grants file: loopback hosts, no CORS origin. */
export const OPEN_EDGE: EdgePolicy = { allowedHosts: [], checkHost: true, corsOrigins: [] };

/** One request as it reached the server: its method, and its path and query as the client sent them. */
export interface SeenRequest {
  method: string;
  /** Still percent-encoded, as API Gateway authorizes it (`execute-api:Invoke` on `<stage>/<METHOD><path>`). */
  path: string;
  /** The raw query string, without its `?` ('' when none). */
  query: string;
}

/** A handler that tells `onRequest` of each request before `handler` runs it. */
export const recordingRequests =
  (handler: LambdaHttpHandler, onRequest: (r: SeenRequest) => void): LambdaHttpHandler =>
  (event, context) => {
    onRequest({ method: event.requestContext.http.method, path: event.rawPath, query: event.rawQueryString });
    return handler(event, context);
  };

/**
 * The local server over given services, on a free loopback port, behind the edge `npm start`
 * runs (`edge`, by default the open server's), serving the console when given its files.
 * `onRequest` sees each request the edge lets through, before it runs (to record what a client
 * sent); without it the server is as `npm start` runs it.
 *
 * @example
 * ```ts
 * const seen: SeenRequest[] = [];
 * const server = await startTestServer(svc, { onRequest: (r) => seen.push(r) });
 * ```
 */
export async function startTestServer(
  svc: Services,
  opts: { edge?: EdgePolicy; consoleFiles?: ConsoleFiles; onRequest?: (r: SeenRequest) => void } = {},
): Promise<LocalServer> {
  const handler = asRouteFunctions(
    makeHandler(SERVER_ROUTES, { services: async () => svc, answerCheck: checkAnswers }),
  );
  return startLocalServer({
    consoleFiles: opts.consoleFiles,
    handler: opts.onRequest ? recordingRequests(handler, opts.onRequest) : handler,
    gate: requestGate(opts.edge ?? OPEN_EDGE),
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: svc.config.maxBodyBytes,
  });
}

/**
 * The local server with grants and bearer tokens (`tokens`: role → token; a token's principal
 * is its role), over given services and routes, on a free loopback port.
 */
export async function startGrantedServer(
  svc: Services,
  opts: { routes: readonly RouteDef[]; grants: Grants; tokens: Record<string, string> },
): Promise<LocalServer> {
  const byToken = Object.fromEntries(Object.entries(opts.tokens).map(([role, token]) => [token, role]));
  return startLocalServer({
    handler: withBearerTokens(
      asRouteFunctions(
        makeHandler([...opts.routes], { services: async () => svc, grants: opts.grants, answerCheck: checkAnswers }),
      ),
      byToken,
    ),
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1 << 20,
  });
}

export interface HttpReply<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

/** A tiny JSON client for black-box tests. `body` may be a raw string (sent as is). */
export async function call<T = unknown>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpReply<T>> {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const textBody = await res.text();
  let parsed: unknown = textBody;
  if (textBody && (res.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(textBody);
  return { status: res.status, body: (textBody ? parsed : null) as T, headers: res.headers };
}

/**
 * Where a black-box suite sends its requests: a base URL plus what every request carries (a
 * bearer token, a test principal header) and, for a deployed API, a request signer (SigV4).
 */
export interface HttpTarget {
  url: string;
  headers?: Record<string, string>;
  /** Signs a request before it is sent (see `test/support/sigv4.ts`). */
  sign?: (req: {
    method: string;
    url: string;
    headers: Record<string, string>;
    body?: string;
  }) => Promise<Record<string, string>>;
}

/**
 * {@link call} against a target: its headers and signature added.
 *
 * @example
 * ```ts
 * const r = await callTarget({ url: server.url }, 'POST', '/api/v1/push', { items: [] });
 * ```
 */
export async function callTarget<T = unknown>(
  target: HttpTarget,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpReply<T>> {
  const all = { 'content-type': 'application/json', ...target.headers, ...headers };
  const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const signed = target.sign
    ? await target.sign({ method, url: target.url + path, headers: all, ...(text === undefined ? {} : { body: text }) })
    : all;
  return call<T>(target.url, method, path, text, signed);
}
