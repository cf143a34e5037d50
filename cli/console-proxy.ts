/**
 * The server behind `sluice console`: the console's files, and every API call the page makes
 * forwarded to the endpoint with this user's authentication added here (SigV4 from their AWS
 * profile, or a bearer token), so the browser never holds a credential. It listens on loopback
 * only and runs the local server's edge (server/public/console.ts): a request addressed to another
 * host name (DNS rebinding) or sent by another web origin is refused before it is signed.
 */
import { authenticator, type Auth } from '../client/auth.js';
import {
  startConsoleServer,
  type ConsoleFiles,
  type HttpEvent,
  type HttpResponse,
  type LocalServer,
} from '../server/public/console.js';

export interface ConsoleProxyOptions {
  /** The API to forward to, e.g. `https://abc123.execute-api.eu-west-1.amazonaws.com`. */
  endpoint: string;
  /** How forwarded calls authenticate (none: as they are). */
  auth?: Auth | undefined;
  /** The built console (scripts/build-console.ts). */
  files: ConsoleFiles;
  /** Port on 127.0.0.1 (0: any free one). */
  port: number;
  /** Injected in tests. */
  fetch?: typeof fetch;
}

/** Paths forwarded to the API; anything else is not the API's. */
const FORWARDED = /^\/(api\/|health$|ready$|metrics(\/|$))/;
/** Request headers passed on; the browser's own credentials and cookies never are. */
const REQUEST_HEADERS = ['content-type', 'accept'];
/** Answer headers passed back. */
const RESPONSE_HEADERS = ['content-type', 'retry-after', 'cache-control'];
/** Bodies as large as the local server accepts (API Gateway's own limit is lower). */
const MAX_BODY_BYTES = 6 << 20;
/** Longest a forwarded call may take (above the API's longest wait). */
const UPSTREAM_TIMEOUT_MS = 65_000;

const problem = (statusCode: number, code: string, error: string): HttpResponse => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ error, code }),
});

/**
 * Starts the console proxy on 127.0.0.1.
 *
 * @example
 * ```ts
 * const proxy = await startConsoleProxy({ endpoint, auth: { type: 'sigv4', profile: 'prod' }, files: await buildConsole(), port: 6633 });
 * console.log(`${proxy.url}/console/`);
 * ```
 */
export async function startConsoleProxy(opts: ConsoleProxyOptions): Promise<LocalServer> {
  const base = opts.endpoint.replace(/\/+$/, '');
  const sign = authenticator(opts.auth ?? { type: 'none' }, new URL(base));
  const doFetch = opts.fetch ?? fetch;
  const handler = async (event: HttpEvent): Promise<HttpResponse> => {
    if (!FORWARDED.test(event.rawPath))
      return problem(404, 'not_found', `${event.rawPath} is neither the console (/console/) nor the API (/api/…)`);
    const url = new URL(base + event.rawPath + (event.rawQueryString ? `?${event.rawQueryString}` : ''));
    const method = event.requestContext.http.method;
    const headers: Record<string, string> = {};
    for (const name of REQUEST_HEADERS) {
      const v = event.headers[name];
      if (v !== undefined) headers[name] = v;
    }
    const body = event.body;
    let signed: Record<string, string>;
    try {
      signed = await sign({ method, url, headers, body });
    } catch (e) {
      // Typically no credentials for the profile, or an expired SSO session.
      const why = e instanceof Error ? e.message : String(e);
      return problem(502, 'signing_failed', `could not authenticate the call to ${base}: ${why}`);
    }
    let res: Response;
    try {
      res = await doFetch(url, {
        method,
        headers: signed,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
      });
    } catch (e) {
      return problem(502, 'bad_gateway', `cannot reach ${base}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const out: Record<string, string> = {};
    for (const name of RESPONSE_HEADERS) {
      const v = res.headers.get(name);
      if (v !== null) out[name] = v;
    }
    return { statusCode: res.status, headers: out, body: await res.text() };
  };
  return startConsoleServer({
    handler,
    files: opts.files,
    port: opts.port,
    maxBodyBytes: MAX_BODY_BYTES,
    requestTimeoutMs: UPSTREAM_TIMEOUT_MS,
  });
}
