// Targets over partition leases, on both backends: the dispatcher delivers every record to a
// real HTTP receiver on loopback, in offset order per partition with one batch in flight per
// partition; partial failures, bisect, poison records and throttling targets settle as
// docs/TARGETS.md says. Real time (the dispatcher sleeps), kept short by small holds.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyTargetSignature } from '../../client/target-signature.js';
import { TargetSettings, type TargetSettingsInput } from '../../contract/targets.js';
import { loadConfig } from '../../server/config.js';
import { LocalKeyProvider } from '../../server/service/encryption.js';
import { buildServices, type Services } from '../../server/service/runtime.js';
import { TargetDispatcher } from '../../server/service/targets/dispatcher.js';
import { httpsInvoker } from '../../server/service/targets/https-invoker.js';
import { testBackends } from '../support/backends.js';
import { json } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

interface Received {
  partition: string;
  offsets: number[];
  transactionIds: string[];
  attempts: number[];
  signed: boolean;
}

type Reply = (
  event: { records: { transactionId: string; partition: string }[] },
  n: number,
) => {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
};

/** A receiver on loopback that records each event and answers as `reply` says. */
async function receiver(secret: () => string | undefined, reply: Reply) {
  const received: Received[] = [];
  const inFlight = new Map<string, number>();
  let overlap = 0;
  let n = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const event = JSON.parse(body) as {
        records: { partition: string; offset: number; transactionId: string; attempt: number }[];
      };
      const partition = event.records[0]!.partition;
      if ((inFlight.get(partition) ?? 0) > 0) overlap++;
      inFlight.set(partition, (inFlight.get(partition) ?? 0) + 1);
      const s = secret();
      received.push({
        partition,
        offsets: event.records.map((r) => r.offset),
        transactionIds: event.records.map((r) => r.transactionId),
        attempts: event.records.map((r) => r.attempt),
        signed: s !== undefined && verifyTargetSignature({ header: req.headers['sluice-signature'], body, secret: s }),
      });
      const r = reply(event, n++);
      // Answer a moment later, so batches of different partitions overlap if they can.
      setTimeout(() => {
        inFlight.set(partition, (inFlight.get(partition) ?? 1) - 1);
        res.writeHead(r.status, { 'content-type': 'application/json', ...r.headers });
        res.end(r.body === undefined ? '' : JSON.stringify(r.body));
      }, 5);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { url, received, overlap: () => overlap, close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.each(backends)('targets over leases on $name', (backend) => {
  let cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups = [];
  });

  async function world(reply: Reply, settings: Partial<TargetSettingsInput>) {
    const { storage, cleanup } = await backend.newStorage();
    const svc: Services = buildServices(
      storage,
      { ...loadConfig({}), queueCacheMs: 0 },
      {
        keyProvider: new LocalKeyProvider(randomBytes(32)),
        targets: { dispatcher: true, loopback: true },
      },
    );
    const keys: { secret?: string | undefined } = {};
    const rx = await receiver(() => keys.secret, reply);
    const queue = `tq-${randomBytes(4).toString('hex')}`;
    const set = await svc.targets.set(
      queue,
      'billing',
      TargetSettings.parse({ endpoint: { kind: 'https', url: rx.url }, mode: 'leases', ...settings }),
    );
    keys.secret = set.signingSecret;
    const dispatcher = new TargetDispatcher({
      targets: svc.targets,
      leasePops: svc.leasePops,
      leaseAcks: svc.leaseAcks,
      notifier: svc.notifier,
      clock: svc.clock,
      telemetry: svc.telemetry,
      stats: svc.targetStats,
      invokerFor: (t, secrets) =>
        httpsInvoker({
          url: rx.url,
          secrets,
          allowLoopback: true,
          userAgent: 'test',
          maxSockets: t.settings.maximumConcurrency,
        }),
    });
    cleanups.push(cleanup, rx.close, () => dispatcher.stop());
    const push = async (partition: string, ids: string[]) => {
      const r = await svc.pushes.push(
        ids.map((id) => ({ queue, partition, transactionId: id, payload: json({ id }) })),
      );
      expect(r.every((x) => x.status === 'queued')).toBe(true);
    };
    const dlq = () => svc.dlq.list({ queue, limit: 100, offset: 0 });
    return { svc, rx, queue, dispatcher, push, dlq };
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
