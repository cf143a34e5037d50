/**
 * Each example in examples/ runs against the real local server, as `npx tsx examples/….ts`
 * would run it, stopping by its LIMIT / IDLE_MS settings.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice } from '../../client/index.js';
import { runTs } from '../support/cli.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';

let dir: string;
let server: ServerProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-examples-'));
  server = await startServerProcess({ SLUICE_DATA_DIR: join(dir, 'data'), SLUICE_SYNC: 'normal' });
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('examples', () => {
  it('producer pushes orders once (a second run only finds duplicates), the consumer bills each once', async () => {
    const env = { SLUICE_ENDPOINT: server.url, COUNT: '60' };
    const first = await runTs('examples/producer.ts', { env });
    expect(first.stderr).toBe('');
    expect(first).toMatchObject({ code: 0, stdout: 'pushed 60 orders to orders: 60 queued, 0 duplicate\n' });
    const second = await runTs('examples/producer.ts', { env });
    expect(second).toMatchObject({ code: 0, stdout: 'pushed 60 orders to orders: 0 queued, 60 duplicate\n' });

    const consumer = await runTs('examples/consumer.ts', { env: { SLUICE_ENDPOINT: server.url, IDLE_MS: '1500' } });
    expect(consumer.stderr).toBe('');
    // amount = (i * 7) % 100 for i in 0..59
    const revenue = Array.from({ length: 60 }, (_, i) => (i * 7) % 100).reduce((a, b) => a + b, 0);
    expect(consumer).toMatchObject({ code: 0, stdout: `billed 60 orders (0 failed) for ${revenue}\n` });
    expect(await new Sluice({ endpoint: server.url }).queue('orders').group('billing').wait(false).pop()).toEqual([]);
  });

  it('the claim worker works the group, retrying and finally dead-lettering the failing jobs', async () => {
    const sluice = new Sluice({ endpoint: server.url });
    await sluice
      .queue('jobs')
      .partition('p0')
      .push(Array.from({ length: 20 }, (_, i) => ({ data: { id: i, ...(i % 10 === 3 ? { fail: true } : {}) } })));
    const r = await runTs('examples/claim-worker.ts', {
      env: { SLUICE_ENDPOINT: server.url, IDLE_MS: '2500', CONSUMER: 'worker-t' },
    });
    expect(r.stderr).toBe('');
    expect(r).toMatchObject({
      code: 0,
      stdout: 'done: 18 acked, 4 retried, 2 dead-lettered; group at 20 of 20, 2 dead letters\n',
    });
    expect(await sluice.queue('jobs').partition('p0').claimGroup('workers').allDeadLetters()).toEqual([3, 13]);
  });
});
