// Queue options over HTTP on both backends: Queen's defaults echoed but inert (ttl, retryDelay
// apply only when the client set them), PATCH of one option, the ttl counter in /metrics, and a
// pop by namespace/task shaped as Queen's client sends it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../server/local/server.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, startTestServer } from '../support/http.js';
import type { ErrorReply, PopReply } from '../support/replies.js';
import { testServices, type TestClock } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

interface QueueReply {
  queue: string;
  namespace: string | null;
  task: string | null;
  options: Record<string, number | boolean>;
  explicitOptions: string[];
}

type NsPop = PopReply & { success: boolean; queue: string };

/** The options object Queen's client sends on `.create()`: its defaults, without ttl and retryDelay. */
const QUEEN_CLIENT_OPTIONS = {
  leaseTime: 300,
  retryLimit: 3,
  priority: 0,
  delayedProcessing: 0,
  windowBuffer: 0,
  maxSize: 0,
  retentionSeconds: 0,
  completedRetentionSeconds: 0,
  encryptionEnabled: false,
};

describe.each(backends)('http: queue options on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let server: LocalServer;
  let clock: TestClock;
  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
    const svc = testServices(storage);
    clock = svc.testClock;
    server = await startTestServer(svc);
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });
  const http = <T = unknown>(method: string, path: string, body?: unknown) => call<T>(server.url, method, path, body);

  it("configure echoes Queen's defaults for ttl and retryDelay, records what the client set, and does not apply them", async () => {
    const r = await http<QueueReply>('POST', '/api/v1/configure', {
      queue: 'qc',
      namespace: null,
      task: null,
      options: QUEEN_CLIENT_OPTIONS,
    });
    expect(r.status).toBe(200);
    expect(r.body.options).toMatchObject({ ...QUEEN_CLIENT_OPTIONS, ttl: 3600, retryDelay: 1000 });
    const d = await http<QueueReply>('GET', '/api/v1/queues/qc');
    expect(d.body.explicitOptions).toEqual(Object.keys(QUEEN_CLIENT_OPTIONS).sort());
    await http('POST', '/api/v1/push', { items: [{ queue: 'qc', payload: { n: 1 } }] });
    clock.advance(2 * 3600_000);
    const popped = await http<PopReply>('GET', '/api/v1/pop/queue/qc?wait=false');
    expect(popped.status).toBe(200);
    expect(popped.body.messages).toHaveLength(1);
  });

  it('PATCH changes one option and keeps the rest; ttl then applies and is counted in /metrics', async () => {
    await http('POST', '/api/v1/configure', { queue: 'pt', options: { leaseTime: 45, retryLimit: 9 } });
    await http('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue: 'pt', payload: { n } })) });
    clock.advance(120_000);
    const p = await http<QueueReply>('PATCH', '/api/v1/resources/queues/pt', { options: { ttl: 60 } });
    expect(p.status).toBe(200);
    expect(p.body.options).toMatchObject({ leaseTime: 45, retryLimit: 9, ttl: 60, retryDelay: 1000 });
    expect(p.body.explicitOptions).toEqual(['leaseTime', 'retryLimit', 'ttl']);
    expect((await http('GET', '/api/v1/pop/queue/pt?wait=false')).status).toBe(204);
    const metrics = await fetch(`${server.url}/metrics`).then((x) => x.text());
    expect(metrics).toContain('sluice_messages_expired_total{queue="pt"} 3');
    // A null resets: the ttl goes back to Queen's default and stops applying.
    const reset = await http<QueueReply>('PATCH', '/api/v1/resources/queues/pt', { options: { ttl: null } });
    expect(reset.body.options.ttl).toBe(3600);
    expect(reset.body.explicitOptions).toEqual(['leaseTime', 'retryLimit']);
  });

  it('PATCH refuses an unknown queue (404), an empty change, an unknown option and a bad value (400)', async () => {
    const missing = await http<ErrorReply>('PATCH', '/api/v1/resources/queues/nope', { options: { ttl: 5 } });
    expect(missing.status).toBe(404);
    await http('POST', '/api/v1/configure', { queue: 'pv', options: {} });
    const bodies = [{}, { options: {} }, { options: { ttlx: 1 } }, { options: { ttl: -1 } }, { extra: 1 }];
    const statuses = [];
    for (const body of bodies)
      statuses.push((await http<ErrorReply>('PATCH', '/api/v1/resources/queues/pv', body)).status);
    expect(statuses).toEqual(bodies.map(() => 400));
  });

  it('a Queen-client-shaped pop by namespace and task leases from the one highest-priority queue with work', async () => {
    for (const [queue, priority] of [
      ['ns-low', 1],
      ['ns-high', 7],
    ] as const) {
      const r = await http('POST', '/api/v1/configure', {
        queue,
        namespace: 'shop',
        task: 'bill',
        options: { ...QUEEN_CLIENT_OPTIONS, priority },
      });
      expect(r.status).toBe(200);
      await http('POST', '/api/v1/push', { items: [{ queue, partition: 'Default', payload: { queue } }] });
    }
    const path = '/api/v1/pop?batch=10&wait=false&timeout=30000&consumerGroup=workers&namespace=shop&task=bill';
    const first = await http<NsPop>('GET', path);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      success: true,
      queue: 'ns-high',
      consumerGroup: 'workers',
      partitionsClaimed: 1,
    });
    expect(first.body.messages).toHaveLength(1);
    const m = first.body.messages[0]!;
    expect(m).toMatchObject({ data: { queue: 'ns-high' }, partition: 'Default', consumerGroup: 'workers' });
    const acked = await http('POST', '/api/v1/ack', {
      transactionId: m.transactionId,
      partitionId: m.partitionId,
      leaseId: m.leaseId,
      status: 'completed',
      consumerGroup: 'workers',
    });
    expect(acked.status).toBe(200);
    expect((await http<NsPop>('GET', path)).body.queue).toBe('ns-low');
    expect((await http('GET', path)).status).toBe(204);
    expect((await http('GET', '/api/v1/pop?wait=false&namespace=nothing-here')).status).toBe(204);
    expect((await http<ErrorReply>('GET', '/api/v1/pop?wait=false')).status).toBe(400);
  });
});
