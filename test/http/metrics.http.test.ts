/**
 * `/metrics` and `/metrics/prometheus` on the local server (both backends behind it): Prometheus
 * text that a text-format parser reads, Queen's names and Sluice's, counted at the HTTP boundary;
 * public on the open server, `manage` with grants (labelled series only for managed queues); and
 * the request log's one JSON line per request.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Grants } from '../../server/http/grants.js';
import { makeHandler, type RequestRecord } from '../../server/http/handler.js';
import { SERVER_ROUTES } from '../../server/http/routes.js';
import { withBearerTokens } from '../../server/local/auth.js';
import { parseLogLevel, requestLogger } from '../../server/local/request-log.js';
import { startLocalServer, type LocalServer } from '../../server/local/server.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, startTestServer } from '../support/http.js';
import type { PopReply } from '../support/replies.js';
import { startServerProcess } from '../support/process.js';
import { testServices } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

/** The value of a family's sample whose labels include `labels`. */
function valueOf(families: ParsedFamily[], name: string, labels: Record<string, string> = {}): number | undefined {
  const f = families.find((x) => x.name === name);
  const s = f?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return s?.value === undefined ? undefined : Number(s.value);
}

describe.each(backends)('http: /metrics on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let server: LocalServer;
  let svc: ReturnType<typeof testServices>;
  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
    svc = testServices(storage);
    server = await startTestServer(svc);
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });
  const http = <T = unknown>(method: string, path: string, body?: unknown) => call<T>(server.url, method, path, body);

  it('serves Prometheus text that a parser reads, with the counts of what the routes served', async () => {
    // 3 pushed, 1 duplicate; a pop of 2, an ack, a dead letter, an empty pop; a capped claim poll.
    await http('POST', '/api/v1/push', {
      items: ['m1', 'm2', 'm3', 'm1'].map((t) => ({ queue: 'met', transactionId: t, payload: { t } })),
    });
    const popped = await http<PopReply>('GET', '/api/v1/pop/queue/met?batch=2&wait=false&consumerGroup=g');
    const [a, b] = popped.body.messages;
    await http('POST', '/api/v1/ack/batch', {
      consumerGroup: 'g',
      acknowledgments: [
        { transactionId: a!.transactionId, partitionId: a!.partitionId, status: 'completed', leaseId: a!.leaseId },
        { transactionId: b!.transactionId, partitionId: b!.partitionId, status: 'dlq', leaseId: b!.leaseId },
      ],
    });
    await http('POST', '/api/v1/configure', { queue: 'met-empty' });
    await http('GET', '/api/v1/pop/queue/met-empty?wait=false');
    await http('POST', '/api/v1/configure', { queue: 'met-claims', options: { maxInFlight: 1 } });
    await http('POST', '/api/v1/push', { items: [1, 2].map((n) => ({ queue: 'met-claims', payload: { n } })) });
    const poll = (): Promise<unknown> =>
      http('POST', '/api/v1/queues/met-claims/partitions/Default/groups/w/poll', { max: 1 });
    await poll();
    await poll();

    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    const families = parsePrometheusTextFormat(text);
    const names = families.map((f) => f.name);
    for (const name of [
      'queen_uptime_seconds',
      'queen_cluster_push_messages_total',
      'queen_cluster_pop_messages_total',
      'queen_cluster_ack_total',
      'queen_dlq_depth',
      'queen_dlq_depth_by_queue',
      'sluice_pushes_total',
      'sluice_messages_pushed_total',
      'sluice_duplicates_total',
      'sluice_pops_total',
      'sluice_empty_pops_total',
      'sluice_acks_total',
      'sluice_dead_letters_total',
      'sluice_claim_polls_capped_total',
      'sluice_consumer_lag_messages',
      'sluice_consumer_lag_seconds',
      'sluice_http_request_duration_seconds',
    ])
      expect(names).toContain(name);
    expect(valueOf(families, 'sluice_messages_pushed_total', { queue: 'met' })).toBe(3);
    expect(valueOf(families, 'sluice_duplicates_total', { queue: 'met' })).toBe(1);
    expect(valueOf(families, 'sluice_pushes_total', { queue: 'met' })).toBe(1);
    expect(valueOf(families, 'sluice_messages_delivered_total', { queue: 'met' })).toBe(2);
    expect(valueOf(families, 'sluice_empty_pops_total', { queue: 'met-empty' })).toBe(1);
    expect(valueOf(families, 'sluice_acks_total', { queue: 'met', result: 'success' })).toBe(2);
    expect(valueOf(families, 'sluice_dead_letters_total', { queue: 'met' })).toBe(1);
    expect(valueOf(families, 'sluice_claim_polls_total', { queue: 'met-claims' })).toBe(2);
    expect(valueOf(families, 'sluice_claim_polls_capped_total', { queue: 'met-claims' })).toBe(1);
    expect(valueOf(families, 'queen_cluster_push_messages_total', { scope: 'cluster' })).toBe(5);
    expect(valueOf(families, 'queen_dlq_depth_by_queue', { queue: 'met' })).toBe(1);
    // Lag per group and queue, both designs: g has m3 left; w holds one of two.
    expect(valueOf(families, 'sluice_consumer_lag_messages', { group: 'g', queue: 'met', kind: 'lease' })).toBe(1);
    expect(valueOf(families, 'sluice_consumer_lag_messages', { group: 'w', queue: 'met-claims', kind: 'claim' })).toBe(
      2,
    );
    // Latency histograms by route template, cumulative buckets. (This parser folds a labelled
    // histogram into one sample, so its series are read from the text.)
    expect(families.find((f) => f.name === 'sluice_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    const push = text
      .split('\n')
      .filter((l) => l.startsWith('sluice_http_request_duration_seconds_bucket{route="POST /api/v1/push",code="2xx"'))
      .map((l) => Number(l.split(' ').pop()));
    expect(push.length).toBeGreaterThan(5);
    expect([...push].sort((x, y) => x - y)).toEqual(push);
    expect(push[push.length - 1]).toBe(2);
    expect(text).toContain('sluice_http_request_duration_seconds_count{route="POST /api/v1/push",code="2xx"} 2');
    // The same metrics where Queen serves them.
    const queen = await fetch(`${server.url}/metrics/prometheus`);
    expect(queen.status).toBe(200);
    expect(parsePrometheusTextFormat(await queen.text()).map((f) => f.name)).toEqual(expect.arrayContaining(names));
  });

  it("Queen's per-queue gauges show the latest finished minute", async () => {
    const queue = `minute-${Date.now()}`;
    await http('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue, payload: { n } })) });
    await http('GET', `/api/v1/pop/queue/${queue}?batch=2&wait=false&autoAck=true`);
    const gauges = async () => parsePrometheusTextFormat(await (await fetch(`${server.url}/metrics`)).text());
    // The minute is under way: not in the latest finished one yet.
    expect(valueOf(await gauges(), 'queen_queue_push_messages_per_minute', { queue })).toBeUndefined();
    // Into the next minute's last half second (59.7 s): its age is 59, not 60.
    svc.testClock.advance(60_000 - (svc.testClock.t % 60_000) + 59_700);
    const families = await gauges();
    expect(valueOf(families, 'queen_queue_push_requests_per_minute', { queue })).toBe(1);
    expect(valueOf(families, 'queen_queue_push_messages_per_minute', { queue })).toBe(3);
    expect(valueOf(families, 'queen_queue_pop_messages_per_minute', { queue })).toBe(2);
    expect(valueOf(families, 'queen_queue_ack_per_minute', { queue, result: 'success' })).toBe(2);
    expect(valueOf(families, 'queen_queue_pop_lag_milliseconds', { queue, stat: 'max' })).toBeGreaterThanOrEqual(0);
    expect(valueOf(families, 'queen_queue_metrics_age_seconds', { queue })).toBe(59);
    svc.testClock.advance(60_000);
    expect(valueOf(await gauges(), 'queen_queue_push_messages_per_minute', { queue })).toBeUndefined();
  });

  it('meters no queue that does not exist, and forgets a deleted queue', async () => {
    const series = async (): Promise<string[]> =>
      (await (await fetch(`${server.url}/metrics`)).text()).split('\n').filter((l) => /queue="junk-/.test(l));
    const ops = async (): Promise<string[]> =>
      (await http<{ queues: string[] }>('GET', '/api/v1/analytics/queue-ops')).body.queues;
    // Pops (queue, partition, ack-and-pop) and claim polls on queues nobody made: 204s, 404s, no series.
    for (let n = 1; n <= 5; n++) {
      expect((await http('GET', `/api/v1/pop/queue/junk-${n}?wait=false`)).status).toBe(204);
      expect((await http('GET', `/api/v1/pop/queue/junk-${n}/partition/p?wait=false&consumerGroup=g`)).status).toBe(
        204,
      );
      expect((await http('POST', `/api/v1/queues/junk-${n}/ack-and-pop`, {})).status).toBe(200);
      expect((await http('POST', `/api/v1/queues/junk-${n}/partitions/Default/groups/w/poll`, { max: 1 })).status).toBe(
        404,
      );
    }
    expect(await series()).toEqual([]);
    expect((await ops()).filter((q) => q.startsWith('junk-'))).toEqual([]);
    // The route's latency histogram (per route, not per queue) still counts them.
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const pops =
      /sluice_http_request_duration_seconds_count\{route="GET \/api\/v1\/pop\/queue\/\{queue\}",code="2xx"\} (\d+)/.exec(
        text,
      );
    expect(Number(pops?.[1])).toBeGreaterThanOrEqual(5);
    // A queue that exists is metered; once deleted, its series leave /metrics and queue-ops.
    await http('POST', '/api/v1/push', { items: [{ queue: 'junk-kept', payload: 1 }] });
    await http('GET', '/api/v1/pop/queue/junk-kept?wait=false');
    expect((await series()).length).toBeGreaterThan(3);
    expect(await ops()).toContain('junk-kept');
    expect((await http('DELETE', '/api/v1/resources/queues/junk-kept')).status).toBe(200);
    expect(await series()).toEqual([]);
    expect(await ops()).not.toContain('junk-kept');
  });
});

describe('http: /metrics with grants', () => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let server: LocalServer;
  const tokens = { 'reader-token-0123456789': 'reader', 'ops-token-0123456789abc': 'ops' };
  beforeAll(async () => {
    ({ storage, cleanup } = await testBackends().backends[0]!.newStorage());
    const svc = testServices(storage);
    const grants = Grants.from({
      grants: [
        { principal: 'reader', actions: ['push', 'consume'], queues: ['*'] },
        { principal: 'ops', actions: ['push', 'consume'], queues: ['*'] },
        { principal: 'ops', actions: ['manage'], queues: ['ops-*'] },
      ],
    });
    server = await startLocalServer({
      handler: withBearerTokens(makeHandler(SERVER_ROUTES, { services: async () => svc, grants }), tokens),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
    });
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });

  it('needs manage on some queue, and shows queue-labelled series only for managed queues', async () => {
    const as = (token: string) => ({ authorization: `Bearer ${token}` });
    for (const q of ['ops-a', 'secret'])
      await call(
        server.url,
        'POST',
        '/api/v1/push',
        { items: [{ queue: q, payload: 1 }] },
        as('ops-token-0123456789abc'),
      );
    expect((await call(server.url, 'GET', '/metrics', undefined, as('reader-token-0123456789'))).status).toBe(403);
    expect((await call(server.url, 'GET', '/metrics')).status).toBe(401);
    const r = await call<string>(server.url, 'GET', '/metrics', undefined, as('ops-token-0123456789abc'));
    expect(r.status).toBe(200);
    const families = parsePrometheusTextFormat(r.body);
    expect(valueOf(families, 'sluice_messages_pushed_total', { queue: 'ops-a' })).toBe(1);
    expect(r.body).not.toContain('secret');
    // Unlabelled totals count every queue.
    expect(valueOf(families, 'queen_cluster_push_messages_total')).toBe(2);
  });
});

describe('the request log', () => {
  it('writes one JSON line per request with method, route, status, duration, principal and queue', async () => {
    const lines: string[] = [];
    const records: RequestRecord[] = [];
    const log = requestLogger('info', (l) => lines.push(l))!;
    const { storage, cleanup } = await testBackends().backends[0]!.newStorage();
    const svc = testServices(storage);
    const server = await startLocalServer({
      handler: makeHandler(SERVER_ROUTES, {
        services: async () => svc,
        requestLog: (r) => (records.push(r), log(r)),
      }),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
    });
    try {
      await call(server.url, 'POST', '/api/v1/push', { items: [{ queue: 'logged', payload: 1 }] });
      await call(server.url, 'GET', '/api/v1/pop/queue/logged?wait=false');
      await call(server.url, 'GET', '/nowhere');
    } finally {
      await server.close();
      await cleanup();
    }
    expect(lines).toHaveLength(3);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed[0]).toMatchObject({
      level: 'INFO',
      message: 'request',
      method: 'POST',
      route: '/api/v1/push',
      status: 201,
      durationMs: expect.any(Number) as unknown,
      principal: 'anonymous',
      queue: 'logged',
    });
    expect(parsed[1]).toMatchObject({ route: '/api/v1/pop/queue/{queue}', status: 200, queue: 'logged' });
    expect(parsed[2]).toMatchObject({ route: '/nowhere', status: 404, queue: null });
    expect(records.every((r) => r.durationMs >= 0)).toBe(true);
  });

  it('turns down by level: warn and error keep only 5xx lines, silent logs nothing', () => {
    const lines: string[] = [];
    const rec = (status: number): RequestRecord => ({
      method: 'GET',
      route: '/health',
      status,
      durationMs: 0.1,
      principal: 'anonymous',
      queue: undefined,
    });
    const warn = requestLogger(parseLogLevel('warn'), (l) => lines.push(l))!;
    warn(rec(200));
    warn(rec(503));
    expect(lines.map((l) => (JSON.parse(l) as { level: string }).level)).toEqual(['ERROR']);
    expect(requestLogger(parseLogLevel('silent'))).toBeUndefined();
    expect(parseLogLevel(undefined)).toBe('info');
    expect(() => parseLogLevel('loud')).toThrow(/log level must be one of/);
  });
});

describe('npm start: metrics and the request log', () => {
  it('serves /metrics and writes a JSON line per request at --log-level info (and none at warn)', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-npm-metrics-'));
    const info = await startServerProcess({ SLUICE_DATA_DIR: dataDir, SLUICE_SYNC: 'normal' }, ['--log-level', 'info']);
    try {
      await call(info.url, 'POST', '/api/v1/push', { items: [{ queue: 'npm-logged', payload: 1 }] });
      const metrics = await fetch(`${info.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(parsePrometheusTextFormat(await metrics.text()).map((f) => f.name)).toContain(
        'sluice_messages_pushed_total',
      );
      const requests = info
        .output()
        .split('\n')
        .filter((l) => l.includes('"message":"request"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(requests).toContainEqual(
        expect.objectContaining({ method: 'POST', route: '/api/v1/push', status: 201, queue: 'npm-logged' }),
      );
    } finally {
      await info.stop();
    }
    const quiet = await startServerProcess({ SLUICE_DATA_DIR: dataDir, SLUICE_SYNC: 'normal' }, [
      '--log-level',
      'warn',
    ]);
    try {
      await call(quiet.url, 'GET', '/health');
      expect(quiet.output()).not.toContain('"message":"request"');
    } finally {
      await quiet.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
