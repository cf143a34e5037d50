// sluice.targets against a scripted fetch: each method's method, path (names percent-encoded) and
// body, what it answers, and which failures it retries: every call but rotate-secret is
// idempotent; a rotation is retried only when the server certainly did nothing (a retry after a
// lost answer would make a second secret and drop the first).
import { describe, expect, it } from 'vitest';
import {
  Sluice,
  SluiceApiError,
  SluiceTimeoutError,
  type GetTargetAnswer,
  type RetryEvent,
} from '../../client/index.js';
import { fakeFetch, jsonResponse, netError, type Answer, type Recorded } from '../support/fake-fetch.js';

const client = (answers: Answer[] | ((req: Recorded) => Response)) => {
  const f = fakeFetch(answers);
  const retries: RetryEvent[] = [];
  return {
    sluice: new Sluice({
      endpoint: 'http://sluice.test',
      fetch: f.fetch,
      sleep: async () => undefined,
      onRetry: (e) => retries.push(e),
    }),
    calls: f.calls,
    retries,
  };
};

const line = (c: Recorded): string => `${c.method} ${c.url.pathname}${c.url.search} ${JSON.stringify(c.body ?? null)}`;

const view = (over: Partial<GetTargetAnswer> = {}): GetTargetAnswer => ({
  queue: 'orders',
  group: 'billing',
  settings: {
    endpoint: { kind: 'https', url: 'https://hooks.example.com/sluice' },
    mode: 'leases',
    batchSize: 100,
    maximumBatchingWindowInSeconds: 0,
    maximumConcurrency: 5,
    functionResponseTypes: [],
    bisectBatchOnFunctionError: false,
    maximumRecordAgeInSeconds: -1,
    timeoutSeconds: 60,
    startingPosition: 'TRIM_HORIZON',
  },
  state: 'active',
  lastError: null,
  createdAt: '2026-12-04T10:00:00.000Z',
  updatedAt: '2026-12-04T10:00:00.000Z',
  signingSecretSetAt: '2026-12-04T10:00:00.000Z',
  stats: {
    invocations: 0,
    errors: 0,
    throttles: 0,
    retries: 0,
    deadLettered: 0,
    inFlight: 0,
    oldestUndeliveredAgeSeconds: null,
  },
  ...over,
});

const unavailable = (): Response => jsonResponse(503, { error: 'storage is busy', code: 'unavailable' });

describe('client: targets', () => {
  it('sends each call to its route with its body, names percent-encoded, and answers the body', async () => {
    const secret = 'whsec_abc';
    const { sluice, calls } = client((req) => {
      if (req.method === 'PUT') return jsonResponse(201, { ...view(), signingSecret: secret });
      if (req.url.pathname === '/api/v1/targets') return jsonResponse(200, { targets: [view()] });
      if (req.method === 'DELETE') return jsonResponse(200, { deleted: true });
      if (req.url.pathname.endsWith('/rotate-secret'))
        return jsonResponse(200, { signingSecret: 'whsec_next', previousValidUntil: '2026-12-05T10:00:00.000Z' });
      if (req.url.pathname.endsWith('/pause')) return jsonResponse(200, view({ state: 'paused' }));
      return jsonResponse(200, view());
    });
    const settings = {
      endpoint: { kind: 'https' as const, url: 'https://hooks.example.com/sluice' },
      mode: 'claims' as const,
      batchSize: 10,
      functionResponseTypes: ['ReportBatchItemFailures' as const],
      startingPosition: 'AT_TIMESTAMP' as const,
      startingPositionTimestamp: 0,
    };
    const set = await sluice.targets.set('orders/eu', 'bill ing', settings);
    expect('signingSecret' in set && set.signingSecret).toBe(secret);
    expect(await sluice.targets.get('orders', 'billing')).toEqual(view());
    expect(await sluice.targets.list()).toEqual([view()]);
    expect((await sluice.targets.pause('orders', 'billing')).state).toBe('paused');
    expect((await sluice.targets.resume('orders', 'billing')).state).toBe('active');
    expect(await sluice.targets.rotateSecret('orders', 'billing')).toEqual({
      signingSecret: 'whsec_next',
      previousValidUntil: '2026-12-05T10:00:00.000Z',
    });
    expect(await sluice.targets.delete('orders', 'billing')).toEqual({ deleted: true });
    expect(calls.map(line)).toEqual([
      `PUT /api/v1/targets/orders%2Feu/bill%20ing ${JSON.stringify(settings)}`,
      'GET /api/v1/targets/orders/billing null',
      'GET /api/v1/targets null',
      'POST /api/v1/targets/orders/billing/pause null',
      'POST /api/v1/targets/orders/billing/resume null',
      'POST /api/v1/targets/orders/billing/rotate-secret null',
      'DELETE /api/v1/targets/orders/billing null',
    ]);
    expect(calls[0]?.headers['content-type']).toBe('application/json');
  });

  it('answers a replaced target without a secret', async () => {
    const { sluice } = client([jsonResponse(200, view())]);
    const t = await sluice.targets.set('orders', 'billing', {
      endpoint: { kind: 'https', url: 'https://hooks.example.com/sluice' },
      mode: 'leases',
    });
    expect('signingSecret' in t).toBe(false);
  });

  it('retries a set, a read, a pause, a resume and a delete after a 503', async () => {
    const calls = [
      (s: Sluice) =>
        s.targets.set('orders', 'billing', {
          endpoint: { kind: 'https', url: 'https://h.example.com/' },
          mode: 'leases',
        }),
      (s: Sluice) => s.targets.get('orders', 'billing'),
      (s: Sluice) => s.targets.list(),
      (s: Sluice) => s.targets.pause('orders', 'billing'),
      (s: Sluice) => s.targets.resume('orders', 'billing'),
      (s: Sluice) => s.targets.delete('orders', 'billing'),
    ];
    for (const call of calls) {
      const c = client([unavailable(), jsonResponse(200, { targets: [], deleted: true, ...view() })]);
      await expect(call(c.sluice)).resolves.toBeDefined();
      expect(c.calls).toHaveLength(2);
      expect(c.calls[1]?.method).toBe(c.calls[0]?.method);
      expect(c.retries.map((r) => r.attempt)).toEqual([1]);
    }
  });

  it('does not retry a rotation after a 503, a 500 or a timeout: the first may have made a secret', async () => {
    for (const answer of [unavailable(), jsonResponse(500, { error: 'boom', code: 'internal' })]) {
      const c = client([answer, jsonResponse(200, { signingSecret: 'whsec_2', previousValidUntil: '' })]);
      const err = await c.sluice.targets.rotateSecret('orders', 'billing').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SluiceApiError);
      expect(c.calls).toHaveLength(1);
      expect(c.retries).toEqual([]);
    }
    let tries = 0;
    const hanging = ((_url: string | URL, init?: RequestInit) => {
      tries++;
      return new Promise<Response>((_, reject) =>
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rejects with the signal's reason, as fetch does
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      );
    }) as typeof fetch;
    const s = new Sluice({
      endpoint: 'http://sluice.test',
      fetch: hanging,
      sleep: async () => undefined,
      timeoutMs: 20,
    });
    await expect(s.targets.rotateSecret('orders', 'billing')).rejects.toBeInstanceOf(SluiceTimeoutError);
    expect(tries).toBe(1);
    // The same timeout on a read is retried.
    tries = 0;
    await expect(s.targets.get('orders', 'billing')).rejects.toBeInstanceOf(SluiceTimeoutError);
    expect(tries).toBe(5);
  });

  it('retries a rotation only when the server certainly did nothing: a 429, a connection never made', async () => {
    const ok = jsonResponse(200, { signingSecret: 'whsec_2', previousValidUntil: '2026-12-05T10:00:00.000Z' });
    const throttled = client([jsonResponse(429, { error: 'slow down', code: 'limit_exceeded' }), ok]);
    await expect(throttled.sluice.targets.rotateSecret('orders', 'billing')).resolves.toMatchObject({
      signingSecret: 'whsec_2',
    });
    expect(throttled.calls).toHaveLength(2);
    const refused = client([netError('ECONNREFUSED'), ok]);
    await expect(refused.sluice.targets.rotateSecret('orders', 'billing')).resolves.toMatchObject({
      signingSecret: 'whsec_2',
    });
    expect(refused.calls).toHaveLength(2);
  });

  it("never retries a refusal, and throws the server's message", async () => {
    const c = client([
      jsonResponse(400, { error: 'batchSize: Too small: expected number to be >=1', code: 'invalid_request' }),
    ]);
    const err = await c.sluice.targets
      .set('orders', 'billing', {
        endpoint: { kind: 'https', url: 'https://h.example.com/' },
        mode: 'leases',
        batchSize: 0,
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceApiError);
    expect(err).toMatchObject({ status: 400, code: 'invalid_request' });
    expect((err as SluiceApiError).message).toContain('batchSize');
    expect(c.calls).toHaveLength(1);
  });
});
