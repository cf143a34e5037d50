// The edge and limits of the local server as `npm start` runs it (docs/SECURITY.md):
// authentication from the headers before a body is read, slowloris, DNS rebinding and CORS
// flags wired from the command line.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { rawRequest } from '../support/raw-http.js';
import { runSlowloris } from '../support/slowloris.js';

const TOKEN = 'edge-token-0123456789abcdef';
let dir: string;
let secured: ServerProcess;
let open: ServerProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-edge-process-'));
  const grants = join(dir, 'grants.json');
  await writeFile(
    grants,
    JSON.stringify({
      grants: [{ principal: 'app', actions: ['push', 'consume', 'manage'], queues: ['*'] }],
      tokens: { [TOKEN]: 'app' },
    }),
  );
  [secured, open] = await Promise.all([
    startServerProcess({ SLUICE_DATA_DIR: join(dir, 'secured') }, ['--grants', grants], {
      healthHeaders: { authorization: `Bearer ${TOKEN}` },
    }),
    startServerProcess({ SLUICE_DATA_DIR: join(dir, 'open') }, ['--cors-origin', 'http://dash.test:5173']),
  ]);
});
afterAll(async () => {
  await Promise.all([secured?.stop(), open?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

/**
 * Uploads `size` bytes in `chunks` pieces `gapMs` apart, as a client that writes its whole body
 * before reading does; resolves with when the first byte of the answer came, the answer, and
 * whether the client could send its whole body.
 */
function slowUpload(
  url: string,
  head: Record<string, string>,
  size: number,
  chunks: number,
  gapMs: number,
): Promise<{ firstByteMs: number | undefined; response: string; sentAll: boolean; error?: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = Date.now();
    const sock = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    let response = '';
    let firstByteMs: number | undefined;
    let sentAll = false;
    let error: string | undefined;
    sock.on('data', (d: Buffer) => {
      firstByteMs ??= Date.now() - started;
      response += d.toString();
    });
    sock.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    sock.on('end', () => sock.end());
    sock.on('close', () => resolve({ firstByteMs, response, sentAll, ...(error ? { error } : {}) }));
    const lines = Object.entries({ host: `${hostname}:${port}`, ...head, 'content-length': String(size) });
    sock.on('connect', () => {
      sock.write(`POST /api/v1/push HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
      if (head.expect === '100-continue') return; // waits for the server's word before sending anything
      void (async () => {
        const piece = Buffer.alloc(Math.ceil(size / chunks), 'z');
        for (let sent = 0; sent < size; sent += piece.length) {
          if (sock.destroyed) return;
          sock.write(piece.subarray(0, Math.min(piece.length, size - sent)));
          await new Promise((r) => setTimeout(r, gapMs));
        }
        sentAll = true;
        sock.end();
      })();
    });
  });
}

describe('npm start --grants: authentication before the body', () => {
  it('answers a 5 MB upload without a token 401 at once, not after the upload, and the client still reads it', async () => {
    // 5 MB over ~3 s: the answer used to come only once all of it was read.
    const r = await slowUpload(secured.url, { 'content-type': 'application/json' }, 5 << 20, 30, 100);
    expect(r.response).toMatch(/^HTTP\/1\.1 401 /);
    expect(r.firstByteMs).toBeLessThan(1_000);
    expect(r.sentAll).toBe(true);
    expect(r.error).toBeUndefined();
  });

  it('refuses an Expect: 100-continue upload without a token before any of it is sent', async () => {
    const r = await slowUpload(
      secured.url,
      { 'content-type': 'application/json', expect: '100-continue' },
      5 << 20,
      1,
      0,
    );
    expect(r.response).toMatch(/^HTTP\/1\.1 401 /);
    expect(r.response).not.toContain('100 Continue');
    expect(r.firstByteMs).toBeLessThan(1_000);
  });

  it('still takes an authenticated upload, and with grants any Host (a bearer token is what protects it)', async () => {
    const r = await rawRequest(secured.url, 'POST', '/api/v1/push', {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, host: 'sluice.example' },
      body: JSON.stringify({ items: [{ queue: 'authed', payload: 'x'.repeat(1 << 20) }] }),
    });
    expect(r.status).toBe(201);
  });
});

describe('npm start: slowloris', () => {
  it('200 connections dripping their headers do not delay /health or a push from another client', async () => {
    const r = await runSlowloris({ url: open.url, connections: 200, holdMs: 3_000 });
    expect(r.connections).toBe(200);
    expect(r).toMatchObject({ failed: 0, fiveXx: 0 });
    expect(r.requests).toBeGreaterThan(10);
    expect(r.maxMs).toBeLessThan(2_000);
  });
});

describe('npm start without grants: the edge', () => {
  it('refuses a rebound DNS name and foreign origins, answers the --cors-origin dashboard', async () => {
    expect((await rawRequest(open.url, 'GET', '/health', { headers: { host: 'rebound.example' } })).status).toBe(403);
    const push = (headers: Record<string, string>) =>
      rawRequest(open.url, 'POST', '/api/v1/push', {
        headers,
        body: JSON.stringify({ items: [{ queue: 'edge', payload: 1 }] }),
      });
    expect((await push({ 'content-type': 'text/plain' })).status).toBe(415);
    expect((await push({ 'content-type': 'application/json', origin: 'http://evil.example' })).status).toBe(403);
    const dash = await push({ 'content-type': 'application/json', origin: 'http://dash.test:5173' });
    expect(dash.status).toBe(201);
    expect(dash.headers['access-control-allow-origin']).toBe('http://dash.test:5173');
    const preflight = await rawRequest(open.url, 'OPTIONS', '/api/v1/push', {
      headers: { origin: 'http://dash.test:5173', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
  });
});
