/**
 * The admin and read API Queen's dashboard and `queenctl` call (docs/QUEEN-COMPAT.md), as a
 * black box: one seeded world (a configured queue with two partitions, a partition-lease group
 * with a live lease, queue mode, a record-claim group, a dead letter), then a contract test
 * per route checking every field the reference (shared/reference/queen-admin-api.md) marks as
 * read by the dashboard (**R**), with its JSON type. One file because every test reads the one
 * seeded world; the message delete runs last, as it removes the seeded dead letter.
 */
import { expect, it } from 'vitest';
import { callTarget, type HttpTarget } from '../../support/http.js';
import type { PopReply } from '../../support/replies.js';

export interface AdminSuiteOptions {
  /** Names are prefixed (a shared deployment). */
  prefix?: string;
  /** Moves the server's clock (so lag has an age); absent where the clock is real. */
  advance?: (ms: number) => void;
  /**
   * Whether one process serves every route (the local server), so the series it keeps in
   * memory saw the pushes; false behind a gateway of one function per route group, as on AWS,
   * where the other functions' minute under way is not stored yet (docs/QUEEN-COMPAT.md;
   * `test/integration/activity-series.test.ts` moves the clock past it).
   */
  oneProcess?: boolean;
}

type Json = Record<string, unknown>;
const num = expect.any(Number) as unknown;
const str = expect.any(String) as unknown;
const arr = expect.any(Array) as unknown;
/** An ISO-8601 instant with milliseconds (entities). */
const isoMs = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) as unknown;
/** A bucket timestamp: no milliseconds, one fixed width. */
const bucket = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$/) as unknown;
const counters = { total: num, pending: num, processing: num, completed: num, failed: num, deadLetter: num };

export function defineAdminSuite(target: () => HttpTarget, opts: AdminSuiteOptions = {}): void {
  const p = opts.prefix ?? '';
  const oneProcess = opts.oneProcess ?? true;
  const queue = `${p}adm-orders`;
  const dlqQueue = `${p}adm-poison`;
  const http = <T = Json>(method: string, path: string, body?: unknown) => callTarget<T>(target(), method, path, body);
  const get = async <T = Json>(path: string): Promise<T> => {
    const r = await http<T>('GET', path);
    expect({ path, status: r.status }).toEqual({ path, status: 200 });
    return r.body;
  };
  let pushed: { partition_id: string; transaction_id: string }[] = [];

  it('admin: seeds a queue, lease and claim groups, a live lease and a dead letter', async () => {
    const configured = await http('POST', '/api/v1/configure', {
      queue,
      namespace: 'shop',
      task: 'billing',
      options: { leaseTime: 120, retryLimit: 2 },
    });
    expect(configured.status).toBe(200);
    const items = [
      ...[1, 2, 3].map((n) => ({ queue, partition: 'p0', payload: { n }, transactionId: `a-${n}` })),
      ...[4, 5].map((n) => ({ queue, partition: 'p1', payload: { n }, transactionId: `a-${n}` })),
    ];
    const r = await http<{ partition_id: string; transaction_id: string }[]>('POST', '/api/v1/push', { items });
    expect(r.status).toBe(201);
    pushed = r.body;
    // A lease group that leases p0's first two and acks one: one completed, one processing.
    const popped = await http<PopReply>(
      'GET',
      `/api/v1/pop/queue/${queue}/partition/p0?batch=2&wait=false&consumerGroup=billing`,
    );
    expect(popped.body.messages).toHaveLength(2);
    const first = popped.body.messages[0]!;
    const acked = await http('POST', '/api/v1/ack', {
      transactionId: first.transactionId,
      partitionId: first.partitionId,
      status: 'completed',
      consumerGroup: 'billing',
      leaseId: first.leaseId,
    });
    expect(acked.status).toBe(200);
    // Queue mode on p1, and a record-claim group on p0 holding one record.
    expect((await http('GET', `/api/v1/pop/queue/${queue}/partition/p1?batch=1&wait=false`)).status).toBe(200);
    const polled = await http<{ records: unknown[] }>(
      'POST',
      `/api/v1/queues/${queue}/partitions/p0/groups/workers/poll`,
      { max: 1 },
    );
    expect(polled.body.records).toHaveLength(1);
    // A dead letter on another queue.
    await http('POST', '/api/v1/push', {
      items: [{ queue: dlqQueue, payload: { poison: 1 }, transactionId: 'bad-1' }],
    });
    const [m] = (await http<PopReply>('GET', `/api/v1/pop/queue/${dlqQueue}?batch=1&wait=false`)).body.messages;
    const dead = await http<{ dlq: boolean }[]>('POST', '/api/v1/ack', {
      transactionId: m!.transactionId,
      partitionId: m!.partitionId,
      status: 'dlq',
      error: 'cannot parse',
      consumerGroup: null,
      leaseId: m!.leaseId,
    });
    expect(dead.body[0]).toMatchObject({ dlq: true });
    opts.advance?.(30_000);
  });

  it('admin: GET /api/v1/resources/queues lists queues with counters', async () => {
    const body = await get<{ queues: Json[] }>('/api/v1/resources/queues');
    const row = body.queues.find((q) => q.name === queue);
    expect(row).toMatchObject({
      id: str,
      name: queue,
      namespace: 'shop',
      task: 'billing',
      createdAt: isoMs,
      // /configure makes the Default partition.
      partitions: 3,
      messages: { total: 5, pending: num, processing: num },
    });
    const m = row!.messages as { pending: number; processing: number };
    // Per partition, the slowest group's backlog: p0's claim group holds 1 of 3 and finished
    // none (2 pending; the lease group's 1 is fewer); p1's queue-mode pop holds 1 of 2 (1).
    expect(m.pending).toBe(3);
    // p0: the lease group holds one (processing); the claim group holds one too.
    expect(m.processing).toBeGreaterThanOrEqual(1);
    // queenctl filters.
    const filtered = await get<{ queues: Json[] }>('/api/v1/resources/queues?namespace=shop&limit=10&offset=0');
    expect(filtered.queues.map((q) => q.name)).toEqual([queue]);
  });

  it('admin: GET /api/v1/resources/queues/{q} has partitions with six counters and totals; 404 for none', async () => {
    const body = await get<Json>(`/api/v1/resources/queues/${queue}`);
    expect(body).toMatchObject({ id: str, name: queue, namespace: 'shop', task: 'billing', createdAt: isoMs });
    const parts = body.partitions as Json[];
    expect(parts.map((x) => x.name).sort()).toEqual(['Default', 'p0', 'p1']);
    for (const x of parts) expect(x).toMatchObject({ id: str, name: str, createdAt: isoMs, stats: counters });
    expect(parts.find((x) => x.name === 'p1')).toMatchObject({ oldestMessage: isoMs, newestMessage: isoMs });
    const p0 = parts.find((x) => x.name === 'p0')!;
    expect(p0.stats).toMatchObject({ total: 3, completed: 1 });
    expect((p0.consumers as Json[]).map((c) => `${c.group as string}:${c.kind as string}`).sort()).toEqual([
      'billing:lease',
      'workers:claim',
    ]);
    expect(body.totals).toMatchObject({ ...counters, total: 5 });
    const missing = await http('GET', `/api/v1/resources/queues/${p}adm-nope`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: 'Queue not found' });
  });

  it('admin: GET /api/v1/resources/overview has counts, lag and throughput as numbers', async () => {
    const body = await get<Json>('/api/v1/resources/overview');
    expect(body).toMatchObject({
      queues: num,
      partitions: num,
      namespaces: num,
      tasks: num,
      messages: { total: num, pending: num, completed: num },
      lag: { time: { avg: num, max: num }, offset: { avg: num, max: num } },
      throughput: { ingestedPerSecond: num, processedPerSecond: num },
    });
    expect(body.queues as number).toBeGreaterThanOrEqual(2);
    expect((body.throughput as { ingestedPerSecond: number }).ingestedPerSecond > 0 || !oneProcess).toBe(true);
  });

  it('admin: GET /api/v1/resources/namespaces and /tasks feed the Analytics filters', async () => {
    const ns = await get<{ namespaces: Json[] }>('/api/v1/resources/namespaces');
    expect(ns.namespaces).toContainEqual(expect.objectContaining({ namespace: 'shop', queues: 1, partitions: 3 }));
    const tasks = await get<{ tasks: Json[] }>('/api/v1/resources/tasks');
    expect(tasks.tasks).toContainEqual(expect.objectContaining({ task: 'billing' }));
  });

  it('admin: GET /api/v1/status has the Dashboard, Analytics and DeadLetter fields', async () => {
    const body = await get<Json>('/api/v1/status');
    expect(body).toMatchObject({
      timeRange: { from: isoMs, to: isoMs },
      bucketMinutes: 1,
      pointCount: num,
      throughput: arr,
      messages: {
        ...counters,
        requests: { push: num, pop: num, ack: num },
        batchEfficiency: { push: num, pop: num, ack: num },
      },
      leases: { active: num, partitionsWithLeases: num, totalBatchSize: num, totalAcked: num },
      deadLetterQueue: { totalMessages: num, affectedPartitions: num, topErrors: [] },
      workers: [
        expect.objectContaining({ avgEventLoopLagMs: 0, maxEventLoopLagMs: 0, freeSlots: 0, dbConnections: 0 }),
      ],
    });
    expect((body.workers as Json[])[0]).toMatchObject({ jobQueueSize: 0 });
    const points = body.throughput as Json[];
    expect(points.length).toBe(body.pointCount);
    for (const point of points) {
      // May be null (the reference says so); present, as the dashboard reads them.
      for (const k of ['queenCpuUserPct', 'queenCpuSysPct', 'queenRssMb']) expect(point).toHaveProperty(k);
      expect(point).toMatchObject({
        timestamp: bucket,
        ingested: num,
        processed: num,
        ingestedPerSecond: num,
        processedPerSecond: num,
        popPerSecond: num,
        avgLagMs: num,
        maxLagMs: num,
        avgEventLoopLagMs: num,
        maxEventLoopLagMs: num,
        dbErrors: num,
        ackFailed: num,
        dlqCount: num,
        dbPoolActive: num,
        dbPoolIdle: num,
        dbPoolSize: num,
      });
    }
    // Newest first, and something was pushed in this window.
    const stamps = points.map((x) => x.timestamp as string);
    expect([...stamps].sort().reverse()).toEqual(stamps);
    expect(points.reduce((n, x) => n + (x.ingested as number), 0) > 0 || !oneProcess).toBe(true);
    expect((body.leases as { active: number }).active).toBeGreaterThanOrEqual(1);
    expect((body.deadLetterQueue as { totalMessages: number }).totalMessages).toBeGreaterThanOrEqual(1);
    // Scoped to one queue, everything is that queue's.
    const scoped = await get<Json>(`/api/v1/status?queue=${dlqQueue}`);
    expect((scoped.queues as Json[]).map((q) => q.name)).toEqual([dlqQueue]);
    expect(scoped.deadLetterQueue).toMatchObject({ totalMessages: 1, affectedPartitions: 1 });
  });

  it('admin: GET /api/v1/status/queues and /status/queues/{q} (config card, partitions, totals)', async () => {
    const list = await get<{ queues: Json[]; pagination: Json }>('/api/v1/status/queues?limit=500');
    expect(list.queues.find((q) => q.name === queue)).toMatchObject({
      name: queue,
      namespace: 'shop',
      task: 'billing',
      messages: { total: 5, pending: num, processing: num, completed: num },
    });
    expect(list.pagination).toEqual({ limit: 500, offset: 0 });
    const one = await get<Json>(`/api/v1/status/queues/${queue}?includePartitions=true`);
    expect(one.queue).toMatchObject({
      name: queue,
      namespace: 'shop',
      task: 'billing',
      priority: num,
      createdAt: isoMs,
      config: {
        leaseTime: 120,
        ttl: num,
        maxQueueSize: 0,
        retryLimit: 2,
        retryDelay: num,
        deadLetterQueue: expect.any(Boolean) as unknown,
      },
    });
    const parts = one.partitions as Json[];
    expect(parts).toHaveLength(3);
    for (const x of parts) expect(x).toMatchObject({ messages: counters, cursor: { totalConsumed: num } });
    expect(one.totals).toMatchObject({ messages: { ...counters, total: 5 }, ...counters, total: 5 });
    expect((await http('GET', `/api/v1/status/queues/${p}adm-nope`)).status).toBe(404);
  });

  it('admin: GET /api/v1/status/analytics counts messages created per interval', async () => {
    const body = await get<{ dataPoints: Json[]; interval: string }>('/api/v1/status/analytics?interval=minute');
    expect(body.interval).toBe('minute');
    expect(body.dataPoints.reduce((n, x) => n + (x.messages as number), 0) >= 6 || !oneProcess).toBe(true);
  });

  it('admin: GET /api/v1/messages browses without consuming (status per group, mode)', async () => {
    const body = await get<{ messages: Json[]; mode: Json }>(
      `/api/v1/messages?queue=${queue}&limit=50&offset=0&from=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}`,
    );
    expect(body.messages).toHaveLength(5);
    for (const m of body.messages)
      expect(m).toMatchObject({
        id: str,
        transactionId: str,
        partitionId: str,
        queue,
        partition: str,
        createdAt: isoMs,
        status: expect.stringMatching(/^(pending|processing|completed|dead_letter)$/) as unknown,
        busStatus: { consumedBy: num, totalGroups: num },
      });
    expect(body.mode).toMatchObject({ type: 'hybrid', busGroupsCount: 2, hasQueueMode: true });
    const a1 = body.messages.find((m) => m.transactionId === 'a-1')!;
    expect(a1.busStatus).toEqual({ consumedBy: 1, totalGroups: 2 });
    // Nothing was consumed by browsing: the lease group's next pop still starts at a-3 after its lease.
    const withData = await get<{ messages: Json[] }>(`/api/v1/messages?queue=${queue}&partition=p1&payload=true`);
    expect(withData.messages.map((m) => m.data)).toEqual([{ n: 5 }, { n: 4 }]);
    const dead = await get<{ messages: Json[] }>(`/api/v1/messages?status=dead_letter&queue=${dlqQueue}`);
    expect(dead.messages.map((m) => m.transactionId)).toEqual(['bad-1']);
  });

  it('admin: GET /api/v1/messages/{pid}/{tx} has the drawer fields and the payload', async () => {
    const a1 = pushed[0]!;
    const body = await get<Json>(`/api/v1/messages/${a1.partition_id}/${a1.transaction_id}`);
    expect(body).toMatchObject({
      status: str,
      queue,
      partition: 'p0',
      partitionId: a1.partition_id,
      transactionId: 'a-1',
      createdAt: isoMs,
      payload: { n: 1 },
      queueConfig: { leaseTime: 120, retryLimit: 2 },
      mode: { type: str, busGroupsCount: num },
    });
  });

  it('admin: GET /api/v1/dlq without parameters lists every visible queue', async () => {
    const body = await get<{ messages: Json[] }>('/api/v1/dlq');
    const row = body.messages.find((m) => m.transactionId === 'bad-1');
    expect(row).toMatchObject({
      id: str,
      transactionId: 'bad-1',
      partitionId: str,
      queue: dlqQueue,
      partition: 'Default',
      consumerGroup: str,
      errorMessage: 'cannot parse',
      retryCount: num,
      data: { poison: 1 },
      createdAt: isoMs,
      failedAt: isoMs,
    });
  });

  it('admin: GET /api/v1/consumer-groups is a bare array with lease and record-claim groups and their lag', async () => {
    const body = await get<Json[]>('/api/v1/consumer-groups');
    expect(Array.isArray(body)).toBe(true);
    const row = (name: string) => body.find((g) => g.name === name && g.queueName === queue);
    for (const name of ['billing', 'workers', '__QUEUE_MODE__'])
      expect(row(name)).toMatchObject({
        name,
        queueName: queue,
        topics: [queue],
        members: num,
        partitionsWithLag: num,
        maxTimeLag: num,
        state: expect.stringMatching(/^(Stable|Lagging|Dead)$/) as unknown,
      });
    expect(row('workers')).toMatchObject({ kind: 'claim', members: 1, totalLag: 5 });
    expect(row('billing')).toMatchObject({ kind: 'lease', members: 1, state: 'Stable', totalLag: 2 + 2 });
  });

  it('admin: GET /api/v1/consumer-groups/lagging is a bare snake_case array per group and partition', async () => {
    const body = await get<Json[]>('/api/v1/consumer-groups/lagging?minLagSeconds=0');
    const rows = body.filter((r) => r.queue_name === queue);
    expect(rows.length > 0 || !opts.advance).toBe(true);
    for (const r of rows)
      expect(r).toMatchObject({
        consumer_group: str,
        queue_name: queue,
        partition_name: str,
        worker_id: null,
        offset_lag: num,
        time_lag_seconds: num,
        oldest_unconsumed_at: isoMs,
      });
    const lags = rows.map((r) => r.time_lag_seconds as number);
    expect([...lags].sort((a, b) => b - a)).toEqual(lags);
    expect(await get<Json[]>('/api/v1/consumer-groups/lagging')).toEqual([]);
  });

  it('admin: POST …/partitions/{p}/seek skips one partition to its end, for either kind of group', async () => {
    const lease = await http<Json>('POST', `/api/v1/consumer-groups/billing/queues/${queue}/partitions/p1/seek`);
    expect(lease.body).toEqual({
      success: true,
      consumerGroup: 'billing',
      queueName: queue,
      partitionName: 'p1',
      updated: true,
      cursorMovedTo: 1,
    });
    const claim = await http<Json>('POST', `/api/v1/consumer-groups/workers/queues/${queue}/partitions/p1/seek`);
    expect(claim.status).toBe(404); // the claim group never polled p1
    const claimP0 = await http<Json>('POST', `/api/v1/consumer-groups/workers/queues/${queue}/partitions/p0/seek`);
    expect(claimP0.body).toMatchObject({ success: true, cursorMovedTo: 2 });
    expect((await http('POST', `/api/v1/consumer-groups/billing/queues/${queue}/partitions/nope/seek`)).status).toBe(
      404,
    );
  });

  it('admin: GET /api/v1/analytics/queue-ops has string buckets and the per-view fields', async () => {
    const body = await get<{ series: Json[]; queues: string[]; bucketMinutes: number }>(
      `/api/v1/analytics/queue-ops?queue=${queue}`,
    );
    expect(body.queues).toEqual([queue]);
    expect(body.series.length).toBeGreaterThan(0);
    for (const s of body.series)
      expect(s).toMatchObject({
        bucket,
        queueName: queue,
        pushMessages: num,
        popMessages: num,
        popEmpty: num,
        ackFailed: num,
        avgLagMs: num,
        maxLagMs: num,
        pushPerSecond: num,
        popPerSecond: num,
        ackPerSecond: num,
        partitionsCreated: num,
        partitionsDeleted: num,
        parkedCount: num,
      });
    if (!oneProcess) return;
    expect(body.series.reduce((n, s) => n + (s.pushMessages as number), 0)).toBe(5);
    const all = await get<{ queues: string[] }>('/api/v1/analytics/queue-ops');
    expect(all.queues).toEqual(expect.arrayContaining([queue, dlqQueue]));
  });

  it('admin: queue-lag (bare array), parked replicas and retention have their shapes', async () => {
    const lag = await get<Json[]>('/api/v1/analytics/queue-lag');
    expect(Array.isArray(lag)).toBe(true);
    for (const l of lag)
      expect(l).toMatchObject({ queueName: str, popCount: num, avgLagMs: num, maxLagMs: num, bucketTime: bucket });
    expect(await get('/api/v1/analytics/queue-parked-replicas')).toMatchObject({ series: [], replicas: [] });
    const retention = await get<{ series: Json[]; totals: Json }>('/api/v1/analytics/retention');
    expect(retention.series.length).toBeGreaterThan(0);
    for (const s of retention.series)
      expect(s).toMatchObject({ bucket, retentionMsgs: 0, completedRetentionMsgs: 0, evictionMsgs: 0 });
    expect(retention.totals).toMatchObject({ retentionMsgs: 0, completedRetentionMsgs: 0, evictionMsgs: 0 });
    // A window ending at the earliest instant the API takes: every bucket has an ISO-8601 form (the fuzz found one without).
    const earliest = await get<{ timeRange: { from: string }; series: Json[] }>(
      '/api/v1/analytics/retention?to=0000-01-01T00%3A00%3A00Z',
    );
    expect(earliest.timeRange.from).toBe('0000-01-01T00:00:00.000Z');
    for (const s of earliest.series) expect(s).toMatchObject({ bucket });
  });

  it('admin: GET /api/v1/analytics/worker-metrics has every field QueueOperations reads', async () => {
    const body = await get<{ timeSeries: Json[]; workers: Json[] }>('/api/v1/analytics/worker-metrics');
    expect(body).toMatchObject({ bucketMinutes: num, pointCount: num });
    expect(body.timeSeries.length).toBeGreaterThan(0);
    for (const t of body.timeSeries)
      expect(t).toMatchObject({
        pushPerSecond: num,
        popPerSecond: num,
        ackPerSecond: num,
        avgEventLoopLagMs: num,
        maxEventLoopLagMs: num,
        avgFreeSlots: num,
        dbConnections: num,
        avgJobQueueSize: num,
        maxJobQueueSize: num,
        avgLagMs: num,
        maxLagMs: num,
        dbErrors: num,
        ackFailed: num,
        dlqCount: num,
      });
    expect(body.workers[0]).toMatchObject({
      hostname: str,
      workerId: 0,
      avgEventLoopLagMs: num,
      maxEventLoopLagMs: num,
      freeSlots: num,
      dbConnections: num,
      jobQueueSize: num,
      lastSeen: isoMs,
    });
  });

  it('admin: GET /api/v1/analytics/system-metrics has one replica with the System view fields', async () => {
    const body = await get<Json>('/api/v1/analytics/system-metrics');
    const s = { avg: num, min: num, max: num, last: num };
    expect(body).toMatchObject({
      replicaCount: 1,
      pointCount: 1,
      bucketMinutes: num,
      replicas: [
        {
          hostname: str,
          port: num,
          timeSeries: [
            {
              timestamp: bucket,
              metrics: {
                cpu: { user_us: s, system_us: s },
                memory: { rss_bytes: s },
                database: { pool_active: s, pool_idle: s, pool_size: s },
                threadpool: { db: { queue_size: s }, system: { queue_size: s } },
              },
            },
          ],
        },
      ],
    });
  });

  it('admin: maintenance status, traces and stats refresh answer their neutral values', async () => {
    expect(await get('/api/v1/system/maintenance')).toMatchObject({
      maintenanceMode: false,
      popMaintenanceMode: false,
      bufferedMessages: 0,
      bufferStats: { failedCount: 0, failedFiles: { totalMB: 0 } },
    });
    expect(await get('/api/v1/system/maintenance/pop')).toMatchObject({ popMaintenanceMode: false });
    expect(await get(`/api/v1/traces/by-name/${encodeURIComponent('order flow')}?limit=50&offset=0`)).toEqual({
      traces: [],
      total: 0,
      pagination: { limit: 50, offset: 0 },
    });
    expect(await get('/api/v1/traces/names')).toMatchObject({ trace_names: [], total: 0 });
    const a1 = pushed[0]!;
    expect(await get(`/api/v1/traces/${a1.partition_id}/${a1.transaction_id}`)).toEqual({ traces: [] });
    const refresh = await http('POST', '/api/v1/stats/refresh');
    expect(refresh).toMatchObject({ status: 200, body: {} });
  });

  it('admin: GET /api/v1/openapi.json serves the OpenAPI 3.1 document of the route table', async () => {
    const doc = await get<{ openapi: string; paths: Record<string, Record<string, unknown>> }>('/api/v1/openapi.json');
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths['/api/v1/resources/queues'] ?? {})).toEqual(['get']);
    expect(Object.keys(doc.paths['/api/v1/resources/queues/{queue}'] ?? {}).sort()).toEqual(['delete', 'get', 'patch']);
  });

  it("admin: DELETE /api/v1/messages/{pid}/{tx} answers Queen's shape: success true for a dead letter, false otherwise", async () => {
    const rows = (await get<{ messages: Json[] }>(`/api/v1/dlq?queue=${dlqQueue}`)).messages;
    const pid = rows.find((m) => m.transactionId === 'bad-1')?.partitionId as string;
    const del = (p2: string, tx: string) => http<Json>('DELETE', `/api/v1/messages/${p2}/${tx}`);
    const gone = await del(pid, 'bad-1');
    expect(gone).toMatchObject({ status: 200, body: { success: true, partitionId: pid, transactionId: 'bad-1' } });
    expect(gone.body.message).toEqual(str);
    expect((await get<{ messages: Json[] }>(`/api/v1/dlq?queue=${dlqQueue}`)).messages).toEqual([]);
    // Missing: Queen's 200 with success false (its dashboard and queenctl check only for a 2xx).
    const again = await del(pid, 'bad-1');
    expect(again).toMatchObject({ status: 200, body: { success: false, partitionId: pid, transactionId: 'bad-1' } });
    expect(again.body.message).toEqual(str);
    // A pending message is no dead letter: not deleted here (success false), still in the log.
    const a3 = pushed.find((x) => x.transaction_id === 'a-3')!;
    expect((await del(a3.partition_id, 'a-3')).body).toMatchObject({ success: false });
    expect((await http('GET', `/api/v1/messages/${a3.partition_id}/a-3`)).status).toBe(200);
  });
}
