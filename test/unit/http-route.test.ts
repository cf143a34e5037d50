import { describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { ALL_ROUTES } from '../../server/http/routes.js';
import { errorResponse, statusOf } from '../../server/http/errors.js';
import { SluiceError } from '../../server/core/errors.js';
import { Grants, parseGrants } from '../../server/http/grants.js';
import { healthRoutes } from '../../server/http/handlers/health.js';
import { queueRoutes } from '../../server/http/handlers/queues.js';
import { makeHandler } from '../../server/http/handler.js';
import { principalOf } from '../../server/http/route.js';
import type { HttpEvent } from '../../server/http/types.js';
import type { Services } from '../../server/service/runtime.js';
import { WriteHealth } from '../../server/service/storage-health.js';
import { Activity } from '../../server/service/admin/activity.js';
import { UsageLedger } from '../../server/service/usage.js';

describe('unit: error mapping', () => {
  it('maps domain errors to their status with code and message', () => {
    const r = errorResponse(new SluiceError('payload_too_large', 'too big', { limit: 5 }));
    expect(r).toEqual({ statusCode: 413, body: { error: 'too big', code: 'payload_too_large', limit: 5 } });
    expect(statusOf('stale_claim')).toBe(409);
  });
  it('hides unknown errors behind a generic 500', () => {
    const logged: unknown[] = [];
    const r = errorResponse(new Error('secret table name xyz'), { error: (_m, f) => logged.push(f) });
    expect(r.statusCode).toBe(500);
    expect(JSON.stringify(r.body)).not.toContain('secret');
    expect(logged).toHaveLength(1);
  });
});

describe('unit: route table', () => {
  it('has no two routes with the same method and path', () => {
    const keys = ALL_ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('unit: GET /health', () => {
  const event = (path: string) =>
    ({
      version: '2.0',
      rawPath: path,
      headers: {},
      requestContext: { http: { method: 'GET', path } },
    }) as unknown as HttpEvent;
  const handlerOver = (get: () => Promise<unknown>) =>
    makeHandler(healthRoutes, {
      grants: Grants.open(),
      services: async () =>
        ({
          storage: { kind: 'aws', items: { get } },
          storageHealth: new WriteHealth(Date.now),
          config: {},
          telemetry: { count() {} },
          activity: new Activity(Date.now),
          usage: new UsageLedger(undefined, undefined),
          shutdown: new AbortController().signal,
        }) as unknown as Services,
    });
  it('answers 200 healthy while storage answers, 503 (naming no internals) when it does not', async () => {
    const ok = await handlerOver(async () => undefined)(event('/health'), {});
    expect(ok.statusCode).toBe(200);
    expect(JSON.parse(ok.body as string)).toMatchObject({ status: 'healthy', database: 'connected', backend: 'aws' });
    const down = await handlerOver(() =>
      Promise.reject(
        Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:443 table secret-prod'), { name: 'TimeoutError' }),
      ),
    )(event('/health'), {});
    expect(down.statusCode).toBe(503);
    expect(JSON.parse(down.body as string)).toMatchObject({ status: 'unhealthy', database: 'disconnected' });
    expect(down.body).not.toContain('secret');
    expect(down.body).not.toContain('10.0.0.7');
  });
  it('answers the version package.json names (one place, inlined into the bundles)', async () => {
    const ok = await handlerOver(async () => undefined)(event('/health'), {});
    expect(JSON.parse(ok.body as string)).toMatchObject({ version: packageJson.version });
  });
});

describe('unit: callers behind the JWT authorizer', () => {
  // API Gateway's JWT authorizer puts the token's claims in the request context: the grants
  // name the subject.
  const event = (sub: string | undefined) =>
    ({
      version: '2.0',
      rawPath: '/api/v1/resources/queues/orders',
      headers: {},
      requestContext: {
        http: { method: 'DELETE', path: '/api/v1/resources/queues/orders' },
        authorizer: sub === undefined ? undefined : { jwt: { claims: { sub }, scopes: [] } },
      },
      pathParameters: { queue: 'orders' },
    }) as unknown as HttpEvent;
  const deleted: string[] = [];
  const handler = makeHandler(queueRoutes, {
    grants: Grants.from(
      parseGrants({ grants: [{ principal: 'user-42', actions: ['manage'], queues: ['orders'] }] }, 'test'),
    ),
    services: async () =>
      ({
        deletion: { deleteQueue: async (q: string) => (deleted.push(q), { existed: true }) },
        config: { maxBodyBytes: 1 << 20 },
        telemetry: { count() {} },
        activity: new Activity(Date.now),
        usage: new UsageLedger(undefined, undefined),
        shutdown: new AbortController().signal,
      }) as unknown as Services,
  });

  it('acts as the token subject: granted, refused for another subject, anonymous without claims', async () => {
    expect(principalOf(event('user-42'))).toBe('user-42');
    const ok = await handler(event('user-42'), {});
    expect(ok.statusCode).toBe(200);
    expect(deleted).toEqual(['orders']);
    const other = await handler(event('user-7'), {});
    expect(other.statusCode).toBe(403);
    expect(JSON.parse(other.body as string)).toMatchObject({ code: 'forbidden' });
    expect(principalOf(event(undefined))).toBe('anonymous');
    expect((await handler(event(undefined), {})).statusCode).toBe(403);
    expect(deleted).toEqual(['orders']);
  });
});
