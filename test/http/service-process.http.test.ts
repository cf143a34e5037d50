/**
 * The local server run as a service (issue 18, item 8): `npm start` stops when its own PID is
 * sent SIGTERM.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { descendants, freePort, isAlive } from '../support/process.js';

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
      expect(children.length).toBeGreaterThan(0);
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
});
