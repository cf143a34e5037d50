// Offsets from the partition sequencer (docs/STORAGE.md, "Offsets come from a sequencer"):
// concurrent single-message pushes into one partition, from one service instance (coalesced)
// and from many (as Lambda instances are), never fail for contention; a range a producer took
// and never wrote is closed by readers after the gap timeout; a slow producer whose range was
// closed takes a new one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logKeys } from '../../server/service/log/log-store.js';
import type { PushResult } from '../../server/service/log/push.js';
import {
  ConditionFailedError,
  TakeWriteError,
  type Storage,
  type Taken,
  type TakeOptions,
  type WriteOp,
  type WriteResult,
} from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { TestClock, json, testServices, text } from '../support/services.js';
import { withItems } from '../support/storage.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const GAP_MS = 60_000;

/** Counts write requests at the port and those whose guard failed (billed, and wasted, on AWS). */
function metered(inner: Storage): { storage: Storage; writes: () => number; failed: () => number } {
  let writes = 0;
  let failed = 0;
  const guardFailed = (e: unknown): boolean =>
    e instanceof ConditionFailedError || (e instanceof TakeWriteError && e.cause instanceof ConditionFailedError);
  const count = async <T>(n: number, p: Promise<T>): Promise<T> => {
    writes += n;
    try {
      return await p;
    } catch (e) {
      if (guardFailed(e)) failed += n;
      throw e;
    }
  };
  const storage = withItems(inner, {
    put: (t, i, c) => count(1, inner.items.put(t, i, c)),
    delete: (t, k, c) => count(1, inner.items.delete(t, k, c)),
    transact: (ops) => count(1, inner.items.transact(ops)),
    writeEach: async (ops, o) => {
      const r: WriteResult[] = await count(ops.length, inner.items.writeEach(ops, o));
      failed += r.filter((x) => !x.ok).length;
      return r;
    },
    // The take and the writes built from it: two requests on AWS.
    take: (t, k, n, then, o) => count(then ? 2 : 1, inner.items.take(t, k, n, then, o)),
  });
  return { storage, writes: () => writes, failed: () => failed };
}

describe.each(backends)('the offset sequencer on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it.each([
    ['one service instance (pushes coalesced)', 1],
    ['64 service instances (as Lambda instances)', 64],
  ])(
    '64 concurrent single-message pushes into one partition from %s all succeed, at unique contiguous offsets',
    async (_what, instances) => {
      const m = metered(storage);
      const clock = new TestClock();
      const svcs = Array.from({ length: instances }, () => testServices(m.storage, { clock }));
      const queue = `seq-${instances}`;
      await svcs[0]!.queues.ensurePartition(await svcs[0]!.queues.ensureQueue(queue), 'Default');
      const before = m.writes();
      const answers = await Promise.all(
        Array.from({ length: 64 }, (_, i) =>
          svcs[i % instances]!.pushes.push([{ queue, payload: json({ i }), transactionId: `tx-${i}` }]),
        ),
      );
      expect(answers.map((a) => a.map((r) => r.status))).toEqual(Array.from({ length: 64 }, () => ['queued']));
      const offsets = answers.map((a) => (a[0] as PushResult).offset as number);
      expect([...offsets].sort((a, b) => a - b)).toEqual(Array.from({ length: 64 }, (_, i) => i));
      // Each answer names the offset its own message is stored at.
      const part = await svcs[0]!.queues.getPartition(queue, 'Default');
      const stored = await svcs[0]!.segments.read(part!.id, 0, { maxCount: 100 });
      expect(stored.map((s) => s.offset)).toEqual(Array.from({ length: 64 }, (_, i) => i));
      answers.forEach((a, i) => {
        const at = stored[(a[0] as PushResult).offset as number]!;
        expect([at.transactionId, text(at.payload)]).toEqual([`tx-${i}`, JSON.stringify({ i })]);
      });
      const writes = m.writes() - before;
      expect(m.failed()).toBeLessThanOrEqual(0.1 * writes);
    },
  );

  it('concurrent pushes of one transactionId, from one instance and from many: one queued, the rest duplicate', async () => {
    const clock = new TestClock();
    const svcs = Array.from({ length: 8 }, () => testServices(storage, { clock }));
    const queue = 'seq-dedup';
    const answers = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        svcs[i % 8]!.pushes.push([{ queue, payload: json({ i }), transactionId: 'the-one' }]),
      ),
    );
    const statuses = answers.map((a) => (a[0] as PushResult).status);
    expect(statuses.filter((s) => s === 'queued')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(31);
    const part = await svcs[0]!.queues.getPartition(queue, 'Default');
    expect(await svcs[0]!.segments.read(part!.id, 0, { maxCount: 100 })).toHaveLength(1);
  });

  it("a push's dedup reservations reach the store with deferDurability (made durable by its commit)", async () => {
    const seen: (boolean | undefined)[] = [];
    const spy = withItems(storage, {
      writeEach: (ops, o) => (seen.push(o?.deferDurability), storage.items.writeEach(ops, o)),
    });
    const svc = testServices(spy);
    await svc.pushes.push([{ queue: 'seq-deferred', payload: json({}), transactionId: 't1' }]);
    expect(seen).toEqual([true]);
  });

  it('a range a producer took and never wrote holds readers back until the gap timeout, then is closed and passed', async () => {
    const clock = new TestClock();
    const svc = testServices(storage, { clock, config: { gapCloseMs: GAP_MS } });
    const queue = 'seq-dead';
    await svc.pushes.push([{ queue, payload: json({ n: 0 }) }]);
    const part = (await svc.queues.getPartition(queue, 'Default'))!;
    // The dead producer: took offsets 1..3, then died before writing them.
    expect((await storage.items.take('log', logKeys.sequencer(part.id), 3)).first).toBe(1);
    const after = await svc.pushes.push([
      { queue, payload: json({ n: 4 }) },
      { queue, payload: json({ n: 5 }) },
    ]);
    expect(after.map((r) => r.offset)).toEqual([4, 5]);

    const pop = (group: string) =>
      svc.leasePops.pop({
        queue,
        partition: 'Default',
        group,
        batch: 10,
        partitions: 1,
        autoAck: true,
        wait: false,
        timeoutMs: 0,
      });
    const poll = () => svc.claims.poll(queue, 'Default', 'cg', { max: 10, principal: 'p' });
    expect((await pop('lg'))?.messages.map((x) => x.offset)).toEqual([0]);
    expect((await poll()).records.map((r) => r.offset)).toEqual([0]);
    expect(await svc.claims.ack(queue, 'Default', 'cg', [0])).toMatchObject({ committed: 1 });
    // Within the timeout the gap may still be written: readers wait at it.
    clock.advance(GAP_MS - 1_000);
    expect(await pop('lg')).toBeNull();
    expect((await poll()).records).toEqual([]);
    // After it, the first reader closes it with a skip, and every reader moves over it.
    clock.advance(2_000);
    expect((await pop('lg'))?.messages.map((x) => x.offset)).toEqual([4, 5]);
    const polled = await poll();
    expect(polled.records.map((r) => [r.offset, r.skippedBefore])).toEqual([
      [4, 3],
      [5, 0],
    ]);
    expect((await svc.segments.read(part.id, 0, { maxCount: 10 })).map((x) => x.offset)).toEqual([0, 4, 5]);
    // The next push goes on after the closed range.
    expect((await svc.pushes.push([{ queue, payload: json({ n: 6 }) }]))[0]?.offset).toBe(6);
  });

  it('a slow producer whose range a reader closed takes a new range: nothing lost, nothing stored twice', async () => {
    const clock = new TestClock();
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let holdNext = false;
    // The take and its writes as two steps (as on AWS), the writes held back while holdNext.
    const slow = withItems(storage, {
      take: async (t, k, n, then?: (x: Taken) => WriteOp[], o?: TakeOptions) => {
        const taken = await storage.items.take(t, k, n, undefined, o);
        if (!then) return taken;
        if (holdNext) {
          holdNext = false;
          await held;
        }
        try {
          await storage.items.transact(then(taken));
        } catch (e) {
          throw new TakeWriteError(taken.first, n, true, e);
        }
        return taken;
      },
    });
    const producer = testServices(slow, { clock, config: { gapCloseMs: GAP_MS } });
    const reader = testServices(storage, { clock, config: { gapCloseMs: GAP_MS } });
    const queue = 'seq-slow';
    await producer.pushes.push([{ queue, payload: json({ n: 0 }) }]);
    holdNext = true;
    const slowPush = producer.pushes.push([
      { queue, payload: json({ n: 'slow-a' }), transactionId: 'slow-a' },
      { queue, payload: json({ n: 'slow-b' }), transactionId: 'slow-b' },
    ]);
    // Let the slow push take offsets 1..2; meanwhile another producer's push lands at 3.
    const part = (await reader.queues.getPartition(queue, 'Default'))!;
    for (let i = 0; i < 100 && (await storage.items.get('log', logKeys.sequencer(part.id)))?.ver !== 3; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect((await reader.pushes.push([{ queue, payload: json({ n: 3 }) }]))[0]?.offset).toBe(3);
    const read = async () =>
      (await reader.segments.read(part.id, 0, { maxCount: 10 })).map((x) => JSON.parse(text(x.payload)) as unknown);
    expect(await read()).toEqual([{ n: 0 }]);
    clock.advance(GAP_MS + 1_000);
    expect(await read()).toEqual([{ n: 0 }, { n: 3 }]); // closed 1..2
    release();
    const slowAnswer = await slowPush;
    expect(slowAnswer.map((r) => [r.status, r.offset])).toEqual([
      ['queued', 4],
      ['queued', 5],
    ]);
    expect(await read()).toEqual([{ n: 0 }, { n: 3 }, { n: 'slow-a' }, { n: 'slow-b' }]);
  });
});
