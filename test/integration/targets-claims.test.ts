// Targets over record claims, on both backends: the dispatcher delivers every partition's
// records (creating the group on each at the target's starting position), each record settles
// on its own, and a target that does not run never spends a record's attempts. Real time.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TargetSettingsInput } from '../../contract/targets.js';
import { testBackends } from '../support/backends.js';
import { targetWorld, until, type Received, type Reply } from '../support/targets.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

describe.each(backends)('targets over record claims on $name', (backend) => {
  let cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups = [];
  });

  async function world(reply: Reply, settings: Partial<TargetSettingsInput>) {
    const w = await targetWorld(backend, cleanups, reply, { mode: 'claims', ...settings });
    const dead = async (p: string) =>
      (await w.svc.claims.listDeadLetters(w.queue, p, 'billing', { limit: 100 })).offsets;
    return { ...w, dead };
  }

  const ids = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}-${i}`);
  const all = (rx: { received: Received[] }) => rx.received.flatMap((r) => r.transactionIds);
  const count = (xs: string[], x: string) => xs.filter((y) => y === x).length;

  it('delivers every record of every partition once, in batches, signed, with attempt 1', async () => {
    const w = await world(() => ({ status: 200 }), { batchSize: 10, maximumConcurrency: 3 });
    for (const p of ['p0', 'p1', 'p2']) await w.push(p, ids(p, 25));
    w.dispatcher.start();
    await until('75 records', () => all(w.rx).length >= 75);
    await new Promise((r) => setTimeout(r, 300)); // nothing more may come
    const got = all(w.rx);
    expect([...got].sort()).toEqual(['p0', 'p1', 'p2'].flatMap((p) => ids(p, 25)).sort());
    expect(w.rx.received.every((r) => r.offsets.length <= 10 && r.signed)).toBe(true);
    expect(w.rx.received.every((r) => r.attempts.every((a) => a === 1))).toBe(true);
    for (const p of ['p0', 'p1', 'p2'])
      expect(await w.svc.claims.describe(w.queue, p, 'billing')).toMatchObject({ committed: 25 });
  });

  it('two dispatchers (two processes) share a claim target: every record delivered once', async () => {
    const w = await world(() => ({ status: 200 }), { batchSize: 5, maximumConcurrency: 2 });
    const other = w.another();
    for (const p of ['p0', 'p1']) await w.push(p, ids(p, 30));
    w.dispatcher.start();
    other.dispatcher.start();
    await until('60 records', () => all(w.rx).length >= 60);
    await new Promise((r) => setTimeout(r, 300));
    expect([...all(w.rx)].sort()).toEqual(['p0', 'p1'].flatMap((p) => ids(p, 30)).sort());
  });

  it('a partial failure hands back only the failed record; past maximumRetryAttempts it alone is dead-lettered', async () => {
    const w = await world(
      (e) => ({
        status: 200,
        body: {
          batchItemFailures: e.records
            .filter((r) => r.transactionId === 'p-3')
            .map((r) => ({ itemIdentifier: r.transactionId })),
        },
      }),
      {
        batchSize: 10,
        maximumConcurrency: 2,
        functionResponseTypes: ['ReportBatchItemFailures'],
        maximumRetryAttempts: 1,
      },
    );
    await w.push('p', ids('p', 10));
    w.dispatcher.start();
    await until('the failed record dead-lettered', async () => (await w.dead('p')).length === 1);
    expect(await w.dead('p')).toEqual([3]);
    const got = all(w.rx);
    for (const id of ids('p', 10)) expect([id, count(got, id)]).toEqual([id, id === 'p-3' ? 2 : 1]);
    const tries = w.rx.received.filter((r) => r.transactionIds.includes('p-3'));
    expect(tries.map((r) => r.attempts[r.transactionIds.indexOf('p-3')])).toEqual([1, 2]);
  });

  it('a throttling target never moves a record toward dead letters (its attempt is given back)', async () => {
    const w = await world((_e, n) => (n < 3 ? { status: 503, headers: { 'retry-after': '0' } } : { status: 200 }), {
      batchSize: 10,
      maximumConcurrency: 1,
      maximumRetryAttempts: 0, // any charged attempt would dead-letter at once
    });
    await w.push('p', ids('p', 4));
    w.dispatcher.start();
    await until('delivered after the throttles', () => w.rx.received.length >= 4);
    await until('acked', async () => (await w.svc.claims.describe(w.queue, 'p', 'billing')).committed === 4);
    expect(w.rx.received.every((r) => r.attempts.every((a) => a === 1))).toBe(true);
    expect(await w.dead('p')).toEqual([]);
    expect(w.svc.targetStats.snapshot(w.queue, 'billing').throttles).toBe(3);
  });
});
