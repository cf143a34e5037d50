/**
 * One mapping of storage failures to HTTP, on every route (docs/STORAGE.md, "When storage
 * fails"): with the store unavailable every route of the route table answers 503 with
 * `Retry-After` and `code: unavailable` (the health probes with their own body; routes that read
 * no storage answer as usual), never a bare 500; with the disk full every route that
 * has to write answers 507 `storage_full` and the others answer as they would. The requests
 * are valid, so each reaches its service; the table below must name every route, so a route
 * added later is held to the same rule.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Grants } from '../../server/http/grants.js';
import { makeHandler } from '../../server/http/handler.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { startLocalServer, type LocalServer } from '../../server/local/server.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import {
  StoreFullError,
  StoreUnavailableError,
  type BlobStore,
  type ItemStore,
  type Storage,
} from '../../server/storage/port.js';
import { testServices } from '../support/services.js';

type Mode = 'ok' | 'unavailable' | 'full';

/** `storage` with a switch: every call fails (unavailable), or every write does (full). */
function failing(storage: Storage): { storage: Storage; set(mode: Mode): void } {
  let mode: Mode = 'ok';
  const WRITES = new Set(['put', 'delete', 'writeEach', 'transact']);
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, prop, receiver) {
        const v = Reflect.get(t, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (mode === 'unavailable')
            return Promise.reject(new StoreUnavailableError('unreachable', 5, 'test: the store does not answer'));
          if (mode === 'full' && WRITES.has(String(prop)))
            return Promise.reject(new StoreFullError('test: the disk is full'));
          return (v as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });
  return {
    storage: {
      kind: storage.kind,
      items: wrap<ItemStore>(storage.items),
      blobs: wrap<BlobStore>(storage.blobs),
      close: () => storage.close(),
    },
    set: (m) => void (mode = m),
  };
}

interface Call {
  method: string;
  path: string;
  body?: unknown;
  /** The route reads no storage (neutral Queen answers, the OpenAPI document): it answers as usual. */
  storeless?: boolean;
}

const G = '/api/v1/queues/sf/partitions/Default/groups/c';

/** One valid request per route, on what `world` set up. */
function calls(w: { pid: string; txid: string; leaseId: string }): Call[] {
  const msg = `/api/v1/messages/${w.pid}/${w.txid}`;
  const ackItem = { transactionId: w.txid, partitionId: w.pid, leaseId: w.leaseId, status: 'completed' };
  return [
    { method: 'POST', path: '/api/v1/configure', body: { queue: 'sf', options: { leaseTime: 60 } } },
    { method: 'DELETE', path: '/api/v1/resources/queues/sf-other' },
    { method: 'PATCH', path: '/api/v1/resources/queues/sf', body: { options: { leaseTime: 60 } } },
    {
      method: 'POST',
      path: '/api/v1/push',
      body: { items: [{ queue: 'sf', payload: { n: 9 }, transactionId: 'new' }] },
    },
    { method: 'GET', path: msg },
    { method: 'GET', path: '/api/v1/queues/sf/partitions/Default/messages?from=0&limit=10' },
    { method: 'GET', path: '/api/v1/queues/sf' },
    { method: 'GET', path: '/health' },
    { method: 'GET', path: '/ready' },
    { method: 'POST', path: `${G}/poll`, body: { max: 1 } },
    { method: 'POST', path: `${G}/ack`, body: { offsets: [0] } },
    { method: 'POST', path: `${G}/nack`, body: { offset: 0 } },
    { method: 'POST', path: `${G}/extend`, body: { offset: 0, attempts: 1, extendMs: 1000 } },
    { method: 'POST', path: `${G}/dead-letter`, body: { offset: 0 } },
    { method: 'GET', path: `${G}/dead-letters` },
    { method: 'POST', path: `${G}/dead-letters/0/redrive` },
    { method: 'DELETE', path: `${G}/dead-letters/0` },
    { method: 'PUT', path: G, body: { start: 'earliest' } },
    { method: 'POST', path: `${G}/seek`, body: { start: 'earliest' } },
    { method: 'GET', path: G },
    { method: 'DELETE', path: G },
    { method: 'GET', path: '/api/v1/pop/queue/sf/partition/Default?batch=1&consumerGroup=other' },
    { method: 'GET', path: '/api/v1/pop/queue/sf?batch=1&consumerGroup=other' },
    { method: 'GET', path: '/api/v1/pop?namespace=sf-ns&batch=1&consumerGroup=other' },
    { method: 'POST', path: '/api/v1/ack', body: { ...ackItem, consumerGroup: 'g' } },
    { method: 'POST', path: '/api/v1/ack/batch', body: { acknowledgments: [ackItem], consumerGroup: 'g' } },
    {
      method: 'POST',
      path: '/api/v1/queues/sf/ack-and-pop',
      body: { acknowledgments: [ackItem], consumerGroup: 'g', batch: 1 },
    },
    // The local server has no notification channel: the ticket route answers without storage.
    { method: 'POST', path: '/api/v1/notifications/ticket', body: { queues: ['sf'] }, storeless: true },
    { method: 'POST', path: `/api/v1/lease/${w.leaseId}/extend`, body: { seconds: 30 } },
    {
      method: 'POST',
      path: '/api/v1/transaction',
      body: { operations: [{ type: 'push', items: [{ queue: 'sf', payload: { n: 10 } }] }] },
    },
    { method: 'GET', path: '/api/v1/dlq?queue=sf' },
    { method: 'POST', path: '/api/v1/dlq/retry', body: { queue: 'sf' } },
    { method: 'POST', path: `${msg}/retry` },
    { method: 'DELETE', path: msg },
    { method: 'GET', path: '/api/v1/consumer-groups' },
    { method: 'GET', path: '/api/v1/consumer-groups/lagging' },
    { method: 'GET', path: '/api/v1/consumer-groups/g' },
    { method: 'DELETE', path: '/api/v1/consumer-groups/gone' },
    { method: 'DELETE', path: '/api/v1/consumer-groups/gone/queues/sf' },
    { method: 'POST', path: '/api/v1/consumer-groups/g/subscription', body: { subscriptionTimestamp: 0 } },
    { method: 'POST', path: '/api/v1/consumer-groups/g/queues/sf/seek', body: { toEnd: true } },
    { method: 'POST', path: '/api/v1/consumer-groups/g/queues/sf/partitions/Default/seek' },
    { method: 'GET', path: '/api/v1/queues/sf' },
    // The admin read API (docs/QUEEN-COMPAT.md).
    { method: 'GET', path: '/api/v1/resources/queues' },
    { method: 'GET', path: '/api/v1/resources/queues/sf' },
    { method: 'GET', path: '/api/v1/resources/overview' },
    { method: 'GET', path: '/api/v1/resources/namespaces' },
    { method: 'GET', path: '/api/v1/resources/tasks' },
    { method: 'GET', path: '/api/v1/status' },
    { method: 'GET', path: '/api/v1/status/queues' },
    { method: 'GET', path: '/api/v1/status/queues/sf' },
    { method: 'GET', path: '/api/v1/status/analytics' },
    { method: 'GET', path: '/api/v1/messages?queue=sf' },
    { method: 'GET', path: '/api/v1/analytics/queue-ops?queue=sf' },
    // Series: every process's stored minutes are read.
    { method: 'GET', path: '/api/v1/analytics/queue-lag' },
    { method: 'GET', path: '/api/v1/analytics/worker-metrics' },
    // Queen's neutral answers: no storage read.
    { method: 'GET', path: '/api/v1/analytics/queue-parked-replicas', storeless: true },
    { method: 'GET', path: '/api/v1/analytics/retention', storeless: true },
    { method: 'GET', path: '/api/v1/analytics/system-metrics', storeless: true },
    { method: 'GET', path: '/api/v1/system/maintenance', storeless: true },
    { method: 'GET', path: '/api/v1/system/maintenance/pop', storeless: true },
    { method: 'POST', path: '/api/v1/stats/refresh', storeless: true },
    { method: 'GET', path: '/api/v1/traces/by-name/x', storeless: true },
    { method: 'GET', path: '/api/v1/traces/names', storeless: true },
    { method: 'GET', path: `/api/v1/traces/${w.pid}/${w.txid}`, storeless: true },
    { method: 'GET', path: '/api/v1/openapi.json', storeless: true },
  ];
}

/** Whether `path` is an instance of the route template `template`. */
const matches = (template: string, path: string): boolean =>
  new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`).test(path.split('?')[0] as string);

describe('integration: storage failures answer the same way on every route', () => {
  let dir: string;
  let server: LocalServer;
  let store: ReturnType<typeof failing>;
  let requests: Call[];

  const send = async (c: Call) => {
    const res = await fetch(`${server.url}${c.path}`, {
      method: c.method,
      ...(c.body === undefined
        ? {}
        : { body: JSON.stringify(c.body), headers: { 'content-type': 'application/json' } }),
    });
    const text = await res.text();
    return { status: res.status, retryAfter: res.headers.get('retry-after'), text };
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-store-failures-'));
    store = failing(await openEmbeddedStorage({ dataDir: dir, sync: 'normal' }));
    const svc = testServices(store.storage);
    server = await startLocalServer({
      handler: makeHandler(ALL_ROUTES, { services: async () => svc, grants: Grants.open() }),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
    });
    // Something to act on: messages, a lease on them, a claim group.
    const [pushed] = await svc.pushes.push([{ queue: 'sf', payload: Buffer.from('{"n":1}'), transactionId: 't1' }]);
    const popped = await svc.leasePops.pop({
      queue: 'sf',
      group: 'g',
      batch: 1,
      partitions: 1,
      autoAck: false,
      wait: false,
      timeoutMs: 0,
    });
    await svc.claims.create('sf', 'Default', 'c', 'earliest');
    requests = calls({ pid: pushed!.partitionId, txid: 't1', leaseId: popped!.leaseId });
  });
  afterAll(async () => {
    await server.close();
    await store.storage.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the table below names every route', () => {
    const missing = ALL_ROUTES.filter((r) => !requests.some((c) => c.method === r.method && matches(r.path, c.path)));
    expect(missing.map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  it('store unavailable: every route answers 503 with Retry-After, never a bare 500', async () => {
    store.set('unavailable');
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const answers: string[] = [];
    try {
      for (const c of requests) {
        const r = await send(c);
        // The health probes answer in their own (Queen's) shape: {"status": "unhealthy", "reason"}.
        const body =
          c.path === '/health' || c.path === '/ready' ? /"reason":"storage cannot be reached"/ : /"code":"unavailable"/;
        const ok = c.storeless ? r.status < 500 : r.status === 503 && r.retryAfter === '5' && body.test(r.text);
        if (!ok)
          answers.push(`${c.method} ${c.path} → ${r.status} retry-after=${r.retryAfter} ${r.text.slice(0, 120)}`);
      }
    } finally {
      log.mockRestore();
      store.set('ok');
    }
    expect(answers).toEqual([]);
  });

  it('disk full: every route that writes answers 507, the others as usual; none answers any other 5xx', async () => {
    store.set('full');
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const wrong: string[] = [];
    const full: string[] = [];
    try {
      for (const c of requests) {
        const r = await send(c);
        if (r.status === 507 && /"code":"storage_full"/.test(r.text)) full.push(`${c.method} ${c.path.split('?')[0]}`);
        else if (r.status >= 500 && !(c.path === '/ready' && r.status === 503))
          wrong.push(`${c.method} ${c.path} → ${r.status} ${r.text.slice(0, 120)}`);
      }
    } finally {
      log.mockRestore();
      store.set('ok');
    }
    expect(wrong).toEqual([]);
    // Those that must write to answer at all: a push, a configure, a transaction.
    expect(full).toEqual(
      expect.arrayContaining(['POST /api/v1/push', 'POST /api/v1/configure', 'POST /api/v1/transaction']),
    );
  });
});
