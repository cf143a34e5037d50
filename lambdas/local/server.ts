import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { SluiceError } from '../core/errors.js';
import { keepBodyBytes } from '../http/body-bytes.js';
import { errorResponse } from '../http/errors.js';
import { toJson } from '../codec/json-writer.js';
import type { HttpEvent, HttpResponse } from '../http/types.js';

/** Any API Gateway HTTP API (payload 2.0) handler, such as one made by `makeHandler`. */
export type LambdaHttpHandler = (event: HttpEvent, context: Context) => Promise<HttpResponse>;

export interface LocalServerOptions {
  handler: LambdaHttpHandler;
  host: string;
  port: number;
  maxBodyBytes: number;
  /** Per-request time budget handed to the handler as the Lambda's remaining time. */
  requestTimeoutMs?: number;
}

export interface LocalServer {
  url: string;
  port: number;
  server: Server;
  /** Stops accepting, lets requests in flight finish, closes idle connections. */
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

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
    req.on('error', reject);
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

/** Translates a Node request into the event API Gateway would send. */
export function toEvent(req: IncomingMessage, body: Buffer, requestId: string): HttpEvent {
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  const qs: Record<string, string> = {};
  for (const [k, v] of url.searchParams) qs[k] = k in qs ? `${qs[k]},${v}` : v;
  const now = Date.now();
  const method = (req.method ?? 'GET').toUpperCase();
  // API Gateway passes the path as received (still percent-encoded).
  const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: url.search.slice(1),
    headers,
    queryStringParameters: Object.keys(qs).length ? qs : undefined,
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

function send(res: ServerResponse, out: HttpResponse): void {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(out.headers ?? {})) headers[k] = String(v);
  const body = out.body ?? '';
  res.writeHead(out.statusCode ?? 200, headers);
  res.end(out.statusCode === 204 ? undefined : body);
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
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    inFlight++;
    const started = Date.now();
    const requestId = `local-${process.pid}-${++seq}`;
    const finish = (): void => {
      if (--inFlight === 0) idleResolve?.();
    };
    res.on('close', finish);
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
        out = await opts.handler(event, context);
      } catch (e) {
        const err =
          e instanceof BodyTooLarge
            ? new SluiceError(
                'payload_too_large',
                `request body is ${e.message} bytes or more; the limit is ${opts.maxBodyBytes}`,
                { limit: opts.maxBodyBytes },
              )
            : e;
        const r = errorResponse(err, {
          error: (m, f) => console.error(JSON.stringify({ level: 'ERROR', message: m, ...f })),
        });
        out = { statusCode: r.statusCode, headers: { 'content-type': 'application/json' }, body: toJson(r.body) };
        if (e instanceof BodyTooLarge) {
          res.setHeader('connection', 'close');
          await drain(req);
        }
      }
      send(res, out);
    })();
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
