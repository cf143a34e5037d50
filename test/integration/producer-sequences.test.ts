// Idempotent producers (docs/DELIVERY.md) on both backends: a push stamped (producerId,
// sequence) and sent again gets the first attempt's answer and stores nothing twice; a repeat
// whose first attempt failed after taking its offsets stores; a repeat while the first attempt
// is still writing is answered "retry later" and never stored twice; stale and reused stamps are
// refused; what it costs in writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../server/core/errors.js';
import { PRODUCER_SLOTS } from '../../server/core/producer-sequence.js';
import { logKeys } from '../../server/service/log/log-store.js';
import type { PushItem, PushResult } from '../../server/service/log/push.js';
import type { MemoryTelemetry } from '../../server/service/telemetry.js';
import {
  StoreUnavailableError,
  TakeWriteError,
  type Storage,
  type Taken,
  type TakeOptions,
  type WriteOp,
} from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { TestClock, json, testServices, text } from '../support/services.js';
import { withItems } from '../support/storage.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const GAP_MS = 60_000;
const items = (queue: string, n: number, partition = 'Default'): PushItem[] =>
  Array.from({ length: n }, (_, i) => ({ queue, partition, payload: json({ i }) }));
const answer = (rs: PushResult[]) => rs.map((r) => [r.status, r.offset, r.messageId, r.transactionId]);

/**
 * The take and its writes as two steps (as on AWS, where they are two requests), so the first
 * attempt of a push can be held between them or made to fail after its numbers were taken.
 */
function twoStep(storage: Storage): { storage: Storage; hold: () => () => void; failNext: () => void } {
  let held: Promise<void> | undefined;
  let fail = false;
  const wrapped = withItems(storage, {
    take: async (t, k, n, then?: (x: Taken) => WriteOp[], o?: TakeOptions) => {
      const taken = await storage.items.take(t, k, n, undefined, o);
      if (!then) return taken;
      const wait = held;
      held = undefined;
      if (wait) await wait;
      try {
        if (fail) {
          fail = false;
          throw new StoreUnavailableError('unreachable', 5, 'no answer (test)');
        }
        await storage.items.transact(then(taken));
      } catch (e) {
        throw new TakeWriteError(taken.first, n, true, e);
      }
      return taken;
    },
  });
  return {
    storage: wrapped,
    hold: () => {
      let release: () => void = () => undefined;
      held = new Promise<void>((r) => (release = r));
      return release;
    },
    failNext: () => (fail = true),
  };
}

describe.each(backends)('idempotent producers on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  const stored = async (svc: ReturnType<typeof testServices>, queue: string, partition = 'Default') => {
    const part = (await svc.queues.getPartition(queue, partition))!;
    return (await svc.segments.read(part.id, 0, { maxCount: 100 })).map((m) => [m.offset, text(m.payload)]);
  };

  it('a retried push after a lost answer gets the same offsets and ids, and stores nothing twice', async () => {
    const svc = testServices(storage);
    const other = testServices(storage); // a retry may land on another instance
    const q = 'ps-retry';
    await svc.pushes.push(items(q, 3));
    const stamp = { producerId: 'prod.0', sequence: 7 };
    const first = await svc.pushes.push(items(q, 5), { stamp });
    expect(first.map((r) => [r.status, r.offset])).toEqual([0, 1, 2, 3, 4].map((i) => ['queued', 3 + i]));
    other.testClock.advance(1_500);
    expect(answer(await other.pushes.push(items(q, 5), { stamp }))).toEqual(answer(first));
    expect(answer(await svc.pushes.push(items(q, 5), { stamp }))).toEqual(answer(first));
    expect(await stored(svc, q)).toHaveLength(8);
    // The next sequence is a new push; the one before it is stale and stores nothing.
    const next = await svc.pushes.push(items(q, 2), { stamp: { producerId: 'prod.0', sequence: 9 } });
    expect(next.map((r) => r.offset)).toEqual([8, 9]);
    const stale = await svc.pushes.push(items(q, 5), { stamp }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(SluiceError);
    expect(stale).toMatchObject({ code: 'stale_sequence', details: { lastSequence: 9 } });
    // A stamp names one push: the same stamp with other messages is a client bug.
    await expect(svc.pushes.push(items(q, 1), { stamp: { producerId: 'prod.0', sequence: 9 } })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    // Other producers are judged on their own.
    const p2 = await svc.pushes.push(items(q, 1), { stamp: { producerId: 'prod.1', sequence: 0 } });
    expect(p2[0]?.offset).toBe(10);
    expect(await stored(svc, q)).toHaveLength(11);
  });

  it('a retry whose transactionIds the first attempt reserved is answered queued, not duplicate', async () => {
    const svc = testServices(storage);
    const q = 'ps-dedup';
    // The queue's dedup window is on by default (3600 s).
    const withIds = items(q, 3).map((it, i) => ({ ...it, transactionId: `order-${i}` }));
    const stamp = { producerId: 'prod.0', sequence: 1 };
    const first = await svc.pushes.push(withIds, { stamp });
    svc.testClock.advance(10);
    const again = await svc.pushes.push(withIds, { stamp });
    expect(answer(again)).toEqual(answer(first));
    expect(again.map((r) => r.status)).toEqual(['queued', 'queued', 'queued']);
    // Another producer sending the same ids gets duplicate, as Queen does.
    const dup = await svc.pushes.push(withIds, { stamp: { producerId: 'prod.9', sequence: 1 } });
    expect(dup.map((r) => [r.status, r.messageId])).toEqual(first.map((r) => ['duplicate', r.messageId]));
    expect(await stored(svc, q)).toHaveLength(3);
  });

  it('a stale stamped push carrying transactionIds on a dedup queue is refused before it writes anything', async () => {
    // Found by the route fuzzer (seed 1193486345): the refusal came after the push had reserved
    // its transactionIds and marked itself aborted — state changed, then a failure.
    let writes = 0;
    const counted = withItems(storage, {
      put: (t, item, c) => (writes++, storage.items.put(t, item, c)),
      delete: (t, k, c) => (writes++, storage.items.delete(t, k, c)),
      writeEach: (ops, o) => ((writes += ops.length), storage.items.writeEach(ops, o)),
      transact: (ops) => ((writes += ops.length), storage.items.transact(ops)),
      take: (t, k, n, then, o) => (writes++, storage.items.take(t, k, n, then, o)),
    });
    const svc = testServices(counted);
    const q = 'ps-stale-dedup';
    const ids = (from: number, n: number) =>
      items(q, n).map((it, i) => ({ ...it, transactionId: `stale-${from + i}` }));
    await svc.pushes.push(ids(0, 2), { stamp: { producerId: 'prod.0', sequence: 9 } });
    writes = 0;
    const stale = await svc.pushes
      .push(ids(10, 2), { stamp: { producerId: 'prod.0', sequence: 5 } })
      .catch((e: unknown) => e);
    expect(stale).toMatchObject({ code: 'stale_sequence', details: { lastSequence: 9 } });
    expect(writes).toBe(0);
    // Its transactionIds were never reserved: another producer stores them.
    const other = await svc.pushes.push(ids(10, 2), { stamp: { producerId: 'prod.1', sequence: 0 } });
    expect(other.map((r) => [r.status, r.offset])).toEqual([
      ['queued', 2],
      ['queued', 3],
    ]);
  });

  it(`forgets the least recently seen producer past ${PRODUCER_SLOTS}, counting StampEvicted: its retry is stored again, or duplicate by transactionId`, async () => {
    const svc = testServices(storage);
    const q = 'ps-evict';
    const stamp = { producerId: 'old', sequence: 0 };
    const first = await svc.pushes.push(items(q, 1), { stamp });
    const withId = [{ ...items(q, 1)[0]!, transactionId: 'order-x' }];
    const firstWithId = await svc.pushes.push(withId, { stamp: { producerId: 'old2', sequence: 0 } });
    const evictions = () => (svc.telemetry as MemoryTelemetry).counters.get('StampEvicted') ?? 0;
    for (let k = 0; k < PRODUCER_SLOTS; k++) {
      svc.testClock.advance(10);
      await svc.pushes.push(items(q, 1), { stamp: { producerId: `new${k}`, sequence: 0 } });
      // The two old producers hold two slots: the new ones fill the rest, then take theirs, counted.
      expect(evictions(), `after new${k}`).toBe(Math.max(0, k + 3 - PRODUCER_SLOTS));
    }
    // Both old producers were evicted: the retries are new pushes to the partition.
    const again = await svc.pushes.push(items(q, 1), { stamp });
    expect(again[0]?.offset).not.toBe(first[0]?.offset);
    expect(evictions()).toBe(3); // it took the least recently used slot (new0's)
    const againWithId = await svc.pushes.push(withId, { stamp: { producerId: 'old2', sequence: 0 } });
    expect(againWithId.map((r) => [r.status, r.messageId])).toEqual([['duplicate', firstWithId[0]?.messageId]]);
    expect(await stored(svc, q)).toHaveLength(11);
  });

  it('a push spanning partitions is judged per partition: its retry answers every share as before', async () => {
    const svc = testServices(storage);
    const q = 'ps-multi';
    const both = [...items(q, 2, 'a'), ...items(q, 3, 'b')];
    const stamp = { producerId: 'prod.0', sequence: 0 };
    const first = await svc.pushes.push(both, { stamp });
    expect(answer(await svc.pushes.push(both, { stamp }))).toEqual(answer(first));
    expect(await stored(svc, q, 'a')).toHaveLength(2);
    expect(await stored(svc, q, 'b')).toHaveLength(3);
  });

  it('the retry of a push whose offsets were taken but whose segment failed stores it', async () => {
    const two = twoStep(storage);
    const svc = testServices(two.storage, { config: { gapCloseMs: GAP_MS } });
    const q = 'ps-failed';
    const stamp = { producerId: 'prod.0', sequence: 3 };
    two.failNext();
    await expect(svc.pushes.push(items(q, 2), { stamp })).rejects.toBeInstanceOf(StoreUnavailableError);
    // Its offsets 0..1 were closed with a skip; the retry stores at new ones.
    const retry = await svc.pushes.push(items(q, 2), { stamp });
    expect(retry.map((r) => [r.status, r.offset])).toEqual([
      ['queued', 2],
      ['queued', 3],
    ]);
    expect(answer(await svc.pushes.push(items(q, 2), { stamp }))).toEqual(answer(retry));
    expect(await stored(svc, q)).toEqual([
      [2, '{"i":0}'],
      [3, '{"i":1}'],
    ]);
  });

  it('a retry while the first attempt is still writing is told to retry later, then answered as the first', async () => {
    const two = twoStep(storage);
    const svc = testServices(two.storage, { config: { gapCloseMs: GAP_MS } });
    const q = 'ps-inflight';
    await svc.pushes.push(items(q, 1));
    const stamp = { producerId: 'prod.0', sequence: 0 };
    const release = two.hold();
    const first = svc.pushes.push(items(q, 2), { stamp });
    const part = (await svc.queues.getPartition(q, 'Default'))!;
    for (let i = 0; i < 200 && (await storage.items.get('log', logKeys.sequencer(part.id)))?.ver !== 3; i++)
      await new Promise((r) => setTimeout(r, 5));
    const retry = await testServices(storage, { config: { gapCloseMs: GAP_MS } })
      .pushes.push(items(q, 2), { stamp })
      .catch((e: unknown) => e);
    expect(retry).toMatchObject({ code: 'unavailable' });
    release();
    const firstAnswer = await first;
    expect(firstAnswer.map((r) => r.offset)).toEqual([1, 2]);
    expect(answer(await svc.pushes.push(items(q, 2), { stamp }))).toEqual(answer(firstAnswer));
    expect(await stored(svc, q)).toHaveLength(3);
  });

  it('a retry after its first attempt died between take and write closes the range and stores; the late writer then answers as the retry', async () => {
    const two = twoStep(storage);
    const clock = new TestClock();
    const slow = testServices(two.storage, { clock, config: { gapCloseMs: GAP_MS } });
    const svc = testServices(storage, { clock, config: { gapCloseMs: GAP_MS } });
    const q = 'ps-dead';
    const stamp = { producerId: 'prod.0', sequence: 0 };
    const release = two.hold();
    const late = slow.pushes.push(items(q, 2), { stamp });
    await slow.queues.ensureQueue(q);
    for (let i = 0; i < 200; i++) {
      const part = await svc.queues.getPartition(q, 'Default');
      if (part && (await storage.items.get('log', logKeys.sequencer(part.id)))?.ver === 2) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    clock.advance(GAP_MS + 1);
    const retry = await svc.pushes.push(items(q, 2), { stamp });
    expect(retry.map((r) => [r.status, r.offset])).toEqual([
      ['queued', 2],
      ['queued', 3],
    ]);
    release();
    expect(answer(await late)).toEqual(answer(retry));
    expect(await stored(svc, q)).toEqual([
      [2, '{"i":0}'],
      [3, '{"i":1}'],
    ]);
  });

  it('a retry closes only the offsets its dead first attempt took (repeated transactionIds take none)', async () => {
    const two = twoStep(storage);
    const clock = new TestClock();
    const slow = testServices(two.storage, { clock, config: { gapCloseMs: GAP_MS } });
    const svc = testServices(storage, { clock, config: { gapCloseMs: GAP_MS } });
    const q = 'ps-dead-dups';
    const three = ['a', 'a', 'b'].map((t, i) => ({ queue: q, payload: json({ i }), transactionId: t }));
    const stamp = { producerId: 'prod.0', sequence: 0 };
    const release = two.hold();
    const late = slow.pushes.push(three, { stamp });
    for (let i = 0; i < 200; i++) {
      const part = await svc.queues.getPartition(q, 'Default');
      if (part && (await storage.items.get('log', logKeys.sequencer(part.id)))?.ver === 2) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    // Another producer's push lands right after the dead range.
    expect((await svc.pushes.push(items(q, 1)))[0]?.offset).toBe(2);
    clock.advance(GAP_MS + 1);
    const retry = await svc.pushes.push(three, { stamp });
    expect(retry.map((r) => [r.status, r.offset])).toEqual([
      ['queued', 3],
      ['duplicate', undefined],
      ['queued', 4],
    ]);
    release();
    expect(answer(await late)).toEqual(answer(retry));
    expect(await stored(svc, q)).toEqual([
      [2, '{"i":0}'],
      [3, '{"i":0}'],
      [4, '{"i":2}'],
    ]);
  });

  it('concurrent repeats of one stamp from many instances store it once and all answer alike', async () => {
    const q = 'ps-race';
    const svcs = Array.from({ length: 6 }, () => testServices(storage));
    await svcs[0]!.queues.ensurePartition(await svcs[0]!.queues.ensureQueue(q), 'Default');
    const stamp = { producerId: 'prod.0', sequence: 0 };
    const got = await Promise.allSettled(svcs.map((s) => s.pushes.push(items(q, 4), { stamp })));
    const ok = got.flatMap((g) => (g.status === 'fulfilled' ? [answer(g.value)] : []));
    // A repeat that found the first still writing may be told to retry; none stores again.
    const refused = got.flatMap((g) => (g.status === 'rejected' ? [(g.reason as SluiceError).code] : []));
    expect(refused.every((c) => c === 'unavailable')).toBe(true);
    expect(ok.length).toBeGreaterThan(0);
    expect(new Set(ok.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(await stored(svcs[0]!, q)).toHaveLength(4);
  });
});
