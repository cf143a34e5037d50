/**
 * The client as a package: `npm run build:client` compiles client/ to dist/client (JS and
 * .d.ts), and plain Node (no tsx) imports it as `sluice/client` through package.json
 * "exports" and talks to a server.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/config.js';
import type { LocalServer } from '../../lambdas/local/server.js';
import { buildServices } from '../../lambdas/service/runtime.js';
import { openEmbeddedStorage } from '../../lambdas/storage/embedded/index.js';
import type { Storage } from '../../lambdas/storage/port.js';
import { startTestServer } from '../support/http.js';

const run = promisify(execFile);
let dir: string;
let storage: Storage;
let server: LocalServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-pkg-'));
  storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  server = await startTestServer(buildServices(storage, { ...loadConfig({}), queueCacheMs: 0 }));
});
afterAll(async () => {
  await server.close();
  await storage.close();
  await rm(dir, { recursive: true, force: true });
});

describe('client package', () => {
  it('builds to dist/client and works from plain Node as sluice/client', async () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
      exports: Record<string, { types: string; import: string }>;
      bin: Record<string, string>;
    };
    expect(pkg.exports['./client']).toEqual({ types: './dist/client/index.d.ts', import: './dist/client/index.js' });
    expect(pkg.bin).toEqual({ sluice: './cli/sluice.js' });
    await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'client/tsconfig.json'], {
      timeout: 120_000,
    });
    expect(existsSync('dist/client/index.js')).toBe(true);
    expect(readFileSync('dist/client/index.d.ts', 'utf8')).toContain('export { Sluice');
    const script = `
      import { Sluice } from 'sluice/client';
      const s = new Sluice({ endpoint: process.env.SLUICE_ENDPOINT });
      await s.queue('pkg').partition('a').push([{ data: { built: true } }]);
      const msgs = await s.queue('pkg').partition('a').wait(false).pop();
      await s.ack(msgs);
      const deleted = await s.queue('pkg').delete();
      const after = await s.queue('pkg').partition('a').wait(false).pop();
      console.log(JSON.stringify({ data: msgs.map((m) => m.data), deleted, after }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, SLUICE_ENDPOINT: server.url },
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toEqual({
      data: [{ built: true }],
      deleted: { deleted: true, queue: 'pkg', existed: true },
      after: [],
    });
  });
});
