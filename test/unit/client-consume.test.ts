/**
 * The lease consumer loop's defaults against a scripted server and a fake clock: how much a
 * pop asks for, and what keeps a 1,000-message pop handled one at a time safe for 45 s (lease
 * renewal every 10 s, the finished part acked every 5 s).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Sluice, type Message } from '../../client/index.js';
import { fakeFetch, jsonResponse, type Recorded } from '../support/fake-fetch.js';

interface AckItem {
  transactionId: string;
  status: string;
}

/** A queue holding `n` messages for one pop, then nothing; acks and extensions succeed. */
function server(n: number) {
  let popped = false;
  return (req: Recorded): Response => {
    const path = req.url.pathname;
    if (path.startsWith('/api/v1/pop/')) {
      if (popped) return new Response(null, { status: 204 });
      popped = true;
      const size = Math.min(n, Number(req.url.searchParams.get('batch')));
      return jsonResponse(200, {
        leaseId: 'L1',
        consumerGroup: 'g',
        queue: 'q',
        messages: Array.from({ length: size }, (_, i) => ({
          id: `m${i}`,
          transactionId: `t${i}`,
          partitionId: 'p1',
          partition: 'Default',
          data: i,
          createdAt: '',
          traceId: null,
          offset: i,
        })),
      });
    }
    if (path === '/api/v1/ack/batch') {
      const acks = (req.body as { acknowledgments: AckItem[] }).acknowledgments;
      return jsonResponse(
        200,
        acks.map((a, index) => ({ index, transactionId: a.transactionId, success: true, error: null })),
      );
    }
    if (path === '/api/v1/ack')
      return jsonResponse(200, { index: 0, transactionId: (req.body as AckItem).transactionId, success: true });
    if (path.startsWith('/api/v1/lease/'))
      return jsonResponse(200, { leaseId: 'L1', success: true, renewed: 1, newExpiresAt: null });
    return jsonResponse(404, { error: `no route ${path}`, code: 'not_found' });
  };
}

const make = (n: number) => {
  const f = fakeFetch(server(n));
  const sluice = new Sluice({ endpoint: 'http://sluice.test', fetch: f.fetch, sleep: async () => undefined });
  return { sluice, calls: f.calls };
};

const pops = (calls: Recorded[]) => calls.filter((c) => c.url.pathname.startsWith('/api/v1/pop/'));
const acks = (calls: Recorded[]) =>
  calls
    .filter((c) => c.url.pathname === '/api/v1/ack/batch')
    .map((c) => (c.body as { acknowledgments: AckItem[] }).acknowledgments);
const extensions = (calls: Recorded[]) => calls.filter((c) => c.url.pathname.startsWith('/api/v1/lease/'));

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('client consume(): defaults for big pops', () => {
  it('pops 1,000 with auto-ack (at least the batch), the batch in manual mode, popBatch when given', async () => {
    const sizes = async (
      batch: number | undefined,
      opts: Parameters<ReturnType<Sluice['queue']>['consume']>[1],
    ): Promise<string | null> => {
      const { sluice, calls } = make(1);
      const q = batch === undefined ? sluice.queue('q').wait(false) : sluice.queue('q').wait(false).batch(batch);
      const run = q.consume(() => undefined, { idleMs: 500, ...opts });
      await vi.advanceTimersByTimeAsync(1000);
      await run;
      return pops(calls)[0]?.url.searchParams.get('batch') ?? null;
    };
    expect(await sizes(undefined, {})).toBe('1000');
    expect(await sizes(5000, {})).toBe('5000');
    expect(await sizes(10, { autoAck: false })).toBe('10');
    expect(await sizes(undefined, { popBatch: 200 })).toBe('200');
  });

  it('renews the lease every 10 s and acks the finished part every 5 s while 1,000 messages take 45 s', async () => {
    const { sluice, calls } = make(1000);
    const seen: number[] = [];
    const run = sluice
      .queue('q')
      .group('g')
      .wait(false)
      .consume(
        async (msgs: Message[]) => {
          seen.push(...msgs.map((m) => m.data as number));
          await new Promise((r) => setTimeout(r, 45));
        },
        { limit: 1000 },
      );
    await vi.advanceTimersByTimeAsync(46_000);
    const stats = await run;
    expect(seen).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(stats).toMatchObject({ messages: 1000, batches: 1, completed: 1000 });
    // Renewed at 10, 20, 30 and 40 s, each asking for 60 s (3 × the interval, at least 60).
    expect(extensions(calls).map((c) => c.body)).toEqual([
      { seconds: 60 },
      { seconds: 60 },
      { seconds: 60 },
      { seconds: 60 },
    ]);
    // Acked in pieces about every 5 s (112 messages of 45 ms), each message once, in order,
    // all completed: a crash would redeliver at most ~5 s of finished work.
    const pieces = acks(calls);
    expect(pieces.length).toBe(9);
    expect(pieces.slice(0, -1).every((p) => p.length === 112)).toBe(true);
    expect(pieces.flat().map((a) => a.transactionId)).toEqual(Array.from({ length: 1000 }, (_, i) => `t${i}`));
    expect(pieces.flat().every((a) => a.status === 'completed')).toBe(true);
  });

  it('renewLease: 0 and ackIntervalMs: 0 turn both off: one ack at the end, no extension', async () => {
    const { sluice, calls } = make(1000);
    const run = sluice
      .queue('q')
      .wait(false)
      .consume(() => new Promise((r) => setTimeout(r, 45)), { limit: 1000, renewLease: 0, ackIntervalMs: 0 });
    await vi.advanceTimersByTimeAsync(46_000);
    await run;
    expect(extensions(calls)).toHaveLength(0);
    expect(acks(calls).map((a) => a.length)).toEqual([1000]);
  });

  it('manual mode: an ack that releases the lease ends the pop for the handler', async () => {
    const { sluice, calls } = make(50);
    const seen: number[] = [];
    const run = sluice
      .queue('q')
      .wait(false)
      .consume(
        async (m: Message, ctx) => {
          seen.push(m.data as number);
          await ctx.ack(m, m.data === 2 ? 'retry' : 'completed');
        },
        { each: true, autoAck: false, popBatch: 50, limit: 50 },
      );
    await vi.advanceTimersByTimeAsync(1000);
    await run;
    expect(seen).toEqual([0, 1, 2]);
    expect(calls.filter((c) => c.url.pathname === '/api/v1/ack')).toHaveLength(3);
    expect(acks(calls)).toEqual([]); // nothing handed back for it: the handler's acks own the pop
  });

  it('a server without the ack-and-pop route (404): the acks it carried go to /ack/batch', async () => {
    vi.useRealTimers(); // the loop idles out on the real clock
    const { sluice, calls } = make(3);
    const stats = await sluice
      .queue('q')
      .group('g')
      .wait(false)
      .consume(() => undefined, { idleMs: 300 });
    expect(stats).toMatchObject({ messages: 3, completed: 3 });
    const combined = calls.filter((c) => c.url.pathname === '/api/v1/queues/q/ack-and-pop');
    expect(combined).toHaveLength(1);
    expect((combined[0]?.body as { acknowledgments: AckItem[] }).acknowledgments.map((a) => a.status)).toEqual([
      'completed',
      'completed',
      'completed',
    ]);
    expect(acks(calls).map((a) => a.map((x) => x.transactionId))).toEqual([['t0', 't1', 't2']]);
  });
});
