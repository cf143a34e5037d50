// The local server's edge: what a web page in the user's browser, a rebound DNS name or a slow
// client can and cannot do to the open loopback server, checked from a request's headers before its
// body is read (server/local/edge.ts, docs/SECURITY.md).
import { connect, type Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler } from '../../server/http/handler.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { requestGate } from '../../server/local/edge.js';
import { startLocalServer, type LocalServer } from '../../server/local/server.js';
import type { Services } from '../../server/service/runtime.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { OPEN_EDGE, startTestServer } from '../support/http.js';
import { rawRequest, type RawReply } from '../support/raw-http.js';
import type { PopReply, PushReply } from '../support/replies.js';
import { testServices } from '../support/services.js';
import { journaled, type WriteJournal } from '../support/write-journal.js';

const DASHBOARD = 'http://dash.test:5173';

let dir: string;
let storage: Storage;
let journal: WriteJournal;
let svc: Services;
/** The open server as `npm start` runs it without grants. */
let open: LocalServer;
/** The same, started with `--cors-origin http://dash.test:5173 --allowed-host sluice.test`. */
let withCors: LocalServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-edge-'));
  storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  journal = journaled(storage);
  svc = testServices(journal.storage, { config: { maxPopWaitMs: 50 } });
  open = await startTestServer(svc);
  withCors = await startTestServer(svc, {
    edge: { ...OPEN_EDGE, corsOrigins: [DASHBOARD], allowedHosts: ['sluice.test'] },
  });
});
afterAll(async () => {
  await Promise.all([open.close(), withCors.close()]);
  await storage.close();
  await rm(dir, { recursive: true, force: true });
});

const JSON_TYPE = { 'content-type': 'application/json' };
const send = (
  server: LocalServer,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<RawReply> =>
  rawRequest(server.url, method, path, {
    headers,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });

/** Sends a request and checks it was refused with `status` and changed nothing stored. */
async function refused(
  status: number,
  ...args: Parameters<typeof send>
): Promise<{ error: string; code: string } & Record<string, unknown>> {
  journal.begin();
  const r = await send(...args);
  expect({ path: args[2], status: r.status }).toEqual({ path: args[2], status });
  expect(journal.writes()).toBe(0);
  expect(await journal.changes()).toEqual([]);
  return r.json as { error: string; code: string };
}

/** A queue with a leased message and a dead letter: what cross-site requests would like to touch. */
async function leasedAndDeadLettered(queue: string): Promise<{ leaseId: string; partitionId: string; tx: string }> {
  await send(open, 'POST', '/api/v1/configure', JSON_TYPE, { queue, options: { retryLimit: 0 } });
  await send(open, 'POST', '/api/v1/push', JSON_TYPE, {
    items: [
      { queue, payload: 1, transactionId: `${queue}-dead` },
      { queue, payload: 2, transactionId: `${queue}-leased` },
    ],
  });
  const first = (await send(open, 'GET', `/api/v1/pop/queue/${queue}?batch=1`)).json as PopReply;
  const m = first.messages[0]!;
  await send(open, 'POST', '/api/v1/ack', JSON_TYPE, { ...m, status: 'failed' });
  const second = (await send(open, 'GET', `/api/v1/pop/queue/${queue}?batch=1`)).json as PopReply;
  return { leaseId: second.leaseId, partitionId: m.partitionId, tx: m.transactionId };
}

describe('edge: DNS rebinding', () => {
  it('refuses a Host that is not a loopback name, for reads and writes alike', async () => {
    await send(open, 'POST', '/api/v1/push', JSON_TYPE, { items: [{ queue: 'rebind', payload: 'secret' }] });
    const port = open.port;
    for (const host of [
      `evil.example:${port}`,
      'evil.example',
      `127.0.0.1.evil.example:${port}`,
      `sluice.test:${port}`,
      // Only a port may follow a bracketed address, and a port is digits.
      '[::1]evil.example',
      `[::1]evil.example:${port}`,
      '127.0.0.1:evil',
      'localhost:80x',
    ]) {
      const body = await refused(403, open, 'GET', '/api/v1/queues/rebind/partitions/Default/messages', { host });
      expect(body).toMatchObject({ code: 'forbidden' });
      expect(body.error).toMatch(/--allowed-host/);
      await refused(403, open, 'POST', '/api/v1/push', { host, ...JSON_TYPE }, { items: [{ queue: 'rebind' }] });
    }
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `LOCALHOST:${port}`,
      `127.1.2.3:${port}`,
      `[::1]:${port}`,
    ])
      expect((await send(open, 'GET', '/health', { host })).status).toBe(200);
  });

  it('answers a configured host name too (--allowed-host)', async () => {
    expect((await send(withCors, 'GET', '/health', { host: `sluice.test:${withCors.port}` })).status).toBe(200);
    expect((await send(withCors, 'GET', '/health', { host: 'other.test' })).status).toBe(403);
  });
});

describe('edge: cross-site requests', () => {
  it('refuses writes from another origin, bodyless POSTs (extend, retry, seek) included, and they change nothing', async () => {
    const { leaseId, partitionId, tx } = await leasedAndDeadLettered('csrf');
    const evil = { origin: 'http://evil.example' };
    // CORS "simple requests": a page may send these anywhere without a preflight.
    await refused(
      403,
      open,
      'POST',
      '/api/v1/push',
      { ...evil, 'content-type': 'text/plain' },
      { items: [{ queue: 'csrf' }] },
    );
    await refused(403, open, 'POST', '/api/v1/push', { ...evil, ...JSON_TYPE }, { items: [{ queue: 'csrf' }] });
    await refused(403, open, 'POST', `/api/v1/lease/${encodeURIComponent(leaseId)}/extend`, evil);
    await refused(403, open, 'POST', `/api/v1/messages/${partitionId}/${tx}/retry`, evil);
    await refused(403, open, 'POST', '/api/v1/consumer-groups/g/queues/csrf/seek', evil);
    await refused(403, open, 'DELETE', '/api/v1/resources/queues/csrf', evil);
    await refused(403, open, 'POST', '/api/v1/push', { origin: 'null', ...JSON_TYPE }, { items: [{ queue: 'csrf' }] });
    const body = await refused(403, open, 'GET', '/api/v1/queues/csrf/partitions/Default/messages', evil);
    expect(body.error).toMatch(/--cors-origin/);
    // The same requests from a page the server itself serves go through.
    const own = { origin: open.url };
    expect((await send(open, 'POST', `/api/v1/lease/${encodeURIComponent(leaseId)}/extend`, own)).status).toBe(200);
    expect((await send(open, 'POST', `/api/v1/messages/${partitionId}/${tx}/retry`, own)).status).toBe(200);
  });

  it('refuses what a browser marks cross-site or same-site even without an Origin (an <img> pop)', async () => {
    await send(open, 'POST', '/api/v1/push', JSON_TYPE, { items: [{ queue: 'img', payload: 1 }] });
    for (const site of ['cross-site', 'same-site'])
      await refused(403, open, 'GET', '/api/v1/pop/queue/img', { 'sec-fetch-site': site, 'sec-fetch-mode': 'no-cors' });
    for (const site of ['same-origin', 'none'])
      expect(
        (await send(open, 'GET', '/api/v1/queues/img/partitions/Default/messages', { 'sec-fetch-site': site })).status,
      ).toBe(200);
  });

  it('takes a body only as application/json: text/plain and form posts are refused (415)', async () => {
    const items = { items: [{ queue: 'ctype', payload: 1 }] };
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const body = await refused(415, open, 'POST', '/api/v1/push', { 'content-type': type }, items);
      expect(body).toMatchObject({ code: 'unsupported_media_type' });
    }
    await refused(415, open, 'POST', '/api/v1/push', {}, items);
    for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON'])
      expect((await send(open, 'POST', '/api/v1/push', { 'content-type': type }, items)).status).toBe(201);
  });
});

describe('edge: CORS (--cors-origin)', () => {
  const preflight = (server: LocalServer, origin: string) =>
    send(server, 'OPTIONS', '/api/v1/push', {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type, authorization',
    });

  it('is off by default: a preflight is refused and answers carry no Access-Control-Allow-Origin', async () => {
    const r = await preflight(open, DASHBOARD);
    expect(r.status).toBe(403);
    expect(r.headers['access-control-allow-origin']).toBeUndefined();
    expect((await send(open, 'GET', '/health')).headers['access-control-allow-origin']).toBeUndefined();
  });

  it("admits the configured origin's preflights, reads and writes, and only its", async () => {
    const r = await preflight(withCors, DASHBOARD);
    expect(r.status).toBe(204);
    expect(r.headers).toMatchObject({
      'access-control-allow-origin': DASHBOARD,
      'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE',
      'access-control-allow-headers': 'authorization, content-type',
      vary: 'origin',
    });
    const pushed = await send(
      withCors,
      'POST',
      '/api/v1/push',
      { origin: DASHBOARD, ...JSON_TYPE },
      {
        items: [{ queue: 'dash', payload: 1 }],
      },
    );
    expect(pushed.status).toBe(201);
    expect(pushed.headers['access-control-allow-origin']).toBe(DASHBOARD);
    const read = await send(withCors, 'GET', '/api/v1/queues/dash/partitions/Default/messages', {
      origin: DASHBOARD,
      'sec-fetch-site': 'same-site',
    });
    expect(read.status).toBe(200);
    expect(read.headers['access-control-allow-origin']).toBe(DASHBOARD);
    // An error answer carries it too, so the dashboard can read why.
    const missing = await send(withCors, 'GET', '/api/v1/queues/nope/partitions/Default/messages', {
      origin: DASHBOARD,
    });
    expect(missing.status).toBe(404);
    expect(missing.headers['access-control-allow-origin']).toBe(DASHBOARD);
    expect((await preflight(withCors, 'http://dash.test:5174')).status).toBe(403);
    expect((await preflight(withCors, 'https://dash.test:5173')).status).toBe(403);
    await refused(
      403,
      withCors,
      'POST',
      '/api/v1/push',
      { origin: 'http://evil.example', ...JSON_TYPE },
      { items: [] },
    );
  });
});

describe('edge: limits', () => {
  it('sets explicit timeouts and a connection limit', () => {
    expect(open.server.headersTimeout).toBe(15_000);
    // Longer than a 25 s long poll plus a 6 MiB upload on a slow link; it ends once the request is received.
    expect(open.server.requestTimeout).toBe(120_000);
    expect(open.server.keepAliveTimeout).toBe(65_000);
    expect(open.server.maxConnections).toBe(1_000);
  });

  it('closes a connection whose headers do not arrive in time, and keeps serving others', async () => {
    const srv = await startLocalServer({
      handler: makeHandler(ALL_ROUTES, { services: async () => svc }),
      gate: requestGate(OPEN_EDGE),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
      limits: { headersTimeoutMs: 400 },
    });
    try {
      const started = Date.now();
      const sock = connect(srv.port, '127.0.0.1');
      let got = '';
      sock.on('data', (d: Buffer) => (got += d.toString()));
      sock.write('GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ');
      const closed = await new Promise<number>((r) => sock.on('close', () => r(Date.now() - started)));
      expect(closed).toBeLessThan(3_000);
      expect(got).toMatch(/^HTTP\/1\.1 408 /);
      expect((await send(srv, 'GET', '/health')).status).toBe(200);
    } finally {
      await srv.close();
    }
  });

  it('closes connections beyond the limit as they arrive', async () => {
    const srv = await startLocalServer({
      handler: makeHandler(ALL_ROUTES, { services: async () => svc }),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
      limits: { maxConnections: 3 },
    });
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const s = connect(srv.port, '127.0.0.1');
        await new Promise((r) => s.once('connect', r));
        held.push(s);
      }
      await new Promise((r) => setTimeout(r, 50));
      await expect(send(srv, 'GET', '/health')).rejects.toThrow();
      held.pop()?.destroy();
      await new Promise((r) => setTimeout(r, 50));
      expect((await send(srv, 'GET', '/health', { connection: 'close' })).status).toBe(200);
    } finally {
      for (const s of held) s.destroy();
      await srv.close();
    }
  });
});

describe('edge: what still goes through', () => {
  it('a client that sends no Origin (curl, SDKs, Queen clients) on a loopback host', async () => {
    const r = await send(open, 'POST', '/api/v1/push', JSON_TYPE, { items: [{ queue: 'plain', payload: 1 }] });
    expect(r.status).toBe(201);
    expect((r.json as PushReply)[0]!.status).toBe('queued');
    // Bodyless POSTs need no content type.
    expect((await send(open, 'POST', '/api/v1/lease/no-such-lease/extend')).status).toBe(200);
  });
});
