import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeSegment } from '../../lambdas/codec/segment.js';
import { keys, segmentBlobKey } from '../../lambdas/service/keys.js';
import type { Storage } from '../../lambdas/storage/port.js';
import { testBackends } from '../support/backends.js';
import { json, testServices, text } from '../support/services.js';

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
      const res = await svc.log.push(items);
      expect(res.every((r) => r.status === 'queued')).toBe(true);
    }
    for (const [partition, expected] of sent) {
      const part = await svc.log.getPartition('bulk', partition);
      const got: string[] = [];
      let from = 0;
      for (;;) {
        const page = await svc.log.read(part!.id, from, { maxCount: 700 });
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
          const items = Array.from({ length: perBatch }, (_, i) => ({ queue: 'race', payload: json({ p, seq: b * perBatch + i }) }));
          const res = await own.log.push(items);
          expect(res.map((r) => r.status)).toEqual(items.map(() => 'queued'));
          // A batch is one segment: its offsets are consecutive.
          const offs = res.map((r) => r.offset!);
          expect(offs).toEqual(offs.map((_, i) => offs[0]! + i));
        }
      }),
    );
    const part = await svc.log.getPartition('race', 'Default');
    const all = await svc.log.read(part!.id, 0, { maxCount: 10_000 });
    const total = pushers * batches * perBatch;
    expect(all.map((m) => m.offset)).toEqual(Array.from({ length: total }, (_, i) => i));
    const byPusher = new Map<number, number[]>();
    for (const m of all) {
      const v = JSON.parse(text(m.payload)) as { p: number; seq: number };
      byPusher.set(v.p, [...(byPusher.get(v.p) ?? []), v.seq]);
    }
    for (let p = 0; p < pushers; p++) expect(byPusher.get(p)).toEqual(Array.from({ length: batches * perBatch }, (_, i) => i));
    expect((await svc.log.readTail(part!.id)).next).toBe(total);
  });

  it('reports repeated transactionIds as duplicate, across and within batches, and stores them once', async () => {
    const svc = testServices(storage);
    const first = await svc.log.push([
      { queue: 'dup', payload: json('a1'), transactionId: 'a' },
      { queue: 'dup', payload: json('b1'), transactionId: 'b' },
      { queue: 'dup', payload: json('a2'), transactionId: 'a' },
    ]);
    expect(first.map((r) => r.status)).toEqual(['queued', 'queued', 'duplicate']);
    expect(first[2]!.messageId).toBe(first[0]!.messageId);
    const second = await svc.log.push([
      { queue: 'dup', payload: json('b2'), transactionId: 'b' },
      { queue: 'dup', payload: json('c1'), transactionId: 'c' },
      { queue: 'dup', partition: 'other', payload: json('a-other'), transactionId: 'a' },
    ]);
    expect(second.map((r) => r.status)).toEqual(['duplicate', 'queued', 'queued']);
    expect(second[0]!.messageId).toBe(first[1]!.messageId);
    const part = await svc.log.getPartition('dup', 'Default');
    const all = await svc.log.read(part!.id, 0, { maxCount: 100 });
    expect(all.map((m) => JSON.parse(text(m.payload)))).toEqual(['a1', 'b1', 'c1']);
    const found = await svc.log.findByTransactionId(part!.id, 'b');
    expect(found && text(found.payload)).toBe('"b1"');
  });

  it('lets exactly one of 8 concurrent pushes of one transactionId be queued', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => (await testServices(storage).log.push([{ queue: 'dup8', payload: json(i), transactionId: 'same' }]))[0]!),
    );
    expect(results.filter((r) => r.status === 'queued')).toHaveLength(1);
    const ids = new Set(results.map((r) => r.messageId));
    expect(ids.size).toBe(1);
    const svc = testServices(storage);
    const part = await svc.log.getPartition('dup8', 'Default');
    expect(await svc.log.read(part!.id, 0, { maxCount: 10 })).toHaveLength(1);
  });

  it('stores a repeat again once the dedup window has passed', async () => {
    const svc = testServices(storage);
    await svc.log.configure({ queue: 'win', options: { ...(await import('../../lambdas/core/queue-options.js')).resolveQueueOptions({ dedupWindowSeconds: 10 }) } });
    expect((await svc.log.push([{ queue: 'win', payload: json(1), transactionId: 't' }]))[0]!.status).toBe('queued');
    svc.testClock.advance(9_000);
    expect((await svc.log.push([{ queue: 'win', payload: json(2), transactionId: 't' }]))[0]!.status).toBe('duplicate');
    svc.testClock.advance(1_000);
    expect((await svc.log.push([{ queue: 'win', payload: json(3), transactionId: 't' }]))[0]!.status).toBe('queued');
  });

  it('takes over the reservation of a push that stalled before committing', async () => {
    const svc = testServices(storage);
    const q = await svc.log.ensureQueue('stall');
    const part = await svc.log.ensurePartition(q, 'Default');
    // A push reserved "t" and died before its commit: no marker was ever written.
    await storage.items.put('dedup', { ...keys.dedup(part.id, 't'), ver: 1, attrs: { push: 'ghost', mid: 'ghost-m', at: svc.testClock.t } }, { kind: 'absent' });
    svc.testClock.advance(svc.config.pushStallMs);
    const [r] = await svc.log.push([{ queue: 'stall', payload: json('x'), transactionId: 't' }]);
    expect(r!.status).toBe('queued');
    const ghost = await storage.items.get('log', keys.marker(part.id, 'ghost'));
    expect(ghost?.attrs.state).toBe('aborted');
  });

  it('sweeps a blob a crashed push left before committing, never a committed one', async () => {
    const svc = testServices(storage, { config: { inlineMaxBytes: 64 } });
    const [r] = await svc.log.push([{ queue: 'sweep', payload: json({ big: 'y'.repeat(5000), rnd: Math.random() }) }]);
    expect(r!.status).toBe('queued');
    const orphanKey = segmentBlobKey(r!.partitionId, 'crashed-push');
    await storage.blobs.put(orphanKey, await encodeSegment([{ id: 'm', transactionId: 't', traceId: null, createdAt: 0, payload: json(1) }]));
    // Young blobs are left alone: their push may still be in flight.
    let rep = await svc.log.sweepOrphanBlobs();
    expect(rep.deleted).toBe(0);
    expect(await storage.blobs.get(orphanKey)).toBeDefined();
    svc.testClock.t = Date.now() + svc.config.sweepGraceMs + 1000;
    rep = await svc.log.sweepOrphanBlobs();
    expect(rep.deleted).toBe(1);
    expect(await storage.blobs.get(orphanKey)).toBeUndefined();
    const [back] = await svc.log.read(r!.partitionId, 0, { maxCount: 1 });
    expect(JSON.parse(text(back!.payload)).big).toHaveLength(5000);
    // The aborted marker fences the crashed push: it can never commit later.
    expect((await storage.items.get('log', keys.marker(r!.partitionId, 'crashed-push')))?.attrs.state).toBe('aborted');
  });
});
