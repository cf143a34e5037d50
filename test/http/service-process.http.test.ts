/**
 * The local server run as a service (README.md, "Quick start"): `npm start` stops when its own PID
 * is sent SIGTERM, a port in use says which flag and variable pick another, `encryptionEnabled`
 * works with no key configured (a key file made on first use), and a payload as large as a request
 * body minus the push's envelope goes in and comes out of a pop and a claim poll.
 */
import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import { call } from '../support/http.js';
import { descendants, freePort, isAlive, serverCommand, startServerProcess } from '../support/process.js';
import type { ErrorReply } from '../support/replies.js';
import { testServices } from '../support/services.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-service-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Whether something accepts connections on the loopback port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ port, host: '127.0.0.1' });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('http: the local server as a service', () => {
  it('stops when SIGTERM goes to the npm start process: the port closes and no child survives', async () => {
    const port = await freePort();
    // --ignore-scripts skips the prestart build only (the test run built the server already).
    const npm = spawn('npm', ['start', '--ignore-scripts', '--', '--port', String(port)], {
      cwd: REPO,
      env: { ...process.env, SLUICE_DATA_DIR: join(dir, 'npm'), SLUICE_MAINTENANCE_INTERVAL_MS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout.on('data', (d: Buffer) => (out += d.toString()));
    npm.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
    const pid = npm.pid as number;
    let children: number[] = [];
    try {
      await until(`npm start to listen on ${port}: ${out}`, () => listening(port));
      children = await descendants(pid);
      // As the README says: npm stays the parent, and its one child is the server itself (the
      // script execs, no shell between), so SIGTERM reaches the server only by npm forwarding it.
      const commands = await Promise.all(
        children.map(async (c) => (await readFile(`/proc/${c}/cmdline`, 'utf8')).split('\0').slice(0, 2).join(' ')),
      );
      expect(commands).toEqual([expect.stringMatching(/node\S* \.sluice-build\/server\/main\.js$/)]);
      process.kill(pid, 'SIGTERM');
      await exited;
      await until('the port to close', async () => !(await listening(port)), 10_000);
      await until('every child to exit', () => children.every((c) => !isAlive(c)), 10_000);
      expect(out).toMatch(/"message":"shutting down","signal":"SIGTERM"/);
    } finally {
      // A server left behind (the failure this test is for) is no longer npm's child: kill what was.
      for (const c of children) if (isAlive(c)) process.kill(c, 'SIGKILL');
      if (npm.exitCode === null) npm.kill('SIGKILL');
    }
  });

  it('says which flag and variable pick another port when the port is in use', async () => {
    const taken = createServer();
    const port = await new Promise<number>((r) =>
      taken.listen(0, '127.0.0.1', () => r((taken.address() as { port: number }).port)),
    );
    try {
      const child = spawn(process.execPath, [...serverCommand(), '--port', String(port)], {
        env: { ...process.env, SLUICE_DATA_DIR: join(dir, 'in-use') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      expect(code).toBe(1);
      expect(err).toContain(`cannot listen on 127.0.0.1:${port}: the port is already in use`);
      expect(err).toContain(`--port (npm start -- --port ${port + 1}) or SLUICE_PORT=${port + 1}`);
    } finally {
      taken.close();
    }
  });

  it('seals encryptionEnabled queues with no key configured: a 0600 key file made on first use, announced, kept across restarts', async () => {
    const dataDir = join(dir, 'sealed');
    const keyFile = join(dataDir, 'encryption.key');
    const env = { SLUICE_DATA_DIR: dataDir, SLUICE_ENCRYPTION_KEY: '', SLUICE_KMS_KEY_ID: '' };
    const first = await startServerProcess(env);
    try {
      const configured = await call(first.url, 'POST', '/api/v1/configure', {
        queue: 'secret',
        options: { encryptionEnabled: true },
      });
      expect(configured.status).toBe(200);
      expect(existsSync(keyFile)).toBe(false); // nothing sealed yet
      const pushed = await call(first.url, 'POST', '/api/v1/push', {
        items: [{ queue: 'secret', payload: { card: '4111 1111 1111 1111' } }],
      });
      expect(pushed.status).toBe(201);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(first.output()).toContain(`"message":"generated an encryption key for encryptionEnabled queues`);
      expect(first.output()).toContain(`"path":${JSON.stringify(keyFile)}`);
    } finally {
      await first.stop();
    }
    // Stored sealed: services without the key cannot open it.
    const storage = await openEmbeddedStorage({ dataDir, sync: 'normal' });
    try {
      const svc = testServices(storage, { config: { encryptionKey: undefined } });
      const part = await svc.queues.getPartition('secret', 'Default');
      await expect(svc.segments.read(part!.id, 0, { maxCount: 1 })).rejects.toThrow(/sealed/);
    } finally {
      await storage.close();
    }
    const key = await readFile(keyFile, 'utf8');
    const second = await startServerProcess(env);
    try {
      const popped = await call<{ messages: { data: unknown }[] }>(second.url, 'GET', '/api/v1/pop/queue/secret');
      expect(popped.body.messages.map((m) => m.data)).toEqual([{ card: '4111 1111 1111 1111' }]);
      expect(await readFile(keyFile, 'utf8')).toBe(key);
      expect(second.output()).not.toContain('generated an encryption key');
    } finally {
      await second.stop();
    }
    // SLUICE_ENCRYPTION_KEY overrides: no key file is made.
    const own = join(dir, 'own-key');
    const third = await startServerProcess({
      SLUICE_DATA_DIR: own,
      SLUICE_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    try {
      await call(third.url, 'POST', '/api/v1/configure', { queue: 'secret', options: { encryptionEnabled: true } });
      expect((await call(third.url, 'POST', '/api/v1/push', { items: [{ queue: 'secret', payload: 1 }] })).status).toBe(
        201,
      );
      expect(existsSync(join(own, 'encryption.key'))).toBe(false);
    } finally {
      await third.stop();
    }
  });

  it('takes a payload as large as the body limit minus the envelope, and a pop or poll returns it alone past the answer cap', async () => {
    const limit = 6 * 1024 * 1024; // the local server's default body limit
    const server = await startServerProcess({ SLUICE_DATA_DIR: join(dir, 'large'), SLUICE_SYNC: 'normal' });
    try {
      const body = (payload: string, queue = 'large'): string => JSON.stringify({ items: [{ queue, payload }] });
      const largest = 'x'.repeat(limit - body('').length);
      expect(body(largest)).toHaveLength(limit);
      expect((await call(server.url, 'POST', '/api/v1/push', body(largest))).status).toBe(201);
      const over = await call<ErrorReply>(server.url, 'POST', '/api/v1/push', body(`${largest}x`));
      expect(over).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
      // Above the 5 MiB a pop collects and the 4 MiB a poll does, yet each answers it.
      const popped = await call<{ messages: { data: string }[] }>(
        server.url,
        'GET',
        '/api/v1/pop/queue/large?batch=10&consumerGroup=g',
      );
      expect(popped.body.messages.map((m) => m.data.length)).toEqual([largest.length]);
      const polled = await call<{ records: { data: string }[] }>(
        server.url,
        'POST',
        '/api/v1/queues/large/partitions/Default/groups/c/poll',
        { max: 10 },
      );
      expect(polled.body.records.map((r) => r.data.length)).toEqual([largest.length]);
      // Two that together pass the cap come one per pop (auto-acked, so the second pop gets the second).
      const half = 'y'.repeat(3 * 1024 * 1024);
      for (let i = 0; i < 2; i++)
        expect((await call(server.url, 'POST', '/api/v1/push', body(half, 'halves'))).status).toBe(201);
      for (let i = 0; i < 2; i++) {
        const r = await call<{ messages: unknown[] }>(
          server.url,
          'GET',
          '/api/v1/pop/queue/halves?batch=10&autoAck=true',
        );
        expect(r.body.messages).toHaveLength(1);
      }
    } finally {
      await server.stop();
    }
  });
});
