// Racing consumers over HTTP (docs/SECURITY.md, "How it is tested"): pops of one lease group and
// claim polls of one claim group, 2,000 of them in CI while a producer pushes; every message handed
// out exactly once per group. `npm run soak` runs ten times as many.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../server/local/server.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { runContentionProbe } from '../support/contention-probe.js';
import { startTestServer } from '../support/http.js';
import { testServices } from '../support/services.js';

let dir: string;
let storage: Storage;
let server: LocalServer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-contention-'));
  storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  server = await startTestServer(testServices(storage));
});
afterAll(async () => {
  await server.close();
  await storage.close();
  await rm(dir, { recursive: true, force: true });
});

describe('contention', () => {
  it('2,000 racing pops and claim polls hand every message out exactly once per group', async () => {
    const r = await runContentionProbe({ url: server.url, consumeRequests: 2_000 });
    console.error(
      `contention probe: requests=${r.requests} pushed=${r.pushed} lost=${r.lost} duplicated=${r.duplicated} 5xx=${r.fiveXx}`,
    );
    expect(r.violations).toEqual([]);
    expect(r.requests).toBeGreaterThanOrEqual(2_000);
    expect(r.pushed).toBeGreaterThan(100);
  }, 180_000);
});
