/**
 * The deployment-wide cap on concurrent long-poll waits (`service/wait-slots.ts`,
 * docs/DEPLOYING.md "Quotas"), on both backends: waits past the cap hold briefly and answer
 * empty while pushes go on; pops and claim polls share the slots; a waiter that dies without
 * releasing its slot leaves it behind only until the slot's `until`. Every services instance
 * here stands for one Lambda instance: they share nothing but storage.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice } from '../../client/index.js';
import { loadConfig } from '../../server/config.js';
import { QUEUE_MODE_GROUP } from '../../server/core/names.js';
import { Grants } from '../../server/http/grants.js';
import { makeHandler } from '../../server/http/handler.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { startLocalServer } from '../../server/local/server.js';
import { CAPPED_HOLD_MS, CAPPED_RETRY_AFTER_S } from '../../server/service/leases/long-poll.js';
import type { PopRequest } from '../../server/service/leases/pop.js';
import { buildServices, type Services } from '../../server/service/runtime.js';
import type { MemoryTelemetry } from '../../server/service/telemetry.js';
import { SLOT_MARGIN_MS, WAIT_SLOTS_PK } from '../../server/service/wait-slots.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { TestClock, json, testServices, text } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const waitingPop = (queue: string, timeoutMs = 20_000): PopRequest => ({
  queue,
  group: QUEUE_MODE_GROUP,
  batch: 10,
  partitions: 1,
  autoAck: false,
  wait: true,
  timeoutMs,
});

/** The wait slots as stored: how many are held at `now`. */
async function heldSlots(storage: Storage, now: number): Promise<number> {
  const page = await storage.items.query('meta', WAIT_SLOTS_PK);
  return page.items.filter((i) => (i.attrs['until'] as number) > now).length;
}

/**
 * A clock a day after the last one: slots every test shares (they are deployment-wide) but a
 * test that failed half-way left held are long expired for the next test. Never in the past:
 * DynamoDB Local collects items whose TTL has passed by the real clock.
 */
let day = 0;
const freshClock = (): TestClock => new TestClock(Date.now() + ++day * 86_400_000);

async function until(cond: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function timed<T>(p: Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await p;
  return { value, ms: performance.now() - t0 };
}

describe.each(backends)('integration: the wait cap on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('with the cap reached, a waiting pop holds briefly and answers empty; pushes go on, and the waiters get them', async () => {
    const clock = freshClock();
    const instance = (): Services => testServices(storage, { clock, config: { maxWaiters: 2 } });
    const [a, b, c, producer] = [instance(), instance(), instance(), instance()];
    const stop = new AbortController();
    const waiters = [a, b].map((svc) => svc.leasePops.pop(waitingPop('capped'), stop.signal));
    await until(async () => (await heldSlots(storage, clock.t)) === 2, 'two waiters holding slots');

    const capped = await timed(c.leasePops.answer(waitingPop('capped')));
    expect(capped.value).toEqual({
      result: null,
      retryAfterSeconds: CAPPED_RETRY_AFTER_S,
      expired: new Map(),
      unknownQueue: true,
    });
    expect(capped.ms).toBeGreaterThanOrEqual(CAPPED_HOLD_MS - 50);
    expect(capped.ms).toBeLessThan(CAPPED_HOLD_MS + 1500);
    expect((c.telemetry as MemoryTelemetry).counters.get('WaitsCapped')).toBe(1);
    expect(await heldSlots(storage, clock.t)).toBe(2);

    // Producers are not held up by the cap, and the admitted waiters (other instances: they
    // re-read storage every second) get what they push.
    const pushed = await producer.pushes.push([{ queue: 'capped', payload: json({ n: 1 }) }]);
    expect(pushed.map((r) => r.status)).toEqual(['queued']);
    const first = await Promise.race(waiters);
    expect(first?.messages.map((m) => text(m.payload))).toEqual(['{"n":1}']);
    stop.abort();
    const rest = await Promise.all(waiters);
    expect(rest.filter((r) => r !== null)).toHaveLength(1);
    // Every slot was released.
    expect(await heldSlots(storage, clock.t)).toBe(0);
  });

  it('a pop that finds work at once takes no slot; one with wait=false never asks for one', async () => {
    const clock = freshClock();
    const svc = testServices(storage, { clock, config: { maxWaiters: 1 } });
    await svc.pushes.push([{ queue: 'ready', payload: json({ n: 1 }) }]);
    const writes: string[] = [];
    const spy = testServices(
      {
        ...storage,
        kind: storage.kind,
        close: () => storage.close(),
        blobs: storage.blobs,
        items: {
          ...storage.items,
          query: (t, pk, o) => (pk === WAIT_SLOTS_PK && writes.push('query'), storage.items.query(t, pk, o)),
          put: (t, item, c) => (item.pk === WAIT_SLOTS_PK && writes.push('put'), storage.items.put(t, item, c)),
        },
      },
      { clock, config: { maxWaiters: 1 } },
    );
    expect((await spy.leasePops.pop(waitingPop('ready')))?.messages).toHaveLength(1);
    expect(await spy.leasePops.pop({ ...waitingPop('ready'), wait: false })).toBeNull();
    expect(writes).toEqual([]);
  });

  it('claim polls wait in the same slots', async () => {
    const clock = freshClock();
    const instance = (): Services => testServices(storage, { clock, config: { maxWaiters: 1 } });
    const [a, b] = [instance(), instance()];
    await a.queues.ensurePartition(await a.queues.ensureQueue('claimcap'), 'Default');
    const stop = new AbortController();
    const waiter = a.leasePops.pop(waitingPop('claimcap'), stop.signal);
    await until(async () => (await heldSlots(storage, clock.t)) === 1, 'a waiter holding the slot');
    const capped = await timed(b.claims.poll('claimcap', 'Default', 'workers', { waitMs: 20_000, principal: 'p' }));
    expect(capped.value.records).toEqual([]);
    expect(capped.value.retryAfterSeconds).toBe(CAPPED_RETRY_AFTER_S);
    expect(capped.ms).toBeGreaterThanOrEqual(CAPPED_HOLD_MS - 50);
    expect(capped.ms).toBeLessThan(CAPPED_HOLD_MS + 1500);
    stop.abort();
    expect(await waiter).toBeNull();
    // Freed: a claim poll now waits its whole (short) wait in the slot.
    const admitted = await timed(b.claims.poll('claimcap', 'Default', 'workers', { waitMs: 2500, principal: 'p' }));
    expect(admitted.value.records).toEqual([]);
    expect(admitted.value.retryAfterSeconds).toBeUndefined();
    expect(admitted.ms).toBeGreaterThanOrEqual(2400);
    expect(await heldSlots(storage, clock.t)).toBe(0);
  });

  it("a killed waiter's slot frees itself once its until has passed", async () => {
    const clock = freshClock();
    // An instance that dies between its wait and its release: the slot's delete never happens.
    const dying = testServices(
      {
        ...storage,
        kind: storage.kind,
        close: () => storage.close(),
        blobs: storage.blobs,
        items: {
          ...storage.items,
          delete: (t, k, c) =>
            k.pk === WAIT_SLOTS_PK ? Promise.reject(new Error('killed')) : storage.items.delete(t, k, c),
        },
      },
      { clock, config: { maxWaiters: 1 } },
    );
    const other = testServices(storage, { clock, config: { maxWaiters: 1 } });
    expect(await dying.leasePops.pop(waitingPop('killed', 300))).toBeNull();
    expect(await heldSlots(storage, clock.t)).toBe(1);
    // Still held: another instance is turned away.
    expect((await other.waitSlots!.take(1000)).admitted).toBe(false);
    expect((await timed(other.leasePops.pop(waitingPop('killed', 20_000)))).ms).toBeLessThan(CAPPED_HOLD_MS + 1500);
    // Its until is the wait's budget plus the margin from when it was taken; then it is free,
    // and taken over by a write guarded by its version.
    clock.advance(300 + SLOT_MARGIN_MS);
    expect(await heldSlots(storage, clock.t)).toBe(0);
    const taken = await other.waitSlots!.take(1000);
    expect(taken.admitted).toBe(true);
    expect(await heldSlots(storage, clock.t)).toBe(1);
    if (taken.admitted) await taken.release();
    expect(await heldSlots(storage, clock.t)).toBe(0);
  });

  it('with no cap (0, the local default) no slot is ever read or written', async () => {
    const svc = testServices(storage, { clock: freshClock(), config: { maxWaiters: 0 } });
    expect(svc.waitSlots).toBeUndefined();
    // An empty answer at the end of a whole wait says nothing about when to ask again.
    // (No queue of that name exists, and the answer says so: the route meters nothing for it.)
    expect(await svc.leasePops.answer(waitingPop('uncapped', 200))).toEqual({
      result: null,
      expired: new Map(),
      unknownQueue: true,
    });
  });
});

describe.each(backends.filter((b) => b.name === 'aws'))('integration: the wait cap over HTTP on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('a Queen-style consumer past the cap gets 204s about once a second at most, ours sleeps their Retry-After, and pushes get 201', async () => {
    const clock = freshClock();
    const svc = testServices(storage, { clock, config: { maxWaiters: 1 } });
    const server = await startLocalServer({
      handler: makeHandler(ALL_ROUTES, { services: () => Promise.resolve(svc), grants: Grants.open() }),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
    });
    try {
      const pop = (queue: string) => fetch(`${server.url}/api/v1/pop/queue/${queue}?batch=1&wait=true&timeout=30000`);
      const push = (queue: string, n: number) =>
        fetch(`${server.url}/api/v1/push`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ items: [{ queue, partition: 'Default', payload: { n } }] }),
        });
      // One consumer takes the only slot.
      const waiting = pop('hq');
      await until(async () => (await heldSlots(storage, clock.t)) === 1, 'the first consumer holding the slot');

      // Queen's consume loop: after a 204 to wait=true it asks again at once.
      const statuses: number[] = [];
      const retryAfter = new Set<string | null>();
      const t0 = performance.now();
      const loop = (async () => {
        while (performance.now() - t0 < 4000) {
          const r = await pop('hq');
          statuses.push(r.status);
          retryAfter.add(r.headers.get('retry-after'));
          await r.arrayBuffer();
        }
      })();
      // Our client's loop, the same way: it sleeps each capped answer's Retry-After first.
      const ours: number[] = [];
      const sluice = new Sluice({
        endpoint: server.url,
        fetch: async (input, init) => {
          const r = await fetch(input, init);
          ours.push(r.status);
          return r;
        },
      });
      const ourLoop = (async () => {
        while (performance.now() - t0 < 4000)
          expect(await sluice.queue('hq').batch(1).timeout(30_000).pop()).toEqual([]);
      })();
      const pushes: number[] = [];
      while (performance.now() - t0 < 3500) {
        pushes.push((await push('elsewhere', pushes.length)).status);
        await new Promise((r) => setTimeout(r, 250));
      }
      await Promise.all([loop, ourLoop]);
      const seconds = (performance.now() - t0) / 1000;
      expect(new Set(statuses)).toEqual(new Set([204]));
      expect(retryAfter).toEqual(new Set([String(CAPPED_RETRY_AFTER_S)]));
      expect(statuses.length / seconds).toBeLessThanOrEqual(1);
      expect(statuses.length).toBeGreaterThanOrEqual(2);
      // Held 1.5 s, then asleep 1 s: one request every 2.5 s, giving its execution back between.
      expect(new Set(ours)).toEqual(new Set([204]));
      expect(ours.length).toBeGreaterThanOrEqual(1);
      expect(ours.length / seconds).toBeLessThanOrEqual(1 / ((CAPPED_HOLD_MS + CAPPED_RETRY_AFTER_S * 1000) / 1000));
      expect(pushes.length).toBeGreaterThanOrEqual(5);
      expect(new Set(pushes)).toEqual(new Set([201]));
      // The consumer holding the slot still gets what is pushed to its queue, and frees the slot.
      expect((await push('hq', 99)).status).toBe(201);
      const got = await waiting;
      expect(got.status).toBe(200);
      expect(((await got.json()) as { messages: { data: unknown }[] }).messages.map((m) => m.data)).toEqual([
        { n: 99 },
      ]);
      expect(await heldSlots(storage, clock.t)).toBe(0);

      // A claim poll past the cap (its group past what is in the partition): an empty answer
      // with the same Retry-After.
      const group = `${server.url}/api/v1/queues/hq/partitions/Default/groups/workers`;
      const json = { 'content-type': 'application/json' };
      const created = await fetch(group, { method: 'PUT', headers: json, body: '{"start":"latest"}' });
      expect(created.status).toBe(200);
      const holder = pop('hq2');
      await until(async () => (await heldSlots(storage, clock.t)) === 1, 'a consumer holding the slot again');
      const poll = await fetch(`${group}/poll`, { method: 'POST', headers: json, body: '{"waitMs":20000}' });
      expect(poll.status).toBe(200);
      expect(poll.headers.get('retry-after')).toBe(String(CAPPED_RETRY_AFTER_S));
      expect(((await poll.json()) as { records: unknown[] }).records).toEqual([]);
      expect((await push('hq2', 100)).status).toBe(201);
      expect((await holder).status).toBe(200);
      expect(await heldSlots(storage, clock.t)).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('SLUICE_MAX_WAITERS=auto takes its share of the unreserved concurrency the process reads once', async () => {
    const clock = freshClock();
    let asked = 0;
    const svc = buildServices(
      storage,
      { ...loadConfig({ SLUICE_MAX_WAITERS: 'auto' }), queueCacheMs: 0 },
      { clock: clock.now, unreservedConcurrency: async () => (asked++, 5) },
    );
    const first = await svc.waitSlots!.take(1000);
    const second = await svc.waitSlots!.take(1000);
    expect([first.admitted, second.admitted]).toEqual([true, true]);
    expect((await svc.waitSlots!.take(1000)).admitted).toBe(false);
    expect(asked).toBe(1);
    for (const a of [first, second]) if (a.admitted) await a.release();
    expect(await heldSlots(storage, clock.t)).toBe(0);
  });
});
