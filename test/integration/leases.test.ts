// The lease service over both storage backends: the work index keeps wildcard pops bounded,
// registrations racing pushes never lose a partition, transactions race pushes safely, and
// pops and acks cost a constant number of storage requests.
import { randomBytes } from 'node:crypto';
import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_MODE_GROUP } from '../../server/core/names.js';
import { resolveQueueOptions } from '../../server/core/queue-options.js';
import { KmsKeyProvider } from '../../server/service/adapters/kms-key-provider.js';
import {
  SEGMENT_BLOB_PREFIX,
  logKeys as keys,
  logKeys,
  parseSegmentBlobKey,
  skipSegmentItem,
} from '../../server/service/log/log-store.js';
import { DLQ_BLOB_PREFIX, dlqBlobKey, dlqKeys, parseDlqBlobKey } from '../../server/service/leases/dlq-store.js';
import type { PopRequest, PopResult } from '../../server/service/leases/pop.js';
import { leaseKeys } from '../../server/service/leases/lease-store.js';
import { WORK_FLAG } from '../../server/service/leases/work-index.js';
import { buildServices, type Services } from '../../server/service/runtime.js';
import { ContentionError, type ItemStore, type Storage } from '../../server/storage/port.js';
import type { MemoryTelemetry } from '../../server/service/telemetry.js';
import { firstCommittedAfter } from '../../server/service/log/seek-by-time.js';
import { loadConfig } from '../../server/config.js';
import { testBackends } from '../support/backends.js';
import { asFunction } from '../support/iam/recorder.js';
import { call, startTestServer } from '../support/http.js';
import type { ErrorReply } from '../support/replies.js';
import { newAwsTestStorage, TEST_REGION } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { json, TestClock, testServices, text } from '../support/services.js';
import { crashing, withItems } from '../support/storage.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

/** Counts storage requests the way the AWS adapter issues them. */
function counted(inner: Storage): { storage: Storage; n: () => number; reset: () => void } {
  let n = 0;
  const i = inner.items;
  const items: ItemStore = {
    get: (t, k) => (n++, i.get(t, k)),
    getMany: (t, ks) => ((n += Math.ceil(ks.length / 100)), i.getMany(t, ks)),
    query: (t, pk, o) => (n++, i.query(t, pk, o)),
    put: (t, it, c) => (n++, i.put(t, it, c)),
    delete: (t, k, c) => (n++, i.delete(t, k, c)),
    writeEach: (ops) => ((n += ops.length), i.writeEach(ops)),
    transact: (ops) => (n++, i.transact(ops)),
    take: (t, k, c, then, o) => (
      n++,
      i.take(
        t,
        k,
        c,
        then &&
          ((taken) => {
            const ops = then(taken);
            if (ops.length > 0) n++;
            return ops;
          }),
        o,
      )
    ),
  };
  const storage: Storage = { kind: inner.kind, items, blobs: inner.blobs, close: () => inner.close() };
  return { storage, n: () => n, reset: () => (n = 0) };
}

/**
 * Runs `inject` once, just before the first commit of a segment through this storage (a put
 * or transaction whose first op writes a `log` segment): a deterministic interleaving of a
 * concurrent writer, independent of the emulator's scheduling.
 */
function beforeFirstCommit(inner: Storage, inject: () => Promise<void>, opts: { atTake?: boolean } = {}): Storage {
  let armed = true;
  const fire = async (isSegment: boolean): Promise<void> => {
    if (armed && isSegment) {
      armed = false;
      await inject();
    }
  };
  return withItems(inner, {
    put: async (t, it, c) => {
      await fire(t === 'log' && it.sk.startsWith('S#'));
      return inner.items.put(t, it, c);
    },
    transact: async (ops) => {
      const first = ops[0];
      await fire(first?.op === 'put' && first.table === 'log' && first.item.sk.startsWith('S#'));
      return inner.items.transact(ops);
    },
    // With `atTake`: before the take a push commits inside (after whatever it read first).
    take: async (t, k, n, then, o) => {
      await fire(opts.atTake === true && k.pk.startsWith('SEQ#'));
      return inner.items.take(t, k, n, then, o);
    },
  });
}

/** Storage that runs `inject` once, just before the first write clearing a work item is sent. */
function beforeClear(inner: Storage, inject: () => Promise<void>): { storage: Storage; fired: () => boolean } {
  let fired = false;
  const storage = withItems(inner, {
    transact: async (ops) => {
      if (!fired && ops.some((op) => op.op === 'delete' && op.key.pk.startsWith('WORK#'))) {
        fired = true;
        await inject();
      }
      return inner.items.transact(ops);
    },
  });
  return { storage, fired: () => fired };
}

/** Pops and acks `n` messages by wildcard pops (no empty pop after: that could clear the partition). */
async function consume(svc: Services, queue: string, group: string, n: number): Promise<string[]> {
  const seen: string[] = [];
  while (seen.length < n) {
    const p = await svc.leasePops.pop(req(queue, { group }));
    if (!p) break;
    seen.push(...p.messages.map((m) => text(m.payload)));
    await ackAll(svc, p);
  }
  return seen;
}

/** Pops (and acks) everything the group can get by wildcard pops, in order. */
async function drainWildcard(svc: Services, queue: string, group: string): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; i < 20; i++) {
    const p = await svc.leasePops.pop(req(queue, { group }));
    if (!p) break;
    seen.push(...p.messages.map((m) => text(m.payload)));
    await ackAll(svc, p);
  }
  return seen;
}

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
const ackAll = (svc: Services, r: PopResult) =>
  svc.leaseAcks.ack(
    r.messages.map((m, index) => ({
      index,
      partitionId: m.partitionId,
      transactionId: m.transactionId,
      status: 'completed' as const,
      leaseId: r.leaseId,
    })),
    r.group,
  );

describe.each(backends)('integration: partition leases on $name', (backend) => {
  let inner: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage: inner, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('a wildcard pop over 10,000 idle partitions (100 on the emulator) and one with work costs the same few requests as over none', async () => {
    const c = counted(inner);
    const svc = testServices(c.storage, { config: { queueCacheMs: 60_000 } });
    // The group is registered before the partitions exist (so no registration scan is involved).
    const q = await svc.queues.ensureQueue('idle');
    expect(await svc.leasePops.pop(req('idle', { group: 'g' }))).toBeNull();
    // moto serves a few concurrent transactions at a time (~200 writes/s): create them 5 by 5,
    // and only 100 (idle partitions never enter the work index, so the count is what varies).
    const [idle, step] = backend.name === 'aws' ? [100, 5] : [10_000, 100];
    for (let i = 0; i < idle; i += step)
      await Promise.all(Array.from({ length: step }, (_, j) => svc.queues.ensurePartition(q, `idle-${i + j}`)));
    await svc.pushes.push([{ queue: 'idle', partition: 'busy', payload: json('work') }]);
    c.reset();
    const r = await svc.leasePops.pop(req('idle', { group: 'g' }));
    expect(r?.messages.map((m) => text(m.payload))).toEqual(['"work"']);
    const popRequests = c.n();
    expect(popRequests).toBeLessThanOrEqual(5);
    c.reset();
    await ackAll(svc, r!);
    expect(c.n()).toBe(2);
    c.reset();
    expect(await svc.leasePops.pop(req('idle', { group: 'g' }))).toBeNull();
    // Empty, and every group is past the end: the rows of the cached page, then the work query,
    // its rows and sequencers; the group list (version and registrations: cached after), the
    // partition's cursor rows and the one transaction that clears the item and the flag.
    expect(c.n()).toBeLessThanOrEqual(8);
    const busy = (await svc.queues.getPartition('idle', 'busy'))!;
    expect(await inner.items.get('leases', leaseKeys.work(q.queueId, busy.id))).toBeUndefined();
    expect((await inner.items.get('log', logKeys.sequencer(busy.id)))?.attrs[WORK_FLAG]).toBe(false);
    c.reset();
    expect(await svc.leasePops.pop(req('idle', { group: 'g' }))).toBeNull();
    expect(c.n()).toBe(1);
    // The next push finds the partition drained and marks it again; so does only that one.
    await svc.pushes.push([{ queue: 'idle', partition: 'busy', payload: json('more') }]);
    expect(await inner.items.get('leases', leaseKeys.work(q.queueId, busy.id))).toBeDefined();
    await inner.items.delete('leases', leaseKeys.work(q.queueId, busy.id));
    await svc.pushes.push([{ queue: 'idle', partition: 'busy', payload: json('again') }]);
    expect(await inner.items.get('leases', leaseKeys.work(q.queueId, busy.id))).toBeUndefined();
  });

  it('counts MessagesPushed for every push path (plain, transaction, replay), DuplicatesRejected and DeadLettered', async () => {
    const svc = testServices(inner);
    const t = svc.telemetry as MemoryTelemetry;
    await svc.pushes.push([
      { queue: 'metrics', payload: json(1), transactionId: 'm-1' },
      { queue: 'metrics', payload: json(1), transactionId: 'm-1' },
    ]);
    expect([t.counters.get('MessagesPushed'), t.counters.get('DuplicatesRejected')]).toEqual([1, 1]);
    await svc.transactions.run([
      {
        type: 'push',
        items: [
          { queue: 'metrics', payload: json(2) },
          { queue: 'metrics', payload: json(3) },
        ],
      },
    ]);
    expect(t.counters.get('MessagesPushed')).toBe(3);
    const r = await svc.leasePops.pop(req('metrics', { group: 'g', batch: 1 }));
    const m = r!.messages[0]!;
    await svc.leaseAcks.ack(
      [
        {
          index: 0,
          partitionId: m.partitionId,
          transactionId: m.transactionId,
          status: 'dlq',
          error: 'bad',
          leaseId: r!.leaseId,
        },
      ],
      'g',
    );
    expect(t.counters.get('DeadLettered')).toBe(1);
    await svc.dlq.retry(m.partitionId, m.transactionId);
    expect(t.counters.get('MessagesPushed')).toBe(4);
  });

  it('the dead-letter blob sweep removes payload blobs no filing points at, and keeps filed ones and older unguarded keys', async () => {
    const svc = testServices(inner);
    const big = json('x'.repeat(300 * 1024)); // over the 256 KiB kept inside the entry
    await svc.pushes.push([{ queue: 'dlqblob', payload: big, transactionId: 'db-1' }]);
    const r = await svc.leasePops.pop(req('dlqblob', { group: 'g', batch: 1 }));
    const m = r!.messages[0]!;
    await svc.leaseAcks.ack(
      [
        {
          index: 0,
          partitionId: m.partitionId,
          transactionId: m.transactionId,
          status: 'dlq',
          error: 'bad',
          leaseId: r!.leaseId,
        },
      ],
      'g',
    );
    const listed = async (): Promise<string[]> =>
      (await inner.blobs.list(`${DLQ_BLOB_PREFIX}${m.partitionId}/`)).blobs.map((b) => b.key);
    const [filed] = await listed();
    expect(parseDlqBlobKey(filed!)).toBeDefined();
    // An ack that failed after uploading (no marker), and a blob from before markers (no `.bin`).
    const orphan = dlqBlobKey(m.partitionId, '0190aaaa-0000-7000-8000-000000000001');
    const legacy = `${DLQ_BLOB_PREFIX}${m.partitionId}/0190aaaa-0000-7000-8000-000000000002`;
    await inner.blobs.put(orphan, json('orphan'));
    await inner.blobs.put(legacy, json('legacy'));
    const grace = 60_000;
    // Young blobs are kept whatever they are.
    expect(await svc.dlq.sweepOrphanBlobs(Date.now(), grace)).toMatchObject({
      scanned: 3,
      deleted: 0,
      kept: 3,
      wrapped: true,
    });
    const later = Date.now() + grace + 1000;
    expect(await svc.dlq.sweepOrphanBlobs(later, grace)).toMatchObject({ scanned: 3, deleted: 1, kept: 2 });
    expect((await listed()).sort()).toEqual([filed, legacy].sort());
    expect(text((await svc.dlq.list({ queue: 'dlqblob', limit: 10, offset: 0 }))[0]!.payload)).toBe(text(big));
    // A removal whose blob delete fails still removes the row; its marker went with it, so
    // the next sweep collects the blob.
    const blobless = {
      ...inner,
      blobs: { ...inner.blobs, delete: async () => Promise.reject(new Error('simulated crash')) },
    };
    const removal = testServices(blobless);
    expect(await removal.dlq.delete(m.partitionId, m.transactionId)).toEqual({ removed: 1 });
    expect(
      await inner.items.get('dlq', dlqKeys.blobMarker(m.partitionId, parseDlqBlobKey(filed!)!.blobId)),
    ).toBeUndefined();
    expect(await svc.dlq.sweepOrphanBlobs(later, grace)).toMatchObject({ deleted: 1, kept: 1 });
    expect(await listed()).toEqual([legacy]);
  });

  it('a blob whose marker is mid-transaction (contention) is kept for the next pass, and the pass goes on', async () => {
    const pid = '0190bbbb-0000-7000-8000-00000000c0de';
    const orphan = dlqBlobKey(pid, '0190bbbb-0000-7000-8000-000000000001');
    await inner.blobs.put(orphan, json('orphan'));
    await inner.items.put('meta', { ...dlqKeys.blobSweepCursor(), ver: 70, attrs: { at: 0 } });
    const busy = withItems(inner, {
      put: async (t, it, c) => {
        if (t === 'dlq' && it.pk === `DB#${pid}`) throw new ContentionError('in flight');
        return inner.items.put(t, it, c);
      },
    });
    const later = Date.now() + 3_600_000;
    const first = await testServices(busy).dlq.sweepOrphanBlobs(later, 60_000);
    expect(first.kept).toBeGreaterThanOrEqual(1);
    expect((await inner.blobs.list(`${DLQ_BLOB_PREFIX}${pid}/`)).blobs.map((b) => b.key)).toEqual([orphan]);
    await inner.items.put('meta', { ...dlqKeys.blobSweepCursor(), ver: 71, attrs: { at: 0 } });
    await testServices(inner).dlq.sweepOrphanBlobs(later, 60_000);
    expect((await inner.blobs.list(`${DLQ_BLOB_PREFIX}${pid}/`)).blobs).toEqual([]);
  });

  it('a message filed again for the same group leaves its earlier payload blob to the sweep, which keeps the one the entry points at', async () => {
    const svc = testServices(inner);
    const part = await svc.queues.ensurePartition(await svc.queues.ensureQueue('dlqrefile'), 'Default');
    const file = async (text: string, now: number): Promise<void> => {
      const msg = {
        offset: 0,
        id: 'm-0',
        transactionId: 'rf-0',
        traceId: null,
        createdAt: now,
        payload: json(text.repeat(300 * 1024)),
      };
      await inner.items.transact(await svc.dlq.filingOps({ part, group: 'g', msg, error: 'bad', retryCount: 1, now }));
    };
    const t0 = Date.now();
    await file('a', t0);
    await file('b', t0 + 1000); // e.g. after a seek back, the same message dead-lettered again
    const keysNow = async (): Promise<string[]> =>
      (await inner.blobs.list(`${DLQ_BLOB_PREFIX}${part.id}/`)).blobs.map((b) => b.key);
    expect(await keysNow()).toHaveLength(2);
    await inner.items.put('meta', { ...dlqKeys.blobSweepCursor(), ver: 50, attrs: { at: 0 } });
    const swept = await svc.dlq.sweepOrphanBlobs(Date.now() + 3_600_000, 60_000);
    expect(swept.deleted).toBeGreaterThanOrEqual(1);
    expect(await keysNow()).toHaveLength(1);
    // Listed once (the earlier filing's pointers went with it), with the later payload.
    const listed = await svc.dlq.list({ queue: 'dlqrefile', limit: 10, offset: 0 });
    expect(listed).toHaveLength(1);
    expect(text(listed[0]!.payload)).toBe(JSON.stringify('b'.repeat(300 * 1024)));
    expect((await inner.items.get('dlq', dlqKeys.entry(part.id, 'rf-0', 'g')))?.ver).toBe(2);
    expect(await svc.dlq.delete(part.id, 'rf-0')).toEqual({ removed: 1 });
    expect((await inner.items.query('dlq', 'L#dlqrefile')).items).toEqual([]);
    expect((await inner.items.query('dlq', 'LG#dlqrefile#g')).items).toEqual([]);
  });

  it('a filing whose payload blob the sweep judged orphaned (the ack stalled past the grace) fails, and the ack files again with a fresh blob', async () => {
    await inner.items.put('meta', { ...dlqKeys.blobSweepCursor(), ver: 99, attrs: { at: 0 } }); // start from the top
    const big = json('y'.repeat(300 * 1024));
    const sweeper = testServices(inner);
    let swept: { deleted: number } | undefined;
    // Just before the first ack transaction carrying a blob marker commits, the sweep runs.
    const stalled = withItems(inner, {
      transact: async (ops) => {
        if (!swept && ops.some((o) => o.op === 'put' && o.table === 'dlq' && o.item.pk.startsWith('DB#')))
          swept = await sweeper.dlq.sweepOrphanBlobs(Date.now() + 3_600_000, 60_000);
        return inner.items.transact(ops);
      },
    });
    const svc = testServices(stalled);
    await svc.pushes.push([{ queue: 'dlqstall', payload: big, transactionId: 'ds-1' }]);
    const r = await svc.leasePops.pop(req('dlqstall', { group: 'g', batch: 1 }));
    const m = r!.messages[0]!;
    const [res] = await svc.leaseAcks.ack(
      [
        {
          index: 0,
          partitionId: m.partitionId,
          transactionId: m.transactionId,
          status: 'dlq',
          error: 'bad',
          leaseId: r!.leaseId,
        },
      ],
      'g',
    );
    expect(res).toMatchObject({ success: true });
    expect(swept?.deleted).toBeGreaterThanOrEqual(1);
    const rows = await svc.dlq.list({ queue: 'dlqstall', limit: 10, offset: 0 });
    expect(rows.map((e) => text(e.payload))).toEqual([text(big)]);
    // Only the blob of the filing that committed is left.
    expect((await inner.blobs.list(`${DLQ_BLOB_PREFIX}${m.partitionId}/`)).blobs).toHaveLength(1);
  });

  it('a replay whose row delete fails answers replayed with dlqRowRemoved false, and the row stays listed', async () => {
    const svc = testServices(inner);
    await svc.pushes.push([{ queue: 'replay-fail', payload: json('x'), transactionId: 'rf-1' }]);
    const r = await svc.leasePops.pop(req('replay-fail', { group: 'g', batch: 1 }));
    const m = r!.messages[0]!;
    await svc.leaseAcks.ack(
      [
        {
          index: 0,
          partitionId: m.partitionId,
          transactionId: m.transactionId,
          status: 'dlq',
          error: 'bad',
          leaseId: r!.leaseId,
        },
      ],
      'g',
    );
    const failing = testServices(crashing(inner, (ops) => ops.some((o) => o.op === 'delete' && o.table === 'dlq')));
    const out = await failing.dlq.retry(m.partitionId, m.transactionId);
    expect(out).toMatchObject({ replayed: true, dlqRowRemoved: false, removed: 0 });
    expect(out.push.status).toBe('queued');
    expect((await svc.dlq.list({ queue: 'replay-fail', limit: 10, offset: 0 })).map((e) => e.transactionId)).toEqual([
      'rf-1',
    ]);
  });

  it('a partition pop is 3 requests and an ack 2, whatever the backlog depth', async () => {
    const c = counted(inner);
    const svc = testServices(c.storage, { config: { queueCacheMs: 60_000 } });
    for (let b = 0; b < 10; b++)
      await svc.pushes.push(Array.from({ length: 50 }, (_, i) => ({ queue: 'deep', payload: json(b * 50 + i) })));
    const warm = await svc.leasePops.pop(req('deep', { partition: 'Default', batch: 50 }));
    await ackAll(svc, warm!);
    const counts: number[] = [];
    for (let k = 0; k < 3; k++) {
      c.reset();
      const r = await svc.leasePops.pop(req('deep', { partition: 'Default', batch: 50 }));
      counts.push(c.n());
      c.reset();
      const acks = await ackAll(svc, r!);
      expect(acks.every((a) => a.success && a.leaseReleased)).toBe(true);
      counts.push(c.n());
    }
    expect(counts).toEqual([3, 2, 3, 2, 3, 2]);
  });

  it(
    'a pop whose batch segments an earlier query returned already cover skips the index query; a ' +
      'segment removed since is found out and read past',
    async () => {
      const queries: string[] = [];
      const spy = withItems(inner, { query: (t, pk, o) => (queries.push(t), inner.items.query(t, pk, o)) });
      // Every segment a blob: an index entry alone says where its bytes are.
      const svc = testServices(spy, { config: { queueCacheMs: 60_000, inlineMaxBytes: 1 } });
      for (let b = 0; b < 4; b++)
        await svc.pushes.push(Array.from({ length: 10 }, (_, k) => ({ queue: 'idx', payload: json(b * 10 + k) })));
      const pid = (await svc.queues.getPartition('idx', 'Default'))!.id;
      // A replay of the whole partition reads (and remembers) the four segments' index entries.
      expect((await svc.segments.read(pid, 0, { maxCount: 40 })).map((m) => m.offset)).toEqual(
        Array.from({ length: 40 }, (_, k) => k),
      );
      const offsets: number[] = [];
      for (let k = 0; k < 4; k++) {
        queries.length = 0;
        const r = await svc.leasePops.pop(req('idx', { partition: 'Default', batch: 10 }));
        expect(queries.filter((t) => t === 'log')).toEqual([]);
        offsets.push(...r!.messages.map((m) => m.offset));
        await ackAll(svc, r!);
      }
      expect(offsets).toEqual(Array.from({ length: 40 }, (_, k) => k));

      // A long page keeps its first entries (what its reader needs next), not its last.
      for (let b = 0; b < 40; b++) await svc.pushes.push([{ queue: 'idx-long', payload: json(b) }]);
      const longPid = (await svc.queues.getPartition('idx-long', 'Default'))!.id;
      expect(await svc.segments.read(longPid, 0, { maxCount: 40, indexCache: true })).toHaveLength(40);
      queries.length = 0;
      expect((await svc.segments.read(longPid, 0, { maxCount: 10, indexCache: true })).map((m) => m.offset)).toEqual(
        Array.from({ length: 10 }, (_, k) => k),
      );
      expect(queries.filter((t) => t === 'log')).toEqual([]);

      // Another process knows the index entries but not the bytes; retention (simulated) removes
      // the segment at 10 meanwhile: the read finds out and answers what the query answers.
      const other = testServices(inner);
      const segs = await other.segments.segmentsFrom(pid, 0, 40);
      expect(segs.map((g) => typeof g.blob)).toEqual(['string', 'string', 'string', 'string']);
      // Retention replaces what it removes with a skip (its floor), so readers never wait at a gap.
      await inner.items.put('log', skipSegmentItem(pid, 10, 19, Date.now()));
      await inner.blobs.delete(segs[1]!.blob!);
      const fresh = await testServices(inner).segments.read(pid, 10, { maxCount: 10 });
      expect(fresh.map((m) => m.offset)).toEqual(Array.from({ length: 10 }, (_, k) => 20 + k));
      expect((await other.segments.read(pid, 10, { maxCount: 10, indexCache: true })).map((m) => m.offset)).toEqual(
        fresh.map((m) => m.offset),
      );
    },
  );

  it('a group registered after the data exists finds every partition through the bounded registration scan', async () => {
    const svc = testServices(inner);
    for (let p = 0; p < 30; p++) await svc.pushes.push([{ queue: 'scan', partition: `s${p}`, payload: json(p) }]);
    const got = new Set<string>();
    for (let i = 0; i < 40 && got.size < 30; i++) {
      const r = await svc.leasePops.pop(req('scan', { group: 'late', partitions: 20 }));
      if (!r) continue;
      r.messages.forEach((m) => got.add(text(m.payload)));
      await ackAll(svc, r);
    }
    expect(got.size).toBe(30);
  });

  it('a group registering while a push is in flight (no lease group yet) gets the partition marked', async () => {
    const svc = testServices(inner);
    const q = await svc.queues.ensureQueue('reg-race-0');
    await svc.queues.ensurePartition(q, 'Default');
    // The newcomer registers, and its registration scan completes, while the push is in flight.
    const pusher = testServices(
      beforeFirstCommit(
        inner,
        async () => {
          expect(await svc.leasePops.pop(req('reg-race-0', { group: 'newcomer' }))).toBeNull();
        },
        { atTake: true },
      ),
    );
    const [r] = await pusher.pushes.push([{ queue: 'reg-race-0', payload: json('missed?') }]);
    expect(r?.status).toBe('queued');
    const got = await svc.leasePops.pop(req('reg-race-0', { group: 'newcomer' }));
    expect(got?.messages.map((m) => text(m.payload))).toEqual(['"missed?"']);
  });

  it('a group registering while a push is in flight (another group drained the partition) gets its message', async () => {
    const svc = testServices(inner);
    await svc.pushes.push([{ queue: 'reg-race-1', payload: json('first') }]);
    expect((await svc.leasePops.pop(req('reg-race-1', { group: 'old' })))?.messages).toHaveLength(1);
    const pusher = testServices(
      beforeFirstCommit(
        inner,
        async () => {
          const first = await svc.leasePops.pop(req('reg-race-1', { group: 'newcomer' }));
          expect(first?.messages).toHaveLength(1);
          await ackAll(svc, first!);
        },
        { atTake: true },
      ),
    );
    const [r] = await pusher.pushes.push([{ queue: 'reg-race-1', payload: json('second') }]);
    expect(r?.status).toBe('queued');
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const p = await svc.leasePops.pop(req('reg-race-1', { group: 'newcomer' }));
      if (!p) break;
      seen.push(...p.messages.map((m) => text(m.payload)));
      await ackAll(svc, p);
    }
    expect(seen).toContain('"second"');
  });

  it('a push between a clear’s check and its write fails the clear: the work item stays and the message is delivered', async () => {
    const svc = testServices(inner);
    await svc.pushes.push([{ queue: 'clear-race-push', payload: json('first') }]);
    expect(await consume(svc, 'clear-race-push', 'g', 1)).toEqual(['"first"']);
    const other = testServices(inner);
    const { storage, fired } = beforeClear(inner, async () => {
      await other.pushes.push([{ queue: 'clear-race-push', payload: json('second') }]);
    });
    const clearer = testServices(storage);
    expect(await clearer.leasePops.pop(req('clear-race-push', { group: 'g' }))).toBeNull();
    expect(fired()).toBe(true);
    const q = (await svc.queues.getQueue('clear-race-push'))!;
    const part = (await svc.queues.getPartition('clear-race-push', 'Default'))!;
    expect(await inner.items.get('leases', leaseKeys.work(q.queueId, part.id))).toBeDefined();
    expect((await inner.items.get('log', logKeys.sequencer(part.id)))?.attrs[WORK_FLAG]).toBe(true);
    expect(await drainWildcard(clearer, 'clear-race-push', 'g')).toEqual(['"second"']);
  });

  it('a group registered between a clear’s check and its write fails the clear: the newcomer gets every message', async () => {
    const svc = testServices(inner);
    await svc.pushes.push([{ queue: 'clear-race-reg', payload: json('old') }]);
    expect(await consume(svc, 'clear-race-reg', 'g', 1)).toEqual(['"old"']);
    const other = testServices(inner);
    const { storage, fired } = beforeClear(inner, async () => {
      await other.groups.register('clear-race-reg', 'newcomer', 'lease', { mode: 'all', from: null });
    });
    const clearer = testServices(storage);
    expect(await clearer.leasePops.pop(req('clear-race-reg', { group: 'g' }))).toBeNull();
    expect(fired()).toBe(true);
    expect(await drainWildcard(other, 'clear-race-reg', 'newcomer')).toEqual(['"old"']);
  });

  it('a seek between a clear’s check and its write fails the clear: the group gets its messages again', async () => {
    const svc = testServices(inner);
    await svc.pushes.push([{ queue: 'clear-race-seek', payload: json('m') }]);
    expect(await consume(svc, 'clear-race-seek', 'g', 1)).toEqual(['"m"']);
    const other = testServices(inner);
    const { storage, fired } = beforeClear(inner, async () => {
      await other.leaseGroups.seek('g', 'clear-race-seek', { timestamp: 0 });
    });
    const clearer = testServices(storage);
    expect(await clearer.leasePops.pop(req('clear-race-seek', { group: 'g' }))).toBeNull();
    expect(fired()).toBe(true);
    expect(await drainWildcard(testServices(inner), 'clear-race-seek', 'g')).toEqual(['"m"']);
  });

  it('a group registered on a queue whose partitions were all cleared finds the old messages (registration scan)', async () => {
    const svc = testServices(inner);
    await svc.pushes.push([
      { queue: 'cleared-then-new', partition: 'a', payload: json('a') },
      { queue: 'cleared-then-new', partition: 'b', payload: json('b') },
    ]);
    expect((await drainWildcard(svc, 'cleared-then-new', 'g')).sort()).toEqual(['"a"', '"b"']);
    expect(await svc.leasePops.pop(req('cleared-then-new', { group: 'g' }))).toBeNull(); // clears
    const q = (await svc.queues.getQueue('cleared-then-new'))!;
    expect((await inner.items.query('leases', `WORK#${q.queueId}`)).items).toEqual([]);
    const late = testServices(inner);
    expect((await drainWildcard(late, 'cleared-then-new', 'late')).sort()).toEqual(['"a"', '"b"']);
    // And a push after the clear marks the partition again for every group.
    await svc.pushes.push([{ queue: 'cleared-then-new', partition: 'a', payload: json('a2') }]);
    expect(await drainWildcard(svc, 'cleared-then-new', 'g')).toEqual(['"a2"']);
    expect(await drainWildcard(late, 'cleared-then-new', 'late')).toEqual(['"a2"']);
  });

  it('a clear waits for every lease group: a partition one group finished stays marked for the other', async () => {
    const svc = testServices(inner);
    await svc.groups.register('two-groups', 'slow', 'lease', { mode: 'all', from: null });
    await svc.pushes.push([{ queue: 'two-groups', payload: json('x') }]);
    expect(await drainWildcard(svc, 'two-groups', 'fast')).toEqual(['"x"']);
    expect(await svc.leasePops.pop(req('two-groups', { group: 'fast' }))).toBeNull();
    const q = (await svc.queues.getQueue('two-groups'))!;
    expect((await inner.items.query('leases', `WORK#${q.queueId}`)).items).toHaveLength(1);
    expect(await drainWildcard(svc, 'two-groups', 'slow')).toEqual(['"x"']);
    expect(await svc.leasePops.pop(req('two-groups', { group: 'slow' }))).toBeNull();
    expect((await inner.items.query('leases', `WORK#${q.queueId}`)).items).toEqual([]);
  });

  it('a push that flipped the flag and then failed its commit still leaves the partition marked', async () => {
    const svc = testServices(inner);
    await svc.pushes.push([{ queue: 'flip-fail', payload: json('first') }]);
    expect(await drainWildcard(svc, 'flip-fail', 'g')).toEqual(['"first"']);
    expect(await svc.leasePops.pop(req('flip-fail', { group: 'g' }))).toBeNull(); // clears
    // The commit carrying the work item fails once (after the take, which on AWS stays applied).
    let armed = true;
    const failing = testServices(
      withItems(inner, {
        take: (t, k, n, then, o) =>
          inner.items.take(
            t,
            k,
            n,
            then &&
              ((taken) => {
                const ops = then(taken);
                if (armed && ops.some((op) => op.op === 'put' && op.item.pk.startsWith('WORK#'))) {
                  armed = false;
                  throw new Error('simulated store failure');
                }
                return ops;
              }),
            o,
          ),
      }),
    );
    expect((await failing.pushes.push([{ queue: 'flip-fail', payload: json('lost') }]))[0]?.status).toBe('failed');
    await svc.pushes.push([{ queue: 'flip-fail', payload: json('after') }]);
    expect(await drainWildcard(svc, 'flip-fail', 'g')).toContain('"after"');
  });

  it('50 concurrent pops on one lane from 50 processes: the conditional write lets exactly one win, every time', async () => {
    const clock = new TestClock();
    const procs = Array.from({ length: 50 }, () => testServices(inner, { clock }));
    await procs[0]!.pushes.push([
      { queue: 'race-x', payload: json(1) },
      { queue: 'race-x', payload: json(2) },
    ]);
    // Round 0 races on a lane with no row yet (put if absent); round 1, after the lease
    // lapsed, on its row's version.
    for (let round = 0; round < 2; round++) {
      const got = await Promise.all(
        procs.map((svc) => svc.leasePops.pop(req('race-x', { group: 'r', partition: 'Default' }))),
      );
      const winners = got.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(winners[0]!.messages.map((m) => text(m.payload))).toEqual(['1', '2']);
      clock.advance(61_000);
    }
  });

  it('a long poll sees a push made by another process by re-reading storage (about once a second)', async () => {
    const a = testServices(inner);
    const b = testServices(inner); // another process: its push wakes nobody in `a`
    await a.queues.ensureQueue('lp-x');
    const started = performance.now();
    const waiting = a.leasePops.pop(req('lp-x', { group: 'w', wait: true, timeoutMs: 5000 }));
    await new Promise((r) => setTimeout(r, 200));
    await b.pushes.push([{ queue: 'lp-x', payload: json('elsewhere') }]);
    const r = await waiting;
    expect(r?.messages.map((m) => text(m.payload))).toEqual(['"elsewhere"']);
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('a group deleted by another process starts over there within the cache time (with or without its metadata)', async () => {
    const clock = new TestClock();
    const a = testServices(inner, { clock, config: { queueCacheMs: 1000 } });
    const b = testServices(inner, { clock, config: { queueCacheMs: 1000 } }); // another process
    await a.pushes.push([{ queue: 'xproc', payload: json('one') }]);
    const payloads = async (svc: Services, group: string, over: Partial<PopRequest> = {}): Promise<string[]> => {
      const r = await svc.leasePops.pop(req('xproc', { group, ...over }));
      if (!r) return [];
      await ackAll(svc, r);
      return r.messages.map((m) => text(m.payload));
    };
    // Kept registration: the group re-consumes from its stored subscription.
    expect(await payloads(a, 'kept')).toEqual(['"one"']);
    expect(await payloads(a, 'kept')).toEqual([]); // drained: nothing left in this process's work-index page
    await b.leaseGroups.delete('kept', { deleteMetadata: false });
    clock.advance(1001);
    expect(await payloads(a, 'kept')).toEqual(['"one"']);
    // Deleted registration: the name starts over with the subscription of its next pop, and
    // pushes from any process are found by its wildcard pops again.
    expect(await payloads(a, 'gone')).toEqual(['"one"']);
    await b.leaseGroups.delete('gone', { deleteMetadata: true });
    clock.advance(1001);
    expect(await payloads(a, 'gone', { subscriptionMode: 'new' })).toEqual([]);
    clock.advance(1);
    await b.pushes.push([{ queue: 'xproc', payload: json('two') }]);
    expect(await payloads(a, 'gone')).toEqual(['"two"']);
    expect((await b.groups.get('xproc', 'gone'))?.subscription.mode).toBe('new');
  });

  it('a transaction and a push racing on one partition both land: atomic, dense offsets, each batch consecutive', async () => {
    const svc0 = testServices(inner);
    await svc0.pushes.push([{ queue: 'tx-race', payload: json('src') }]);
    const src = await svc0.leasePops.pop(req('tx-race', { group: 'w' }));
    const other = testServices(inner);
    const svc = testServices(
      beforeFirstCommit(inner, async () => {
        expect((await other.pushes.push([{ queue: 'tx-race', payload: json('pushed-meanwhile') }]))[0]?.status).toBe(
          'queued',
        );
      }),
    );
    const res = await svc.transactions.run([
      {
        type: 'push',
        items: [
          { queue: 'tx-race', payload: json('t1') },
          { queue: 'tx-race', payload: json('t2') },
        ],
      },
      {
        type: 'ack',
        partitionId: src!.messages[0]!.partitionId,
        transactionId: src!.messages[0]!.transactionId,
        consumerGroup: 'w',
        status: 'completed',
      },
    ]);
    expect(res.success).toBe(true);
    const part = await svc.queues.getPartition('tx-race', 'Default');
    const all = await svc.segments.read(part!.id, 0, { maxCount: 100 });
    // Offsets come from the partition's sequencer: the transaction took its two before the other
    // push took its one, so neither had to retry.
    expect(all.map((m) => `${m.offset}:${text(m.payload)}`)).toEqual([
      '0:"src"',
      '1:"t1"',
      '2:"t2"',
      '3:"pushed-meanwhile"',
    ]);
    const rest = await svc.leasePops.pop(req('tx-race', { group: 'w' }));
    expect(rest?.messages.map((m) => text(m.payload))).toEqual(['"t1"', '"t2"', '"pushed-meanwhile"']);
  });

  it('a transaction the orphan-blob sweeper aborted (it stalled past the grace) answers 503 unavailable, and nothing of it applies', async () => {
    const svc0 = testServices(inner);
    await svc0.pushes.push([{ queue: 'tx-stall', payload: json('src') }]);
    const src = await svc0.leasePops.pop(req('tx-stall', { group: 'w' }));
    const pid = src!.messages[0]!.partitionId;
    // Its segment is large enough for a blob; just before it commits, the sweeper judges the
    // blob an orphan: marker `aborted` (put-if-absent), blob deleted.
    const svc = testServices(
      // The sweeper's requests are maintenance's, not the route's (the IAM proof checks each role).
      beforeFirstCommit(inner, () =>
        asFunction('maintenance', async () => {
          const { blobs } = await inner.blobs.list(`${SEGMENT_BLOB_PREFIX}${pid}/`);
          expect(blobs).toHaveLength(1);
          const ref = parseSegmentBlobKey(blobs[0]!.key)!;
          await inner.items.put(
            'log',
            { ...keys.marker(pid, ref.pushId), ver: 1, attrs: { state: 'aborted', by: 'sweeper' } },
            { kind: 'absent' },
          );
          await inner.blobs.delete(blobs[0]!.key);
        }),
      ),
      { config: { inlineMaxBytes: 64 } },
    );
    const server = await startTestServer(svc);
    try {
      const r = await call<ErrorReply>(server.url, 'POST', '/api/v1/transaction', {
        operations: [
          { type: 'push', items: [{ queue: 'tx-stall', payload: { big: randomBytes(300).toString('base64') } }] },
          {
            type: 'ack',
            transactionId: src!.messages[0]!.transactionId,
            partitionId: pid,
            status: 'completed',
            consumerGroup: 'w',
          },
        ],
      });
      expect(r.status).toBe(503);
      expect(r.body.code).toBe('unavailable');
      expect(r.body.error).toMatch(/retry/);
    } finally {
      await server.close();
    }
    // Nothing applied: the log holds only `src`, and its ack is still open.
    expect((await svc0.segments.read(pid, 0, { maxCount: 10 })).map((m) => text(m.payload))).toEqual(['"src"']);
    expect((await ackAll(svc0, src!))[0]).toMatchObject({ success: true });
  });

  it('seek to a timestamp over many segments uses a logarithmic number of reads', async () => {
    const c = counted(inner);
    const svc = testServices(c.storage);
    for (let i = 0; i < 64; i++) {
      await svc.pushes.push([{ queue: 'seek-log', payload: json(i) }]);
      svc.testClock.advance(1000);
    }
    const part = await svc.queues.getPartition('seek-log', 'Default');
    c.reset();
    const at = svc.testClock.t - 64_000 + 40_500; // after message 40 was pushed
    expect(await firstCommittedAfter(svc.segments, part!.id, at)).toBe(41);
    expect(c.n()).toBeLessThanOrEqual(9);
  });

  it('the DLQ keeps a sealed payload sealed and opens it on read', async () => {
    const svc = testServices(inner, { config: { encryptionKey: Buffer.alloc(32, 5).toString('base64') } });
    await svc.queues.configure({
      queue: 'sealed-dlq',
      options: resolveQueueOptions({ encryptionEnabled: true, retryLimit: 0 }),
    });
    await svc.pushes.push([{ queue: 'sealed-dlq', payload: json({ secret: 1 }) }]);
    const r = await svc.leasePops.pop(req('sealed-dlq'));
    await svc.leaseAcks.ack(
      [
        {
          index: 0,
          partitionId: r!.messages[0]!.partitionId,
          transactionId: r!.messages[0]!.transactionId,
          status: 'failed',
        },
      ],
      QUEUE_MODE_GROUP,
    );
    const rows = await svc.dlq.lookup(r!.messages[0]!.partitionId, r!.messages[0]!.transactionId);
    expect(rows[0]?.attrs.sealed).toBe(true);
    expect(Buffer.from(rows[0]!.bin!).includes('secret')).toBe(false);
    const [entry] = await svc.dlq.list({ queue: 'sealed-dlq', limit: 10, offset: 0 });
    expect(text(entry!.payload)).toBe('{"secret":1}');
  });

  it('/configure refuses encryptionEnabled when the server has no key', async () => {
    const svc = testServices(inner);
    await expect(
      svc.queues.configure({ queue: 'nokey', options: resolveQueueOptions({ encryptionEnabled: true }) }),
    ).rejects.toThrow(/SLUICE_ENCRYPTION_KEY/);
  });
});

describe.runIf(backends.some((b) => b.name === 'aws'))('integration: KMS data keys on the aws backend', () => {
  it('seals with a KMS data key, stores only the wrapped key, and a second process opens it', async () => {
    const endpoints = awsEndpoints();
    const { storage, cleanup } = await newAwsTestStorage(endpoints);
    try {
      const kms = new KMSClient({
        endpoint: endpoints.kms,
        region: TEST_REGION,
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      });
      const key = await kms.send(new CreateKeyCommand({}));
      const keyId = key.KeyMetadata!.KeyId!;
      const mk = () =>
        buildServices(
          storage,
          { ...loadConfig({}), queueCacheMs: 0 },
          { keyProvider: new KmsKeyProvider(storage, keyId, async () => kms) },
        );
      const a = mk();
      await a.queues.configure({ queue: 'kms', options: resolveQueueOptions({ encryptionEnabled: true }) });
      const [pushed] = await a.pushes.push([{ queue: 'kms', payload: json({ pan: '4111' }) }]);
      const stored = await storage.items.query('meta', 'ENCKEY', { limit: 10 });
      expect(stored.items).toHaveLength(1);
      expect(typeof stored.items[0]!.attrs.wrapped).toBe('string');
      const seg = await storage.items.get('log', keys.segment(pushed!.partitionId, 0));
      expect(seg?.bin).toBeDefined();
      const b = mk(); // another process: unwraps the data key through KMS
      const r = await b.leasePops.pop(req('kms'));
      expect(text(r!.messages[0]!.payload)).toBe('{"pan":"4111"}');
      kms.destroy();
    } finally {
      await cleanup();
    }
  });
});
