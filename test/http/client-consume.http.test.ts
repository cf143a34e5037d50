/**
 * Big pops in the lease consumer against the local server (embedded backend, real clock),
 * counting the requests the client makes: `consume()` pops up to 1,000 per request while the
 * handler sees one message at a time, renews the lease while a pop is worked through, acks
 * the finished part as it goes, and hands back what it never handled when it stops.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice, type Message, type SluiceOptions } from '../../client/index.js';
import { loadConfig } from '../../lambdas/config.js';
import type { LocalServer } from '../../lambdas/local/server.js';
import { buildServices } from '../../lambdas/service/runtime.js';
import { openEmbeddedStorage } from '../../lambdas/storage/embedded/index.js';
import type { Storage } from '../../lambdas/storage/port.js';
import { startTestServer } from '../support/http.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server refuses payloads over this many bytes (413, naming the item). */
const MAX_MESSAGE_BYTES = 10_000;

let dir: string;
let storage: Storage;
let server: LocalServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-client-consume-'));
  storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  const config = loadConfig({ SLUICE_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES) });
  server = await startTestServer(buildServices(storage, { ...config, queueCacheMs: 0 }));
});
afterAll(async () => {
  await server.close();
  await storage.close();
  await rm(dir, { recursive: true, force: true });
});

/** A client whose requests are counted by `METHOD /path` (pops as `GET pop`, lease extensions as `POST extend`). */
function counted(opts: SluiceOptions = {}) {
  const requests = new Map<string, number>();
  const count = (key: string): number => requests.get(key) ?? 0;
  const sluice = new Sluice({
    endpoint: server.url,
    retry: { attempts: 2, baseDelayMs: 10 },
    ...opts,
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const path = url.pathname.startsWith('/api/v1/pop/')
        ? 'pop'
        : url.pathname.startsWith('/api/v1/lease/')
          ? 'extend'
          : url.pathname;
      const key = `${init?.method ?? 'GET'} ${path}`;
      requests.set(key, count(key) + 1);
      return fetch(input, init);
    },
  });
  return { sluice, count, requests };
}

describe('client consume(): big pops, one message per handler call', () => {
  it('pops up to 1,000 per request, one request per batch (acks ride with the next pop), the handler once per message', async () => {
    const { sluice, count } = counted();
    const q = sluice.queue('pop-big').partition('p');
    await q.push(Array.from({ length: 2500 }, (_, i) => i));
    const seen: number[] = [];
    const sizes = new Set<number>();
    const stats = await q.group('g').consume(
      (msgs: Message[]) => {
        sizes.add(msgs.length);
        seen.push(...msgs.map((m) => m.data as number));
      },
      { limit: 2500 },
    );
    expect([...sizes]).toEqual([1]);
    expect(seen).toEqual(Array.from({ length: 2500 }, (_, i) => i));
    expect(stats).toMatchObject({ messages: 2500, batches: 3, completed: 2500, failed: 0, handedBack: 0 });
    // One request per batch: the first pop, then each batch's acks ride with the next pop; the
    // last batch is acked on its own when the limit stops the loop.
    expect(count('GET pop')).toBe(1);
    expect(count('POST /api/v1/queues/pop-big/ack-and-pop')).toBe(2);
    expect(count('POST /api/v1/ack/batch')).toBe(1);
    expect(await q.group('g').wait(false).pop()).toEqual([]);
  });

  it('a handler that asks for batches gets them; a limit caps the pop', async () => {
    const { sluice, count } = counted();
    const q = sluice.queue('pop-batches').partition('p');
    await q.push(Array.from({ length: 95 }, (_, i) => i));
    const sizes: number[] = [];
    await q
      .group('g')
      .batch(10)
      .consume(
        (msgs: Message[]) => {
          sizes.push(msgs.length);
        },
        { idleMs: 1000 },
      );
    expect(sizes).toEqual([10, 10, 10, 10, 10, 10, 10, 10, 10, 5]);
    // The acks rode with the next (empty) pop.
    expect(count('POST /api/v1/queues/pop-batches/ack-and-pop')).toBe(1);
    expect(count('POST /api/v1/ack/batch')).toBe(0);

    // limit: 5 leases 5, not 1,000: the rest stays free for the next consumer.
    await q.push(Array.from({ length: 20 }, (_, i) => 100 + i));
    const stats = await q.group('g').consume(() => undefined, { limit: 5 });
    expect(stats).toMatchObject({ messages: 5, completed: 5 });
    const rest = await q.group('g').batch(100).wait(false).pop();
    expect(rest.map((m) => m.data)).toEqual(Array.from({ length: 15 }, (_, i) => 105 + i));
    await sluice.ack(rest);
  });

  it("keeps a 1,000-message pop's lease while it is handled one at a time, past the lease time", async () => {
    const { sluice, count } = counted();
    const q = sluice.queue('pop-renew').partition('p');
    await q.push(Array.from({ length: 1000 }, (_, i) => i));
    const errors: string[] = [];
    const stolen: Message[] = [];
    let handled = 0;
    const started = Date.now();
    const stats = await q
      .group('g')
      .leaseSeconds(1)
      .consume(
        async (msgs: Message[]) => {
          handled += msgs.length;
          // ~2.5 s in all, over twice the 1 s lease.
          if (handled % 40 === 0) await pause(100);
          if (handled % 250 === 0) stolen.push(...(await q.group('g').wait(false).pop()));
        },
        {
          limit: 1000,
          renewLease: 300,
          renewSeconds: 3, // each renewal reaches well past the next: a slow round trip does not lose the lease
          ackIntervalMs: 0,
          onError: (e, { phase }) => errors.push(`${phase}: ${String(e)}`),
        },
      );
    expect(Date.now() - started).toBeGreaterThan(2000);
    expect(stolen).toEqual([]); // nobody else got any of it meanwhile
    expect(errors).toEqual([]);
    expect(stats).toMatchObject({ messages: 1000, batches: 1, completed: 1000 });
    expect(count('POST /api/v1/ack/batch')).toBe(1);
    expect(count('POST extend')).toBeGreaterThanOrEqual(5); // every 300 ms while the pop was worked through
    expect(await q.group('g').wait(false).pop()).toEqual([]);
  });

  it('acks the finished part of a long pop as it goes, keeping the lease', async () => {
    const { sluice, count } = counted();
    const q = sluice.queue('pop-progress').partition('p');
    await q.push(Array.from({ length: 300 }, (_, i) => i));
    const committed = async (): Promise<number | null> =>
      (await sluice.groups.describe('progress')).queues[0]?.detail?.[0]?.committed ?? null;
    let midway: number | null = null;
    let probe: Message[] = ['x' as unknown as Message];
    await q.group('progress').consume(
      async (msgs: Message[]) => {
        const n = msgs[0]?.data as number;
        if (n % 50 === 49) await pause(60);
        if (n === 200) {
          midway = await committed();
          probe = await q.group('progress').wait(false).pop();
        }
      },
      { limit: 300, ackIntervalMs: 50 },
    );
    // By message 200 the first ~150 were committed, and the lease on the rest was still ours.
    expect(midway).toBeGreaterThanOrEqual(99);
    expect(midway).toBeLessThan(200);
    expect(probe).toEqual([]);
    expect(count('POST /api/v1/ack/batch')).toBeGreaterThanOrEqual(3);
    expect(await committed()).toBe(299);
  });

  it('stopping mid-pop hands back what the handler never saw; it comes back once, in order', async () => {
    const { sluice } = counted();
    const q = sluice.queue('pop-stop').partition('p');
    await q.push(Array.from({ length: 1000 }, (_, i) => i));
    const handled: number[] = [];
    const stop = new AbortController();
    const first = await q.group('g').consume(
      (msgs: Message[]) => {
        handled.push(...msgs.map((m) => m.data as number));
        if (handled.length === 10) stop.abort();
      },
      { signal: stop.signal },
    );
    expect(first).toMatchObject({ messages: 1000, batches: 1, completed: 10, handedBack: 990 });
    // Handed back with `retry`: free at once, not after the lease lapses.
    const second = await q
      .group('g')
      .consume((msgs: Message[]) => void handled.push(...msgs.map((m) => m.data as number)), {
        idleMs: 1000,
      });
    expect(second).toMatchObject({ messages: 990, completed: 990 });
    expect(handled).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it('a handler that throws mid-pop: the finished part is committed, the rest comes back', async () => {
    const { sluice } = counted();
    const q = sluice.queue('pop-fail').partition('p');
    await q.config({ retryLimit: 5 }).create();
    await q.push(Array.from({ length: 100 }, (_, i) => i));
    const deliveries: number[] = [];
    let thrown = false;
    const errors: string[] = [];
    const stats = await q.group('g').consume(
      (msgs: Message[]) => {
        const n = msgs[0]?.data as number;
        deliveries.push(n);
        if (n === 40 && !thrown) {
          thrown = true;
          throw new Error('not now');
        }
      },
      { idleMs: 500, onError: (e, { phase }) => errors.push(`${phase}: ${(e as Error).message}`) },
    );
    // 0..40 once (40 failed), then 40..99 on the redelivery: nothing before 40 twice.
    expect(deliveries).toEqual([
      ...Array.from({ length: 41 }, (_, i) => i),
      ...Array.from({ length: 60 }, (_, i) => 40 + i),
    ]);
    expect(stats).toMatchObject({ batches: 2, completed: 100, failed: 1 });
    expect(errors).toEqual(['handler: not now']);
  });

  it('a failure in a pop over two partitions frees the other partition at once', async () => {
    const { sluice } = counted();
    const q = sluice.queue('pop-fail-two');
    for (const p of ['a', 'b']) await q.partition(p).push([1, 2, 3].map((n) => `${p}${n}`));
    const first = await q.group('peek').partitions(2).batch(10).wait(false).pop();
    expect(new Set(first.map((m) => m.partition))).toEqual(new Set(['a', 'b'])); // one pop spans both
    await sluice.ack(first, 'retry');

    const deliveries: string[] = [];
    let thrown = false;
    const started = Date.now();
    await q
      .group('g')
      .partitions(2)
      .consume(
        (msgs: Message[]) => {
          const d = msgs[0]?.data as string;
          deliveries.push(d);
          if (!thrown) {
            thrown = true;
            throw new Error('first one fails');
          }
        },
        { idleMs: 1500, onError: () => undefined },
      );
    // Without the hand-back the second partition would wait out its 60 s lease.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(deliveries.slice(1).sort()).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'b3']);
  });
});

describe('client consume(): waiting on the local server', () => {
  it('long-polls: the server offers no notification channel, and an idle consumer is woken by the wait', async () => {
    const waits: boolean[] = [];
    let tickets = 0;
    const sluice = new Sluice({
      endpoint: server.url,
      fetch: (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        if (url.pathname.startsWith('/api/v1/pop/')) waits.push(url.searchParams.get('wait') === 'true');
        if (url.pathname === '/api/v1/notifications/ticket') tickets++;
        return fetch(input, init);
      },
    });
    const q = sluice.queue('idle-local');
    const got: unknown[] = [];
    const consuming = q.group('g').consume((m) => void got.push(m.data), { each: true, limit: 1 });
    await pause(300); // idle: the consumer asked for a ticket, learnt there is no channel, and long-polls
    await q.push([{ data: 'wake' }]);
    await consuming;
    expect(got).toEqual(['wake']);
    expect(tickets).toBe(1);
    expect(waits.at(-1)).toBe(true); // the pop that delivered was a long poll
  });
});
