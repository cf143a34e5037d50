// The status and analytics series over several processes (several Lambda instances on AWS,
// or restarts of the local server), on both storage backends: each process stores a minute's
// buckets once the minute is over, and a series request adds up every process's. Time is
// moved by hand.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../server/local/server.js';
import { Activity } from '../../server/service/admin/activity.js';
import { ActivityStore, QUEUES_PER_ITEM } from '../../server/service/admin/activity-store.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, startTestServer } from '../support/http.js';
import { TestClock, testServices } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

interface QueueOps {
  queues: string[];
  series: { queueName: string; pushMessages: number; popMessages: number }[];
}

describe.each(backends)('integration: activity series across processes on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  const servers: LocalServer[] = [];
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(async () => {
    for (const s of servers) await s.close();
    await cleanup();
  });

  /** A process of its own (its own memory) over the shared storage, on the shared clock. */
  const process = async (clock: TestClock): Promise<string> => {
    const server = await startTestServer(testServices(storage, { clock }));
    servers.push(server);
    return server.url;
  };
  const sum = (ops: QueueOps, field: 'pushMessages' | 'popMessages') => ops.series.reduce((n, r) => n + r[field], 0);

  it("what one process served shows in another's series once the minute is over", async () => {
    const clock = new TestClock(Math.floor(Date.now() / 60_000) * 60_000 + 5_000);
    const [pusher, admin] = [await process(clock), await process(clock)];
    const queue = `series-${Date.now()}`;
    const items = [1, 2, 3].map((n) => ({ queue, payload: { n } }));
    expect((await call(pusher, 'POST', '/api/v1/push', { items })).status).toBe(201);
    expect((await call(pusher, 'GET', `/api/v1/pop/queue/${queue}?batch=2&wait=false&autoAck=true`)).status).toBe(200);
    const ops = () => call<QueueOps>(admin, 'GET', `/api/v1/analytics/queue-ops?queue=${queue}`);

    // The minute is under way in the pushing process: not stored yet.
    expect(sum((await ops()).body, 'pushMessages')).toBe(0);
    // The pushing process's own series has it at once (from memory).
    const own = await call<QueueOps>(pusher, 'GET', `/api/v1/analytics/queue-ops?queue=${queue}`);
    expect(sum(own.body, 'pushMessages')).toBe(3);

    clock.advance(60_000);
    await call(pusher, 'GET', '/health'); // its first request of the new minute stores the last one
    const after = (await ops()).body;
    expect(sum(after, 'pushMessages')).toBe(3);
    expect(sum(after, 'popMessages')).toBe(2);
    // Counted once in the process that served it, though it is also in the store.
    expect(
      sum((await call<QueueOps>(pusher, 'GET', `/api/v1/analytics/queue-ops?queue=${queue}`)).body, 'pushMessages'),
    ).toBe(3);
  });

  it('a minute of more queues than one item holds is stored in parts and read back whole', async () => {
    const store = new ActivityStore(storage);
    const minute = Math.floor(Date.now() / 60_000) - 7;
    const rows = new Map(
      Array.from({ length: QUEUES_PER_ITEM + 3 }, (_, i) => [`q${i}`, Float64Array.from([i + 1])] as const),
    );
    await store.write(minute, 'proc-parts', rows, { late: false });
    const back = (await store.rawHour(Math.floor(minute / 60), minute, minute + 1)).filter(
      (m) => m.processId === 'proc-parts',
    );
    expect(back).toHaveLength(2);
    const all = new Map(back.flatMap((m) => [...m.rows]));
    expect(all.size).toBe(QUEUES_PER_ITEM + 3);
    expect(all.get(`q${QUEUES_PER_ITEM + 2}`)?.[0]).toBe(QUEUES_PER_ITEM + 3);
  });

  it('a minute the store keeps refusing is given up after three tries, and later minutes still go', async () => {
    const clock = new TestClock(Math.floor(Date.now() / 60_000) * 60_000);
    const writes: number[] = [];
    let refuse = true;
    const store = {
      write: (minute: number) => {
        writes.push(minute);
        return refuse ? Promise.reject(new Error('refused')) : Promise.resolve();
      },
    } as unknown as ActivityStore;
    const activity = new Activity(clock.now, store);
    activity.count('q', 'pushMessages');
    clock.advance(60_000);
    for (let i = 0; i < 2; i++) await expect(activity.flushDue()).rejects.toThrow('refused');
    await activity.flushDue(); // the third try gives it up
    await activity.flushDue();
    expect(writes).toHaveLength(3);
    refuse = false;
    activity.count('q', 'pushMessages');
    clock.advance(60_000);
    await activity.flushDue();
    expect(writes).toHaveLength(4);
  });

  it('a minute stored late goes in as a late item, unless a put of it was tried before (it may have landed)', async () => {
    const clock = new TestClock(Math.floor(Date.now() / 60_000) * 60_000);
    const writes: { minute: number; late: boolean }[] = [];
    let refuse = true;
    const store = {
      write: (minute: number, _p: string, _r: unknown, opts: { late: boolean }) => {
        writes.push({ minute, late: opts.late });
        return refuse ? Promise.reject(new Error('no answer')) : Promise.resolve();
      },
    } as unknown as ActivityStore;
    const activity = new Activity(clock.now, store);
    const first = Math.floor(clock.t / 60_000);
    activity.count('q', 'pushMessages');
    clock.advance(60_000);
    await expect(activity.flushDue()).rejects.toThrow('no answer'); // raw, and perhaps stored
    refuse = false;
    activity.count('q', 'pushMessages'); // the next minute; the instance then idles
    clock.advance(5 * 60_000);
    await activity.flushDue();
    // The failed minute is not tried again as a late item (its raw item may have been rolled up).
    expect(writes).toEqual([
      { minute: first, late: false },
      { minute: first + 1, late: true },
    ]);
  });

  it('a restarted process (a new one) still shows what the old one served', async () => {
    const clock = new TestClock(Math.floor(Date.now() / 60_000) * 60_000 + 5_000);
    const queue = `restart-${Date.now()}`;
    const before = await process(clock);
    await call(before, 'POST', '/api/v1/push', { items: [{ queue, payload: 1 }] });
    clock.advance(60_000);
    await call(before, 'GET', '/health');
    const after = await process(clock);
    const status = await call<{ throughput: { ingestedPerSecond: number } }>(after, 'GET', '/api/v1/status?window=1h');
    expect(status.status).toBe(200);
    const ops = await call<QueueOps>(after, 'GET', `/api/v1/analytics/queue-ops?queue=${queue}`);
    expect(sum(ops.body, 'pushMessages')).toBe(1);
  });
});
