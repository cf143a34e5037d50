import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeSegment } from '../../server/codec/segment.js';
import { SluiceError } from '../../server/core/errors.js';
import { resolveQueueOptions } from '../../server/core/queue-options.js';
import { SEGMENT_BLOB_PREFIX, logKeys as keys, segmentBlobKey } from '../../server/service/log/log-store.js';
import type { Storage, WriteOp } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { json, testServices, text } from '../support/services.js';

/**
 * The storage as it is, except that `beforeCommit` runs just before every write that commits
 * a segment (after a large segment's blob is written): it may throw (a crash or a storage
 * error at that point) or do something else first (a sweeper running meanwhile).
 */
function interceptCommits(storage: Storage, beforeCommit: (ops: WriteOp[]) => Promise<void> | void): Storage {
  const inner = storage.items;
  const commitsSegment = (ops: WriteOp[]): boolean =>
    ops.some((o) => o.op === 'put' && o.table === 'log' && o.item.sk.startsWith('S#'));
  return {
    kind: storage.kind,
    blobs: storage.blobs,
    close: () => storage.close(),
    items: {
      get: (t, k) => inner.get(t, k),
      getMany: (t, k) => inner.getMany(t, k),
      query: (t, pk, o) => inner.query(t, pk, o),
      delete: (t, k, c) => inner.delete(t, k, c),
      writeEach: (ops) => inner.writeEach(ops),
      put: async (t, item, c) => {
        const op: WriteOp = { op: 'put', table: t, item, cond: c };
        if (commitsSegment([op])) await beforeCommit([op]);
        return inner.put(t, item, c);
      },
      transact: async (ops) => {
        if (commitsSegment(ops)) await beforeCommit(ops);
        return inner.transact(ops);
      },
      // A push commits its segment inside the take of its partition's offsets.
      take: async (t, k, n, then, o) => {
        if (k.pk.startsWith('SEQ#')) await beforeCommit([]);
        return inner.take(t, k, n, then, o);
      },
    },
  };
}

/** Every segment blob of a partition. */
async function segmentBlobs(storage: Storage, partitionId: string): Promise<string[]> {
  return (await storage.blobs.list(`${SEGMENT_BLOB_PREFIX}${partitionId}/`)).blobs.map((b) => b.key);
}

/** Resolves with `p`, or fails the test after `ms` (a push waiting on a reservation forever). */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)),
  );
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

describe.each(backends)('integration: the log on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('reads back 10,000 messages pushed in 100 batches across 5 partitions, byte-identical and in order', async () => {
    const svc = testServices(storage);
    const sent = new Map<string, string[]>();
    for (let b = 0; b < 100; b++) {
      const items = Array.from({ length: 100 }, (_, i) => {
        const n = b * 100 + i;
        const partition = `p${n % 5}`;
        // Payload text with unicode, escapes and number forms that a re-serialisation would change.
        const payloadText = `{"n":${n},"s":"\\u00e9 ✓ \\"q\\"","f":1.50,"e":1E3,"pad":"${'x'.repeat(n % 97)}"}`;
        const list = sent.get(partition) ?? [];
        list.push(payloadText);
        sent.set(partition, list);
        return { queue: 'bulk', partition, payload: Buffer.from(payloadText) };
      });
      const res = await svc.pushes.push(items);
      expect(res.every((r) => r.status === 'queued')).toBe(true);
    }
    for (const [partition, expected] of sent) {
      const part = await svc.queues.getPartition('bulk', partition);
      const got: string[] = [];
      let from = 0;
      for (;;) {
        const page = await svc.segments.read(part!.id, from, { maxCount: 700 });
        if (page.length === 0) break;
        page.forEach((m, i) => expect(m.offset).toBe(from + i));
        got.push(...page.map((m) => text(m.payload)));
        from += page.length;
      }
      expect(got).toEqual(expected);
    }
  });

  it('gives 20 concurrent pushers offsets 0..N-1 exactly once, each pusher in its own order', async () => {
    const svc = testServices(storage);
    const pushers = 20;
    const batches = 4;
    const perBatch = 3;
    await Promise.all(
      Array.from({ length: pushers }, async (_, p) => {
        // Separate service instances: separate tail hints, like separate Lambda instances.
        const own = testServices(storage);
        for (let b = 0; b < batches; b++) {
          const items = Array.from({ length: perBatch }, (_, i) => ({
            queue: 'race',
            payload: json({ p, seq: b * perBatch + i }),
          }));
          const res = await own.pushes.push(items);
          expect(res.map((r) => r.status)).toEqual(items.map(() => 'queued'));
          // A batch is one segment: its offsets are consecutive.
          const offs = res.map((r) => r.offset!);
          expect(offs).toEqual(offs.map((_, i) => offs[0]! + i));
        }
      }),
    );
    const part = await svc.queues.getPartition('race', 'Default');
    const all = await svc.segments.read(part!.id, 0, { maxCount: 10_000 });
    const total = pushers * batches * perBatch;
    expect(all.map((m) => m.offset)).toEqual(Array.from({ length: total }, (_, i) => i));
    const byPusher = new Map<number, number[]>();
    for (const m of all) {
      const v = JSON.parse(text(m.payload)) as { p: number; seq: number };
      byPusher.set(v.p, [...(byPusher.get(v.p) ?? []), v.seq]);
    }
    for (let p = 0; p < pushers; p++)
      expect(byPusher.get(p)).toEqual(Array.from({ length: batches * perBatch }, (_, i) => i));
    expect((await svc.segments.readTail(part!.id)).next).toBe(total);
  });

  it('reports repeated transactionIds as duplicate, across and within batches, and stores them once', async () => {
    const svc = testServices(storage);
    const first = await svc.pushes.push([
      { queue: 'dup', payload: json('a1'), transactionId: 'a' },
      { queue: 'dup', payload: json('b1'), transactionId: 'b' },
      { queue: 'dup', payload: json('a2'), transactionId: 'a' },
    ]);
    expect(first.map((r) => r.status)).toEqual(['queued', 'queued', 'duplicate']);
    expect(first[2]!.messageId).toBe(first[0]!.messageId);
    const second = await svc.pushes.push([
      { queue: 'dup', payload: json('b2'), transactionId: 'b' },
      { queue: 'dup', payload: json('c1'), transactionId: 'c' },
      { queue: 'dup', partition: 'other', payload: json('a-other'), transactionId: 'a' },
    ]);
    expect(second.map((r) => r.status)).toEqual(['duplicate', 'queued', 'queued']);
    expect(second[0]!.messageId).toBe(first[1]!.messageId);
    // Offsets: queued messages number on from the partition's tail; duplicates have none.
    expect(first.map((r) => r.offset)).toEqual([0, 1, undefined]);
    expect(second.map((r) => r.offset)).toEqual([undefined, 2, 0]);
    const mixed = await svc.pushes.push([
      { queue: 'dup', payload: json('a3'), transactionId: 'a' },
      { queue: 'dup', payload: json('d1'), transactionId: 'd' },
      { queue: 'dup', payload: json('d2'), transactionId: 'd' },
      { queue: 'dup', payload: json('e1') },
      { queue: 'dup', payload: json('c2'), transactionId: 'c' },
      { queue: 'dup', payload: json('f1'), transactionId: 'f' },
    ]);
    expect(mixed.map((r) => r.status)).toEqual(['duplicate', 'queued', 'duplicate', 'queued', 'duplicate', 'queued']);
    expect(mixed.map((r) => r.offset)).toEqual([undefined, 3, undefined, 4, undefined, 5]);
    const part = await svc.queues.getPartition('dup', 'Default');
    const all = await svc.segments.read(part!.id, 0, { maxCount: 100 });
    expect(all.map((m): unknown => JSON.parse(text(m.payload)))).toEqual(['a1', 'b1', 'c1', 'd1', 'e1', 'f1']);
    for (const r of mixed.filter((x) => x.status === 'queued')) expect(all[r.offset!]!.id).toBe(r.messageId);
    const found = await svc.messageLookup.findByTransactionId(part!.id, 'b');
    expect(found && text(found.payload)).toBe('"b1"');
  });

  it('checks every queue and partition name before it writes anything (a bad name after good ones)', async () => {
    const svc = testServices(storage);
    await expect(
      svc.pushes.push([
        { queue: 'names-ok', payload: json(1) },
        { queue: 'names-ok', partition: 'p1', payload: json(2) },
        { queue: 'names-ok', partition: 'a/b', payload: json(3) },
      ]),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await svc.queues.getPartition('names-ok', 'Default')).toBeUndefined();
    expect(await svc.queues.getPartition('names-ok', 'p1')).toBeUndefined();
  });

  it('lets exactly one of 8 concurrent pushes of one transactionId be queued', async () => {
    const results = await Promise.all(
      Array.from(
        { length: 8 },
        async (_, i) =>
          (await testServices(storage).pushes.push([{ queue: 'dup8', payload: json(i), transactionId: 'same' }]))[0]!,
      ),
    );
    expect(results.filter((r) => r.status === 'queued')).toHaveLength(1);
    const ids = new Set(results.map((r) => r.messageId));
    expect(ids.size).toBe(1);
    const svc = testServices(storage);
    const part = await svc.queues.getPartition('dup8', 'Default');
    expect(await svc.segments.read(part!.id, 0, { maxCount: 10 })).toHaveLength(1);
  });

  it('stores a repeat again once the dedup window has passed', async () => {
    const svc = testServices(storage);
    await svc.queues.configure({ queue: 'win', options: resolveQueueOptions({ dedupWindowSeconds: 10 }) });
    expect((await svc.pushes.push([{ queue: 'win', payload: json(1), transactionId: 't' }]))[0]!.status).toBe('queued');
    svc.testClock.advance(9_000);
    expect((await svc.pushes.push([{ queue: 'win', payload: json(2), transactionId: 't' }]))[0]!.status).toBe(
      'duplicate',
    );
    svc.testClock.advance(1_000);
    expect((await svc.pushes.push([{ queue: 'win', payload: json(3), transactionId: 't' }]))[0]!.status).toBe('queued');
  });

  it('with the window at 0 checks no earlier push, but still collapses repeats inside one push', async () => {
    const svc = testServices(storage);
    await svc.queues.configure({ queue: 'nodedup', options: resolveQueueOptions({ dedupWindowSeconds: 0 }) });
    const first = await svc.pushes.push([
      { queue: 'nodedup', payload: json(1), transactionId: 't' },
      { queue: 'nodedup', payload: json(2), transactionId: 't' },
    ]);
    expect(first.map((r) => r.status)).toEqual(['queued', 'duplicate']);
    const [again] = await svc.pushes.push([{ queue: 'nodedup', payload: json(3), transactionId: 't' }]);
    expect(again).toMatchObject({ status: 'queued', offset: 1 });
    // Nothing was reserved: dedup off costs no writes.
    expect(await storage.items.get('dedup', keys.dedup(again!.partitionId, 't'))).toBeUndefined();
  });

  it('takes over the reservation of a push that stalled before committing', async () => {
    const svc = testServices(storage);
    const q = await svc.queues.ensureQueue('stall');
    const part = await svc.queues.ensurePartition(q, 'Default');
    // A push reserved "t" and died before its commit: no marker was ever written.
    await storage.items.put(
      'dedup',
      { ...keys.dedup(part.id, 't'), ver: 1, attrs: { push: 'ghost', mid: 'ghost-m', at: svc.testClock.t } },
      { kind: 'absent' },
    );
    svc.testClock.advance(svc.config.pushStallMs);
    const [r] = await svc.pushes.push([{ queue: 'stall', payload: json('x'), transactionId: 't' }]);
    expect(r!.status).toBe('queued');
    const ghost = await storage.items.get('log', keys.marker(part.id, 'ghost'));
    expect(ghost?.attrs.state).toBe('aborted');
  });

  it('sweeps a blob a crashed push left before committing, never a committed one', async () => {
    const svc = testServices(storage, { config: { inlineMaxBytes: 64 } });
    const [r] = await svc.pushes.push([
      { queue: 'sweep', payload: json({ big: 'y'.repeat(5000), rnd: Math.random() }) },
    ]);
    expect(r!.status).toBe('queued');
    const orphanKey = segmentBlobKey(r!.partitionId, 'crashed-push');
    await storage.blobs.put(
      orphanKey,
      await encodeSegment([{ id: 'm', transactionId: 't', traceId: null, createdAt: 0, payload: json(1) }]),
    );
    // Young blobs are left alone: their push may still be in flight.
    let rep = await svc.segmentBlobs.sweepOrphanBlobs();
    expect(rep.deleted).toBe(0);
    expect(await storage.blobs.get(orphanKey)).toBeDefined();
    svc.testClock.t = Date.now() + svc.config.sweepGraceMs + 1000;
    rep = await svc.segmentBlobs.sweepOrphanBlobs();
    expect(rep.deleted).toBe(1);
    expect(await storage.blobs.get(orphanKey)).toBeUndefined();
    const [back] = await svc.segments.read(r!.partitionId, 0, { maxCount: 1 });
    expect((JSON.parse(text(back!.payload)) as { big: string }).big).toHaveLength(5000);
    // The committed segment really is a blob, and the sweep left it in place.
    const [seg] = await svc.segments.segmentsFrom(r!.partitionId, 0, 1);
    expect(seg?.blob).toBeDefined();
    expect(await segmentBlobs(storage, r!.partitionId)).toEqual([seg!.blob]);
    // The aborted marker fences the crashed push: it can never commit later.
    expect((await storage.items.get('log', keys.marker(r!.partitionId, 'crashed-push')))?.attrs.state).toBe('aborted');
  });
  it('keeps offsets dense and each pusher in order when pushers race through dedup (transactional commits)', async () => {
    const svc = testServices(storage);
    // Fewer than the 20 above: on the AWS backend every collision costs the emulator a
    // cancelled transaction.
    const pushers = 8;
    const batches = 2;
    const perBatch = 3;
    const results = await Promise.all(
      Array.from({ length: pushers }, async (_, p) => {
        const own = testServices(storage, { clock: svc.testClock });
        const statuses: string[] = [];
        for (let b = 0; b < batches; b++) {
          // Each batch repeats the previous batch's last transactionId: a duplicate across batches.
          const ids = Array.from({ length: perBatch }, (_, i) => `p${p}-${b * perBatch + i}`);
          if (b > 0) ids.unshift(`p${p}-${b * perBatch - 1}`);
          const res = await own.pushes.push(
            ids.map((id) => ({ queue: 'race-tx', payload: json({ p, id }), transactionId: id })),
          );
          statuses.push(...res.map((r) => r.status));
          const queued = res.filter((r) => r.status === 'queued').map((r) => r.offset!);
          expect(queued).toEqual(queued.map((_, i) => queued[0]! + i));
        }
        return statuses;
      }),
    );
    const expected = Array.from({ length: batches }, (_, b) => [
      ...(b > 0 ? ['duplicate'] : []),
      ...Array.from({ length: perBatch }, () => 'queued'),
    ]).flat();
    for (const st of results) expect(st).toEqual(expected);
    const part = await svc.queues.getPartition('race-tx', 'Default');
    const all = await svc.segments.read(part!.id, 0, { maxCount: 10_000 });
    const total = pushers * batches * perBatch;
    expect(all.map((m) => m.offset)).toEqual(Array.from({ length: total }, (_, i) => i));
    for (let p = 0; p < pushers; p++) {
      const mine = all
        .map((m) => JSON.parse(text(m.payload)) as { p: number; id: string })
        .filter((v) => v.p === p)
        .map((v) => v.id);
      expect(mine).toEqual(Array.from({ length: batches * perBatch }, (_, i) => `p${p}-${i}`));
    }
  });

  it('a push that crashes between its blob and its commit leaves only that blob, which the sweeper removes', async () => {
    let crash = false;
    const faulty = interceptCommits(storage, () => {
      if (crash) throw new Error('simulated crash before the commit');
    });
    const svc = testServices(faulty, { config: { inlineMaxBytes: 64 } });
    const big = (): Buffer => json({ r: randomBytes(600).toString('hex') });
    const [kept] = await svc.pushes.push([{ queue: 'crash', payload: big() }]);
    expect(kept!.status).toBe('queued');
    const keptBlobs = await segmentBlobs(storage, kept!.partitionId);
    expect(keptBlobs).toHaveLength(1);
    crash = true;
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const [lost] = await svc.pushes.push([{ queue: 'crash', payload: big() }]);
    vi.restoreAllMocks();
    crash = false;
    // Not acknowledged, and nothing of it readable.
    expect(lost!.status).toBe('failed');
    expect(lost!.error).not.toContain('simulated');
    expect(await svc.segments.read(kept!.partitionId, 0, { maxCount: 10 })).toHaveLength(1);
    const orphans = (await segmentBlobs(storage, kept!.partitionId)).filter((k) => !keptBlobs.includes(k));
    expect(orphans).toHaveLength(1);
    // Inside the grace period the sweeper keeps it (its push might still be running) ...
    await svc.segmentBlobs.sweepOrphanBlobs();
    expect(await segmentBlobs(storage, kept!.partitionId)).toHaveLength(2);
    // ... after it, only the orphan goes.
    svc.testClock.t = Date.now() + svc.config.sweepGraceMs + 1000;
    for (let wrapped = false; !wrapped;) wrapped = (await svc.segmentBlobs.sweepOrphanBlobs()).wrapped;
    expect(await segmentBlobs(storage, kept!.partitionId)).toEqual(keptBlobs);
    const back = await svc.segments.read(kept!.partitionId, 0, { maxCount: 10 });
    expect(back.map((m) => m.id)).toEqual([kept!.messageId]);
    // A retry stores it once, at the next offset.
    const [again] = await svc.pushes.push([{ queue: 'crash', payload: big() }]);
    expect(again).toMatchObject({ status: 'queued', offset: 1 });
  });

  it('a push whose blob was swept while it stalled never commits a segment without data', async () => {
    let sweptOnce = false;
    const sweeper: { svc?: ReturnType<typeof testServices> } = {};
    const racing = interceptCommits(storage, async () => {
      const s = sweeper.svc;
      if (sweptOnce || !s) return;
      sweptOnce = true;
      // The push stalled past the grace period between its blob and its commit.
      s.testClock.t = Date.now() + s.config.sweepGraceMs + 1000;
      for (let wrapped = false; !wrapped;) wrapped = (await s.segmentBlobs.sweepOrphanBlobs()).wrapped;
    });
    const svc = (sweeper.svc = testServices(racing, { config: { inlineMaxBytes: 64 } }));
    const payload = json({ r: randomBytes(600).toString('hex') });
    const [r] = await svc.pushes.push([{ queue: 'fenced', payload }]);
    expect(sweptOnce).toBe(true);
    // Offset 0, or 1 where the aborted attempt's offset stayed taken (AWS) and was closed.
    expect(r).toMatchObject({ status: 'queued' });
    expect(r!.offset).toBeLessThanOrEqual(1);
    const [m] = await svc.segments.read(r!.partitionId, 0, { maxCount: 10 });
    expect(m!.offset).toBe(r!.offset);
    expect(text(m!.payload)).toBe(text(payload));
    const [seg] = await svc.segments.segmentsFrom(r!.partitionId, r!.offset!, 1);
    expect(await segmentBlobs(storage, r!.partitionId)).toEqual([seg!.blob]);
  });

  it('a push that fails to commit frees its transactionIds at once and reveals no internals', async () => {
    let fail = true;
    const faulty = interceptCommits(storage, () => {
      if (fail) throw new Error('secret-internal-detail');
    });
    const svc = testServices(faulty);
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const [first] = await svc.pushes.push([{ queue: 'refail', payload: json(1), transactionId: 'once' }]);
    expect(log).toHaveBeenCalled();
    vi.restoreAllMocks();
    expect(first!.status).toBe('failed');
    expect(first!.error).toMatch(/refail\/Default/);
    expect(first!.error).not.toContain('secret');
    fail = false;
    // The clock does not move: without the failed push marking itself aborted, this retry
    // would wait out the stall budget on its reservation.
    const [retry] = await within(
      5_000,
      'the retry',
      svc.pushes.push([{ queue: 'refail', payload: json(2), transactionId: 'once' }]),
    );
    expect(retry).toMatchObject({ status: 'queued', offset: 0 });
    const [dup] = await svc.pushes.push([{ queue: 'refail', payload: json(3), transactionId: 'once' }]);
    expect(dup).toMatchObject({ status: 'duplicate', messageId: retry!.messageId });
  });

  it('reports a partition that fails after others committed per item, never as an error for the whole push', async () => {
    const svc = testServices(storage);
    svc.pushes.addCommitHook(({ partition }) => {
      if (partition.name === 'broken') throw new SluiceError('unavailable', 'simulated contention');
      return { ops: () => [] };
    });
    const res = await svc.pushes.push([
      { queue: 'partial', partition: 'fine', payload: json('a') },
      { queue: 'partial', partition: 'broken', payload: json('b') },
      { queue: 'partial', partition: 'fine', payload: json('c') },
    ]);
    expect(res.map((r) => r.status)).toEqual(['queued', 'failed', 'queued']);
    expect(res[1]!.error).toContain('simulated contention');
    const fine = await svc.queues.getPartition('partial', 'fine');
    expect((await svc.segments.read(fine!.id, 0, { maxCount: 10 })).map((m) => text(m.payload))).toEqual([
      '"a"',
      '"c"',
    ]);
    // With nothing committed, the domain error answers the whole push.
    await expect(svc.pushes.push([{ queue: 'partial', partition: 'broken', payload: json('d') }])).rejects.toThrow(
      /simulated contention/,
    );
    const broken = await svc.queues.getPartition('partial', 'broken');
    expect((await svc.segments.readTail(broken!.id)).next).toBe(0);
  });

  it("answers queued for a committed push even when a hook's after-commit work fails", async () => {
    const svc = testServices(storage);
    svc.pushes.addCommitHook(() => ({ ops: () => [], after: () => Promise.reject(new Error('after-commit boom')) }));
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const [r] = await svc.pushes.push([{ queue: 'after', payload: json(1), transactionId: 'after-1' }]);
    expect(log).toHaveBeenCalled();
    vi.restoreAllMocks();
    // Committed, so acknowledged: a 'failed' here would make the client store it again.
    expect(r).toMatchObject({ status: 'queued', offset: 0 });
    expect(await svc.segments.read(r!.partitionId, 0, { maxCount: 10 })).toHaveLength(1);
  });

  it('refuses a push that includes an encrypted queue it cannot seal before writing any of it', async () => {
    const withKey = testServices(storage, { config: { encryptionKey: randomBytes(32).toString('base64') } });
    await withKey.queues.configure({ queue: 'sealed', options: resolveQueueOptions({ encryptionEnabled: true }) });
    const noKey = testServices(storage);
    await expect(
      noKey.pushes.push([
        { queue: 'plain', payload: json(1) },
        { queue: 'sealed', payload: json(2) },
      ]),
    ).rejects.toMatchObject({ code: 'unavailable' });
    // Its queue and partition may exist (names are resolved first), but no message does, not
    // even a little later (a share still committing after the refusal would show up by then).
    await new Promise((r) => setTimeout(r, 200));
    const plain = await noKey.queues.getPartition('plain', 'Default');
    expect(plain ? (await noKey.segments.readTail(plain.id)).next : 0).toBe(0);
  });
});
