/**
 * The log routes as a black box: only HTTP in, HTTP out. Registered by the local-server test
 * (both backends), by the bundle test (the esbuild bundles from cdk.out), by the base-URL
 * test, and by the LocalStack suite against a deployed API.
 *
 * Queue names carry a per-run prefix, so the suite can run again and again against one
 * long-lived deployment.
 */
import { describe, expect, it } from 'vitest';
import { callTarget, type HttpTarget } from '../../support/http.js';
import type { ConfigureReply, ErrorReply, LogPageReply, MessageReply, PushReply } from '../../support/replies.js';

export interface LogSuiteOptions {
  /** The `backend` /health reports, when known. */
  backend?: 'embedded' | 'aws';
  /** Limits the server runs with (bad-input cases need to exceed them). */
  maxBodyBytes: number;
  maxMessageBytes: number;
  /** Prefix for every queue name (unique per run against shared deployments). */
  prefix?: string;
  /**
   * Requests pass through API Gateway (real or simulated): unrouted paths get the gateway's own
   * 404, and a body past Lambda's 6 MB payload limit never reaches the handler, so that case
   * is left out.
   */
  behindGateway?: boolean;
  /**
   * A fingerprint of everything stored (see `test/support/store-fingerprint.ts`), where the
   * runner can see the storage: bad-input cases then check that it did not change at all, not
   * only that their queues do not exist.
   */
  storeFingerprint?: () => Promise<string>;
}

/**
 * Registers the log-route tests. `target()` is read when a test runs (after `beforeAll`).
 *
 * @example
 * ```ts
 * let server: LocalServer;
 * beforeAll(async () => { server = await startTestServer(svc); });
 * defineLogRoutesSuite(() => ({ url: server.url }), { maxBodyBytes: 64 * 1024, maxMessageBytes: 8 * 1024 });
 * ```
 */
export function defineLogRoutesSuite(target: () => HttpTarget, opts: LogSuiteOptions): void {
  const p = opts.prefix ?? '';
  const q = (name: string): string => `${p}${name}`;
  const http = <T = unknown>(method: string, path: string, body?: unknown) =>
    callTarget<T>(target(), method, path, body);
  /** A queue that was never created reads as 404 (what "nothing was written" looks like from outside). */
  const absent = async (queue: string): Promise<void> => {
    const r = await http('GET', `/api/v1/queues/${encodeURIComponent(queue)}/partitions/Default/messages`);
    expect(r.status, `queue ${queue} should not exist`).toBe(404);
  };

  it("GET /health answers healthy in Queen's shape (status, database, version: what queenctl ping reads)", async () => {
    const r = await http('GET', '/health');
    expect(r.status).toBe(200);
    const body = r.body as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['backend', 'database', 'status', 'version']);
    expect(body).toMatchObject({
      status: 'healthy',
      database: 'connected',
      ...(opts.backend ? { backend: opts.backend } : {}),
    });
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('POST /api/v1/configure echoes every option with its JSON type', async () => {
    const options = {
      leaseTime: 300,
      retryLimit: 3,
      priority: 0,
      delayedProcessing: 0,
      windowBuffer: 0,
      maxSize: 0,
      retentionSeconds: 0,
      completedRetentionSeconds: 0,
      encryptionEnabled: false,
      retryDelay: 500,
      deadLetterQueue: false,
    };
    const r = await http<ConfigureReply>('POST', '/api/v1/configure', {
      queue: q('cfg'),
      namespace: null,
      task: null,
      options,
    });
    expect(r.status).toBe(200);
    expect(r.body.configured).toBe(true);
    expect(typeof r.body.queueId).toBe('string');
    expect(typeof r.body.partitionId).toBe('string');
    for (const [k, v] of Object.entries(options)) expect(r.body.options[k]).toStrictEqual(v);
    expect(r.body.options.dlqAfterMaxRetries).toBe(true);
    expect(r.body.options.ttl).toBe(3600);
    // An upsert replaces the whole set: what is left out goes back to its default.
    const again = await http<ConfigureReply>('POST', '/api/v1/configure', {
      queue: q('cfg'),
      options: { leaseTime: 10 },
    });
    expect(again.body.options).toMatchObject({ leaseTime: 10, retryDelay: 1000, deadLetterQueue: true });
    expect(again.body.queueId).toBe(r.body.queueId);
  });

  it('GET /api/v1/queues/:queue answers whether a queue exists, with its options', async () => {
    await http('POST', '/api/v1/configure', { queue: q('described'), options: { leaseTime: 45 } });
    const r = await http<{ queue: string; configured: boolean; options: Record<string, unknown> }>(
      'GET',
      `/api/v1/queues/${q('described')}`,
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ queue: q('described'), configured: true, options: { leaseTime: 45 } });
    await http('POST', '/api/v1/push', { items: [{ queue: q('implicit'), payload: 1 }] });
    expect((await http('GET', `/api/v1/queues/${q('implicit')}`)).body).toMatchObject({ configured: false });
    const none = await http('GET', `/api/v1/queues/${q('never-made')}`);
    expect(none).toMatchObject({ status: 404, body: { code: 'not_found', missing: 'queue' } });
  });

  it('POST /api/v1/push answers 201 with Queen-shaped results, in order', async () => {
    const shop = q('shop');
    const r = await http<PushReply>('POST', '/api/v1/push', {
      items: [
        { queue: shop, partition: 'Default', payload: { order: 1 }, transactionId: 'tx-1' },
        { queue: shop, payload: null, transactionId: 'tx-1' },
        { queue: shop, partition: 'eu', payload: [1, 2], traceId: '0190b6a0-0000-7000-8000-000000000000' },
      ],
    });
    expect(r.status).toBe(201);
    expect(r.body).toHaveLength(3);
    expect(r.body[0]).toMatchObject({
      index: 0,
      status: 'queued',
      transaction_id: 'tx-1',
      trace_id: null,
      queueName: shop,
    });
    expect(typeof r.body[0]!.message_id).toBe('string');
    expect(typeof r.body[0]!.partition_id).toBe('string');
    expect(r.body[1]).toMatchObject({
      index: 1,
      status: 'duplicate',
      transaction_id: 'tx-1',
      message_id: r.body[0]!.message_id,
      queueName: shop,
    });
    expect(r.body[2]).toMatchObject({ index: 2, status: 'queued', trace_id: '0190b6a0-0000-7000-8000-000000000000' });
    expect(r.body[2]!.partition_id).not.toBe(r.body[0]!.partition_id);
    const empty = await http('POST', '/api/v1/push', { items: [] });
    expect(empty).toMatchObject({ status: 201, body: [] });
  });

  it("POST /api/v1/push answers 201 when every item is a duplicate; Queen's defaults fill what an item leaves out", async () => {
    const defaults = q('defaults');
    const first = await http<PushReply>('POST', '/api/v1/push', {
      items: [
        { queue: defaults, transactionId: 'd-1' },
        { queue: defaults, data: { via: 'data' }, transactionId: 'd-2' },
        { queue: defaults },
      ],
    });
    expect(first.status).toBe(201);
    // No partition: Default. No payload: {}. `data` stands in for `payload`. No transactionId: one is made.
    expect(first.body.map((r) => r.status)).toEqual(['queued', 'queued', 'queued']);
    expect(typeof first.body[2]!.transaction_id).toBe('string');
    expect(first.body[2]!.transaction_id.length).toBeGreaterThan(0);
    const again = await http('POST', '/api/v1/push', {
      items: [
        { queue: defaults, payload: 'x', transactionId: 'd-2' },
        { queue: defaults, partition: 'Default', transactionId: 'd-1' },
      ],
    });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject([
      {
        index: 0,
        status: 'duplicate',
        transaction_id: 'd-2',
        message_id: first.body[1]!.message_id,
        queueName: defaults,
      },
      {
        index: 1,
        status: 'duplicate',
        transaction_id: 'd-1',
        message_id: first.body[0]!.message_id,
        queueName: defaults,
      },
    ]);
    const read = await http<LogPageReply>(
      'GET',
      `/api/v1/queues/${encodeURIComponent(defaults)}/partitions/Default/messages`,
    );
    expect(read.body.messages.map((m) => m.data)).toEqual([{}, { via: 'data' }, {}]);
  });

  it('GET /api/v1/messages/:partitionId/:transactionId returns the message, 404 when unknown', async () => {
    const look = q('look');
    const pushed = await http<PushReply>('POST', '/api/v1/push', {
      items: [{ queue: look, payload: { hello: 'world' }, transactionId: 'find-me' }],
    });
    const pid = pushed.body[0]!.partition_id;
    const r = await http<MessageReply>('GET', `/api/v1/messages/${pid}/find-me`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      transactionId: 'find-me',
      partitionId: pid,
      queue: look,
      partition: 'Default',
      offset: 0,
      data: { hello: 'world' },
    });
    expect(r.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect((await http('GET', `/api/v1/messages/${pid}/nope`)).status).toBe(404);
    expect((await http<ErrorReply>('GET', '/api/v1/messages/unknown-partition/x')).body.code).toBe('not_found');
  });

  it('replays a partition in offset order', async () => {
    const replay = q('replay');
    await http('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue: replay, payload: n })) });
    const r = await http<LogPageReply>('GET', `/api/v1/queues/${replay}/partitions/Default/messages?from=1&limit=5`);
    expect(r.status).toBe(200);
    expect(r.body.messages.map((m) => [m.offset, m.data])).toEqual([
      [1, 2],
      [2, 3],
    ]);
    expect(r.body.next).toBe(3);
  });

  it('DELETE /api/v1/resources/queues/:queue deletes a queue; a push after it starts a new queue from offset 0', async () => {
    const gone = q('gone');
    const path = `/api/v1/resources/queues/${encodeURIComponent(gone)}`;
    const first = await http<PushReply>('POST', '/api/v1/push', {
      items: [
        { queue: gone, payload: { v: 1 }, transactionId: 'g-1' },
        { queue: gone, partition: 'eu', payload: { v: 2 } },
      ],
    });
    expect(first.status).toBe(201);
    const del = await http('DELETE', path);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ deleted: true, queue: gone, existed: true });
    await absent(gone);
    expect((await http('GET', `/api/v1/queues/${encodeURIComponent(gone)}/partitions/eu/messages`)).status).toBe(404);
    expect((await http('GET', `/api/v1/messages/${first.body[0]!.partition_id}/g-1`)).status).toBe(404);
    // Again, or for a queue that never existed: still deleted (Queen's client checks `deleted`).
    expect((await http('DELETE', path)).body).toEqual({ deleted: true, queue: gone, existed: false });
    expect((await http('DELETE', `/api/v1/resources/queues/${encodeURIComponent(q('never-was'))}`)).body).toEqual({
      deleted: true,
      queue: q('never-was'),
      existed: false,
    });
    // The name is free at once: a new queue, new partition ids, and the old transactionId is new again.
    const again = await http<PushReply>('POST', '/api/v1/push', {
      items: [{ queue: gone, payload: { v: 3 }, transactionId: 'g-1' }],
    });
    expect(again.body[0]).toMatchObject({ status: 'queued', offset: 0 });
    expect(again.body[0]!.partition_id).not.toBe(first.body[0]!.partition_id);
    const read = await http<LogPageReply>(
      'GET',
      `/api/v1/queues/${encodeURIComponent(gone)}/partitions/Default/messages`,
    );
    expect(read.body.messages.map((m) => m.data)).toEqual([{ v: 3 }]);
    expect((await http('GET', `/api/v1/queues/${encodeURIComponent(gone)}/partitions/eu/messages`)).status).toBe(404);
  });

  describe('bad input gets a 4xx with a code, and nothing is written', () => {
    const bad = q('bad');
    const ok = q('bad-ok');
    const overBody = Math.ceil(opts.maxBodyBytes / 1000) + 10;
    const cases: [string, unknown, number, string][] = [
      ['malformed JSON', '{"items": [', 400, 'invalid_json'],
      ['items not an array', { items: { queue: bad } }, 400, 'invalid_request'],
      [
        'queue not a string',
        {
          items: [
            { queue: ok, payload: 1 },
            { queue: 7, payload: 1 },
          ],
        },
        400,
        'invalid_request',
      ],
      [
        'partition not a string',
        {
          items: [
            { queue: ok, payload: 1 },
            { queue: bad, partition: 1 },
          ],
        },
        400,
        'invalid_request',
      ],
      [
        'transactionId not a string',
        {
          items: [
            { queue: ok, payload: 1 },
            { queue: bad, transactionId: 5 },
          ],
        },
        400,
        'invalid_request',
      ],
      ['traceId not a string', { items: [{ queue: bad, traceId: 5 }] }, 400, 'invalid_request'],
      ['bad queue name', { items: [{ queue: ok, payload: 1 }, { queue: 'a/b' }] }, 400, 'invalid_request'],
      ['empty queue name', { items: [{ queue: '' }] }, 400, 'invalid_request'],
      [
        'bad partition name',
        {
          items: [
            { queue: ok, payload: 1 },
            { queue: bad, partition: 'x#y' },
          ],
        },
        400,
        'invalid_request',
      ],
      [
        'message over the limit',
        {
          items: [
            { queue: ok, payload: 1 },
            { queue: bad, payload: 'z'.repeat(opts.maxMessageBytes + 100) },
          ],
        },
        413,
        'payload_too_large',
      ],
      [
        'transactionId over 256 characters',
        {
          items: [
            { queue: ok, payload: 1 },
            { queue: bad, transactionId: 't'.repeat(257) },
          ],
        },
        400,
        'invalid_request',
      ],
      // A lone surrogate has no UTF-8 form, so it cannot be a storage key on either backend.
      [
        'transactionId not valid Unicode',
        {
          items: [
            { queue: ok, payload: 1 },
            { queue: bad, transactionId: 'tx-\ud800' },
          ],
        },
        400,
        'invalid_request',
      ],
      [
        'queue name not valid Unicode',
        { items: [{ queue: ok, payload: 1 }, { queue: `${bad}-\udc00` }] },
        400,
        'invalid_request',
      ],
      ['item not an object', { items: [{ queue: ok, payload: 1 }, 'x'] }, 400, 'invalid_request'],
      ['body not an object', [{ queue: ok, payload: 1 }], 400, 'invalid_request'],
    ];
    it.each(cases)('%s', async (_name, body, status, code) => {
      const before = await opts.storeFingerprint?.();
      const r = await http<ErrorReply>('POST', '/api/v1/push', body);
      expect(r.status).toBe(status);
      expect(r.body.code).toBe(code);
      expect(typeof r.body.error).toBe('string');
      expect(r.body.error.length).toBeGreaterThan(10);
      await absent(bad);
      await absent(ok);
      expect(await opts.storeFingerprint?.(), 'the store changed').toBe(before);
    });

    // Over maxBodyBytes (6 MiB by default) the event is past Lambda's 6 MB invoke limit too, so
    // behind API Gateway the gateway answers 413 itself ({"message": "Request Too Long"}, no code).
    it('a body over maxBodyBytes gets 413, and nothing is written', async () => {
      const before = await opts.storeFingerprint?.();
      const body = { items: Array.from({ length: overBody }, () => ({ queue: ok, payload: 'z'.repeat(990) })) };
      expect(JSON.stringify(body).length).toBeGreaterThan(opts.maxBodyBytes);
      const r = await http<ErrorReply>('POST', '/api/v1/push', body);
      expect(r.status).toBe(413);
      // Ours names the code; API Gateway's own answer has none.
      const gatewayAnswered = opts.behindGateway === true && r.body.code === undefined;
      expect(gatewayAnswered ? 'payload_too_large' : r.body.code).toBe('payload_too_large');
      await absent(ok);
      expect(await opts.storeFingerprint?.(), 'the store changed').toBe(before);
    });

    it('a rejected push to existing queues and partitions leaves the store exactly as it was', async () => {
      const existing = q('bad-existing');
      const seed = await http('POST', '/api/v1/push', {
        items: [
          { queue: existing, payload: 0, transactionId: 'seed' },
          { queue: existing, partition: 'eu', payload: 0 },
        ],
      });
      expect(seed.status).toBe(201);
      const before = await opts.storeFingerprint?.();
      const rejected: unknown[] = [
        // Valid items first (to both partitions, with new and repeated transactionIds), the bad one last.
        {
          items: [
            { queue: existing, payload: 1, transactionId: 'new' },
            { queue: existing, partition: 'eu', payload: 2 },
            { queue: existing, payload: 3, transactionId: 'seed' },
            { queue: existing, partition: 'x/y', payload: 4 },
          ],
        },
        {
          items: [
            { queue: existing, payload: 1, transactionId: 'new' },
            { queue: existing, partition: 'eu', payload: 'z'.repeat(opts.maxMessageBytes + 1) },
          ],
        },
      ];
      for (const body of rejected)
        expect((await http('POST', '/api/v1/push', body)).status).toBeGreaterThanOrEqual(400);
      const read = await http<LogPageReply>(
        'GET',
        `/api/v1/queues/${encodeURIComponent(existing)}/partitions/Default/messages`,
      );
      expect(read.body.messages.map((m) => m.data)).toEqual([0]);
      expect(await opts.storeFingerprint?.(), 'the store changed').toBe(before);
      // The transactionId of a rejected push was not reserved: it is queued now.
      const now = await http<PushReply>('POST', '/api/v1/push', {
        items: [{ queue: existing, payload: 1, transactionId: 'new' }],
      });
      expect(now.body[0]).toMatchObject({ status: 'queued', offset: 1 });
    });

    it('configure without a string queue says so', async () => {
      const before = await opts.storeFingerprint?.();
      const r = await http<ErrorReply>('POST', '/api/v1/configure', { options: {} });
      expect(r.status).toBe(400);
      expect(r.body.error).toContain('queue is required');
      expect((await http('POST', '/api/v1/configure', { queue: bad, options: { leaseTime: 'long' } })).status).toBe(
        400,
      );
      expect(
        (await http<ErrorReply>('POST', '/api/v1/configure', { queue: bad, options: { nonsense: 1 } })).body.code,
      ).toBe('invalid_request');
      expect((await http('POST', '/api/v1/configure', { queue: 'a/b', options: {} })).status).toBe(400);
      expect((await http<ErrorReply>('POST', '/api/v1/configure', '{"queue":')).body.code).toBe('invalid_json');
      await absent(bad);
      expect(await opts.storeFingerprint?.(), 'the store changed').toBe(before);
    });

    it('deleting a queue by a name no queue can have is a 400', async () => {
      const before = await opts.storeFingerprint?.();
      const r = await http<ErrorReply>('DELETE', `/api/v1/resources/queues/${encodeURIComponent('a#b')}`);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('invalid_request');
      expect(await opts.storeFingerprint?.(), 'the store changed').toBe(before);
    });

    it('unknown routes are 404 and wrong methods 405, as JSON', async () => {
      // Behind API Gateway, unrouted method/path pairs are answered by the gateway itself:
      // 404 {"message":"Not Found"} for both.
      const nothing = await http<ErrorReply | null>('GET', '/api/v1/nothing');
      const wrongMethod = await http<ErrorReply | null>('GET', '/api/v1/push');
      expect([nothing.status, wrongMethod.status]).toEqual(opts.behindGateway ? [404, 404] : [404, 405]);
      expect([nothing.body?.code, wrongMethod.body?.code]).toEqual(
        opts.behindGateway ? [undefined, undefined] : ['not_found', 'method_not_allowed'],
      );
    });
  });
}
