import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { SluiceError } from '../core/errors.js';
import { keepBodyBytes } from '../http/body-bytes.js';
import { errorResponse } from '../http/errors.js';
import { toJson } from '../codec/json-writer.js';
import type { HttpEvent, HttpResponse } from '../http/types.js';
import { MemoryTelemetry, type Telemetry } from '../service/telemetry.js';
import { asPrincipal } from './auth.js';
import { consoleResponse, type ConsoleFiles } from './console-assets.js';
import type { GateVerdict, RequestGate } from './edge.js';

/** Any API Gateway HTTP API (payload 2.0) handler, such as one made by `makeHandler`. */
export type LambdaHttpHandler = (event: HttpEvent, context: Context) => Promise<HttpResponse>;

export interface ServerLimits {
  headersTimeoutMs: number;
  receiveTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

/**
 * The server's own limits (docs/SECURITY.md). Node's defaults are looser (60 s for headers,
 * 300 s for a request, no connection limit) and checked only every 30 s.
 */
export const SERVER_LIMITS: Readonly<ServerLimits> = {
  /** Most time a client may take to send a request's headers: a slowloris connection goes after this. */
  headersTimeoutMs: 15_000,
  /**
   * Most time a client may take to send a whole request, body included (Node's `requestTimeout`;
   * it ends when the request is received, so a long poll's wait does not count). A 6 MiB body
   * takes ~50 s at 1 Mbit/s.
   */
  receiveTimeoutMs: 120_000,
  /** An idle keep-alive connection is closed after this (above the 60 s of common client pools). */
  keepAliveTimeoutMs: 65_000,
  /** Connections held at once; more are closed as they arrive. Far above any client pool, far below the file limit. */
  maxConnections: 1_000,
};

export interface LocalServerOptions {
  handler: LambdaHttpHandler;
  host: string;
  port: number;
  maxBodyBytes: number;
  /** Per-request time budget handed to the handler as the Lambda's remaining time. */
  requestTimeoutMs?: number;
  /**
   * Checks on a request's method and headers, run before its body is read: the edge (host,
   * origin, content type, authentication; see edge.ts). None: every request goes through.
   */
  gate?: RequestGate;
  /** Overrides of {@link SERVER_LIMITS}. */
  limits?: Partial<ServerLimits>;
  /** The built console, served at `/console/` (console-assets.ts); absent, that path says how to build it. */
  consoleFiles?: ConsoleFiles | undefined;
  /** Where a request the handler never answered (it threw) is logged; JSON lines on stderr by default. */
  log?: Pick<Telemetry, 'error' | 'debug'>;
}

export interface LocalServer {
  url: string;
  port: number;
  server: Server;
  /** Stops accepting, lets requests in flight finish, closes idle connections. */
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

/** The client went away while sending its body: nothing to answer, and nothing failed here. */
class BodyAborted extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 'NaN');
    if (Number.isFinite(declared) && declared > limit) {
      reject(new BodyTooLarge(String(declared)));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new BodyTooLarge(String(size)));
        req.resume(); // drain without keeping it
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', (e) => reject(new BodyAborted(e.message)));
  });
}

/**
 * Reads and discards the rest of a refused request body (for at most `maxMs`), so the client
 * has finished sending when the 413 and the connection close reach it: a close while it is
 * still writing makes its send fail (EPIPE, reset) and it never reads the answer.
 */
function drain(req: IncomingMessage, maxMs = 10_000): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(done, maxMs);
    req.once('end', done).once('close', done).once('error', done);
    req.resume();
  });
}

/** The path of a request target, without its query. */
const pathOf = (target = '/'): string => target.split('?', 1)[0] ?? '/';

/** Translates a Node request into the event API Gateway would send. */
export function toEvent(req: IncomingMessage, body: Buffer, requestId: string): HttpEvent {
  const target = req.url ?? '/';
  // Node gives header names in lower case already.
  const headers: Record<string, string> = {};
  const src = req.headers;
  for (const k in src) {
    const v = src[k];
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
  }
  const q = target.indexOf('?');
  // API Gateway passes the path as received (still percent-encoded).
  const rawPath = q < 0 ? target : target.slice(0, q);
  const rawQueryString = q < 0 ? '' : (target.slice(q + 1).split('#')[0] ?? '');
  let qs: Record<string, string> | undefined;
  if (rawQueryString !== '') {
    qs = {};
    for (const [k, v] of new URLSearchParams(rawQueryString)) qs[k] = k in qs ? `${qs[k]},${v}` : v;
  }
  const now = Date.now();
  const method = (req.method ?? 'GET').toUpperCase();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    headers,
    queryStringParameters: qs && Object.keys(qs).length > 0 ? qs : undefined,
    body: body.length ? body.toString('utf8') : undefined,
    isBase64Encoded: false,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
    },
  };
}

function send(res: ServerResponse, out: HttpResponse & { bodyBytes?: Buffer }, extra?: Record<string, string>): void {
  const headers: Record<string, string | number> = {};
  if (out.headers) for (const k in out.headers) headers[k] = String(out.headers[k]);
  if (extra) for (const k in extra) headers[k] = extra[k] as string;
  const status = out.statusCode ?? 200;
  const body = status === 204 ? '' : (out.bodyBytes ?? out.body ?? '');
  // A length, so the answer goes out in one write and not chunked (writeHead would otherwise
  // fix the headers without one).
  headers['content-length'] = Buffer.byteLength(body);
  res.writeHead(status, headers);
  res.end(status === 204 ? undefined : body);
}

/**
 * Serves Lambda HTTP handlers on a plain Node server: the same code that runs behind API
 * Gateway, on one machine.
 *
 * @example
 * ```ts
 * const srv = await startLocalServer({ handler, host: '127.0.0.1', port: 6632, maxBodyBytes: 6 << 20 });
 * await fetch(`${srv.url}/health`);
 * await srv.close();
 * ```
 */
export async function startLocalServer(opts: LocalServerOptions): Promise<LocalServer> {
  let seq = 0;
  let inFlight = 0;
  let idleResolve: (() => void) | undefined;
  const timeoutMs = opts.requestTimeoutMs ?? 60_000;
  const log = opts.log ?? new MemoryTelemetry();
  const limits = { ...SERVER_LIMITS, ...opts.limits };
  const gate = (req: IncomingMessage): GateVerdict =>
    opts.gate?.({ method: (req.method ?? 'GET').toUpperCase(), headers: req.headers }) ?? {};
  const handle = (req: IncomingMessage, res: ServerResponse, verdict: GateVerdict): void => {
    inFlight++;
    const started = Date.now();
    const requestId = `local-${process.pid}-${++seq}`;
    const finish = (): void => {
      if (--inFlight === 0) idleResolve?.();
    };
    res.on('close', finish);
    // Refused from the headers: answered before any of the body is read. Node then reads and
    // discards the rest of the body (it stores none of it), so a client that writes its whole
    // body before reading still gets to read the answer.
    if ('respond' in verdict) {
      send(res, verdict.respond);
      return;
    }
    void (async () => {
      let out: HttpResponse;
      try {
        const body = await readBody(req, opts.maxBodyBytes);
        const context = {
          awsRequestId: requestId,
          functionName: 'sluice-local',
          getRemainingTimeInMillis: () => Math.max(0, started + timeoutMs - Date.now()),
        } as unknown as Context;
        const event = toEvent(req, body, requestId);
        keepBodyBytes(event, body);
        out = await opts.handler(
          verdict.principal === undefined ? event : asPrincipal(event, verdict.principal),
          context,
        );
      } catch (e) {
        if (e instanceof BodyAborted) {
          // Any client can do this, as often as it likes: a debug line, not an error with a stack.
          log.debug('request body aborted by the client', {
            requestId,
            method: req.method,
            path: pathOf(req.url),
            reason: e.message,
          });
          return;
        }
        const err =
          e instanceof BodyTooLarge
            ? new SluiceError(
                'payload_too_large',
                `request body is ${e.message} bytes or more; the limit is ${opts.maxBodyBytes}`,
                { limit: opts.maxBodyBytes },
              )
            : e;
        const r = errorResponse(err, log);
        out = { statusCode: r.statusCode, headers: { 'content-type': 'application/json' }, body: toJson(r.body) };
        if (e instanceof BodyTooLarge) {
          res.setHeader('connection', 'close');
          await drain(req);
        }
      }
      send(res, out, verdict.headers);
    })();
  };
  const server = createServer(
    {
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.receiveTimeoutMs,
      // How often those timeouts are enforced (Node's default is every 30 s).
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
    (req, res) => {
      // The console's static files hold no data: served before the edge, so a browser loads
      // the page without credentials; the API calls it makes then pass the edge like any other.
      const asset = consoleResponse(opts.consoleFiles, (req.method ?? 'GET').toUpperCase(), pathOf(req.url));
      if (asset) send(res, asset);
      else handle(req, res, gate(req));
    },
  );
  server.maxConnections = limits.maxConnections;
  // `Expect: 100-continue`: a request the edge refuses never gets its body sent at all.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const verdict = gate(req);
    if ('respond' in verdict) res.setHeader('connection', 'close');
    else res.writeContinue();
    handle(req, res, verdict);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    server,
    close: async () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      if (inFlight > 0) await new Promise<void>((r) => (idleResolve = r));
      server.closeAllConnections();
      await closed;
    },
  };
}
