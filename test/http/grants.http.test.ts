import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Grants } from '../../server/http/grants.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import type { LocalServer } from '../../server/local/server.js';
import { serverCommand } from '../support/process.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { call, startGrantedServer } from '../support/http.js';
import type { ErrorReply } from '../support/replies.js';
import { testServices } from '../support/services.js';
import { defineGrantsSuite, grantsFor, type Role } from './suites/grants.suite.js';

const TOKENS: Record<Role, string> = {
  producer: 'producer-token-0123456789',
  reader: 'reader-token-0123456789ab',
  operator: 'operator-token-0123456789',
  admin: 'admin-token-0123456789abc',
  stranger: 'stranger-token-012345678',
};

describe('http: grants on the local server (bearer tokens)', () => {
  let dir: string;
  let storage: Storage;
  let server: LocalServer;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-grants-'));
    storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
    const svc = testServices(storage);
    const grants = Grants.from({ grants: grantsFor((role) => role) });
    server = await startGrantedServer(svc, { routes: ALL_ROUTES, grants: grants, tokens: TOKENS });
  });
  afterAll(async () => {
    await server.close();
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  });

  const bearer = (role: Role | 'anonymous'): Record<string, string> =>
    role === 'anonymous' ? {} : { authorization: `Bearer ${TOKENS[role]}` };
  defineGrantsSuite((role) => ({ url: server.url, headers: bearer(role) }), { unauthenticatedStatus: 401 });

  it('answers 401 with a code for missing, malformed and unknown tokens', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer not-a-known-token-at-all' },
    ];
    for (const headers of attempts) {
      const r = await call<ErrorReply>(server.url, 'GET', '/health', undefined, headers);
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('unauthorized');
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
    }
  });
});

describe('http: npm start refuses to serve openly beyond loopback', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-bind-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('exits with a clear error for --host 0.0.0.0 without --grants', () => {
    const r = spawnSync(process.execPath, [...serverCommand(), '--host', '0.0.0.0', '--port', '0', '--data-dir', dir], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, SLUICE_GRANTS_FILE: '' },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 without a grants file/);
  });

  it('exits with a clear error for a grants file without tokens', async () => {
    const file = join(dir, 'grants.json');
    await writeFile(file, JSON.stringify({ grants: [{ principal: '*', actions: ['push'], queues: ['*'] }] }));
    const r = spawnSync(process.execPath, [...serverCommand(), '--port', '0', '--data-dir', dir, '--grants', file], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/has no "tokens"/);
  });
});
