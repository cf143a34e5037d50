// Queue options that act (ttl, retryDelay: only when the client set them), PATCH of some
// options, and pops by namespace/task, on both storage backends. Time is moved by hand.
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { SluiceError } from '../../server/core/errors.js';
import { QUEUE_MODE_GROUP } from '../../server/core/names.js';
import { QueueOptionsInput, explicitOptionNames, resolveQueueOptions } from '../../server/core/queue-options.js';
import { decodeCursor, leaseKeys } from '../../server/service/leases/lease-store.js';
import {
  CONFIG_LOOK_MS,
  PREPARE_PER_POP,
  REPAIR_EVERY_MS,
  SelectorWork,
} from '../../server/service/leases/selector-work.js';
import { logKeys, queueMatchPk } from '../../server/service/log/log-store.js';
import type { MatchingPopRequest } from '../../server/service/leases/namespace-pop.js';
import type { PopRequest, PopResult } from '../../server/service/leases/pop.js';
import type { MemoryTelemetry } from '../../server/service/telemetry.js';
import type { Services } from '../../server/service/runtime.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { TestClock, json, testServices, text } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const req = (queue: string, over: Partial<PopRequest> = {}): PopRequest => ({
  queue,
  group: QUEUE_MODE_GROUP,
  batch: 100,
  partitions: 1,
  autoAck: false,
  wait: false,
  timeoutMs: 0,
  ...over,
});
const matchReq = (over: Partial<MatchingPopRequest> = {}): MatchingPopRequest => ({
  group: QUEUE_MODE_GROUP,
  batch: 100,
  partitions: 1,
  autoAck: false,
  wait: false,
  timeoutMs: 0,
  allowed: () => true,
  ...over,
});

/** `/configure` as the handler does it: the body's options over the defaults, and which it set. */
async function configure(
  svc: Services,
  queue: string,
  raw: unknown,
  extra: { namespace?: string; task?: string } = {},
) {
  const input = QueueOptionsInput.parse(raw);
  return svc.queues.configure({
    queue,
    ...extra,
    options: resolveQueueOptions(input),
    explicit: explicitOptionNames(input),
  });
}

const ack = (svc: Services, r: PopResult, status: 'completed' | 'failed') =>
  svc.leaseAcks.ack(
    r.messages.map((m, index) => ({
      index,
      partitionId: m.partitionId,
      transactionId: m.transactionId,
      status,
      leaseId: r.leaseId,
    })),
    r.group,
  );
const payloads = (r: PopResult | null) => r?.messages.map((m) => text(m.payload)) ?? [];

describe.each(backends)('integration: queue options on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it("ttl left out (Queen's default 3600 echoed) drops nothing: a two-hour-old message is delivered", async () => {
    const svc = testServices(storage);
    const { queue } = await configure(svc, 'ttl-default', { leaseTime: 30 });
    expect(queue.options.ttl).toBe(3600);
    expect(queue.explicit).toEqual(['leaseTime']);
    await svc.pushes.push([{ queue: 'ttl-default', payload: json('old') }]);
    svc.testClock.advance(2 * 3600_000);
    expect(payloads(await svc.leasePops.pop(req('ttl-default')))).toEqual(['"old"']);
  });

  it('an explicit ttl: older unconsumed messages are not delivered, and are counted per group', async () => {
    const svc = testServices(storage);
    await configure(svc, 'ttl-set', { ttl: 60 });
    await svc.pushes.push([
      { queue: 'ttl-set', payload: json('a') },
      { queue: 'ttl-set', payload: json('b') },
    ]);
    svc.testClock.advance(30_000);
    await svc.pushes.push([{ queue: 'ttl-set', payload: json('fresh') }]);
    svc.testClock.advance(30_000); // a and b are now exactly 60 s old
    const r = await svc.leasePops.answer(req('ttl-set', { group: 'g1' }));
    expect(payloads(r.result)).toEqual(['"fresh"']);
    expect([...r.expired]).toEqual([['ttl-set', 2]]);
    expect((svc.telemetry as MemoryTelemetry).counters.get('MessagesExpired')).toBe(2);
    const row = await storage.items.get('leases', leaseKeys.cursor(r.result!.partitions[0]!.id, 'g1'));
    expect(decodeCursor(row!).expired).toBe(2);
    // Another group skips them too, and counts its own.
    const r2 = await svc.leasePops.answer(req('ttl-set', { group: 'g2' }));
    expect(payloads(r2.result)).toEqual(['"fresh"']);
    expect(r2.expired.get('ttl-set')).toBe(2);
    // A leased message that outlives the ttl before it is finished is not redelivered.
    await ack(svc, r.result!, 'failed');
    svc.testClock.advance(60_000);
    const r3 = await svc.leasePops.answer(req('ttl-set', { group: 'g1' }));
    expect(r3.result).toBeNull();
    expect(r3.expired.get('ttl-set')).toBe(1);
  });

  it('an explicit retryDelay holds a failed or expired lane that long; the default 1000 does not', async () => {
    const svc = testServices(storage);
    await configure(svc, 'rd-set', { leaseTime: 10, retryDelay: 5000 });
    await svc.pushes.push([{ queue: 'rd-set', payload: json('m') }]);
    const first = await svc.leasePops.pop(req('rd-set'));
    await ack(svc, first!, 'failed');
    expect(await svc.leasePops.pop(req('rd-set'))).toBeNull();
    svc.testClock.advance(4_999);
    expect(await svc.leasePops.pop(req('rd-set'))).toBeNull();
    svc.testClock.advance(1);
    const second = await svc.leasePops.pop(req('rd-set'));
    expect(payloads(second)).toEqual(['"m"']);
    // The lease expires at 10 s; redelivery waits until 15 s.
    svc.testClock.advance(10_000);
    expect(await svc.leasePops.pop(req('rd-set'))).toBeNull();
    svc.testClock.advance(5_000);
    expect(payloads(await svc.leasePops.pop(req('rd-set')))).toEqual(['"m"']);

    await configure(svc, 'rd-default', { leaseTime: 10 });
    await svc.pushes.push([{ queue: 'rd-default', payload: json('n') }]);
    const r = await svc.leasePops.pop(req('rd-default'));
    await ack(svc, r!, 'failed');
    expect(payloads(await svc.leasePops.pop(req('rd-default')))).toEqual(['"n"']);
  });

  it('PATCH changes only the named options, keeps the rest, and makes ttl apply; unknown queue is not_found', async () => {
    const svc = testServices(storage);
    await configure(svc, 'patched', { leaseTime: 30, retryLimit: 7 }, { namespace: 'ns-p' });
    await svc.pushes.push([{ queue: 'patched', payload: json('x') }]);
    svc.testClock.advance(120_000);
    const q = await svc.queues.patch('patched', { options: { ttl: 60 } });
    expect(q.options).toMatchObject({ leaseTime: 30, retryLimit: 7, ttl: 60 });
    expect(q.explicit).toEqual(['leaseTime', 'retryLimit', 'ttl']);
    expect(q.namespace).toBe('ns-p');
    expect((await svc.leasePops.answer(req('patched'))).expired.get('patched')).toBe(1);
    await expect(svc.queues.patch('no-such-queue', { options: { ttl: 1 } })).rejects.toMatchObject({
      code: 'not_found',
    });
    // Validated before the write: nothing changes.
    await expect(svc.queues.patch('patched', { options: { visibilityTimeoutMs: 50_000_000 } })).rejects.toBeInstanceOf(
      SluiceError,
    );
    await expect(svc.queues.patch('patched', { options: { maxVisibilityMs: 1 } })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect((await svc.queues.getQueue('patched', { fresh: true }))?.options.maxVisibilityMs).toBe(43_200_000);
  });

  it('maxSize is exact under concurrency: 60 pushes racing from three processes store exactly maxSize messages', async () => {
    const procs = [testServices(storage), testServices(storage), testServices(storage)];
    await configure(procs[0]!, 'bounded', { maxSize: 20 });
    const got = await Promise.allSettled(
      procs.flatMap((svc, p) =>
        Array.from({ length: 20 }, (_, i) => svc.pushes.push([{ queue: 'bounded', payload: json(`${p}-${i}`) }])),
      ),
    );
    const ok = got.filter((g) => g.status === 'fulfilled');
    const refused = got.flatMap((g) => (g.status === 'rejected' ? [g.reason as { code?: string }] : []));
    expect(refused.map((e) => e.code)).toEqual(Array.from({ length: 40 }, () => 'queue_full'));
    expect(ok).toHaveLength(20);
    const all = await procs[0]!.leasePops.pop(req('bounded', { batch: 1000, autoAck: true }));
    expect(all?.messages).toHaveLength(20);
    // Consumed: room again, exactly as much.
    const again = await Promise.allSettled(
      procs.flatMap((svc) =>
        Array.from({ length: 4 }, () =>
          svc.pushes.push([1, 2, 3].map((i) => ({ queue: 'bounded', payload: json(i) }))),
        ),
      ),
    );
    const stored = again.filter((g) => g.status === 'fulfilled').length * 3;
    expect(stored).toBeLessThanOrEqual(20);
    expect(stored).toBeGreaterThanOrEqual(18); // 6 pushes of 3 fit; a seventh would not
    const rest = await procs[1]!.leasePops.pop(req('bounded', { batch: 1000, autoAck: true }));
    expect(rest?.messages).toHaveLength(stored);
  });

  it('maxSize counts offsets taken but not yet written: a slow push below the oldest segment still holds its place', async () => {
    const svc = testServices(storage);
    await configure(svc, 'bounded-slow', { maxSize: 2 });
    const part = await svc.queues.ensurePartition((await svc.queues.getQueue('bounded-slow'))!, 'Default');
    // A push that took offset 0 and has not written it yet (on AWS a take and its write are two requests).
    await storage.items.take('log', logKeys.sequencer(part.id), 1);
    await svc.pushes.push([{ queue: 'bounded-slow', payload: json('second') }]);
    // Offset 0 (in flight) and 1 hold the two places: the oldest written segment (1) is not the floor.
    await expect(svc.pushes.push([{ queue: 'bounded-slow', payload: json('third') }])).rejects.toMatchObject({
      code: 'queue_full',
    });
  });

  /**
   * One leased source message per transaction to ack (each in its own partition), so that which
   * transactions applied their acks shows in what the source redelivers once the leases expire.
   */
  async function leasedSources(svc: Services, queue: string, n: number) {
    await configure(svc, queue, { leaseTime: 30 });
    await svc.pushes.push(Array.from({ length: n }, (_, i) => ({ queue, partition: `p${i}`, payload: json(i) })));
    const out = [];
    for (let i = 0; i < n; i++) {
      const r = await svc.leasePops.pop(req(queue, { partition: `p${i}`, group: 'g', batch: 1 }));
      out.push(r!.messages[0]!);
    }
    return out;
  }
  /** The source messages delivered again after the leases expired: those whose ack was not applied. */
  async function redelivered(svc: Services & { testClock: { advance(ms: number): void } }, queue: string, n: number) {
    svc.testClock.advance(31_000);
    const again = await svc.leasePops.pop(req(queue, { group: 'g', batch: n, partitions: n }));
    return (again?.messages.map((m) => text(m.payload)) ?? []).sort();
  }
  const txPushAck = (
    svc: Services,
    queue: string,
    items: number,
    src: { partitionId: string; transactionId: string },
    tag: number,
  ) =>
    svc.transactions.run([
      { type: 'push', items: Array.from({ length: items }, (_, j) => ({ queue, payload: json(`tx-${tag}-${j}`) })) },
      {
        type: 'ack',
        partitionId: src.partitionId,
        transactionId: src.transactionId,
        consumerGroup: 'g',
        status: 'completed',
      },
    ]);

  it('maxSize is exact for transactions too: 16 racing from two processes store maxSize, refused ones apply no ack', async () => {
    const procs = [testServices(storage), testServices(storage)];
    await configure(procs[0]!, 'tx-bounded', { maxSize: 6 });
    const src = await leasedSources(procs[0]!, 'tx-bounded-src', 16);
    const got = await Promise.allSettled(src.map((m, i) => txPushAck(procs[i % 2]!, 'tx-bounded', 1, m, i)));
    const ok = got.flatMap((g, i) => (g.status === 'fulfilled' && g.value.success ? [i] : []));
    const refused = got.flatMap((g, i) => (g.status === 'rejected' ? [i] : []));
    expect(
      refused.map((i) => (got[i] as PromiseRejectedResult).reason as { code?: string }).map((e) => e.code),
    ).toEqual(Array.from({ length: 10 }, () => 'queue_full'));
    expect(ok).toHaveLength(6);
    const all = await procs[1]!.leasePops.pop(req('tx-bounded', { batch: 1000, autoAck: true }));
    expect(all?.messages).toHaveLength(6);
    // A refused transaction changed nothing: exactly the refused ones' source messages come back.
    expect(await redelivered(procs[0]!, 'tx-bounded-src', 16)).toEqual(refused.map(String).sort());
  });

  it('maxSize is exact for transactions racing plain pushes: never more stored, a refused transaction applies no ack', async () => {
    const procs = [testServices(storage), testServices(storage)];
    await configure(procs[0]!, 'tx-mixed', { maxSize: 10 });
    const src = await leasedSources(procs[0]!, 'tx-mixed-src', 8);
    const txRuns = src.map((m, i) => txPushAck(procs[i % 2]!, 'tx-mixed', 2, m, i));
    const plain = Array.from({ length: 8 }, (_, i) =>
      procs[(i + 1) % 2]!.pushes.push([{ queue: 'tx-mixed', payload: json(`plain-${i}`) }]),
    );
    const [txs, pushes] = await Promise.all([Promise.allSettled(txRuns), Promise.allSettled(plain)]);
    const okTx = txs.flatMap((g, i) => (g.status === 'fulfilled' && g.value.success ? [i] : []));
    const refusedTx = txs.flatMap((g, i) => (g.status === 'rejected' ? [i] : []));
    const okPushes = pushes.filter((g) => g.status === 'fulfilled').length;
    const codes = [...txs, ...pushes].flatMap((g) =>
      g.status === 'rejected' ? [(g.reason as { code?: string }).code] : [],
    );
    expect(new Set(codes)).toEqual(new Set(['queue_full']));
    expect(okTx.length + refusedTx.length).toBe(8);
    const stored = okTx.length * 2 + okPushes;
    expect(stored).toBeLessThanOrEqual(10);
    expect(stored).toBeGreaterThanOrEqual(9); // a 2-message transaction may not fit the last place
    const all = await procs[1]!.leasePops.pop(req('tx-mixed', { batch: 1000, autoAck: true }));
    expect(all?.messages).toHaveLength(stored);
    expect(await redelivered(procs[0]!, 'tx-mixed-src', 8)).toEqual(refusedTx.map(String).sort());
  });

  it('a transaction refused by maxSize writes nothing: no other target created, its blob not uploaded, its ack not applied', async () => {
    const svc = testServices(storage);
    await configure(svc, 'tx-full', { maxSize: 1 });
    await svc.pushes.push([{ queue: 'tx-full', payload: json('first') }]);
    const [src] = await leasedSources(svc, 'tx-full-src', 1);
    const big = json('x'.repeat(20_000)); // past inlineMaxBytes: its segment would go to a blob first
    const blobs = async () => (await storage.blobs.list('', { limit: 1000 })).blobs.map((b) => b.key);
    const blobsBefore = await blobs();
    await expect(
      svc.transactions.run([
        { type: 'push', items: [{ queue: 'tx-full-other', partition: 'new', payload: big }] },
        { type: 'push', items: [{ queue: 'tx-full', payload: json('second') }] },
        { type: 'ack', partitionId: src!.partitionId, transactionId: src!.transactionId, consumerGroup: 'g' },
      ]),
    ).rejects.toMatchObject({ code: 'queue_full' });
    expect(await svc.queues.getQueue('tx-full-other', { fresh: true })).toBeUndefined();
    expect(await blobs()).toEqual(blobsBefore);
    expect(await redelivered(svc, 'tx-full-src', 1)).toEqual(['0']);
  });

  it('a namespace/task pop leases from exactly one queue: the highest priority with work, equals in turn', async () => {
    const svc = testServices(storage);
    await configure(svc, 'shop-low', { priority: 1 }, { namespace: 'shop', task: 'bill' });
    await configure(svc, 'shop-a', { priority: 5 }, { namespace: 'shop', task: 'bill' });
    await configure(svc, 'shop-b', { priority: 5 }, { namespace: 'shop', task: 'ship' });
    await configure(svc, 'other', { priority: 9 }, { namespace: 'elsewhere', task: 'bill' });
    for (const q of ['shop-low', 'shop-a', 'shop-b', 'other'])
      await svc.pushes.push([1, 2].map((i) => ({ queue: q, payload: json(`${q}-${i}`) })));

    const served: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = (await svc.matchingPops.answer(matchReq({ namespace: 'shop', batch: 1 }))).result!;
      expect(new Set(r.messages.map((m) => m.partitionId)).size).toBe(1);
      served.push(r.queue);
    }
    // Priority 5 first, then 1 once both priority-5 lanes are leased; then every lane is busy.
    expect(served.slice(0, 2).sort()).toEqual(['shop-a', 'shop-b']);
    expect(served[2]).toBe('shop-low');
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'shop', batch: 1 }))).result).toBeNull();
    // Task only / both.
    const byTask = await svc.matchingPops.answer(matchReq({ task: 'bill' }));
    expect(byTask.result?.queue).toBe('other');
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'shop', task: 'ship' }))).result).toBeNull();
    // A caller that may not consume a queue never gets it.
    const only = await svc.matchingPops.answer(
      matchReq({ namespace: 'shop', group: 'g2', allowed: (q) => q === 'shop-low' }),
    );
    expect(only.result?.queue).toBe('shop-low');
  });

  it('a namespace pop passes over a queue where its group name is a record-claim group', async () => {
    const svc = testServices(storage);
    await configure(svc, 'mixed-claims', { priority: 9 }, { namespace: 'mixed' });
    await configure(svc, 'mixed-leases', { priority: 1 }, { namespace: 'mixed' });
    for (const q of ['mixed-claims', 'mixed-leases']) await svc.pushes.push([{ queue: q, payload: json(q) }]);
    await svc.claims.create('mixed-claims', 'Default', 'workers', 'earliest');
    const r = await svc.matchingPops.answer(matchReq({ namespace: 'mixed', group: 'workers', batch: 1 }));
    expect(r.result?.queue).toBe('mixed-leases');
    // Nothing left for the lease group: an empty answer, not a conflict.
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'mixed', group: 'workers' }))).result).toBeNull();
  });

  it('what a namespace pop costs does not grow with the idle queues it matches', async () => {
    // The work index reuses its page for 250 ms of process time (WORK_CACHE_MS): on a loaded CI
    // machine back-to-back pops came further apart and read the index again. A process clock of
    // 1 ms per reading measures them as back-to-back, as a pop loop on a warm instance is.
    let ticks = 0;
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => ++ticks);
    onTestFinished(() => clock.mockRestore());
    let n = 0;
    const i = storage.items;
    const counting: Storage = {
      ...storage,
      items: {
        ...i,
        get: (t, k) => (n++, i.get(t, k)),
        getMany: (t, ks) => (n++, i.getMany(t, ks)),
        query: (t, pk, o) => (n++, i.query(t, pk, o)),
        put: (t, it, c) => (n++, i.put(t, it, c)),
        delete: (t, k, c) => (n++, i.delete(t, k, c)),
        transact: (ops) => (n++, i.transact(ops)),
      },
    };
    /** Requests per pop with `idle` empty queues ranked ahead of the one with work, and per empty pop. */
    const measure = async (ns: string, idle: number) => {
      const svc = testServices(counting, { config: { queueCacheMs: 60_000 } });
      for (let k = 0; k < idle; k++) await configure(svc, `${ns}-idle-${k}`, { priority: 5 }, { namespace: ns });
      await configure(svc, `${ns}-work`, { priority: 1 }, { namespace: ns });
      const warm = Math.ceil((idle + 1) / PREPARE_PER_POP);
      await svc.pushes.push(Array.from({ length: warm + 2 }, (_, x) => ({ queue: `${ns}-work`, payload: json(x) })));
      const pop = () => svc.matchingPops.answer(matchReq({ namespace: ns, group: 'cg', batch: 1, autoAck: true }));
      svc.testClock.advance(60_000); // past the configures' settling
      // The group's first pops prepare it on every matching queue, a page per pop (once).
      for (let k = 0; k < warm; k++) expect((await pop()).result?.queue).toBe(`${ns}-work`);
      n = 0;
      expect((await pop()).result?.queue).toBe(`${ns}-work`);
      const withWork = n;
      expect((await pop()).result?.queue).toBe(`${ns}-work`); // the last message
      n = 0;
      expect((await pop()).result).toBeNull(); // finds the partition drained and clears its work item
      const drained = n;
      expect((await pop()).result).toBeNull(); // finds the queue's work index empty: its selector item goes
      n = 0;
      expect((await pop()).result).toBeNull();
      return { withWork, drained, idle: n };
    };
    const few = await measure('cost-few', 2);
    const many = await measure('cost-many', 40);
    // Documented in docs/LEASES.md ("Cost per pop on AWS").
    expect(many.withWork).toBe(few.withWork);
    expect(many.withWork).toBeLessThanOrEqual(5);
    expect(Math.max(many.drained, few.drained)).toBeLessThanOrEqual(10); // the clear's reads and transaction
    expect(many.idle).toBe(few.idle);
    expect(many.idle).toBeLessThanOrEqual(1); // one query of the selector's index
  });

  it("a group's first namespace pop finds the history of a queue other groups have drained", async () => {
    const svc = testServices(storage);
    await configure(svc, 'hist-a', {}, { namespace: 'hist' });
    await configure(svc, 'hist-b', {}, { namespace: 'hist' });
    await svc.pushes.push([1, 2].map((x) => ({ queue: 'hist-a', payload: json(`a${x}`) })));
    // One group drains hist-a: its work item and selector item go.
    for (let k = 0; k < 3; k++)
      await svc.matchingPops.answer(matchReq({ namespace: 'hist', group: 'first', autoAck: true }));
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'hist', group: 'first' }))).result).toBeNull();
    const r = await svc.matchingPops.answer(matchReq({ namespace: 'hist', group: 'later', autoAck: true }));
    expect(r.result?.queue).toBe('hist-a');
    expect(payloads(r.result)).toEqual(['"a1"', '"a2"']);
  });

  it('a group deleted on a queue (its registration kept) re-reads that queue by namespace', async () => {
    const svc = testServices(storage);
    await configure(svc, 'again-1', {}, { namespace: 'again' });
    await svc.pushes.push([1, 2].map((x) => ({ queue: 'again-1', payload: json(`m${x}`) })));
    const popAll = async () => {
      const got: string[] = [];
      for (let k = 0; k < 4; k++)
        got.push(
          ...payloads(
            (await svc.matchingPops.answer(matchReq({ namespace: 'again', group: 'ag', autoAck: true }))).result,
          ),
        );
      return got;
    };
    expect(await popAll()).toEqual(['"m1"', '"m2"']);
    await svc.leaseGroups.delete('ag', { queue: 'again-1', deleteMetadata: false });
    expect(await popAll()).toEqual(['"m1"', '"m2"']);
  });

  it("a group's preparation is kept per caller: one whose grants leave a queue out does not hide it from another", async () => {
    const svc = testServices(storage);
    await configure(svc, 'per-q1', {}, { namespace: 'per' });
    await configure(svc, 'per-q2', {}, { namespace: 'per' });
    await svc.pushes.push([{ queue: 'per-q2', payload: json('hist') }]);
    // Another group drains per-q2: its work item and selector item go.
    for (let k = 0; k < 3; k++)
      await svc.matchingPops.answer(matchReq({ namespace: 'per', group: 'other', autoAck: true }));
    svc.testClock.advance(60_000);
    const asA = matchReq({
      namespace: 'per',
      group: 'pg',
      autoAck: true,
      principal: 'a',
      allowed: (q) => q === 'per-q1',
    });
    expect((await svc.matchingPops.answer(asA)).result).toBeNull();
    const asB = matchReq({ namespace: 'per', group: 'pg', autoAck: true, principal: 'b' });
    expect(payloads((await svc.matchingPops.answer(asB)).result)).toEqual(['"hist"']);
  });

  it('a group deleted on a queue while another process is preparing it there still re-reads that queue', async () => {
    const clock = new TestClock();
    // The second process's first put of the group's preparation waits until the delete is done.
    let release!: () => void;
    let reached!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const hit = new Promise<void>((r) => (reached = r));
    let armed = true;
    const gated: Storage = {
      ...storage,
      items: {
        ...storage.items,
        put: async (t, item, c) => {
          if (armed && t === 'leases' && item.sk.startsWith('G#rg#')) {
            armed = false;
            reached();
            await gate;
          }
          return storage.items.put(t, item, c);
        },
      },
    };
    const p1 = testServices(storage, { clock });
    const p2 = testServices(gated, { clock });
    await configure(p1, 'rs-q', {}, { namespace: 'rs' });
    await p1.pushes.push([1, 2].map((x) => ({ queue: 'rs-q', payload: json(`m${x}`) })));
    // rg reads both by the queue route; another group drains the queue by namespace.
    await p1.leasePops.pop(req('rs-q', { group: 'rg', autoAck: true }));
    for (let k = 0; k < 4; k++)
      await p1.matchingPops.answer(matchReq({ namespace: 'rs', group: 'other', autoAck: true }));
    clock.advance(60_000);
    const popping = p2.matchingPops.answer(matchReq({ namespace: 'rs', group: 'rg', autoAck: true }));
    await hit;
    await p1.leaseGroups.delete('rg', { queue: 'rs-q', deleteMetadata: false });
    release();
    expect((await popping).result).toBeNull();
    const got: string[] = [];
    for (let k = 0; k < 4; k++) {
      clock.advance(6_000); // past the processes' 5 s memory of the group's preparation
      for (const svc of [p1, p2])
        got.push(
          ...payloads(
            (await svc.matchingPops.answer(matchReq({ namespace: 'rs', group: 'rg', autoAck: true }))).result,
          ),
        );
    }
    expect(got).toEqual(['"m1"', '"m2"']);
  });

  it('a selector item lost to a crash after a commit is restored by the periodic pass', async () => {
    const svc = testServices(storage);
    await configure(svc, 'lost-1', {}, { namespace: 'lost' });
    svc.testClock.advance(60_000);
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'lost', group: 'lg' }))).result).toBeNull();
    await svc.pushes.push([{ queue: 'lost-1', payload: json('x') }]);
    // The push stopped between its commit and the selector put: no item names the queue.
    await storage.items.delete('leases', leaseKeys.selectorWork(queueMatchPk({ namespace: 'lost' }), 'lost-1'));
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'lost', group: 'lg' }))).result).toBeNull();
    svc.testClock.advance(REPAIR_EVERY_MS);
    const r = await svc.matchingPops.answer(matchReq({ namespace: 'lost', group: 'lg' }));
    expect(r.result?.queue).toBe('lost-1');
  });

  it('a queue configured into a namespace with messages already in it is found there', async () => {
    const svc = testServices(storage);
    await configure(svc, 'join-0', {}, { namespace: 'join' });
    svc.testClock.advance(60_000);
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'join', group: 'jg' }))).result).toBeNull();
    await configure(svc, 'join-1', {});
    await svc.pushes.push([{ queue: 'join-1', payload: json('before') }]);
    await svc.queues.patch('join-1', { namespace: 'join' });
    svc.testClock.advance(CONFIG_LOOK_MS); // how long pops take to hear of a configure
    const r = await svc.matchingPops.answer(matchReq({ namespace: 'join', group: 'jg' }));
    expect(r.result?.queue).toBe('join-1');
  });

  it('namespace pops racing pushes from two processes miss nothing: every message is delivered once', async () => {
    const clock = new TestClock();
    const procs = [testServices(storage, { clock }), testServices(storage, { clock })];
    const queues = ['race-a', 'race-b', 'race-c', 'race-d'];
    for (const q of queues) await configure(procs[0]!, q, {}, { namespace: 'race' });
    clock.advance(60_000);
    const pushed: string[] = [];
    const got: string[] = [];
    const pop = async (svc: Services): Promise<number> => {
      const r = await svc.matchingPops.answer(matchReq({ namespace: 'race', group: 'rg', batch: 5, autoAck: true }));
      got.push(...payloads(r.result));
      return r.result?.messages.length ?? 0;
    };
    let producing = true;
    const producers = procs.map(async (svc, p) => {
      for (let k = 0; k < 30; k++) {
        const body = `p${p}-${k}`;
        pushed.push(JSON.stringify(body));
        await svc.pushes.push([{ queue: queues[(k + p) % queues.length]!, payload: json(body) }]);
      }
    });
    const consumers = procs.map(async (svc) => {
      while (producing) await pop(svc);
    });
    await Promise.all(producers);
    producing = false;
    await Promise.all(consumers);
    // Whatever is left is found by later pops, in either process.
    for (let idle = 0; idle < 3;) idle = (await pop(procs[got.length % 2]!)) === 0 ? idle + 1 : 0;
    expect([...got].sort()).toEqual([...pushed].sort());
  });

  it('a pop that read a selector item before a push marked it again cannot remove it', async () => {
    const svc = testServices(storage);
    const selectors = new SelectorWork({ storage, queues: svc.queues, clock: svc.testClock.now });
    await configure(svc, 'guard-1', {}, { namespace: 'guard' });
    await svc.pushes.push([{ queue: 'guard-1', payload: json('first') }]);
    const before = await selectors.withWork({ namespace: 'guard' });
    expect(before.queues.map((q) => q.name)).toEqual(['guard-1']);
    // Drained and cleared meanwhile; then a push flips the partition and marks the queue again.
    await svc.matchingPops.answer(matchReq({ namespace: 'guard', group: 'gg', autoAck: true }));
    await svc.matchingPops.answer(matchReq({ namespace: 'guard', group: 'gg', autoAck: true }));
    await svc.pushes.push([{ queue: 'guard-1', payload: json('second') }]);
    await selectors.unmark({ namespace: 'guard' }, before.queues[0]!); // the stale reader's delete
    expect((await selectors.withWork({ namespace: 'guard' })).queues.map((q) => q.name)).toEqual(['guard-1']);
    const r = await svc.matchingPops.answer(matchReq({ namespace: 'guard', group: 'gg', autoAck: true }));
    expect(payloads(r.result)).toEqual(['"second"']);
  });

  it('round-robin among equal priorities serves each queue with work in turn', async () => {
    const svc = testServices(storage);
    for (const q of ['rr-a', 'rr-b', 'rr-c']) await configure(svc, q, {}, { namespace: 'rr' });
    for (const q of ['rr-a', 'rr-c']) await svc.pushes.push([1, 2, 3].map((i) => ({ queue: q, payload: json(i) })));
    const served: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = (await svc.matchingPops.answer(matchReq({ namespace: 'rr', batch: 1, autoAck: true }))).result!;
      served.push(r.queue);
    }
    expect(served).toEqual(['rr-a', 'rr-c', 'rr-a', 'rr-c']);
  });

  it('a queue moved out of the namespace, or deleted, is no longer popped (its index entry goes)', async () => {
    const svc = testServices(storage);
    await configure(svc, 'mv-1', {}, { namespace: 'mv' });
    await configure(svc, 'mv-2', {}, { namespace: 'mv' });
    await svc.pushes.push([
      { queue: 'mv-1', payload: json(1) },
      { queue: 'mv-2', payload: json(2) },
    ]);
    await svc.queues.patch('mv-1', { namespace: 'away' });
    await svc.deletion.deleteQueue('mv-2');
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'mv' }))).result).toBeNull();
    expect((await svc.matchingPops.answer(matchReq({ namespace: 'away' }))).result?.queue).toBe('mv-1');
    // mv-1's entry went with the PATCH, mv-2's with the pop that met it.
    expect(await svc.queues.matching({ namespace: 'mv' })).toEqual([]);
  });
});
