/**
 * Producer batching against the local server (embedded backend, real clock), counting the
 * requests the client makes: `send()` gathers messages into pushes; each send gets its own
 * result or error; `close()` flushes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PushResult, SluiceOptions } from '../../client/index.js';
import { countedClient } from '../support/counted-client.js';
import { embeddedServer } from '../support/embedded-server.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server refuses payloads over this many bytes (413, naming the item). */
const MAX_MESSAGE_BYTES = 10_000;

const local = embeddedServer('sluice-client-send-', { SLUICE_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES) });
beforeAll(local.start);
afterAll(local.stop);

const counted = (opts: SluiceOptions = {}) => countedClient(local.url, opts);

describe('client send(): gathered into pushes', () => {
  it('1,000 concurrent sends make one push; each send gets its own offset, in call order', async () => {
    const { sluice, count } = counted();
    const q = sluice.queue('send-many').partition('p');
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => q.send({ data: { i }, transactionId: `many-${i}` })),
    );
    expect(count('POST /api/v1/push')).toBe(1);
    expect(results.map((r) => [r.status, r.transactionId, r.offset])).toEqual(
      Array.from({ length: 1000 }, (_, i) => ['queued', `many-${i}`, i]),
    );
    // The stored order is the call order, and each message id is the one its send was given.
    const read = await q.read({ from: 0, limit: 1000 });
    expect(read.messages.map((m) => (m.data as { i: number }).i)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    const byTx = new Map(read.messages.map((m) => [m.transactionId, m.id]));
    expect(results.every((r) => byTx.get(r.transactionId) === r.messageId)).toBe(true);

    // The same sends unbatched: a request each (more when concurrent pushes collide and retry).
    const unbatched = counted({ lingerMs: 0 });
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => unbatched.sluice.queue('send-many-0').partition('p').send({ data: i })),
    );
    expect(unbatched.count('POST /api/v1/push')).toBeGreaterThanOrEqual(100);
  });

  it('2,500 sends over three partitions: one push per partition and 1,000 messages', async () => {
    const { sluice, count } = counted();
    const results = await Promise.all(
      Array.from({ length: 2500 }, (_, i) =>
        sluice
          .queue('send-parts')
          .partition(`p${i % 3}`)
          .send({ data: i }),
      ),
    );
    // p0 has 834 messages, p1 and p2 833 each: every partition fits one push.
    expect(count('POST /api/v1/push')).toBe(3);
    for (const p of ['p0', 'p1', 'p2']) {
      const mine = results.filter((r) => r.partition === p);
      expect(mine.map((r) => r.offset)).toEqual(mine.map((_, k) => k));
    }
    // Over maxBatch (1,000) on one partition: two pushes.
    const one = counted();
    await Promise.all(Array.from({ length: 1500 }, (_, i) => one.sluice.queue('send-parts').partition('big').send(i)));
    expect(one.count('POST /api/v1/push')).toBe(2);
  });

  it('close() pushes what is still lingering, and later sends are refused', async () => {
    const { sluice, count } = counted({ lingerMs: 60_000 });
    const q = sluice.queue('send-close').partition('p');
    const sends = [1, 2, 3].map((n) => q.send({ data: n }));
    await pause(50);
    expect(count('POST /api/v1/push')).toBe(0);
    const started = Date.now();
    await sluice.close();
    expect(Date.now() - started).toBeLessThan(5_000); // not the 60 s linger
    expect(count('POST /api/v1/push')).toBe(1);
    expect((await Promise.all(sends)).map((r) => r.offset)).toEqual([0, 1, 2]);
    await expect(q.send({ data: 4 })).rejects.toThrow(/closed/);
    expect((await q.read()).messages.map((m) => m.data)).toEqual([1, 2, 3]);
  });

  it('errors reach their own sends: a duplicate, a payload over the limit, a partition that refuses', async () => {
    const { sluice, count } = counted();
    const q = sluice.queue('send-errors').partition('p');
    await q.push([{ data: 'first', transactionId: 'seen-before' }]);
    const full = sluice.queue('send-errors-full');
    await full.config({ maxSize: 1 }).create();
    await full.partition('p').push([{ data: 'fills it' }]);
    count('POST /api/v1/push'); // (the two pushes above are counted too)

    const settle = (p: Promise<PushResult>) =>
      p.then(
        (r) => ({ ok: true as const, r }),
        (e: unknown) => ({ ok: false as const, e: e as { status?: number; code?: string } }),
      );
    const [ok1, dup, huge, ok2, full1, full2] = await Promise.all([
      settle(q.send({ data: 'a', transactionId: 'fresh-a' })),
      settle(q.send({ data: 'again', transactionId: 'seen-before' })),
      settle(q.send({ data: 'x'.repeat(MAX_MESSAGE_BYTES + 1), transactionId: 'too-big' })),
      settle(q.send({ data: 'b', transactionId: 'fresh-b' })),
      settle(full.partition('p').send({ data: 'no room' })),
      settle(full.partition('p').send({ data: 'no room either' })),
    ]);
    expect(ok1).toMatchObject({ ok: true, r: { status: 'queued', transactionId: 'fresh-a', offset: 1 } });
    expect(dup).toMatchObject({ ok: true, r: { status: 'duplicate', transactionId: 'seen-before' } });
    expect(huge).toMatchObject({ ok: false, e: { status: 413, code: 'payload_too_large' } });
    expect(ok2).toMatchObject({ ok: true, r: { status: 'queued', transactionId: 'fresh-b', offset: 2 } });
    // The full queue refuses its whole push: both of its sends, and nobody else's.
    expect(full1).toMatchObject({ ok: false, e: { code: 'queue_full' } });
    expect(full2).toMatchObject({ ok: false, e: { code: 'queue_full' } });
    expect((await q.read()).messages.map((m) => m.data)).toEqual(['first', 'a', 'b']);
  });
});
