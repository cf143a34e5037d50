/**
 * `sluice queues`, `sluice partitions <queue>` and `sluice peek <queue>` (the real binary)
 * against a local server: tables and `--json`, nothing consumed by peeking, and a queue that
 * does not exist said so with exit code 3.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice } from '../../client/index.js';
import type { LocalServer } from '../../server/local/server.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { sluiceCli } from '../support/cli.js';
import { startTestServer } from '../support/http.js';
import { testServices } from '../support/services.js';

let dir: string;
let storage: Storage;
let server: LocalServer;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-cli-browse-'));
  storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  server = await startTestServer(testServices(storage));
  env = { SLUICE_ENDPOINT: server.url };
  const sluice = new Sluice({ endpoint: server.url });
  await sluice.queue('browse-orders').config({ leaseTime: 30 }).create({ namespace: 'shop' });
  await sluice
    .queue('browse-orders')
    .partition('eu')
    .push([{ data: { n: 1 } }, { data: { n: 2 } }, { data: { n: 3 } }]);
  await sluice
    .queue('browse-orders')
    .partition('us')
    .push([{ data: { n: 4 } }]);
  // billing leases eu's first message and holds it.
  await sluice.queue('browse-orders').partition('eu').group('billing').batch(1).wait(false).pop();
});
afterAll(async () => {
  await server.close();
  await storage.close();
  await rm(dir, { recursive: true, force: true });
});

const lines = (s: string): string[] => s.split('\n').filter(Boolean);

describe('cli: browsing without consuming', () => {
  it('sluice queues: a row per queue with partitions and counts; --json gives the rows', async () => {
    const r = await sluiceCli(['queues'], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [header, row] = lines(r.stdout);
    expect(header).toMatch(/^QUEUE\s+PARTITIONS\s+TOTAL\s+PENDING\s+IN FLIGHT\s+NAMESPACE\s+TASK$/);
    expect(row!.split(/\s+/)).toEqual(['browse-orders', '3', '4', '3', '1', 'shop', '-']);
    const j = await sluiceCli(['--json', 'queues', '--namespace', 'shop'], { env });
    expect(JSON.parse(j.stdout)).toEqual([
      expect.objectContaining({
        name: 'browse-orders',
        partitions: 3,
        messages: expect.objectContaining({ total: 4 }) as unknown,
      }),
    ]);
    const none = await sluiceCli(['queues', '--namespace', 'nowhere'], { env });
    expect(none).toMatchObject({ code: 0, stdout: '' });
    expect(none.stderr).toMatch(/^no queues/);
  });

  it('sluice partitions <queue>: offsets and counts per partition, --groups adds each group', async () => {
    const r = await sluiceCli(['partitions', 'browse-orders', '--groups'], { env });
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out[0]).toMatch(/^PARTITION\s+FIRST\s+NEXT\s+TOTAL\s+PENDING\s+IN FLIGHT\s+DONE\s+DEAD\s+NEWEST$/);
    const eu = out.find((l) => l.startsWith('eu '))!.split(/\s{2,}/);
    expect(eu.slice(0, 8)).toEqual(['eu', '0', '3', '3', '2', '1', '0', '0']);
    expect(out.find((l) => l.startsWith('billing'))).toMatch(/^billing\s+lease\s+eu\s+0\s+3\s+1\s+in \d+s$/);
    const j = await sluiceCli(['--json', 'partitions', 'browse-orders'], { env });
    expect((JSON.parse(j.stdout) as { name: string }[]).map((p) => p.name).sort()).toEqual(['Default', 'eu', 'us']);
  });

  it('sluice peek <queue>: newest first with status and data, and nothing is consumed', async () => {
    const r = await sluiceCli(['peek', 'browse-orders', '-n', '3'], { env });
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out[0]).toMatch(/^PARTITION\s+OFFSET\s+STATUS\s+AGE\s+TRANSACTION ID\s+DATA$/);
    expect(out).toHaveLength(4);
    const eu = await sluiceCli(['--json', 'peek', 'browse-orders', '--partition', 'eu'], { env });
    const msgs = JSON.parse(eu.stdout) as { offset: number; status: string; data: unknown }[];
    expect(msgs.map((m) => [m.offset, m.status, m.data])).toEqual([
      [2, 'pending', { n: 3 }],
      [1, 'pending', { n: 2 }],
      [0, 'processing', { n: 1 }],
    ]);
    const held = await sluiceCli(['--json', 'peek', 'browse-orders', '--status', 'processing'], { env });
    expect((JSON.parse(held.stdout) as unknown[]).length).toBe(1);
    // Peeking twice shows the same: it leased nothing.
    const again = await sluiceCli(['--json', 'peek', 'browse-orders', '--partition', 'eu'], { env });
    expect(JSON.parse(again.stdout)).toEqual(msgs);
  });

  it('a queue or partition that does not exist is said so, with a non-zero exit', async () => {
    for (const args of [
      ['partitions', 'nope'],
      ['peek', 'nope'],
    ]) {
      const r = await sluiceCli(args, { env });
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('queue "nope" does not exist');
    }
    const p = await sluiceCli(['peek', 'browse-orders', '-p', 'asia'], { env });
    expect(p).toMatchObject({
      code: 3,
      stderr: 'sluice: queue "browse-orders" has no partition "asia" (it has Default, eu, us; a push creates one)\n',
    });
  });
});
