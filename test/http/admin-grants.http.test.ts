/**
 * Grants on the admin and read API (docs/SECURITY.md, "What a caller may not see"): a listing shows
 * only the queues the caller may consume and its counters count only those; seeks, deletes and
 * subscription changes need `manage`. Two queues, `orders-a` (the reader's) and `payroll-a` (not),
 * each with messages, a lease group, a claim group and dead letters, and a lease group (`shared`)
 * on both.
 *
 * The tables are checked against the route table: every GET route whose access rule names no
 * queue must be in {@link LISTINGS}, and every route that needs `manage` to change something in
 * {@link MUTATIONS}, so a new route cannot skip this test. A third principal, `operator`, manages
 * `orders-*` only: the routes that reach queues through a group or an id leave payroll-a alone.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Grants } from '../../server/http/grants.js';
import { LocalKeyProvider } from '../../server/service/encryption.js';
import type { RouteDef } from '../../server/http/route.js';
import { SERVER_ROUTES } from '../../server/http/routes.js';
import type { LocalServer } from '../../server/local/server.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { call, startGrantedServer, type HttpReply } from '../support/http.js';
import type { PopReply, PushReply } from '../support/replies.js';
import { testServices } from '../support/services.js';

type Json = Record<string, unknown>;
type Role = 'reader' | 'operator' | 'admin';
const TOKENS: Record<Role, string> = {
  reader: 'reader-token-0123456789ab',
  operator: 'operator-token-0123456789',
  admin: 'admin-token-0123456789abc',
};
const GRANTS = Grants.from({
  grants: [
    { principal: 'reader', actions: ['consume'], queues: ['orders-*'] },
    // Manages orders-* only: for the routes that reach several queues through a group or an id.
    { principal: 'operator', actions: ['consume', 'manage'], queues: ['orders-*'] },
    { principal: 'admin', actions: ['push', 'consume', 'manage'], queues: ['*'] },
  ],
});

/** What was seeded: messages and dead letters per queue (different, so a leaked count shows). */
const SEED = {
  'orders-a': { kind: 'orders', messages: 3, dead: 1 },
  'payroll-a': { kind: 'payroll', messages: 5, dead: 2 },
} as const;
type Queue = keyof typeof SEED;
const BOTH = SEED['orders-a'].messages + SEED['payroll-a'].messages;
const BOTH_DEAD = SEED['orders-a'].dead + SEED['payroll-a'].dead;

/** What each listing test learns about the world it runs in. */
interface World {
  /** A message id on each queue: its partition and a pending transaction, and a dead letter. */
  ids: Record<Queue, { partitionId: string; pending: string; dead: string[] }>;
  /** Offsets of payroll-a's record-claim dead letters (group w-payroll). */
  claimDead: number[];
}

/** One request and what the reader's and the admin's answers must show. */
interface Listing {
  path: (w: World) => string;
  /** Default 200 for both. */
  status?: { reader: number; admin: number };
  /** Pairs of what was shown and what should have been. */
  check?: (reader: unknown, admin: unknown) => [unknown, unknown][];
}

const sum = (rows: unknown[], f: (r: Json) => unknown): number =>
  rows.reduce<number>((n, r) => n + Number(f(r as Json) ?? 0), 0);
const names = (rows: unknown[], field: string): unknown[] => rows.map((r) => (r as Json)[field]);
const field = (v: unknown, ...path: string[]): unknown => path.reduce<unknown>((o, k) => (o as Json)[k], v);
const pick = (v: unknown, ...keys: string[]): Json => Object.fromEntries(keys.map((k) => [k, (v as Json)[k]]));
/** The consumer-group rows of the group on both queues. */
const shared = (v: unknown): Json[] => rowsOf(v).filter((x) => (x as Json).name === 'shared') as Json[];
const rowsOf = (v: unknown, key?: string): unknown[] => (key ? (field(v, key) as unknown[]) : (v as unknown[]));

/** Every GET route that names no queue, by its label (`METHOD /path`): see {@link isListing}. */
const LISTINGS: Record<string, Listing> = {
  'GET /api/v1/resources/queues': {
    path: () => '/api/v1/resources/queues',
    check: (r, a) => [
      [names(rowsOf(r, 'queues'), 'name'), ['orders-a']],
      [names(rowsOf(a, 'queues'), 'name'), ['orders-a', 'payroll-a']],
      [rowsOf(r, 'queues')[0], rowsOf(a, 'queues')[0]],
    ],
  },
  'GET /api/v1/resources/overview': {
    path: () => '/api/v1/resources/overview',
    check: (r, a) => [
      [pick(r, 'queues', 'partitions', 'namespaces', 'tasks'), { queues: 1, partitions: 1, namespaces: 1, tasks: 1 }],
      [
        pick(field(r, 'messages'), 'total', 'deadLetter'),
        { total: SEED['orders-a'].messages, deadLetter: SEED['orders-a'].dead },
      ],
      [pick(field(a, 'messages'), 'total', 'deadLetter'), { total: BOTH, deadLetter: BOTH_DEAD }],
    ],
  },
  'GET /api/v1/resources/namespaces': {
    path: () => '/api/v1/resources/namespaces',
    check: (r, a) => [
      [names(rowsOf(r, 'namespaces'), 'name'), ['ns-orders']],
      [sum(rowsOf(r, 'namespaces'), (x) => field(x, 'messages', 'total')), SEED['orders-a'].messages],
      [sum(rowsOf(a, 'namespaces'), (x) => field(x, 'messages', 'total')), BOTH],
    ],
  },
  'GET /api/v1/resources/tasks': {
    path: () => '/api/v1/resources/tasks',
    check: (r, a) => [
      [names(rowsOf(r, 'tasks'), 'name'), ['task-orders']],
      [sum(rowsOf(r, 'tasks'), (x) => field(x, 'messages', 'total')), SEED['orders-a'].messages],
      [sum(rowsOf(a, 'tasks'), (x) => field(x, 'messages', 'total')), BOTH],
    ],
  },
  'GET /api/v1/status': {
    path: () => '/api/v1/status',
    check: (r, a) => [
      [sum(rowsOf(r, 'throughput'), (x) => x.ingested), SEED['orders-a'].messages],
      [sum(rowsOf(a, 'throughput'), (x) => x.ingested), BOTH],
      // dlqCount is the depth at each bucket (a gauge): the newest bucket holds it now.
      [field(rowsOf(r, 'throughput')[0], 'dlqCount'), SEED['orders-a'].dead],
      [field(rowsOf(a, 'throughput')[0], 'dlqCount'), BOTH_DEAD],
    ],
  },
  'GET /api/v1/status/queues': {
    path: () => '/api/v1/status/queues',
    check: (r, a) => [
      [names(rowsOf(r, 'queues'), 'name'), ['orders-a']],
      [names(rowsOf(a, 'queues'), 'name'), ['orders-a', 'payroll-a']],
      [rowsOf(r, 'queues')[0], rowsOf(a, 'queues')[0]],
    ],
  },
  'GET /api/v1/status/analytics': {
    path: () => '/api/v1/status/analytics',
    check: (r, a) => [
      [sum(rowsOf(r, 'dataPoints'), (x) => x.messages), SEED['orders-a'].messages],
      [sum(rowsOf(a, 'dataPoints'), (x) => x.messages), BOTH],
    ],
  },
  'GET /api/v1/messages': {
    path: () => '/api/v1/messages',
    check: (r, a) => [
      [new Set(names(rowsOf(r, 'messages'), 'queue')), new Set(['orders-a'])],
      [rowsOf(r, 'messages').length, SEED['orders-a'].messages],
      [rowsOf(a, 'messages').length, BOTH],
    ],
  },
  'GET /api/v1/dlq': {
    path: () => '/api/v1/dlq',
    check: (r, a) => [
      [names(rowsOf(r, 'messages'), 'queue'), ['orders-a']],
      [field(r, 'total'), SEED['orders-a'].dead],
      [field(a, 'total'), BOTH_DEAD],
    ],
  },
  'GET /api/v1/consumer-groups': {
    path: () => '/api/v1/consumer-groups',
    // One row per group and queue: the shared group's row on payroll-a is not shown.
    check: (r, a) => [
      [names(shared(r), 'queueName'), ['orders-a']],
      [new Set(names(shared(a), 'queueName')), new Set(['orders-a', 'payroll-a'])],
      [shared(r)[0], shared(a).find((x) => x.queueName === 'orders-a')],
      [new Set(names(rowsOf(r), 'name')), new Set(['__QUEUE_MODE__', 'g-orders', 'w-orders', 'shared'])],
    ],
  },
  'GET /api/v1/consumer-groups/lagging': {
    path: () => '/api/v1/consumer-groups/lagging?minLagSeconds=60',
    check: (r, a) => [
      [new Set(names(rowsOf(r), 'queue_name')), new Set(['orders-a'])],
      [new Set(names(rowsOf(a), 'queue_name')), new Set(['orders-a', 'payroll-a'])],
      [rowsOf(r), rowsOf(a).filter((x) => (x as Json).queue_name === 'orders-a')],
    ],
  },
  'GET /api/v1/consumer-groups/{group}': {
    path: () => '/api/v1/consumer-groups/shared',
    check: (r, a) => [
      [names(rowsOf(r, 'queues'), 'queue'), ['orders-a']],
      [names(rowsOf(a, 'queues'), 'queue'), ['orders-a', 'payroll-a']],
      [field(r, 'lagMessages'), (rowsOf(a, 'queues')[0] as Json).lagMessages],
    ],
  },
  'GET /api/v1/messages/{partitionId}/{transactionId}': {
    path: (w) => `/api/v1/messages/${w.ids['payroll-a'].partitionId}/${w.ids['payroll-a'].pending}`,
    status: { reader: 403, admin: 200 },
    check: (_r, a) => [[field(a, 'queue'), 'payroll-a']],
  },
  'GET /api/v1/analytics/queue-ops': {
    path: () => '/api/v1/analytics/queue-ops',
    check: (r, a) => [
      [field(r, 'queues'), ['orders-a']],
      [field(a, 'queues'), ['orders-a', 'payroll-a']],
      [sum(rowsOf(r, 'series'), (x) => x.pushMessages), SEED['orders-a'].messages],
      [sum(rowsOf(a, 'series'), (x) => x.pushMessages), BOTH],
    ],
  },
  'GET /api/v1/analytics/queue-lag': {
    path: () => '/api/v1/analytics/queue-lag',
    check: (r, a) => [
      [names(rowsOf(r), 'queueName'), ['orders-a']],
      [new Set(names(rowsOf(a), 'queueName')), new Set(['orders-a', 'payroll-a'])],
    ],
  },
  'GET /api/v1/analytics/worker-metrics': {
    path: () => '/api/v1/analytics/worker-metrics',
    check: (r, a) => [
      [sum(rowsOf(r, 'timeSeries'), (x) => x.pushMessages), SEED['orders-a'].messages],
      [sum(rowsOf(a, 'timeSeries'), (x) => x.pushMessages), BOTH],
      [sum(rowsOf(r, 'timeSeries'), (x) => x.dlqCount), SEED['orders-a'].dead],
      [sum(rowsOf(a, 'timeSeries'), (x) => x.dlqCount), BOTH_DEAD],
    ],
  },
  // Per-queue in Queen, always empty here: nothing to filter, checked for leaks all the same.
  'GET /api/v1/analytics/queue-parked-replicas': { path: () => '/api/v1/analytics/queue-parked-replicas' },
  // Process-wide only (no queue in them).
  'GET /api/v1/analytics/retention': { path: () => '/api/v1/analytics/retention' },
  'GET /api/v1/analytics/system-metrics': { path: () => '/api/v1/analytics/system-metrics' },
  'GET /api/v1/system/maintenance': { path: () => '/api/v1/system/maintenance' },
  'GET /api/v1/system/maintenance/pop': { path: () => '/api/v1/system/maintenance/pop' },
  // No traces are stored: the answers are constant.
  'GET /api/v1/traces/by-name/{name}': { path: () => '/api/v1/traces/by-name/payroll-a' },
  'GET /api/v1/traces/names': { path: () => '/api/v1/traces/names' },
  'GET /api/v1/traces/{partitionId}/{transactionId}': {
    path: (w) => `/api/v1/traces/${w.ids['payroll-a'].partitionId}/${w.ids['payroll-a'].pending}`,
  },
  // Labelled series need manage; the reader has none.
  'GET /metrics': {
    path: () => '/metrics',
    status: { reader: 403, admin: 200 },
    check: (_r, a) => [[String(a).includes('queue="payroll-a"'), true]],
  },
  'GET /metrics/prometheus': {
    path: () => '/metrics/prometheus',
    status: { reader: 403, admin: 200 },
    check: (_r, a) => [[String(a).includes('queue="payroll-a"'), true]],
  },
  'GET /api/v1/targets': {
    path: () => '/api/v1/targets',
    check: (r, a) => [
      [names(rowsOf(r, 'targets'), 'queue'), ['orders-a']],
      [names(rowsOf(a, 'targets'), 'queue'), ['orders-a', 'payroll-a']],
    ],
  },
  // A pop across the queues a namespace selects leases only from queues the caller may consume.
  // Last: the admin's pop leases a message.
  'GET /api/v1/pop': {
    path: () => '/api/v1/pop?namespace=ns-payroll&consumerGroup=probe&wait=false',
    status: { reader: 204, admin: 200 },
    check: (_r, a) => [[field(a, 'queue'), 'payroll-a']],
  },
};

/** What may not appear in anything the reader is shown. */
const secrets = (w: World): string[] => ['payroll', w.ids['payroll-a'].partitionId];

const CLAIMS = '/api/v1/queues/payroll-a/partitions/Default/groups';

/** Every route that needs `manage`, in an order each request finds what it acts on. */
const MUTATIONS: Record<string, (w: World) => { method: string; path: string; body?: unknown }> = {
  'POST /api/v1/configure': () => ({
    method: 'POST',
    path: '/api/v1/configure',
    body: { queue: 'payroll-a', namespace: 'ns-payroll', task: 'task-payroll' },
  }),
  'PATCH /api/v1/resources/queues/{queue}': () => ({
    method: 'PATCH',
    path: '/api/v1/resources/queues/payroll-a',
    body: { options: { retryLimit: 5 } },
  }),
  'POST /api/v1/consumer-groups/{group}/queues/{queue}/seek': () => ({
    method: 'POST',
    path: '/api/v1/consumer-groups/g-payroll/queues/payroll-a/seek',
    body: { toEnd: true },
  }),
  'POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek': () => ({
    method: 'POST',
    path: '/api/v1/consumer-groups/g-payroll/queues/payroll-a/partitions/Default/seek',
  }),
  'POST /api/v1/consumer-groups/{group}/subscription': () => ({
    method: 'POST',
    path: '/api/v1/consumer-groups/g-payroll/subscription',
    body: { subscriptionTimestamp: '2026-01-01T00:00:00Z' },
  }),
  'POST /api/v1/messages/{partitionId}/{transactionId}/retry': (w) => ({
    method: 'POST',
    path: `/api/v1/messages/${w.ids['payroll-a'].partitionId}/${w.ids['payroll-a'].dead[0]!}/retry`,
  }),
  'DELETE /api/v1/messages/{partitionId}/{transactionId}': (w) => ({
    method: 'DELETE',
    path: `/api/v1/messages/${w.ids['payroll-a'].partitionId}/${w.ids['payroll-a'].dead[1]!}`,
  }),
  'POST /api/v1/dlq/retry': () => ({ method: 'POST', path: '/api/v1/dlq/retry', body: { queue: 'payroll-a' } }),
  'POST /api/v1/stats/refresh': () => ({ method: 'POST', path: '/api/v1/stats/refresh' }),
  'DELETE /api/v1/consumer-groups/{group}/queues/{queue}': () => ({
    method: 'DELETE',
    path: '/api/v1/consumer-groups/g-payroll/queues/payroll-a',
  }),
  'DELETE /api/v1/consumer-groups/{group}': () => ({ method: 'DELETE', path: '/api/v1/consumer-groups/shared' }),
  'PUT /api/v1/queues/{queue}/partitions/{partition}/groups/{group}': () => ({
    method: 'PUT',
    path: `${CLAIMS}/w2-payroll`,
    body: { start: 'earliest' },
  }),
  'POST /api/v1/queues/{queue}/partitions/{partition}/groups/{group}/seek': () => ({
    method: 'POST',
    path: `${CLAIMS}/w2-payroll/seek`,
    body: { start: 'latest' },
  }),
  'POST /api/v1/queues/{queue}/partitions/{partition}/groups/{group}/dead-letters/{offset}/redrive': (w) => ({
    method: 'POST',
    path: `${CLAIMS}/w-payroll/dead-letters/${w.claimDead[0]!}/redrive`,
  }),
  'DELETE /api/v1/queues/{queue}/partitions/{partition}/groups/{group}/dead-letters/{offset}': (w) => ({
    method: 'DELETE',
    path: `${CLAIMS}/w-payroll/dead-letters/${w.claimDead[1]!}`,
  }),
  'DELETE /api/v1/queues/{queue}/partitions/{partition}/groups/{group}': () => ({
    method: 'DELETE',
    path: `${CLAIMS}/w2-payroll`,
  }),
  'PUT /api/v1/targets/{queue}/{group}': () => ({ method: 'PUT', path: '/api/v1/targets/payroll-a/t', body: TARGET }),
  'POST /api/v1/targets/{queue}/{group}/pause': () => ({ method: 'POST', path: '/api/v1/targets/payroll-a/t/pause' }),
  'POST /api/v1/targets/{queue}/{group}/resume': () => ({ method: 'POST', path: '/api/v1/targets/payroll-a/t/resume' }),
  'POST /api/v1/targets/{queue}/{group}/rotate-secret': () => ({
    method: 'POST',
    path: '/api/v1/targets/payroll-a/t/rotate-secret',
  }),
  'DELETE /api/v1/targets/{queue}/{group}': () => ({ method: 'DELETE', path: '/api/v1/targets/payroll-a/t' }),
  'DELETE /api/v1/resources/queues/{queue}': () => ({ method: 'DELETE', path: '/api/v1/resources/queues/payroll-a' }),
};

/** The target each seeded queue gets (stored only: no dispatcher runs here). */
const TARGET = { endpoint: { kind: 'https', url: 'https://hooks.example.com/sluice' }, mode: 'leases' };

const label = (r: RouteDef): string => `${r.method} ${r.path}`;

/**
 * A GET route whose access rule names no queue (for an empty query): it lists or counts across
 * queues, or reaches its queue through an id, so it must filter by the caller's grants itself.
 */
function isListing(r: RouteDef): boolean {
  if (r.method !== 'GET' || r.access.action === 'public') return false;
  const params = new Proxy({}, { get: () => 'x' });
  const named = r.access.queues?.({ body: undefined, query: {}, params }) ?? [];
  return named.every((q) => q === undefined);
}

describe('http: grants on the admin read API', () => {
  let dir: string;
  let storage: Storage;
  let server: LocalServer;
  let svc: ReturnType<typeof testServices>;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-admin-grants-'));
    storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
    // Targets can be set (no dispatcher runs: they are stored, never delivered).
    svc = testServices(storage, {
      build: { keyProvider: new LocalKeyProvider(randomBytes(32)), targets: { dispatcher: true, loopback: false } },
    });
    server = await startGrantedServer(svc, { routes: SERVER_ROUTES, grants: GRANTS, tokens: TOKENS });
  });
  afterAll(async () => {
    await server.close();
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  });
  const http = <T = Json>(role: Role, method: string, path: string, body?: unknown): Promise<HttpReply<T>> =>
    call<T>(server.url, method, path, body, { authorization: `Bearer ${TOKENS[role]}` });

  const world: World = { ids: {} as World['ids'], claimDead: [] };

  it('the tables cover every listing route and every route that changes something under manage', () => {
    expect(Object.keys(LISTINGS).sort()).toEqual(SERVER_ROUTES.filter(isListing).map(label).sort());
    const manage = SERVER_ROUTES.filter((r) => r.method !== 'GET' && r.access.action === 'manage');
    expect(Object.keys(MUTATIONS).sort()).toEqual(manage.map(label).sort());
  });

  it('seeds orders-a and payroll-a: messages, lease groups, a claim group, dead letters', async () => {
    for (const [queue, seed] of Object.entries(SEED) as [Queue, (typeof SEED)[Queue]][]) {
      const { kind } = seed;
      const configured = await http('admin', 'POST', '/api/v1/configure', {
        queue,
        namespace: `ns-${kind}`,
        task: `task-${kind}`,
      });
      expect(configured.status).toBe(200);
      // A target (stored only), for GET /api/v1/targets and the target routes below.
      expect((await http('admin', 'PUT', `/api/v1/targets/${queue}/t`, TARGET)).status).toBe(201);
      const items = Array.from({ length: seed.messages }, (_, i) => ({
        queue,
        payload: { kind, i },
        transactionId: `${kind}-tx-${i}`,
      }));
      const pushed = await http<PushReply>('admin', 'POST', '/api/v1/push', { items });
      expect(pushed.status).toBe(201);
      const partitionId = pushed.body[0]!.partition_id;
      // A lease group that finished one message.
      const popped = await http<PopReply>('admin', 'GET', `/api/v1/pop/queue/${queue}?batch=1&consumerGroup=g-${kind}`);
      const m = popped.body.messages[0]!;
      const acked = await http('admin', 'POST', '/api/v1/ack', {
        transactionId: m.transactionId,
        partitionId,
        status: 'completed',
        consumerGroup: `g-${kind}`,
        leaseId: m.leaseId,
      });
      expect(acked.status).toBe(200);
      // Dead letters (queue mode), one pop and one ack each.
      const dead: string[] = [];
      for (let n = 0; n < seed.dead; n++) {
        const [d] = (await http<PopReply>('admin', 'GET', `/api/v1/pop/queue/${queue}?batch=1`)).body.messages;
        const filed = await http<{ dlq: boolean }[]>('admin', 'POST', '/api/v1/ack', {
          transactionId: d!.transactionId,
          partitionId,
          status: 'dlq',
          error: 'poison',
          consumerGroup: null,
          leaseId: d!.leaseId,
        });
        expect(filed.body[0]).toMatchObject({ dlq: true });
        dead.push(d!.transactionId);
      }
      // A lease group on both queues, holding one message of each.
      expect((await http('admin', 'GET', `/api/v1/pop/queue/${queue}?batch=1&consumerGroup=shared`)).status).toBe(200);
      // A record-claim group holding one record.
      const polled = await http<{ records: unknown[] }>(
        'admin',
        'POST',
        `/api/v1/queues/${queue}/partitions/Default/groups/w-${kind}/poll`,
        { max: 1 },
      );
      expect(polled.body.records).toHaveLength(1);
      world.ids[queue] = {
        partitionId,
        pending: `${kind}-tx-${seed.messages - 1}`,
        dead,
      };
    }
    // So the unfinished messages have an age (the lagging route lists groups behind by time).
    svc.testClock.advance(120_000);
  });

  for (const [route, listing] of Object.entries(LISTINGS)) {
    it(`${route}: the reader sees nothing of payroll-a, the admin sees it`, async () => {
      const path = listing.path(world);
      const reader = await http<unknown>('reader', 'GET', path);
      const admin = await http<unknown>('admin', 'GET', path);
      const status = listing.status ?? { reader: 200, admin: 200 };
      const code = (reader.body as Json | null)?.code;
      expect({ path, reader: reader.status, admin: admin.status, code }).toEqual({
        path,
        reader: status.reader,
        admin: status.admin,
        code: status.reader === 403 ? 'forbidden' : undefined,
      });
      const shown = JSON.stringify(reader.body) ?? '';
      for (const secret of secrets(world)) expect(shown).not.toContain(secret);
      for (const [actual, expected] of listing.check?.(reader.body, admin.body) ?? []) expect(actual).toEqual(expected);
    });
  }

  it('every read that names payroll-a refuses the reader; the same read of orders-a does not', async () => {
    const named = SERVER_ROUTES.filter((r) => r.method === 'GET' && r.access.action !== 'public' && !isListing(r));
    expect(named.length).toBeGreaterThan(5);
    for (const r of named) {
      const fill = (queue: Queue): string => {
        const kind = SEED[queue].kind;
        const path = r.path
          .replace('{queue}', queue)
          .replace('{partition}', 'Default')
          .replace('{group}', `w-${kind}`)
          .replace('{offset}', '0');
        // Routes that name their queue in the query (dlq, messages) name it there.
        return path.includes('{') ? path : r.path.includes('{queue}') ? path : `${path}?queue=${queue}`;
      };
      const path = fill('payroll-a');
      expect(path).not.toContain('{');
      const reader = await http('reader', 'GET', `${path}${path.includes('?') ? '&' : '?'}wait=false`);
      expect({ route: label(r), status: reader.status }).toEqual({ route: label(r), status: 403 });
      expect(JSON.stringify(reader.body)).not.toContain('payroll-tx');
      const own = await http(
        'reader',
        'GET',
        `${fill('orders-a')}${fill('orders-a').includes('?') ? '&' : '?'}wait=false`,
      );
      expect({ route: label(r), status: own.status }).not.toEqual({ route: label(r), status: 403 });
    }
  });

  it('an operator of orders-* changes a group on both queues only where it manages', async () => {
    const shared = async () =>
      (
        await http<{ queues: { queue: string; subscription: { from: string | null } }[] }>(
          'admin',
          'GET',
          '/api/v1/consumer-groups/shared',
        )
      ).body.queues;
    const before = await shared();
    const sub = await http('operator', 'POST', '/api/v1/consumer-groups/shared/subscription', {
      subscriptionTimestamp: '2026-01-01T00:00:00Z',
    });
    expect(sub.status).toBe(200);
    const after = await shared();
    expect(after.find((q) => q.queue === 'payroll-a')).toEqual(before.find((q) => q.queue === 'payroll-a'));
    expect(after.find((q) => q.queue === 'orders-a')?.subscription.from).toBe('2026-01-01T00:00:00.000Z');
    expect((await http('operator', 'DELETE', '/api/v1/consumer-groups/shared')).status).toBe(200);
    expect((await shared()).map((q) => q.queue)).toEqual(['payroll-a']);
    // A dead letter reached by partition id, a seek named by queue: refused, nothing changed.
    const { partitionId, dead } = world.ids['payroll-a'];
    const refused = [
      await http('operator', 'POST', `/api/v1/messages/${partitionId}/${dead[0]!}/retry`),
      await http('operator', 'DELETE', `/api/v1/messages/${partitionId}/${dead[1]!}`),
      await http('operator', 'POST', '/api/v1/consumer-groups/g-payroll/queues/payroll-a/seek', { toEnd: true }),
      await http('operator', 'POST', '/api/v1/dlq/retry', { queue: 'payroll-a' }),
    ];
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 403]);
    expect((await http('admin', 'GET', '/api/v1/dlq?queue=payroll-a')).body.total).toBe(SEED['payroll-a'].dead);
  });

  it('seeds two record-claim dead letters on payroll-a (for the claim routes below)', async () => {
    // The seed's claim has outlived its visibility (the clock moved on): two records are free.
    const polled = await http<{ records: { offset: number }[] }>('admin', 'POST', `${CLAIMS}/w-payroll/poll`, {
      max: 2,
    });
    const held = polled.body.records.map((r) => r.offset);
    expect(held).toHaveLength(2);
    for (const offset of held) {
      const r = await http('admin', 'POST', `${CLAIMS}/w-payroll/dead-letter`, { offset });
      expect({ offset, status: r.status, body: r.body }).toMatchObject({ offset, status: 200 });
    }
    world.claimDead = held;
  });

  for (const [route, request] of Object.entries(MUTATIONS)) {
    it(`${route}: refused to the reader (403), done for the admin`, async () => {
      const { method, path, body } = request(world);
      const reader = await http('reader', method, path, body);
      expect({ path, status: reader.status, code: (reader.body as Json | null)?.code }).toEqual({
        path,
        status: 403,
        code: 'forbidden',
      });
      const admin = await http('admin', method, path, body);
      expect({ path, status: admin.status, body: admin.body }).toMatchObject({ path, status: 200 });
    });
  }
});
