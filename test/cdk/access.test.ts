/**
 * The least-privilege map (`lib/access.ts`) against what the code really does: every function
 * group runs behind its own services over a storage that records each table and bucket
 * operation, the black-box suites drive all routes through a dispatcher that sends each route
 * to its group (as API Gateway does), and maintenance runs a pass. Whatever a group touched
 * must be in its IAM grants, or it would fail with AccessDenied on AWS only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Grants } from '../../lambdas/http/grants.js';
import { makeHandler, type FunctionGroup } from '../../lambdas/http/route.js';
import { ALL_ROUTES, routesOf } from '../../lambdas/http/routes.js';
import type { HttpEvent } from '../../lambdas/http/types.js';
import { startLocalServer, type LambdaHttpHandler, type LocalServer } from '../../lambdas/local/server.js';
import { reportLag } from '../../lambdas/service/maintenance/lag-metrics.js';
import { runMaintenance } from '../../lambdas/service/maintenance/maintenance.js';
import { segmentBlobKey } from '../../lambdas/service/log/log-store.js';
import type { Services } from '../../lambdas/service/runtime.js';
import { openEmbeddedStorage } from '../../lambdas/storage/embedded/index.js';
import type { Storage, TableName, WriteOp } from '../../lambdas/storage/port.js';
import { BLOB_PREFIXES, FUNCTION_ACCESS, FUNCTIONS, type BucketOp, type FunctionName } from '../../lib/access.js';
import { TestClock, testServices } from '../support/services.js';
import { defineLogRoutesSuite } from '../http/suites/log.suite.js';
import { defineQueueSmokeSuite } from '../http/suites/smoke.suite.js';
import { defineAdminSuite } from '../http/suites/admin.suite.js';

type Use = `table:${TableName}:${'read' | 'write'}` | `bucket:${BucketOp}`;

/** Wraps a storage so every operation is recorded in `uses` (and blob keys are checked). */
function recording(inner: Storage, uses: Set<Use>, badKeys: string[]): Storage {
  const op = (o: WriteOp): Use => `table:${o.table}:${o.op === 'check' ? 'read' : 'write'}`;
  const key = (k: string): void => {
    if (!BLOB_PREFIXES.some((p) => k.startsWith(p))) badKeys.push(k);
  };
  return {
    kind: inner.kind,
    close: () => inner.close(),
    items: {
      get: (t, k) => (uses.add(`table:${t}:read`), inner.items.get(t, k)),
      getMany: (t, ks) => (uses.add(`table:${t}:read`), inner.items.getMany(t, ks)),
      query: (t, pk, o) => (uses.add(`table:${t}:read`), inner.items.query(t, pk, o)),
      put: (t, item, c) => (uses.add(`table:${t}:write`), inner.items.put(t, item, c)),
      delete: (t, k, c) => (uses.add(`table:${t}:write`), inner.items.delete(t, k, c)),
      writeEach: (ops) => (ops.forEach((o) => uses.add(op(o))), inner.items.writeEach(ops)),
      transact: (ops) => (ops.forEach((o) => uses.add(op(o))), inner.items.transact(ops)),
      take: (t, k, n, then, takeOpts) => (
        uses.add(`table:${t}:write`),
        inner.items.take(
          t,
          k,
          n,
          then &&
            ((taken) => {
              const ops = then(taken);
              ops.forEach((o) => uses.add(op(o)));
              return ops;
            }),
          takeOpts,
        )
      ),
    },
    blobs: {
      put: (k, b, o) => (key(k), uses.add('bucket:write'), inner.blobs.put(k, b, o)),
      get: (k) => (key(k), uses.add('bucket:read'), inner.blobs.get(k)),
      delete: (k) => (key(k), uses.add('bucket:delete'), inner.blobs.delete(k)),
      list: (p, o) => (key(p), uses.add('bucket:list'), inner.blobs.list(p, o)),
    },
    // Embedded-only housekeeping (TTL collection) passes through unrecorded: DynamoDB does it itself.
    ...('sweepExpired' in inner
      ? { sweepExpired: (inner as unknown as { sweepExpired: (n: number) => number }).sweepExpired.bind(inner) }
      : {}),
  };
}

/** Which group API Gateway sends a method and path to (literal segments beat parameters). */
function groupOf(method: string, rawPath: string): FunctionGroup | undefined {
  const segs = rawPath.split('/').filter(Boolean);
  let best: { group: FunctionGroup; score: number } | undefined;
  for (const r of ALL_ROUTES) {
    const parts = r.path.split('/').filter(Boolean);
    if (r.method !== method || parts.length !== segs.length) continue;
    let score = 0;
    const ok = parts.every((p, i) => (/^\{.+\}$/.test(p) ? true : p === segs[i] && (score += 2 ** (20 - i)) >= 0));
    if (ok && (!best || score > best.score)) best = { group: r.group, score };
  }
  return best?.group;
}

const limits = { maxBodyBytes: 64 * 1024, maxMessageBytes: 8 * 1024 };

describe('cdk: the IAM map covers what each function does', () => {
  let dir: string;
  let storage: Storage;
  let server: LocalServer;
  const uses = new Map<FunctionName, Set<Use>>(FUNCTIONS.map((f) => [f, new Set<Use>()]));
  const badKeys: string[] = [];
  const servicesOf = new Map<FunctionName, Services>();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-access-'));
    storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
    // One services instance per function, like one Lambda container each: no shared caches.
    // Maintenance runs a day ahead, so the sweeper sees every blob as past its grace period.
    // Waits take wait slots, as they do on AWS (the stack caps them by default).
    for (const f of FUNCTIONS)
      servicesOf.set(
        f,
        testServices(recording(storage, uses.get(f)!, badKeys), {
          config: { ...limits, inlineMaxBytes: 1024, maxWaiters: 50 },
          clock: new TestClock(Date.now() + (f === 'maintenance' ? 86_400_000 : 0)),
        }),
      );
    const handlers = new Map<FunctionGroup, LambdaHttpHandler>();
    for (const f of FUNCTIONS) {
      if (f === 'maintenance') continue;
      const svc = servicesOf.get(f)!;
      handlers.set(f, makeHandler(routesOf(f), { services: async () => svc, grants: Grants.open() }));
    }
    const gateway: LambdaHttpHandler = async (event: HttpEvent, context) => {
      const group = groupOf(event.requestContext.http.method, event.rawPath);
      if (!group)
        return { statusCode: 404, headers: { 'content-type': 'application/json' }, body: '{"message":"Not Found"}' };
      return handlers.get(group)!(event, context);
    };
    server = await startLocalServer({ handler: gateway, host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20 });
  });
  afterAll(async () => {
    await server.close();
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  });

  defineLogRoutesSuite(() => ({ url: server.url }), { ...limits, backend: 'embedded', behindGateway: true });
  defineQueueSmokeSuite(() => ({ url: server.url }));
  defineAdminSuite(() => ({ url: server.url }), { oneProcess: false });

  it('maintenance: a sweep that finds an orphan blob', async () => {
    // A blob no segment references (a push that died before committing), written behind the recorder's back.
    await storage.blobs.put(segmentBlobKey('orphan-partition', 'orphan-push'), new Uint8Array([1, 2, 3]));
    const report = await runMaintenance(servicesOf.get('maintenance')!);
    if (report.skipped) throw new Error('the maintenance pass found its lease held');
    expect(report.blobs.deleted).toBeGreaterThanOrEqual(1);
    // The lag metrics the maintenance function publishes after a pass.
    const lag = await reportLag(servicesOf.get('maintenance')!);
    expect(lag.groups).toBeGreaterThanOrEqual(0);
  });

  it('every table and bucket operation observed is granted to that function', () => {
    const missing: string[] = [];
    for (const f of FUNCTIONS) {
      const access = FUNCTION_ACCESS[f];
      for (const use of uses.get(f)!) {
        const [kind, a, b] = use.split(':') as [string, string, string | undefined];
        const ok =
          kind === 'table'
            ? b === 'read'
              ? access.tables[a as TableName] !== undefined
              : access.tables[a as TableName] === 'readwrite'
            : access.bucket.includes(a as BucketOp);
        if (!ok) missing.push(`${f}: ${use}`);
      }
    }
    expect(missing, 'add these to FUNCTION_ACCESS in lib/access.ts').toEqual([]);
    expect(badKeys).toEqual([]); // blob keys outside BLOB_PREFIXES would be denied by IAM
    // The suites reached every API function that has routes.
    expect([...new Set(ALL_ROUTES.map((r) => r.group))].filter((g) => uses.get(g)!.size === 0)).toEqual([]);
  });
});
