/**
 * The HTTPS target invoker (server/service/targets/https-invoker.ts) against real node:http and
 * node:net servers on 127.0.0.1 (`allowLoopback: true`, as the local server runs it): what each
 * answer, silence and failure becomes, that the request is signed, that redirects are not
 * followed and oversize answers are not buffered, and that the SSRF guard refuses loopback
 * targets — a literal address before connecting, a name (`localhost`) at its lookup.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { verifyTargetSignature } from '../../client/index.js';
import type { Invoker, InvokeResult } from '../../server/core/targets/invoke-result.js';
import { httpsInvoker, type HttpsInvokerOptions } from '../../server/service/targets/https-invoker.js';
import { newSigningSecret } from '../../server/service/targets/signing.js';

const secret = newSigningSecret();
const event = JSON.stringify({
  version: 'sluice.target.v1',
  queue: 'orders',
  group: 'billing',
  mode: 'leases',
  batchId: 'b-1',
  records: [
    { transactionId: 't1', payload: { n: 1 } },
    { transactionId: 't2', payload: { n: 'ü' } },
  ],
});

const servers: (Server | NetServer)[] = [];
const sockets = new Set<Socket>();
const invokers: Invoker[] = [];
afterEach(async () => {
  await Promise.all(
    invokers.splice(0).map(async (i) => {
      await i.close?.();
    }),
  );
  for (const s of sockets) s.destroy();
  sockets.clear();
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          if ('closeAllConnections' in s) s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
});

async function listen(server: Server | NetServer): Promise<number> {
  servers.push(server);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP server that records each request (read in full) and answers with `answer`. */
async function serve(answer: (res: ServerResponse, seen: Seen) => void) {
  const seen: Seen[] = [];
  let connections = 0;
  let active = 0;
  let maxActive = 0;
  const server = createServer((req, res) => {
    active++;
    maxActive = Math.max(maxActive, active);
    res.on('close', () => active--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      seen.push(s);
      answer(res, s);
    });
  });
  server.on('connection', () => connections++);
  const port = await listen(server);
  return {
    port,
    url: `http://127.0.0.1:${port}/hook?k=v`,
    seen,
    connections: () => connections,
    maxActive: () => maxActive,
  };
}

/** A TCP server that accepts, reads what it is sent, and never answers. */
async function silent() {
  const received: Buffer[] = [];
  let connections = 0;
  const server = createNetServer((socket) => {
    connections++;
    socket.on('data', (d: Buffer) => received.push(d));
    socket.on('error', () => {});
  });
  const port = await listen(server);
  return { port, received: () => Buffer.concat(received).toString('utf8'), connections: () => connections };
}

/** A port nothing listens on (it was just freed). */
async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function invoker(url: string, opts: Partial<HttpsInvokerOptions> = {}): Invoker {
  const i = httpsInvoker({
    url,
    secrets: () => [secret],
    allowLoopback: true,
    userAgent: 'sluice-test/1',
    maxSockets: 2,
    ...opts,
  });
  invokers.push(i);
  return i;
}

const invoke = (i: Invoker, timeoutMs = 5000, signal?: AbortSignal) => i.invoke(event, { timeoutMs, signal });
const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

async function timed(p: Promise<InvokeResult>): Promise<{ r: InvokeResult; ms: number }> {
  const start = performance.now();
  const r = await p;
  return { r, ms: performance.now() - start };
}

describe('integration: HTTPS invoker — answers', () => {
  it('POSTs the event, signed, with its own headers; a 200 with batchItemFailures is answered with them', async () => {
    const answer = { batchItemFailures: [{ itemIdentifier: 't2', error: 'no' }] };
    const srv = await serve((res) => json(res, 200, answer));
    expect(await invoke(invoker(srv.url))).toEqual({ kind: 'answered', value: answer });

    const [req] = srv.seen;
    expect(req?.method).toBe('POST');
    expect(req?.url).toBe('/hook?k=v');
    expect(req?.body).toBe(event);
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.headers['content-length']).toBe(String(Buffer.byteLength(event)));
    expect(req?.headers['user-agent']).toBe('sluice-test/1');
    expect(verifyTargetSignature({ header: req?.headers['sluice-signature'], body: req?.body ?? '', secret })).toBe(
      true,
    );
    expect(
      verifyTargetSignature({
        header: req?.headers['sluice-signature'],
        body: req?.body ?? '',
        secret: newSigningSecret(),
      }),
    ).toBe(false);
  });

  it('a 200 without batchItemFailures is answered with what it said; JSON without a JSON content type is still read', async () => {
    const srv = await serve((res) => json(res, 200, { ok: true }));
    expect(await invoke(invoker(srv.url))).toEqual({ kind: 'answered', value: { ok: true } });
    const bare = await serve((res) => res.writeHead(200).end('{"batchItemFailures":[{"itemIdentifier":"t1"}]}'));
    expect(await invoke(invoker(bare.url))).toEqual({
      kind: 'answered',
      value: { batchItemFailures: [{ itemIdentifier: 't1' }] },
    });
  });

  it('an empty 204 (or 200) is answered with undefined', async () => {
    const srv = await serve((res) => res.writeHead(204, { 'content-type': 'application/json' }).end());
    expect(await invoke(invoker(srv.url))).toEqual({ kind: 'answered', value: undefined });
    const empty = await serve((res) => res.writeHead(200, { 'content-type': 'application/json' }).end('  \n'));
    expect(await invoke(invoker(empty.url))).toEqual({ kind: 'answered', value: undefined });
  });

  it('a 2xx that is not JSON: undefined when it does not claim to be, a function error when it does', async () => {
    const text = await serve((res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('OK'));
    expect(await invoke(invoker(text.url))).toEqual({ kind: 'answered', value: undefined });
    const broken = await serve((res) =>
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end('{"batchItem'),
    );
    const r = await invoke(invoker(broken.url));
    expect(r.kind).toBe('function-error');
    expect(r.kind === 'function-error' && r.error).toMatch(/^HTTP 200: the answer is not JSON .*: \{"batchItem$/);
  });

  it('a compressed 2xx is a function error (its failures would otherwise read as success)', async () => {
    const srv = await serve((res) =>
      res
        .writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end(gzipSync('{"batchItemFailures":[{"itemIdentifier":"t1"}]}')),
    );
    expect(await invoke(invoker(srv.url))).toEqual({
      kind: 'function-error',
      error: 'HTTP 200: the answer is gzip-encoded; none was asked for',
    });
  });

  it('a 500 is a function error with the status and the first 200 body bytes', async () => {
    const body = 'E'.repeat(150) + 'F'.repeat(850);
    const srv = await serve((res) => res.writeHead(500, { 'content-type': 'text/plain' }).end(body));
    const r = await invoke(invoker(srv.url));
    expect(r).toEqual({ kind: 'function-error', error: `HTTP 500 Internal Server Error: ${body.slice(0, 200)}` });
    const small = await serve((res) => res.writeHead(400).end('bad event'));
    expect(await invoke(invoker(small.url))).toEqual({
      kind: 'function-error',
      error: 'HTTP 400 Bad Request: bad event',
    });
  });

  it('a 429 is throttled, with Retry-After in seconds or as an HTTP-date', async () => {
    const secs = await serve((res) => res.writeHead(429, { 'retry-after': '7' }).end());
    expect(await invoke(invoker(secs.url))).toEqual({
      kind: 'throttled',
      error: 'HTTP 429 Too Many Requests',
      retryAfterMs: 7000,
    });
    const date = await serve((res) =>
      res.writeHead(429, { 'retry-after': new Date(Date.now() + 10_000).toUTCString() }).end('slow down'),
    );
    const r = await invoke(invoker(date.url));
    expect(r.kind).toBe('throttled');
    if (r.kind !== 'throttled') return;
    expect(r.error).toBe('HTTP 429 Too Many Requests: slow down');
    expect(r.retryAfterMs).toBeGreaterThan(7000);
    expect(r.retryAfterMs).toBeLessThanOrEqual(10_000);
    const junk = await serve((res) => res.writeHead(429, { 'retry-after': '1.5' }).end());
    expect(await invoke(invoker(junk.url))).toMatchObject({ kind: 'throttled', retryAfterMs: undefined });
  });

  it('a 503 is throttled likewise, with or without Retry-After', async () => {
    const bare = await serve((res) => res.writeHead(503).end());
    expect(await invoke(invoker(bare.url))).toEqual({
      kind: 'throttled',
      error: 'HTTP 503 Service Unavailable',
      retryAfterMs: undefined,
    });
    const after = await serve((res) => res.writeHead(503, { 'retry-after': '2' }).end());
    expect(await invoke(invoker(after.url))).toMatchObject({ kind: 'throttled', retryAfterMs: 2000 });
  });

  it('a 302 is a function error, and its Location is not followed', async () => {
    const elsewhere = await serve((res) => json(res, 200, {}));
    const srv = await serve((res) => res.writeHead(302, { location: elsewhere.url }).end());
    expect(await invoke(invoker(srv.url))).toEqual({
      kind: 'function-error',
      error: `HTTP 302: redirects are not followed (to ${elsewhere.url})`,
    });
    expect(elsewhere.seen).toHaveLength(0);
    expect(elsewhere.connections()).toBe(0);
  });
});

describe('integration: HTTPS invoker — silence and failures', () => {
  it('an answer slower than timeoutMs is a function error (the target ran)', async () => {
    const srv = await serve((res) => setTimeout(() => json(res, 200, {}), 2000));
    const { r, ms } = await timed(invoke(invoker(srv.url), 300));
    expect(r).toEqual({ kind: 'function-error', error: 'timed out after 300 ms' });
    expect(srv.seen).toHaveLength(1); // the request did arrive
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(1500);
  });

  it('a server that accepts and never answers: a function error after timeoutMs, the request having been sent', async () => {
    const srv = await silent();
    const { r, ms } = await timed(invoke(invoker(`http://127.0.0.1:${srv.port}/`), 300));
    expect(r).toEqual({ kind: 'function-error', error: 'timed out after 300 ms' });
    expect(ms).toBeLessThan(1500);
    expect(srv.received()).toMatch(/^POST \/ HTTP\/1\.1\r\n/);
    expect(srv.received().endsWith(event)).toBe(true);
  });

  it('a connection reset after the request was written is a function error', async () => {
    const srv = await serve((res) => res.socket?.destroy());
    const r = await invoke(invoker(srv.url));
    expect(r.kind).toBe('function-error');
    expect(r.kind === 'function-error' && r.error).toMatch(/after the request was sent: .*ECONNRESET/);
  });

  it('a reset on a reused keep-alive connection before any answer is unreachable (the idle-close race)', async () => {
    const perSocket = new Map<unknown, number>();
    const srv = await serve((res) => {
      const n = (perSocket.get(res.socket) ?? 0) + 1;
      perSocket.set(res.socket, n);
      if (n === 1) json(res, 200, {});
      else res.socket?.destroy(); // as a server closing an idle connection just as the request came
    });
    const i = invoker(srv.url, { maxSockets: 1 });
    expect(await invoke(i)).toEqual({ kind: 'answered', value: {} });
    const r = await invoke(i);
    expect(r.kind).toBe('unreachable');
    expect(r.kind === 'unreachable' && r.error).toMatch(/ECONNRESET.*on a reused keep-alive connection$/);
    expect(srv.connections()).toBe(1);
  });

  it('a connect to a closed port is unreachable, at once', async () => {
    const port = await closedPort();
    const { r, ms } = await timed(invoke(invoker(`http://127.0.0.1:${port}/`)));
    expect(r.kind).toBe('unreachable');
    expect(r.kind === 'unreachable' && r.error).toContain('ECONNREFUSED');
    expect(ms).toBeLessThan(1000);
  });

  it('a TLS failure (https to a plain HTTP server) is unreachable', async () => {
    const srv = await serve((res) => json(res, 200, {}));
    const r = await invoke(invoker(`https://127.0.0.1:${srv.port}/`));
    expect(r.kind).toBe('unreachable');
    expect(srv.connections()).toBe(1);
    expect(srv.seen).toHaveLength(0);
  });

  it('a TLS handshake that never completes is unreachable after connectTimeoutMs', async () => {
    const srv = await silent();
    const { r, ms } = await timed(invoke(invoker(`https://127.0.0.1:${srv.port}/`, { connectTimeoutMs: 200 }), 5000));
    expect(r).toEqual({ kind: 'unreachable', error: 'not connected within 200 ms' });
    expect(srv.connections()).toBe(1);
    expect(ms).toBeLessThan(1500);
  });

  it('an answer over maxAnswerBytes is a function error, read no further than the cap', async () => {
    const TOTAL = 64 * 1024 * 1024;
    let written = 0;
    let closed = false;
    const srv = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = (): void => {
        while (written < TOTAL && !closed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('close', () => (closed = true));
      pump();
    });
    const r = await invoke(invoker(srv.url, { maxAnswerBytes: 256 * 1024 }));
    expect(r).toEqual({ kind: 'function-error', error: 'the answer is larger than the 262144-byte limit' });
    await vi.waitFor(() => expect(closed).toBe(true));
    expect(written).toBeLessThan(TOTAL / 2); // the socket was dropped, not drained
  });

  it('an answer declaring more than maxAnswerBytes is refused before its body arrives', async () => {
    const srv = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) });
      res.write('{'); // and nothing more, ever
    });
    const { r, ms } = await timed(invoke(invoker(srv.url, { maxAnswerBytes: 1024 }), 5000));
    expect(r).toEqual({
      kind: 'function-error',
      error: 'the answer (10485760 bytes) is larger than the 1024-byte limit',
    });
    expect(ms).toBeLessThan(1500);
  });

  it('an aborted signal is unreachable: during the wait, or before the invoke', async () => {
    const srv = await silent();
    const i = invoker(`http://127.0.0.1:${srv.port}/`);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const { r, ms } = await timed(invoke(i, 5000, ac.signal));
    expect(r).toEqual({ kind: 'unreachable', error: 'aborted' });
    expect(ms).toBeLessThan(1500);
    expect(await invoke(i, 5000, ac.signal)).toEqual({ kind: 'unreachable', error: 'aborted' });
  });
});

describe('integration: HTTPS invoker — connections and secrets', () => {
  it('keeps connections alive between invokes, up to maxSockets at once', async () => {
    const srv = await serve((res) => setTimeout(() => json(res, 200, {}), 50));
    const i = invoker(srv.url, { maxSockets: 1 });
    await invoke(i);
    await invoke(i);
    expect(srv.connections()).toBe(1);
    const rs = await Promise.all([invoke(i), invoke(i), invoke(i)]);
    expect(rs.every((r) => r.kind === 'answered')).toBe(true);
    expect(srv.maxActive()).toBe(1);
    expect(srv.connections()).toBe(1);
  });

  it('maxSockets is how many requests run at once', async () => {
    const srv = await serve((res) => setTimeout(() => json(res, 200, {}), 100));
    const i = invoker(srv.url, { maxSockets: 3 });
    await Promise.all([invoke(i), invoke(i), invoke(i), invoke(i), invoke(i), invoke(i)]);
    expect(srv.maxActive()).toBe(3);
    expect(srv.connections()).toBe(3);
  });

  it('close() drops the connections, ends invokes in flight, and refuses new ones', async () => {
    const srv = await silent();
    const i = invoker(`http://127.0.0.1:${srv.port}/`);
    const pending = invoke(i, 10_000);
    await vi.waitFor(() => expect(srv.received()).toContain(event));
    await i.close?.();
    expect(await pending).toEqual({ kind: 'unreachable', error: 'the invoker was closed' });
    await vi.waitFor(() => expect(sockets.size).toBe(0));
    expect(await invoke(i)).toEqual({ kind: 'unreachable', error: 'the invoker was closed' });
  });

  it('reads the secrets at each invoke: a rotation signs the next request with both', async () => {
    const srv = await serve((res) => json(res, 200, {}));
    const next = newSigningSecret();
    let secrets = [secret];
    const i = invoker(srv.url, { secrets: () => secrets });
    await invoke(i);
    secrets = [next, secret];
    await invoke(i);
    secrets = [next];
    await invoke(i);
    const ok = (n: number, s: string) =>
      verifyTargetSignature({
        header: srv.seen[n]?.headers['sluice-signature'],
        body: srv.seen[n]?.body ?? '',
        secret: s,
      });
    expect([ok(0, secret), ok(0, next)]).toEqual([true, false]);
    expect([ok(1, secret), ok(1, next)]).toEqual([true, true]);
    expect([ok(2, secret), ok(2, next)]).toEqual([false, true]);
  });

  it('with no signing secret nothing is sent', async () => {
    const srv = await serve((res) => json(res, 200, {}));
    const r = await invoke(invoker(srv.url, { secrets: () => [] }));
    expect(r).toEqual({ kind: 'unreachable', error: 'not sent: a target request needs at least one signing secret' });
    expect(srv.connections()).toBe(0);
  });
});

describe('integration: HTTPS invoker — the address guard', () => {
  it('without allowLoopback, a loopback URL is unreachable, refused by the guard before connecting', async () => {
    const srv = await serve((res) => json(res, 200, {}));
    const r = await invoke(invoker(srv.url, { allowLoopback: false }));
    expect(r).toEqual({
      kind: 'unreachable',
      error: 'the address guard refused 127.0.0.1: 127.0.0.1 is a loopback address (127.0.0.0/8)',
    });
    // An address spelled as one number is the same address.
    const r2 = await invoke(invoker(`https://2130706433:${srv.port}/`, { allowLoopback: false }));
    expect(r2.kind === 'unreachable' && r2.error).toContain('the address guard refused 127.0.0.1');
    const r3 = await invoke(invoker(`https://[::ffff:127.0.0.1]:${srv.port}/`, { allowLoopback: false }));
    expect(r3.kind === 'unreachable' && r3.error).toContain('(IPv4-mapped 127.0.0.1) is a loopback address');
    expect(srv.connections()).toBe(0);
  });

  it('a name resolving to 127.0.0.1 (localhost) is refused by the guard at its lookup', async () => {
    const srv = await silent();
    const r = await invoke(invoker(`https://localhost:${srv.port}/`, { allowLoopback: false }));
    expect(r.kind).toBe('unreachable');
    expect(r.kind === 'unreachable' && r.error).toMatch(
      /^the address guard refused localhost: .* is a loopback address/,
    );
    expect(srv.connections()).toBe(0);
    // The same name with allowLoopback does connect (then fails its TLS handshake with a silent
    // server): the refusal came from the lookup's answer, not from the name.
    const allowed = await invoke(invoker(`https://localhost:${srv.port}/`, { connectTimeoutMs: 300 }), 1000);
    expect(allowed).toEqual({ kind: 'unreachable', error: 'not connected within 300 ms' });
    expect(srv.connections()).toBe(1);
  });

  it('plain http only for loopback, and only with allowLoopback', async () => {
    const r = await invoke(invoker('http://93.184.215.14/hook'));
    expect(r.kind === 'unreachable' && r.error).toBe(
      'http: is only for a loopback target; 93.184.215.14 is not a loopback address, use https:',
    );
    const strict = await invoke(invoker('http://example.com/hook', { allowLoopback: false }));
    expect(strict.kind === 'unreachable' && strict.error).toContain('http: is only for a loopback target');
    const other = await invoke(invoker('ftp://example.com/hook'));
    expect(other).toEqual({ kind: 'unreachable', error: 'ftp: is not https:' });
  });
});
