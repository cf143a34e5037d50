import { describe, expect, it } from 'vitest';
import { Sluice, SluiceApiError, uuidv7, type Message } from '../../client/index.js';
import { fakeFetch, jsonResponse, type Recorded } from '../support/fake-fetch.js';

/** Echoes push items back as queued, like the server. */
function pushEcho(req: Recorded): Response {
  const items = (req.body as { items: { transactionId: string; partition: string }[] }).items;
  return jsonResponse(
    201,
    items.map((it, index) => ({
      index,
      status: 'queued',
      transaction_id: it.transactionId,
      message_id: `m-${it.transactionId}`,
      partition_id: 'pid',
      trace_id: null,
      queueName: 'q',
      partition: it.partition,
    })),
  );
}

const client = (answers: Parameters<typeof fakeFetch>[0], opts: ConstructorParameters<typeof Sluice>[0] = {}) => {
  const f = fakeFetch(answers);
  return {
    sluice: new Sluice({ endpoint: 'http://sluice.test', fetch: f.fetch, sleep: async () => undefined, ...opts }),
    calls: f.calls,
  };
};

const msg = (over: Partial<Message> = {}): Message => ({
  id: 'm1',
  transactionId: 't1',
  partitionId: 'p1',
  partition: 'Default',
  queue: 'q',
  leaseId: 'L1',
  consumerGroup: 'g',
  data: {},
  createdAt: '',
  traceId: null,
  offset: 0,
  producerSub: null,
  ...over,
});

describe('client: push', () => {
  it("builds items by Queen's payload rule, under a producer stamp, with the transactionIds given", async () => {
    const { sluice, calls } = client(pushEcho);
    await sluice.queue('orders').push([{ data: 1, transactionId: 'order-1' }, { data: 2 }]);
    const body = calls[0]?.body as { items: Record<string, unknown>[]; producerId: string; sequence: number };
    expect(body.items.map((i) => i['transactionId'])).toEqual(['order-1', undefined]);
    expect([typeof body.producerId, body.sequence]).toEqual(['string', 0]);
  });

  it("builds items by Queen's payload rule and mints UUIDv7 transaction ids with producerSequences: false", async () => {
    const { sluice, calls } = client(pushEcho, { producerSequences: false });
    const results = await sluice
      .queue('orders')
      .partition('eu')
      .push([
        { data: { a: 1 }, transactionId: 'order-1' },
        { payload: null },
        { plain: true },
        'text',
        { data: 1, partition: 'us', traceId: 't' },
      ]);
    const items = (calls[0]?.body as { items: Record<string, unknown>[] }).items;
    expect(items.map((i) => i['payload'])).toEqual([{ a: 1 }, null, { plain: true }, 'text', 1]);
    expect(items.map((i) => i['partition'])).toEqual(['eu', 'eu', 'eu', 'eu', 'us']);
    expect(items[0]?.['transactionId']).toBe('order-1');
    for (const i of items.slice(1))
      expect(i['transactionId']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(items[4]?.['traceId']).toBe('t');
    expect(results.map((r) => [r.index, r.status, r.messageId])).toEqual([
      [0, 'queued', 'm-order-1'],
      [1, 'queued', `m-${String(items[1]?.['transactionId'])}`],
      [2, 'queued', `m-${String(items[2]?.['transactionId'])}`],
      [3, 'queued', `m-${String(items[3]?.['transactionId'])}`],
      [4, 'queued', `m-${String(items[4]?.['transactionId'])}`],
    ]);
  });

  it('splits a large push by item count and by bytes, keeping order and indexes', async () => {
    const { sluice, calls } = client(pushEcho, { maxPushItems: 100, maxPushBytes: 20_000 });
    const items = Array.from({ length: 250 }, (_, i) => ({ data: { i } }));
    const results = await sluice.queue('q').push(items);
    expect(calls.map((c) => (c.body as { items: unknown[] }).items.length)).toEqual([100, 100, 50]);
    expect(results.map((r) => r.index)).toEqual(items.map((_, i) => i));
    const big = Array.from({ length: 10 }, (_, i) => ({ data: 'x'.repeat(6000), transactionId: `b${i}` }));
    const { sluice: s2, calls: c2 } = client(pushEcho, { maxPushBytes: 20_000 });
    await s2.queue('q').push(big);
    expect(c2.map((c) => (c.body as { items: unknown[] }).items.length)).toEqual([3, 3, 3, 1]);
  });

  it('throws on failed items unless asked not to', async () => {
    const failing = () =>
      jsonResponse(201, [
        { index: 0, status: 'failed', transaction_id: 't', error: 'partition is full', queueName: 'q' },
      ]);
    const { sluice } = client(failing);
    await expect(sluice.queue('q').push([{ data: 1 }])).rejects.toMatchObject({
      code: 'operation_failed',
      // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types its asymmetric matchers as any
      message: expect.stringContaining('partition is full'),
    });
    await expect(sluice.queue('q').push([{ data: 1 }], { throwOnFailure: false })).resolves.toMatchObject([
      { status: 'failed', error: 'partition is full' },
    ]);
  });

  it('makes sortable, unique UUIDv7s', () => {
    const ids = Array.from({ length: 2000 }, () => uuidv7());
    expect(new Set(ids).size).toBe(2000);
    expect([...ids].sort()).toEqual(ids);
    const ms = parseInt(uuidv7().replace(/-/g, '').slice(0, 12), 16);
    expect(Math.abs(ms - Date.now())).toBeLessThan(5000);
  });
});

describe('client: pop, ack, renew', () => {
  it('pops on the partition or queue route with the builder settings, [] on 204', async () => {
    const { sluice, calls } = client([
      new Response(null, { status: 204 }),
      jsonResponse(200, {
        queue: 'q/x',
        consumerGroup: 'g',
        leaseId: 'L',
        messages: [
          {
            id: '1',
            transactionId: 't',
            partitionId: 'p',
            partition: 'a b',
            data: 5,
            createdAt: 'c',
            traceId: null,
            leaseId: 'L',
            consumerGroup: 'g',
          },
        ],
      }),
    ]);
    expect(await sluice.queue('q/x').group('g').batch(10).wait(false).leaseSeconds(30).pop()).toEqual([]);
    const msgs = await sluice
      .queue('q/x')
      .partition('a b')
      .group('g')
      .subscriptionMode('new')
      .timeout(5000)
      .partitions(3)
      .pop<number>();
    expect(calls[0]?.url.pathname).toBe('/api/v1/pop/queue/q%2Fx');
    expect(Object.fromEntries(calls[0]?.url.searchParams ?? [])).toEqual({
      batch: '10',
      wait: 'false',
      timeout: '30000',
      consumerGroup: 'g',
      leaseSeconds: '30',
    });
    expect(calls[1]?.url.pathname).toBe('/api/v1/pop/queue/q%2Fx/partition/a%20b');
    expect(Object.fromEntries(calls[1]?.url.searchParams ?? [])).toEqual({
      batch: '1',
      wait: 'true',
      timeout: '5000',
      consumerGroup: 'g',
      subscriptionMode: 'new',
      partitions: '3',
    });
    expect(msgs).toEqual([expect.objectContaining({ data: 5, queue: 'q/x', consumerGroup: 'g', leaseId: 'L' })]);
  });

  it("sleeps a capped answer's Retry-After before an empty pop or claim poll returns (the wait cap)", async () => {
    const waits: number[] = [];
    const f = fakeFetch((req) =>
      req.method === 'GET'
        ? new Response(null, { status: 204, headers: { 'retry-after': '1' } })
        : jsonResponse(200, { records: [], capped: false }, { 'retry-after': '1' }),
    );
    const sluice = new Sluice({
      endpoint: 'http://sluice.test',
      fetch: f.fetch,
      sleep: async (ms: number) => void waits.push(ms),
    });
    expect(await sluice.queue('q').group('g').pop()).toEqual([]);
    expect(await sluice.queue('q').partition('p').claimGroup('w').poll({ waitMs: 20_000 })).toEqual({
      records: [],
      capped: false,
    });
    expect(waits).toEqual([1000, 1000]);
  });

  it('acks one message on /ack and many on /ack/batch per group, with their leases', async () => {
    const { sluice, calls } = client(() =>
      jsonResponse(200, [{ index: 0, transactionId: 't', success: true, error: null }]),
    );
    await sluice.ack(msg(), true);
    await sluice.ack(
      [msg({ transactionId: 'a' }), msg({ transactionId: 'b', consumerGroup: 'h' }), msg({ transactionId: 'c' })],
      'failed',
      { error: 'boom' },
    );
    await sluice.ack([]);
    expect(calls.map((c) => c.url.pathname)).toEqual(['/api/v1/ack', '/api/v1/ack/batch', '/api/v1/ack/batch']);
    expect(calls[0]?.body).toEqual({
      transactionId: 't1',
      partitionId: 'p1',
      status: 'completed',
      error: null,
      leaseId: 'L1',
      consumerGroup: 'g',
    });
    expect(calls[1]?.body).toEqual({
      consumerGroup: 'g',
      acknowledgments: [
        { transactionId: 'a', partitionId: 'p1', status: 'failed', error: 'boom', leaseId: 'L1' },
        { transactionId: 'c', partitionId: 'p1', status: 'failed', error: 'boom', leaseId: 'L1' },
      ],
    });
    expect((calls[2]?.body as { consumerGroup: string }).consumerGroup).toBe('h');
    const notAMessage = { id: 'x' } as Message;
    await expect(sluice.ack([notAMessage])).rejects.toThrow(/transactionId and partitionId/);
  });

  it('renews each distinct lease once', async () => {
    const { sluice, calls } = client(() =>
      jsonResponse(200, { leaseId: 'L1', success: true, renewed: 1, newExpiresAt: '2026-01-01T00:00:00.000Z' }),
    );
    const r = await sluice.renew([msg(), msg({ leaseId: 'L2' }), msg()], 90);
    expect(calls.map((c) => [c.url.pathname, c.body])).toEqual([
      ['/api/v1/lease/L1/extend', { seconds: 90 }],
      ['/api/v1/lease/L2/extend', { seconds: 90 }],
    ]);
    expect(r[0]).toEqual({ leaseId: 'L1', success: true, renewed: 1, newExpiresAt: '2026-01-01T00:00:00.000Z' });
  });

  it('commits a transaction once, and throws when it was not applied', async () => {
    const { sluice, calls } = client([
      jsonResponse(200, { transactionId: 'x', success: true, results: [] }),
      jsonResponse(200, { success: false, error: 'ACK operation failed: Message not found' }),
    ]);
    await sluice
      .transaction()
      .queue('b')
      .partition('p')
      .push([{ data: { n: 1 } }, 7])
      .ack([msg()], 'completed')
      .commit();
    expect(calls[0]?.body).toEqual({
      operations: [
        {
          type: 'push',
          items: [
            { queue: 'b', partition: 'p', payload: { n: 1 } },
            { queue: 'b', partition: 'p', payload: 7 },
          ],
        },
        { type: 'ack', transactionId: 't1', partitionId: 'p1', status: 'completed', consumerGroup: 'g' },
      ],
      requiredLeases: ['L1'],
    });
    const err = await sluice
      .transaction()
      .ack(msg())
      .commit()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceApiError);
    expect(err).toMatchObject({ code: 'operation_failed', message: 'ACK operation failed: Message not found' });
    await expect(sluice.transaction().commit()).rejects.toThrow(/no operations/);
  });
});

describe('client: claims and admin requests', () => {
  it('sends each claim route with its body', async () => {
    const { sluice, calls } = client(() =>
      jsonResponse(200, {
        records: [],
        capped: false,
        committed: 3,
        visibleMs: 1000,
        offsets: [],
        offset: 0,
        moved: true,
        existed: true,
      }),
    );
    const g = sluice.queue('jobs').partition('p/0').claimGroup('w g');
    await g.poll({ max: 5, waitMs: 100, visibilityMs: 2000, consumer: 'c1', session: 's1', reclaim: true });
    await g.ack([1, 2]);
    await g.nack(3, { attempts: 2, delayMs: 500 });
    await g.extend(4, 1, 3000);
    await g.deadLetter(5, { attempts: 1 });
    await g.deadLetters({ after: 9, limit: 10 });
    await g.redrive(6);
    await g.discard(7);
    await g.create({ offset: 2 });
    await g.seek('latest');
    await g.describe();
    await g.delete();
    const G = '/api/v1/queues/jobs/partitions/p%2F0/groups/w%20g';
    expect(calls.map((c) => `${c.method} ${c.url.pathname}${c.url.search}`)).toEqual([
      `POST ${G}/poll`,
      `POST ${G}/ack`,
      `POST ${G}/nack`,
      `POST ${G}/extend`,
      `POST ${G}/dead-letter`,
      `GET ${G}/dead-letters?after=9&limit=10`,
      `POST ${G}/dead-letters/6/redrive`,
      `DELETE ${G}/dead-letters/7`,
      `PUT ${G}`,
      `POST ${G}/seek`,
      `GET ${G}`,
      `DELETE ${G}`,
    ]);
    expect(calls.map((c) => c.body)).toEqual([
      { max: 5, waitMs: 100, visibilityMs: 2000, consumer: 'c1', session: 's1', reclaim: true },
      { offsets: [1, 2] },
      { offset: 3, attempts: 2, delayMs: 500 },
      { offset: 4, attempts: 1, extendMs: 3000 },
      { offset: 5, attempts: 1 },
      undefined,
      undefined,
      undefined,
      { start: { offset: 2 } },
      { start: 'latest' },
      undefined,
      undefined,
    ]);
    expect(() => sluice.queue('jobs').claimGroup('w')).toThrow(/needs a partition/);
  });

  it('redriveAll goes on after rows that failed, passing the cursor each call returned', async () => {
    const answers = [
      { moved: 0, failed: 1, more: true, next: 'c1' },
      { moved: 1, failed: 0, more: false, next: 'c2' },
    ];
    const { sluice, calls } = client(() => jsonResponse(200, answers.shift()));
    expect(await sluice.dlq('orders').redriveAll({ batch: 1 })).toMatchObject({
      moved: 1,
      failed: 1,
      calls: 2,
      more: false,
    });
    expect(calls.map((c) => c.body)).toEqual([
      { queue: 'orders', limit: 1 },
      { queue: 'orders', limit: 1, after: 'c1' },
    ]);
  });

  it('lists the DLQ, redrives in rate-limited calls, and manages groups', async () => {
    let left = 5;
    const { sluice, calls } = client((req) => {
      if (req.url.pathname === '/api/v1/dlq/retry') {
        const n = Math.min(left, (req.body as { limit: number }).limit);
        left -= n;
        return jsonResponse(200, { moved: n, failed: 0, more: left > 0 });
      }
      if (req.url.pathname === '/api/v1/consumer-groups')
        return jsonResponse(200, { consumerGroups: [{ name: 'g', queues: [], lagMessages: 0, maxLagSeconds: 0 }] });
      return jsonResponse(200, { messages: [], total: 0 });
    });
    await sluice.dlq('orders').group('billing').list({ limit: 10, offset: 20 });
    expect(Object.fromEntries(calls[0]?.url.searchParams ?? [])).toEqual({
      queue: 'orders',
      consumerGroup: 'billing',
      limit: '10',
      offset: '20',
    });
    const waits: number[] = [];
    let t = 0;
    const progress: number[] = [];
    const p = await sluice.dlq('orders').redriveAll({
      batch: 100,
      rate: 2,
      sleep: async (ms) => void waits.push(ms),
      now: () => t,
      onProgress: (x) => progress.push(x.moved),
    });
    expect(p).toMatchObject({ moved: 5, calls: 3, more: false });
    expect(progress).toEqual([2, 4, 5]);
    expect(waits).toEqual([1000, 2000]);
    expect(calls.filter((c) => c.url.pathname === '/api/v1/dlq/retry').map((c) => c.body)).toEqual([
      { queue: 'orders', limit: 2 },
      { queue: 'orders', limit: 2 },
      { queue: 'orders', limit: 2 },
    ]);
    t = 0;
    expect(await sluice.groups.list()).toEqual([{ name: 'g', queues: [], lagMessages: 0, maxLagSeconds: 0 }]);
    await sluice.groups.seek('g', 'orders', { timestamp: new Date(0) });
    await sluice.groups.delete('g', { queue: 'orders', deleteMetadata: false });
    await sluice.groups.lagging(60);
    await sluice.retryMessage('pid', 'tid', { consumerGroup: 'g' });
    const tail = calls
      .slice(-4)
      .map((c) => `${c.method} ${c.url.pathname}${c.url.search} ${JSON.stringify(c.body ?? null)}`);
    expect(tail).toEqual([
      'POST /api/v1/consumer-groups/g/queues/orders/seek {"timestamp":"1970-01-01T00:00:00.000Z"}',
      'DELETE /api/v1/consumer-groups/g/queues/orders?deleteMetadata=false null',
      'GET /api/v1/consumer-groups/lagging?minLagSeconds=60 null',
      'POST /api/v1/messages/pid/tid/retry?consumerGroup=g null',
    ]);
  });
});
