/**
 * Producer batching (`queue(q).send(item)`) against a scripted fetch and a fake clock: when
 * a batch goes (linger, count, bytes, flush, close), what each send gets back, and order.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Sluice, SluiceApiError, type PushResult } from '../../client/index.js';
import { fakeFetch, jsonResponse, type Recorded } from '../support/fake-fetch.js';

interface WireItem {
  queue: string;
  partition: string;
  payload: unknown;
  transactionId?: string;
}

const items = (req: Recorded): WireItem[] => (req.body as { items: WireItem[] }).items;

/** Answers like the server: queued, offsets counting up per partition, `dup-*` ids duplicate. */
function server() {
  const next = new Map<string, number>();
  return (req: Recorded): Response =>
    jsonResponse(
      201,
      items(req).map((item, index) => {
        const it = { ...item, transactionId: item.transactionId ?? `minted-${index}` };
        if (it.transactionId.startsWith('dup-'))
          return { index, status: 'duplicate', transaction_id: it.transactionId, queueName: it.queue };
        if (it.transactionId.startsWith('fail-'))
          return { index, status: 'failed', transaction_id: it.transactionId, error: 'partition is full' };
        const lane = `${it.queue}/${it.partition}`;
        const offset = next.get(lane) ?? 0;
        next.set(lane, offset + 1);
        return {
          index,
          status: 'queued',
          transaction_id: it.transactionId,
          message_id: `m-${it.transactionId}`,
          partition_id: `pid-${it.partition}`,
          queueName: it.queue,
          partition: it.partition,
          offset,
        };
      }),
    );
}

const make = (answer: Parameters<typeof fakeFetch>[0], opts: ConstructorParameters<typeof Sluice>[0] = {}) => {
  const f = fakeFetch(answer);
  const sluice = new Sluice({ endpoint: 'http://sluice.test', fetch: f.fetch, sleep: async () => undefined, ...opts });
  return { sluice, calls: f.calls };
};

/** Marks a send expected to reject as handled now (it is awaited after the clock moves). */
const handled = <T>(p: Promise<T>): Promise<T> => {
  p.catch(() => undefined);
  return p;
};

/** Settles (or not) without advancing time: what a send has by now. */
const state = async <T>(p: Promise<T>): Promise<'pending' | 'resolved' | 'rejected'> => {
  let s: 'pending' | 'resolved' | 'rejected' = 'pending';
  p.then(
    () => (s = 'resolved'),
    () => (s = 'rejected'),
  );
  await vi.advanceTimersByTimeAsync(0);
  return s;
};

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('client: send() gathers messages into pushes', () => {
  it('waits lingerMs, then pushes every send to one partition in one request; each gets its own result', async () => {
    const { sluice, calls } = make(server());
    const q = sluice.queue('orders').partition('eu');
    const sends = Array.from({ length: 50 }, (_, i) => q.send({ data: { i }, transactionId: `t${i}` }));
    await vi.advanceTimersByTimeAsync(4);
    expect(calls).toHaveLength(0); // still lingering
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(1);
    expect(items(calls[0] as Recorded).map((it) => it.payload)).toEqual(Array.from({ length: 50 }, (_, i) => ({ i })));
    const results = await Promise.all(sends);
    expect(results.map((r) => [r.index, r.status, r.transactionId, r.messageId, r.offset])).toEqual(
      Array.from({ length: 50 }, (_, i) => [0, 'queued', `t${i}`, `m-t${i}`, i]),
    );
  });

  it('makes one push per (queue, partition), honouring a per-item partition', async () => {
    const { sluice, calls } = make(server());
    const eu = sluice.queue('orders').partition('eu');
    const sends = [
      eu.send({ data: 1 }),
      sluice.queue('orders').partition('us').send({ data: 2 }),
      eu.send({ data: 3, partition: 'us' }),
      sluice.queue('audit').partition('eu').send({ data: 4 }),
      eu.send({ data: 5 }),
    ];
    await vi.advanceTimersByTimeAsync(5);
    const byLane = calls.map((c) => items(c).map((it) => `${it.queue}/${it.partition}:${String(it.payload)}`));
    expect(byLane).toEqual([['orders/eu:1', 'orders/eu:5'], ['orders/us:2', 'orders/us:3'], ['audit/eu:4']]);
    const results = await Promise.all(sends);
    expect(results.map((r) => `${r.queue}/${r.partition}@${r.offset}`)).toEqual([
      'orders/eu@0',
      'orders/us@0',
      'orders/us@1',
      'audit/eu@0',
      'orders/eu@1',
    ]);
  });

  it('pushes at once when maxBatch messages are gathered, without waiting out the linger', async () => {
    const { sluice, calls } = make(server(), { lingerMs: 60_000, maxBatch: 10 });
    const q = sluice.queue('q');
    const sends = Array.from({ length: 25 }, (_, i) => q.send({ data: i }));
    await vi.advanceTimersByTimeAsync(0);
    // Two full batches go at once, one after the other (one push in flight per partition).
    expect(calls.map((c) => items(c).length)).toEqual([10, 10]);
    expect(await state(sends[24] as Promise<PushResult>)).toBe('pending');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls.map((c) => items(c).length)).toEqual([10, 10, 5]);
    expect((await Promise.all(sends)).map((r) => r.offset)).toEqual(Array.from({ length: 25 }, (_, i) => i));
  });

  it('keeps a batch under maxPushBytes, counting UTF-8 bytes', async () => {
    const { sluice, calls } = make(server(), { maxPushBytes: 20_000 });
    const q = sluice.queue('q');
    // 3,000 characters, 9,000 bytes each: two fit in 20,000 bytes, three do not.
    const sends = Array.from({ length: 5 }, () => q.send({ data: '€'.repeat(3000) }));
    await vi.advanceTimersByTimeAsync(5);
    expect(calls.map((c) => items(c).length)).toEqual([2, 2, 1]);
    for (const c of calls) expect(Buffer.byteLength(JSON.stringify(c.body))).toBeLessThan(20_000);
    await Promise.all(sends);
  });

  it('has one push in flight per partition: sends made meanwhile go next, in order', async () => {
    let release!: () => void;
    const answer = server();
    const { sluice, calls } = make(async (req) => {
      if (calls.length === 1) await new Promise<void>((r) => (release = r));
      return answer(req);
    });
    const q = sluice.queue('q');
    const first = [q.send({ data: 'a' }), q.send({ data: 'b' })];
    await vi.advanceTimersByTimeAsync(5);
    expect(calls).toHaveLength(1);
    const second = [q.send({ data: 'c' }), q.send({ data: 'd' })];
    await vi.advanceTimersByTimeAsync(50); // the linger passes, the first push is still out
    expect(calls).toHaveLength(1);
    release();
    const results = await Promise.all([...first, ...second]);
    expect(calls.map((c) => items(c).map((it) => it.payload))).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(results.map((r) => r.offset)).toEqual([0, 1, 2, 3]);
  });

  it('gives duplicate and failed items to their own send only', async () => {
    const { sluice, calls } = make(server());
    const q = sluice.queue('q');
    const ok = q.send({ data: 1, transactionId: 'a' });
    const dup = q.send({ data: 2, transactionId: 'dup-1' });
    const failed = handled(q.send({ data: 3, transactionId: 'fail-1' }));
    const failedQuiet = q.send({ data: 4, transactionId: 'fail-2' }, { throwOnFailure: false });
    await vi.advanceTimersByTimeAsync(5);
    expect(calls).toHaveLength(1);
    await expect(ok).resolves.toMatchObject({ status: 'queued', transactionId: 'a', offset: 0 });
    await expect(dup).resolves.toMatchObject({ status: 'duplicate', transactionId: 'dup-1' });
    await expect(failed).rejects.toMatchObject({
      code: 'operation_failed',
      // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types its asymmetric matchers as any
      message: expect.stringContaining('partition is full'),
    });
    await expect(failedQuiet).resolves.toMatchObject({ status: 'failed', error: 'partition is full' });
  });

  it('rejects every send of a push that failed, and only those', async () => {
    const answer = server();
    const { sluice } = make(
      (req) =>
        items(req)[0]?.partition === 'down'
          ? jsonResponse(403, { error: 'not allowed to push to q/down', code: 'forbidden' })
          : answer(req),
      { retry: { attempts: 1 } },
    );
    const down = [1, 2, 3].map((i) => handled(sluice.queue('q').partition('down').send({ data: i })));
    const up = [1, 2].map((i) => sluice.queue('q').partition('up').send({ data: i }));
    await vi.advanceTimersByTimeAsync(5);
    const settled = await Promise.allSettled(down);
    const reasons = settled.map((s) => (s.status === 'rejected' ? (s.reason as SluiceApiError) : undefined));
    expect(reasons.map((r) => r?.code)).toEqual(['forbidden', 'forbidden', 'forbidden']);
    expect(reasons[0]).toBeInstanceOf(SluiceApiError);
    expect((await Promise.all(up)).map((r) => r.offset)).toEqual([0, 1]);
  });

  it('retries a push that failed transiently under the same producer stamp, minting no transactionIds', async () => {
    const answer = server();
    let n = 0;
    const { sluice, calls } = make((req) =>
      ++n === 1 ? jsonResponse(503, { error: 'busy', code: 'unavailable' }) : answer(req),
    );
    const sends = [1, 2, 3].map((i) => sluice.queue('q').send({ data: i }));
    await vi.advanceTimersByTimeAsync(5);
    expect((await Promise.all(sends)).map((r) => r.status)).toEqual(['queued', 'queued', 'queued']);
    expect(calls).toHaveLength(2);
    const stamp = (c: Recorded) => {
      const b = c.body as { producerId?: string; sequence?: number };
      return [b.producerId, b.sequence];
    };
    expect(stamp(calls[0] as Recorded)[0]).toMatch(/^[A-Za-z0-9_-]{12}\.0$/);
    expect(stamp(calls[1] as Recorded)).toEqual(stamp(calls[0] as Recorded));
    expect(items(calls[1] as Recorded).map((it) => it.transactionId)).toEqual([undefined, undefined, undefined]);
    // The next push is a new one: the same producer id (none in flight), the next sequence.
    const later = sluice.queue('q').send({ data: 4, transactionId: 'mine' });
    await vi.advanceTimersByTimeAsync(5);
    await later;
    expect(stamp(calls[2] as Recorded)).toEqual([stamp(calls[0] as Recorded)[0], 1]);
    expect(items(calls[2] as Recorded).map((it) => it.transactionId)).toEqual(['mine']);
  });

  it('gives pushes in flight together producer ids of their own (one push in flight per id)', async () => {
    const answer = server();
    // Answers held until all three are in flight.
    const held: (() => void)[] = [];
    const { sluice, calls } = make(
      (req) =>
        new Promise<Response>((resolve) => {
          held.push(() => resolve(answer(req)));
          if (held.length === 3) for (const go of held) go();
        }),
    );
    const a = sluice.queue('q').partition('a').send({ data: 1 });
    const b = sluice.queue('q').partition('b').send({ data: 2 });
    const c = sluice.queue('q').push([{ data: 3 }]);
    await vi.advanceTimersByTimeAsync(5);
    await Promise.all([a, b, c]);
    const ids = calls.map((x) => (x.body as { producerId: string }).producerId);
    expect(new Set(ids).size).toBe(3);
    expect(calls.map((x) => (x.body as { sequence: number }).sequence)).toEqual([0, 0, 0]);
  });

  it('mints a transactionId per item and sends no stamp with producerSequences: false', async () => {
    const { sluice, calls } = make(server(), { producerSequences: false });
    await sluice.queue('q').push([{ data: 1 }, { data: 2 }]);
    expect(calls[0]?.body).not.toHaveProperty('producerId');
    expect(items(calls[0] as Recorded).map((it) => it.transactionId)).toEqual([
      expect.stringMatching(/^[0-9a-f-]{36}$/),
      expect.stringMatching(/^[0-9a-f-]{36}$/),
    ]);
  });

  it('fails only the send whose payload the server refused by index, and stores the rest', async () => {
    const answer = server();
    const { sluice, calls } = make((req) => {
      const i = items(req).findIndex((it) => it.payload === 'huge');
      return i >= 0
        ? jsonResponse(413, { error: `items[${i}]: payload is too large`, code: 'payload_too_large', index: i })
        : answer(req);
    });
    const q = sluice.queue('q');
    const sends = ['a', 'huge', 'b', 'c'].map((d) => handled(q.send({ data: d })));
    await vi.advanceTimersByTimeAsync(5);
    const settled = await Promise.allSettled(sends);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ status: 413, code: 'payload_too_large' });
    expect(calls.map((c) => items(c).map((it) => it.payload))).toEqual([
      ['a', 'huge', 'b', 'c'],
      ['a', 'b', 'c'],
    ]);
  });

  it('refuses a send the server would refuse for everyone in its batch, before it joins one', async () => {
    const { sluice, calls } = make(server());
    const q = sluice.queue('q');
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    const bad = [
      q.send({ data: 1, transactionId: 'x'.repeat(257) }),
      q.send({ data: 1, transactionId: '' }),
      q.send({ data: 1, transactionId: 'lone \uD800' }),
      q.send({ data: cyclic }),
      q.send({ data: 10n }),
    ].map(handled);
    const good = q.send({ data: 2 });
    await vi.advanceTimersByTimeAsync(5);
    for (const b of bad) await expect(b).rejects.toBeInstanceOf(TypeError);
    await expect(good).resolves.toMatchObject({ status: 'queued', offset: 0 });
    expect(calls.map((c) => items(c).length)).toEqual([1]);
  });

  it('flush() pushes at once and waits for the answers; close() flushes and refuses later sends', async () => {
    const { sluice, calls } = make(server(), { lingerMs: 60_000 });
    const a = sluice.queue('q').partition('a').send({ data: 1 });
    const b = sluice.queue('q').partition('b').send({ data: 2 });
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(0);
    expect(sluice.producer.pending).toBe(2);
    await sluice.flush();
    expect(calls).toHaveLength(2);
    expect(await state(a)).toBe('resolved');
    expect(await state(b)).toBe('resolved');

    const c = sluice.queue('q').send({ data: 3 });
    await sluice.close();
    expect(calls).toHaveLength(3);
    expect(await state(c)).toBe('resolved');
    expect(sluice.producer.pending).toBe(0);
    await expect(sluice.queue('q').send({ data: 4 })).rejects.toThrow(/closed/);
    await sluice.close(); // twice is fine
    expect(calls).toHaveLength(3);
  });

  it('lingerMs: 0 pushes each send at once, on its own', async () => {
    const { sluice, calls } = make(server(), { lingerMs: 0 });
    const q = sluice.queue('q');
    const sends = [q.send({ data: 1 }), q.send({ data: 2 }), q.send({ data: 3 })];
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.map((c) => items(c).length)).toEqual([1, 1, 1]);
    await Promise.all(sends);
    const late = q.send({ data: 4 });
    await sluice.flush(); // waits for unbatched pushes too
    expect(await state(late)).toBe('resolved');
  });
});
