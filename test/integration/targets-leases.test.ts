// Targets over partition leases, on both backends: the dispatcher delivers every record to a
// real HTTP receiver on loopback, in offset order per partition with one batch in flight per
// partition; partial failures, bisect, poison records and throttling targets settle as
// docs/TARGETS.md says. Real time (the dispatcher sleeps), kept short by small holds.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TargetSettingsInput } from '../../contract/targets.js';
import { testBackends } from '../support/backends.js';
import { targetWorld, until, type Received, type Reply } from '../support/targets.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

describe.each(backends)('targets over leases on $name', (backend) => {
  let cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups = [];
  });

  async function world(reply: Reply, settings: Partial<TargetSettingsInput>) {
    const w = await targetWorld(backend, cleanups, reply, { mode: 'leases', ...settings });
    return { ...w, dlq: () => w.svc.dlq.list({ queue: w.queue, limit: 100, offset: 0 }) };
  }

  const ids = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}-${i}`);
  const delivered = (rx: { received: Received[] }, p: string) =>
    rx.received.filter((r) => r.partition === p).flatMap((r) => r.offsets);

  it('delivers every record once, in offset order per partition, one batch in flight per partition, signed', async () => {
    const w = await world(() => ({ status: 200 }), { batchSize: 7, maximumConcurrency: 3 });
    for (const p of ['p0', 'p1', 'p2', 'p3']) await w.push(p, ids(p, 30));
    w.dispatcher.start();
    await until('120 records', () => w.rx.received.reduce((n, r) => n + r.offsets.length, 0) >= 120);
    await new Promise((r) => setTimeout(r, 300)); // nothing more may come
    for (const p of ['p0', 'p1', 'p2', 'p3']) expect(delivered(w.rx, p)).toEqual([...Array(30).keys()]);
    expect(w.rx.received.every((r) => r.offsets.length <= 7)).toBe(true);
    expect(w.rx.overlap()).toBe(0);
    expect(w.rx.received.every((r) => r.signed)).toBe(true);
    expect(w.rx.received.every((r) => r.attempts.every((a) => a === 1))).toBe(true);
    expect(await w.dlq()).toEqual([]);
  });

  it('a pause and a resume made in this process act at once (not at the next read of the target list)', async () => {
    const w = await world(() => ({ status: 200 }), { batchSize: 10, maximumConcurrency: 1 });
    await w.push('p', ids('p', 3));
    w.dispatcher.start();
    await until('the first records', () => delivered(w.rx, 'p').length === 3);
    await w.svc.targets.setPaused(w.queue, 'billing', true);
    await w.push('p', ['p-late-0', 'p-late-1']);
    await new Promise((r) => setTimeout(r, 600)); // well inside the 2 s refresh
    expect(delivered(w.rx, 'p')).toEqual([0, 1, 2]);
    await w.svc.targets.setPaused(w.queue, 'billing', false);
    await until('the rest, soon after the resume', () => delivered(w.rx, 'p').length === 5, 1000);
  });

  it('two dispatchers (two processes) share a target: one batch per partition in flight, every record once', async () => {
    const w = await world(() => ({ status: 200 }), { batchSize: 5, maximumConcurrency: 2 });
    const other = w.another();
    for (const p of ['p0', 'p1', 'p2', 'p3']) await w.push(p, ids(p, 20));
    w.dispatcher.start();
    other.dispatcher.start();
    await until('80 records', () => w.rx.received.reduce((n, r) => n + r.offsets.length, 0) >= 80);
    await new Promise((r) => setTimeout(r, 300)); // nothing more may come
    for (const p of ['p0', 'p1', 'p2', 'p3']) expect(delivered(w.rx, p)).toEqual([...Array(20).keys()]);
    expect(w.rx.overlap()).toBe(0);
    // Both took part (each has its own counts).
    expect(w.svc.targetStats.snapshot(w.queue, 'billing').invocations).toBeGreaterThan(0);
    expect(other.svc.targetStats.snapshot(w.queue, 'billing').invocations).toBeGreaterThan(0);
  });

  it('a dispatcher that dies mid-batch loses nothing: its lease lapses and another delivers the records', async () => {
    const w = await world((_e, n) => ({ status: n === 0 ? 0 : 200 }), { batchSize: 10, maximumConcurrency: 1 });
    await w.push('p', ids('p', 6));
    w.dispatcher.start();
    await until('the first delivery, never answered', () => w.rx.received.length === 1);
    // A second process, two minutes later by its clock: the first one's lease (timeout + 30 s) has lapsed.
    const later = w.another(() => Date.now() + 120_000);
    later.dispatcher.start();
    await until('delivered again by the other', () => w.rx.received.length >= 2);
    expect(w.rx.received.map((r) => r.offsets)).toEqual([
      [0, 1, 2, 3, 4, 5],
      [0, 1, 2, 3, 4, 5],
    ]);
    // Settled by the other first (dropping its connection mid-answer would be a redelivery, rightly).
    await until('the other settled', () => {
      const c = later.svc.targetStats.snapshot(w.queue, 'billing');
      return c.invocations >= 1 && c.inFlight === 0;
    });
    // The dead one's delivery now ends; its settlement, under a lapsed lease, changes nothing.
    w.rx.dropConnections();
    await new Promise((r) => setTimeout(r, 1500));
    expect(w.rx.received.length).toBe(2);
    expect(await w.dlq()).toEqual([]);
  });

  it('a poison record reaches dead letters after maximumRetryAttempts and holds back only its partition', async () => {
    const w = await world(
      (e) => ({
        status: 200,
        body: {
          batchItemFailures: e.records
            .filter((r) => r.transactionId === 'a-5')
            .map((r) => ({ itemIdentifier: r.transactionId, error: 'bad card' })),
        },
      }),
      {
        batchSize: 4,
        maximumConcurrency: 2,
        functionResponseTypes: ['ReportBatchItemFailures'],
        maximumRetryAttempts: 1,
      },
    );
    await w.push('a', ids('a', 10));
    await w.push('b', ids('b', 10));
    w.dispatcher.start();
    await until('b delivered', () => delivered(w.rx, 'b').length >= 10);
    const bDoneAt = w.rx.received.length;
    await until('the poison record dead-lettered', async () => (await w.dlq()).length === 1);
    await until('a delivered past the poison record', () => delivered(w.rx, 'a').includes(9));
    const [dead] = await w.dlq();
    expect(dead).toMatchObject({ transactionId: 'a-5', consumerGroup: 'billing', errorMessage: 'bad card' });
    // b never waited for a's retries: all of b was in before a's second try at the poison record.
    const poisonTries = w.rx.received.map((r, i) => ({ r, i })).filter(({ r }) => r.transactionIds.includes('a-5'));
    expect(poisonTries.length).toBe(2); // the first delivery and one retry
    expect(poisonTries[1]!.i).toBeGreaterThanOrEqual(bDoneAt - 1);
    expect(poisonTries.map(({ r }) => r.attempts[r.transactionIds.indexOf('a-5')])).toEqual([1, 2]);
    expect(poisonTries[1]!.r.transactionIds[0]).toBe('a-5'); // the retry starts at the failed record
    // Before the poison record each record came once; after it, in order.
    const a = delivered(w.rx, 'a');
    expect(a.filter((o) => o < 5).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4]);
    expect(a.slice(a.lastIndexOf(6))).toEqual([6, 7, 8, 9]);
  });

  it('a throttling target never moves a record toward dead letters', async () => {
    const w = await world((_e, n) => (n < 3 ? { status: 429, headers: { 'retry-after': '0' } } : { status: 200 }), {
      batchSize: 10,
      maximumConcurrency: 1,
      maximumRetryAttempts: 0, // any charged attempt would dead-letter at once
    });
    await w.push('p', ids('p', 5));
    w.dispatcher.start();
    await until('delivered after the throttles', () => w.rx.received.length >= 4);
    expect(w.rx.received.map((r) => r.offsets)).toEqual([0, 1, 2, 3].map(() => [0, 1, 2, 3, 4]));
    expect(w.rx.received.every((r) => r.attempts.every((a) => a === 1))).toBe(true);
    expect(await w.dlq()).toEqual([]);
    expect(w.svc.targetStats.snapshot(w.queue, 'billing').throttles).toBe(3);
  });

  it('bisects a failing batch to the record that fails alone: it alone is dead-lettered, the rest delivered once', async () => {
    const w = await world((e) => ({ status: e.records.some((r) => r.transactionId === 'p-6') ? 500 : 200 }), {
      batchSize: 10,
      maximumConcurrency: 1,
      bisectBatchOnFunctionError: true,
      maximumRetryAttempts: 0,
    });
    await w.push('p', ids('p', 10));
    w.dispatcher.start();
    await until('the poison record dead-lettered', async () => (await w.dlq()).length === 1);
    // Invocations that succeeded carried each other record exactly once.
    const ok = () => w.rx.received.filter((r) => !r.transactionIds.includes('p-6')).flatMap((r) => r.offsets);
    await until('the rest delivered', () => ok().includes(9));
    expect((await w.dlq())[0]).toMatchObject({ transactionId: 'p-6' });
    expect(ok().sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 7, 8, 9]);
    expect(w.rx.received.length).toBeLessThanOrEqual(1 + 2 * Math.ceil(Math.log2(10)) + 1 + 1);
  });
});
