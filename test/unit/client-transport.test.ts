import { SignatureV4 } from '@smithy/signature-v4';
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { authenticator, regionFromHost } from '../../client/auth.js';
import { apiErrorFrom, SluiceApiError, SluiceNetworkError, SluiceTimeoutError } from '../../client/errors.js';
import { Transport } from '../../client/http.js';
import { backoffDelay, DEFAULT_RETRY, isRetryable, parseRetryAfter } from '../../client/retry.js';
import { fakeFetch, jsonResponse, netError } from '../support/fake-fetch.js';

const noSleep = () => {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
};

function transport(
  answers: Parameters<typeof fakeFetch>[0],
  extra: Partial<ConstructorParameters<typeof Transport>[0]> = {},
) {
  const f = fakeFetch(answers);
  const s = noSleep();
  const t = new Transport({
    endpoint: 'http://sluice.test/',
    fetch: f.fetch,
    sleep: s.sleep,
    random: () => 0.5,
    ...extra,
  });
  return { t, calls: f.calls, waits: s.waits };
}

describe('client: backoff policy', () => {
  it('grows exponentially with equal jitter and a ceiling', () => {
    const p = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1000, factor: 2 };
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, p, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([1, 2, 3].map((n) => backoffDelay(n, p, () => 0.999999))).toEqual([100, 200, 400]);
    expect(backoffDelay(1, p, () => 0.5)).toBe(75);
  });

  it('honours Retry-After as a floor', () => {
    const p = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelay(1, p, () => 0, 3000)).toBe(1000);
    expect(backoffDelay(1, p, () => 0, 700)).toBe(700);
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });

  it('retries 429 always, 5xx and timeouts only when idempotent, other 4xx never', () => {
    const e = (status: number) => new SluiceApiError(status, 'x', 'x');
    expect(isRetryable(e(429), 'unsafe')).toBe(true);
    expect(isRetryable(e(503), 'idempotent')).toBe(true);
    expect(isRetryable(e(500), 'unsafe')).toBe(false);
    for (const s of [400, 401, 403, 404, 409, 413]) expect(isRetryable(e(s), 'idempotent')).toBe(false);
    expect(isRetryable(new SluiceTimeoutError('t'), 'idempotent')).toBe(true);
    expect(isRetryable(new SluiceTimeoutError('t'), 'unsafe')).toBe(false);
    const refused = new SluiceNetworkError('n', '', { cause: netError('ECONNREFUSED') });
    const reset = new SluiceNetworkError('n', '', { cause: netError('ECONNRESET') });
    expect(isRetryable(refused, 'unsafe')).toBe(true);
    expect(isRetryable(reset, 'unsafe')).toBe(false);
    expect(isRetryable(reset, 'idempotent')).toBe(true);
    expect(isRetryable(e(429), 'none')).toBe(false);
  });
});

describe('client: transport', () => {
  it('retries 503 then succeeds, waiting the backoff each time', async () => {
    const { t, calls, waits } = transport([
      jsonResponse(503, { error: 'busy', code: 'unavailable' }),
      jsonResponse(503, { error: 'busy' }),
      jsonResponse(200, { ok: 1 }),
    ]);
    await expect(t.json({ method: 'GET', path: '/x', retry: 'idempotent' })).resolves.toEqual({ ok: 1 });
    expect(calls).toHaveLength(3);
    expect(waits).toEqual([150, 300]);
  });

  it('gives up after the attempts budget with the last error', async () => {
    const { t, calls } = transport([jsonResponse(500, { error: 'boom', code: 'internal' })], {
      retry: { attempts: 3 },
    });
    await expect(t.json({ method: 'GET', path: '/x', retry: 'idempotent' })).rejects.toMatchObject({
      status: 500,
      code: 'internal',
      message: 'boom',
    });
    expect(calls).toHaveLength(3);
  });

  it('never retries a 4xx other than 429', async () => {
    const { t, calls } = transport([
      jsonResponse(409, { error: 'offset 3 was handed out before a seek', code: 'stale_claim' }),
    ]);
    const err = await t.json({ method: 'POST', path: '/x', body: {}, retry: 'idempotent' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceApiError);
    expect(err).toMatchObject({
      status: 409,
      code: 'stale_claim',
      message: 'offset 3 was handed out before a seek',
      request: 'POST /x',
    });
    expect(calls).toHaveLength(1);
  });

  it('retries a throttled unsafe call but not its 5xx', async () => {
    const a = transport([
      jsonResponse(429, { error: 'slow down', code: 'limit_exceeded' }, { 'retry-after': '1' }),
      jsonResponse(200, { success: true }),
    ]);
    await expect(a.t.json({ method: 'POST', path: '/api/v1/transaction', body: {}, retry: 'unsafe' })).resolves.toEqual(
      { success: true },
    );
    expect(a.waits).toEqual([1000]);
    const b = transport([jsonResponse(502, { message: 'Bad Gateway' }), jsonResponse(200, {})]);
    await expect(
      b.t.json({ method: 'POST', path: '/api/v1/transaction', body: {}, retry: 'unsafe' }),
    ).rejects.toMatchObject({ status: 502, message: 'Bad Gateway' });
    expect(b.calls).toHaveLength(1);
  });

  it('retries network errors; unsafe calls only when the connection was refused', async () => {
    const a = transport([netError('ECONNRESET'), jsonResponse(201, [])]);
    await expect(
      a.t.json({ method: 'POST', path: '/api/v1/push', body: { items: [] }, retry: 'idempotent' }),
    ).resolves.toEqual([]);
    const b = transport([netError('ECONNRESET'), jsonResponse(200, {})]);
    await expect(b.t.json({ method: 'POST', path: '/x', retry: 'unsafe' })).rejects.toBeInstanceOf(SluiceNetworkError);
    const c = transport([netError('ECONNREFUSED'), jsonResponse(200, { ok: true })]);
    await expect(c.t.json({ method: 'POST', path: '/x', retry: 'unsafe' })).resolves.toEqual({ ok: true });
  });

  it('times a request out with SluiceTimeoutError', async () => {
    const hanging = ((_url: string | URL, init?: RequestInit) =>
      new Promise<Response>((_, reject) =>
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rejects with the signal's reason, as fetch does
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)),
      )) as typeof fetch;
    const t = new Transport({ endpoint: 'http://sluice.test', retry: { attempts: 1 }, fetch: hanging });
    const err = await t
      .json({ method: 'GET', path: '/slow', retry: 'idempotent', timeoutMs: 30 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceTimeoutError);
    expect((err as Error).message).toContain('no answer within 30 ms');
  });

  it('stops retrying when the caller aborts', async () => {
    const ctl = new AbortController();
    const f = fakeFetch([jsonResponse(503, {})]);
    const t = new Transport({
      endpoint: 'http://sluice.test',
      fetch: f.fetch,
      sleep: async () => {
        ctl.abort(new Error('stopped'));
        throw new Error('stopped');
      },
    });
    await expect(t.json({ method: 'GET', path: '/x', retry: 'idempotent', signal: ctl.signal })).rejects.toThrow(
      'stopped',
    );
    expect(f.calls).toHaveLength(1);
  });

  it('answers null for 204 and sends JSON with content-type only when there is a body', async () => {
    const { t, calls } = transport([new Response(null, { status: 204 }), jsonResponse(200, { a: 1 })]);
    await expect(
      t.json({
        method: 'GET',
        path: '/api/v1/pop/queue/q',
        query: { batch: 5, wait: false, skip: undefined },
        retry: 'idempotent',
      }),
    ).resolves.toBeNull();
    await t.json({ method: 'POST', path: '/p', body: { x: 1 }, retry: 'idempotent' });
    expect(calls[0]?.url.toString()).toBe('http://sluice.test/api/v1/pop/queue/q?batch=5&wait=false');
    expect(calls[0]?.headers['content-type']).toBeUndefined();
    expect(calls[1]?.headers['content-type']).toBe('application/json');
    expect(calls[1]?.body).toEqual({ x: 1 });
  });

  it("paces a long poll by its answer's Retry-After (the server's wait cap), up to the retry ceiling", async () => {
    const capped = () => new Response(null, { status: 204, headers: { 'retry-after': '1' } });
    const a = transport([capped(), capped(), new Response(null, { status: 204 })]);
    const poll = { method: 'GET', path: '/api/v1/pop/queue/q', retry: 'idempotent' } as const;
    await expect(a.t.json({ ...poll, paced: true })).resolves.toBeNull();
    // Not asked to pace (any other call): the header is not slept on.
    await expect(a.t.json(poll)).resolves.toBeNull();
    // No header: no sleep.
    await expect(a.t.json({ ...poll, paced: true })).resolves.toBeNull();
    expect(a.waits).toEqual([1000]);
    const b = transport([new Response(null, { status: 204, headers: { 'retry-after': '3600' } })], {
      retry: { maxDelayMs: 2000 },
    });
    await b.t.json({ ...poll, paced: true });
    expect(b.waits).toEqual([2000]);
  });

  it('a stop during the pacing sleep ends the sleep and still returns the answer', async () => {
    const ctl = new AbortController();
    const f = fakeFetch([new Response(null, { status: 204, headers: { 'retry-after': '1' } })]);
    const t = new Transport({
      endpoint: 'http://sluice.test',
      fetch: f.fetch,
      sleep: async () => {
        ctl.abort(new Error('stopped'));
        throw new Error('stopped');
      },
    });
    const reply = await t.send({ method: 'GET', path: '/p', retry: 'idempotent', signal: ctl.signal, paced: true });
    expect(reply.status).toBe(204);
    expect(f.calls).toHaveLength(1);
  });

  it('types gateway errors without a Sluice body', () => {
    expect(apiErrorFrom(403, { message: 'Forbidden' }, 'GET /x')).toMatchObject({ code: 'forbidden', status: 403 });
    expect(apiErrorFrom(403, { message: 'Forbidden' }, 'GET /x').message).toContain('execute-api:Invoke');
    expect(apiErrorFrom(504, { message: 'Endpoint request timed out' }, '')).toMatchObject({
      code: 'http_error',
      message: 'Endpoint request timed out',
    });
    expect(apiErrorFrom(502, '<html>bad gateway</html>', '')).toMatchObject({ message: '<html>bad gateway</html>' });
    expect(apiErrorFrom(413, { error: 'too big', code: 'payload_too_large', limit: 10 }, '').body).toEqual({
      error: 'too big',
      code: 'payload_too_large',
      limit: 10,
    });
  });
});

const bytes = (d: string | ArrayBuffer | ArrayBufferView): Buffer =>
  typeof d === 'string'
    ? Buffer.from(d)
    : ArrayBuffer.isView(d)
      ? Buffer.from(d.buffer, d.byteOffset, d.byteLength)
      : Buffer.from(d);

describe('client: authentication', () => {
  const creds = {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    sessionToken: 'token-1',
  };
  const fixed = new Date('2026-05-01T12:00:00Z');

  class Sha256 {
    private readonly h;
    constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
      this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
    }
    update(d: string | ArrayBuffer | ArrayBufferView): void {
      this.h.update(bytes(d));
    }
    async digest(): Promise<Uint8Array> {
      return new Uint8Array(this.h.digest());
    }
    reset(): void {}
  }

  it('signs with SigV4 exactly as @smithy/signature-v4 does for execute-api', async () => {
    const endpoint = new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/prod');
    const auth = authenticator({ type: 'sigv4', credentials: creds }, endpoint, { now: () => fixed });
    const url = new URL(
      'https://abc123.execute-api.eu-west-1.amazonaws.com/prod/api/v1/queues/a%20b/partitions/p/groups/g/poll?x=1',
    );
    const body = JSON.stringify({ max: 5 });
    const headers = await auth({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body });
    expect(headers['authorization']).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20260501\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$/,
    );
    expect(headers['x-amz-date']).toBe('20260501T120000Z');
    expect(headers['x-amz-security-token']).toBe('token-1');
    expect(headers['host']).toBeUndefined();

    const reference = await new SignatureV4({
      service: 'execute-api',
      region: 'eu-west-1',
      credentials: creds,
      sha256: Sha256,
    }).sign(
      {
        method: 'POST',
        protocol: 'https:',
        hostname: url.hostname,
        path: url.pathname,
        query: { x: '1' },
        headers: { 'content-type': 'application/json', host: url.host },
        body,
      },
      { signingDate: fixed },
    );
    expect(headers['authorization']).toBe(reference.headers['authorization']);
  });

  it('uses the region given, else the one in the URL, else AWS_REGION, else refuses', async () => {
    expect(regionFromHost('abc.execute-api.ap-southeast-2.amazonaws.com')).toBe('ap-southeast-2');
    expect(regionFromHost('sluice.example.com')).toBeUndefined();
    const plain = new URL('https://sluice.example.com');
    const h = await authenticator({ type: 'sigv4', credentials: creds }, plain, {
      now: () => fixed,
      env: { AWS_REGION: 'us-east-2' },
    })({ method: 'GET', url: new URL('https://sluice.example.com/health'), headers: {} });
    expect(h['authorization']).toContain('/us-east-2/execute-api/');
    const h2 = await authenticator({ type: 'sigv4', region: 'sa-east-1', credentials: creds }, plain, {
      now: () => fixed,
      env: {},
    })({ method: 'GET', url: new URL('https://sluice.example.com/health'), headers: {} });
    expect(h2['authorization']).toContain('/sa-east-1/execute-api/');
    expect(() => authenticator({ type: 'sigv4', credentials: creds }, plain, { env: {} })).toThrow(/needs a region/);
  });

  it('takes credentials from the standard AWS provider chain when none are given (here: the environment)', async () => {
    const keys = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'] as const;
    const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
    try {
      delete process.env['AWS_PROFILE'];
      Object.assign(process.env, {
        AWS_ACCESS_KEY_ID: 'AKIDFROMENV',
        AWS_SECRET_ACCESS_KEY: creds.secretAccessKey,
        AWS_SESSION_TOKEN: 'env-token',
      });
      const url = new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/health');
      const headers = await authenticator({ type: 'sigv4' }, url, { now: () => fixed })({
        method: 'GET',
        url,
        headers: {},
      });
      expect(headers['authorization']).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDFROMENV\/20260501\/eu-west-1\/execute-api\/aws4_request, /,
      );
      expect(headers['x-amz-security-token']).toBe('env-token');
      // The same signature as with those credentials passed in.
      const explicit = await authenticator(
        {
          type: 'sigv4',
          credentials: {
            accessKeyId: 'AKIDFROMENV',
            secretAccessKey: creds.secretAccessKey,
            sessionToken: 'env-token',
          },
        },
        url,
        { now: () => fixed },
      )({ method: 'GET', url, headers: {} });
      expect(headers['authorization']).toBe(explicit['authorization']);
    } finally {
      for (const k of keys) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
    }
  });

  it('sends a bearer token, or nothing', async () => {
    const u = new URL('http://127.0.0.1:6632/health');
    expect(
      await authenticator(
        { type: 'bearer', token: 's3cret' },
        u,
      )({ method: 'GET', url: u, headers: { accept: 'application/json' } }),
    ).toEqual({ accept: 'application/json', authorization: 'Bearer s3cret' });
    expect(
      await authenticator({ type: 'bearer', token: async () => 'rotated' }, u)({ method: 'GET', url: u, headers: {} }),
    ).toEqual({ authorization: 'Bearer rotated' });
    expect(await authenticator({ type: 'none' }, u)({ method: 'GET', url: u, headers: {} })).toEqual({});
  });

  it('signs every request the transport sends (fresh per attempt)', async () => {
    const f = fakeFetch([jsonResponse(503, {}), jsonResponse(200, { ok: true })]);
    let t = 0;
    const tr = new Transport({
      endpoint: 'https://abc.execute-api.eu-west-1.amazonaws.com',
      auth: { type: 'sigv4', credentials: creds },
      fetch: f.fetch,
      sleep: async () => undefined,
      now: () => new Date(fixed.getTime() + 1000 * t++),
    });
    await tr.json({ method: 'POST', path: '/api/v1/push', body: { items: [] }, retry: 'idempotent' });
    expect(f.calls.map((c) => c.headers['x-amz-date'])).toEqual(['20260501T120000Z', '20260501T120001Z']);
    expect(f.calls.every((c) => c.headers['authorization']?.startsWith('AWS4-HMAC-SHA256 '))).toBe(true);
  });
});
