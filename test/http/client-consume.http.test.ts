/**
 * Big pops in the lease consumer against the local server (embedded backend, real clock),
 * counting the requests the client makes: `consume()` pops up to 1,000 per request while the
 * handler sees one message at a time, renews the lease while a pop is worked through, acks
 * the finished part as it goes, and hands back what it never handled when it stops.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice, type Message, type SluiceOptions } from '../../client/index.js';
import { countedClient } from '../support/counted-client.js';
import { embeddedServer } from '../support/embedded-server.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server refuses payloads over this many bytes (413, naming the item). */
const MAX_MESSAGE_BYTES = 10_000;

const local = embeddedServer('sluice-client-consume-', { SLUICE_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES) });
beforeAll(local.start);
afterAll(local.stop);

const counted = (opts: SluiceOptions = {}) => countedClient(local.url, opts);

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
    // 0..40 once (40 failed), then 40..99 on the redelivery: nothing before 40 twice. The
    // redelivery pops 40 alone, then the rest.
    expect(deliveries).toEqual([
      ...Array.from({ length: 41 }, (_, i) => i),
      ...Array.from({ length: 60 }, (_, i) => 40 + i),
    ]);
    expect(stats).toMatchObject({ messages: 160, batches: 3, completed: 100, failed: 1 });
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

/**
 * A batch handler that throws on one message, over 505 messages with 2 that always fail
 * (docs/CLIENT.md, "Per-message outcomes: a failing batch handler"). Before, the whole call failed
 * and the lease rules filed the batch's head: 15 dead letters (13 healthy, with the bad one's
 * error) and 16,330 messages popped.
 */
describe('client consume(): one bad message fails alone', () => {
  const TOTAL = 505;
  const BAD = [137, 402];
  const failOn = (n: number): void => {
    if (BAD.includes(n)) throw new Error(`bad ${n}`);
  };

  // The filing of a bad message releases the lease (docs/LEASES.md), so what followed it in its
  // pop is delivered once more: the pop size bounds that. Default pops (1,000) and pops of one
  // handler call (popBatch 10).
  it.each([
    // Pop requests stay under 10 % of the messages; popped messages: the rest of the pop after
    // each filed message again, and each bad one alone on its redeliveries (3 each).
    {
      popBatch: undefined,
      name: 'bad-neighbours',
      maxPops: TOTAL * 0.1,
      maxPopped: TOTAL + (TOTAL - 1 - BAD[0]!) + (TOTAL - 1 - BAD[1]!) + 2 * 3,
    },
    // Pops of one handler call: popped messages within 10 % of the messages.
    { popBatch: 10, name: 'bad-neighbours-10', maxPops: TOTAL / 10 + 2 * 4 + 10, maxPopped: TOTAL * 1.1 },
  ])(
    'a batch-10 lease consumer (popBatch $popBatch): exactly the 2 bad messages are dead letters, each with its own error',
    async ({ popBatch, name, maxPops, maxPopped }) => {
      const { sluice, count } = counted();
      const q = sluice.queue(name).partition('p');
      await q.push(Array.from({ length: TOTAL }, (_, i) => i));
      const handled = new Set<number>();
      const errors: string[] = [];
      const stats = await sluice
        .queue(name)
        .group('billing')
        .batch(10)
        .consume(
          (messages: Message<number>[]) => {
            for (const m of messages) {
              failOn(m.data);
              handled.add(m.data);
            }
          },
          {
            idleMs: 1500,
            ...(popBatch ? { popBatch } : {}),
            onError: (e, { phase }) => errors.push(`${phase}: ${(e as Error).message}`),
          },
        );
      const dead = await sluice.dlq(name).group('billing').list({ limit: 100 });
      expect(dead.messages.map((d) => [d.data, d.errorMessage]).sort()).toEqual([
        [137, 'bad 137'],
        [402, 'bad 402'],
      ]);
      expect(handled.size).toBe(TOTAL - BAD.length);
      // Each bad message fails on its 4 deliveries (retryLimit 3), and on nothing else.
      expect(stats).toMatchObject({ completed: TOTAL - BAD.length, failed: 8 });
      expect(new Set(errors)).toEqual(new Set(['handler: bad 137', 'handler: bad 402']));
      expect(await q.group('billing').wait(false).pop()).toEqual([]);

      const pops = count('GET pop') + count(`POST /api/v1/queues/${name}/ack-and-pop`);
      // Measured: 15 pops and 980 messages popped by default; 64 pops and 519 with popBatch 10.
      expect({ pops: pops <= maxPops, popped: stats.messages <= maxPopped }).toEqual({ pops: true, popped: true });
    },
  );

  it('a batch-10 claim worker: only the 2 bad records are nacked, and they alone are dead letters; deliveries stay within 10 %', async () => {
    const { sluice, count } = counted();
    const q = sluice.queue('bad-claims').partition('p');
    await q.push(Array.from({ length: TOTAL }, (_, i) => i));
    const workers = q.claimGroup('workers');
    await workers.create('earliest');
    const handled = new Set<number>();
    const sizes = new Set<number>();
    const errors = new Map<number, Set<string>>();
    const stats = await workers.consumeBatches<number>(
      (records) => {
        sizes.add(records.length);
        for (const r of records) {
          failOn(r.data);
          handled.add(r.data);
        }
      },
      {
        batch: 10,
        idleMs: 1500,
        waitMs: 500,
        onError: (e, { phase, offset }) => {
          if (phase !== 'handler' || offset === undefined) return;
          errors.set(offset, (errors.get(offset) ?? new Set()).add((e as Error).message));
        },
      },
    );
    const state = await workers.describe();
    expect(state).toMatchObject({ committed: TOTAL, lag: 0, deadLetters: 2 });
    expect(await workers.allDeadLetters()).toEqual(BAD);
    // Claim dead letters keep no error text: each bad record's own error went to onError.
    expect(errors).toEqual(new Map(BAD.map((n) => [n, new Set([`bad ${n}`])])));
    expect(handled.size).toBe(TOTAL - BAD.length);
    expect(sizes.has(10)).toBe(true);
    // maxAttempts 5: each bad record is handed out 5 times and nacked 5 times; nothing else is.
    expect(stats).toMatchObject({ acked: TOTAL - BAD.length, nacked: 2 * 5, records: TOTAL + 2 * 4 });
    const polls = count('POST /api/v1/queues/bad-claims/partitions/p/groups/workers/poll');
    // Measured: 55 polls and 513 records delivered.
    expect(stats.records).toBeLessThanOrEqual(TOTAL * 1.1);
    expect(polls).toBeLessThanOrEqual(TOTAL * 0.2);
  });
});

describe('client consume(): waiting on the local server', () => {
  it('long-polls: the server offers no notification channel, and an idle consumer is woken by the wait', async () => {
    const waits: boolean[] = [];
    let tickets = 0;
    const sluice = new Sluice({
      endpoint: local.url,
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
