// Queue deletion and the maintenance work it leaves (tombstones), idle-partition retirement,
// caches bounded by the queue's incarnation, and retention against record-claim groups, on
// both storage backends.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../server/core/errors.js';
import { QUEUE_MODE_GROUP } from '../../server/core/names.js';
import { resolveQueueOptions, type QueueOptionsInput } from '../../server/core/queue-options.js';
import { claimKeys } from '../../server/service/claims/claim-store.js';
import { SEGMENT_BLOB_PREFIX, TOMBSTONE_PK, logKeys as keys } from '../../server/service/log/log-store.js';
import { leaseKeys } from '../../server/service/leases/lease-store.js';

/** The queue incarnation of each partition seen, kept after its record goes. */
const workOf = new Map<string, string>();
import type { PopRequest } from '../../server/service/leases/pop.js';
import { runMaintenance } from '../../server/service/maintenance/maintenance.js';
import type { Services } from '../../server/service/runtime.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { json, TestClock, testServices, text } from '../support/services.js';
import { codeOf, crashing } from '../support/storage.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const DAY = 86_400_000;
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

async function configure(svc: Services, queue: string, options: QueueOptionsInput = {}): Promise<void> {
  await svc.queues.configure({ queue, options: resolveQueueOptions(options, svc.config.claimDefaults) });
}

/** Everything stored under a partition id, per place (empty once it is all gone). */
async function leftovers(
  storage: Storage,
  pid: string,
  queue: string,
  groups: { lease: string[]; claim: string[] },
): Promise<Record<string, number>> {
  const n = async (table: Parameters<Storage['items']['query']>[0], pk: string): Promise<number> =>
    (await storage.items.query(table, pk)).items.length;
  const out: Record<string, number> = {
    log: await n('log', pid),
    dedup: await n('dedup', pid),
    leases: await n('leases', pid),
    blobs: (await storage.blobs.list(`${SEGMENT_BLOB_PREFIX}${pid}/`)).blobs.length,
    byId: (await storage.items.get('meta', keys.partitionById(pid))) ? 1 : 0,
  };
  // The partition's work item, under its queue incarnation (read from its record while it exists).
  const qid = (await storage.items.get('meta', keys.partitionById(pid)))?.attrs['queueId'];
  if (typeof qid === 'string') workOf.set(pid, qid);
  const known = workOf.get(pid);
  out['work'] = known ? ((await storage.items.get('leases', leaseKeys.work(known, pid))) ? 1 : 0) : 0;
  for (const g of groups.claim)
    out[`claims:${g}`] =
      (await n('claims', claimKeys.groupPk(pid, g))) +
      (await n('claims', claimKeys.memberPk(pid, g))) +
      (await n('claims', claimKeys.deadPk(pid, g)));
  return out;
}
const nothing = (r: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.keys(r).map((k) => [k, 0]));

/** Maintenance passes, each after the grace period, until no tombstone is left (at most `max`). */
async function maintainUntilClean(svc: Services & { testClock: TestClock }, max = 6): Promise<number> {
  for (let pass = 1; pass <= max; pass++) {
    svc.testClock.advance(svc.config.sweepGraceMs);
    await runMaintenance(svc);
    if ((await svc.storage.items.query('meta', TOMBSTONE_PK)).items.length === 0) return pass;
  }
  throw new Error(`tombstones left after ${max} maintenance passes`);
}

describe.each(backends)('integration: queue deletion on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('deletes a queue with everything of it but its group registrations; the name is free at once and a new queue never sees the old data', async () => {
    // Small inline limit: the second message's segment is a blob.
    const svc = testServices(storage, { config: { inlineMaxBytes: 200 } });
    const Q = 'del-all';
    await configure(svc, Q, { maxAttempts: 1 });
    const big = json({ big: randomBytes(600).toString('base64') });
    await svc.pushes.push([
      { queue: Q, partition: 'a', payload: json(1), transactionId: 't1' },
      { queue: Q, partition: 'a', payload: big, transactionId: 't2' },
    ]);
    await svc.pushes.push([{ queue: Q, partition: 'b', payload: json(3), transactionId: 't3' }]);
    // A lease group with a dead letter, a claim group with state and a dead letter of its own.
    const popped = await svc.leasePops.pop(req(Q, { group: 'g', partition: 'a', batch: 1 }));
    await svc.leaseAcks.ack(
      [{ index: 0, partitionId: popped!.messages[0]!.partitionId, transactionId: 't1', status: 'dlq', error: 'bad' }],
      'g',
    );
    await svc.claims.poll(Q, 'b', 'w', { max: 1, principal: 'p', consumer: 'c', session: 's1' });
    await svc.claims.deadLetter(Q, 'b', 'w', { offset: 0, attempts: 1 });
    const a = (await svc.queues.getPartition(Q, 'a'))!;
    const b = (await svc.queues.getPartition(Q, 'b'))!;
    const groups = { lease: ['g'], claim: ['w'] };
    expect((await leftovers(storage, a.id, Q, groups)).blobs).toBe(1);
    expect((await leftovers(storage, b.id, Q, groups))['claims:w']).toBeGreaterThan(0);
    expect(await svc.dlq.list({ queue: Q, limit: 10, offset: 0 })).toHaveLength(1);

    expect(await svc.deletion.deleteQueue(Q)).toEqual({ existed: true });
    expect(await svc.deletion.deleteQueue(Q)).toEqual({ existed: false });
    expect(await svc.queues.getQueue(Q)).toBeUndefined();
    expect(await svc.queues.getPartition(Q, 'a')).toBeUndefined();
    expect(await svc.queues.partitionById(a.id)).toBeUndefined();
    expect(await storage.items.get('meta', keys.partition(Q, 'b'))).toBeUndefined();
    expect(await svc.leasePops.pop(req(Q, { group: 'g' }))).toBeNull();
    // The registrations stay (kind and subscription), as Queen keeps a group's subscription.
    expect(await svc.groups.get(Q, 'g')).toMatchObject({ kind: 'lease', subscription: { mode: 'all' } });
    expect(await svc.groups.get(Q, 'w')).toMatchObject({ kind: 'claim' });
    // Dead letters of the deleted queue are not shown (nor replayed), even before maintenance.
    expect(await svc.dlq.list({ queue: Q, limit: 10, offset: 0 })).toEqual([]);
    expect(await svc.dlq.lookup(a.id, 't1')).toEqual([]);

    // A new queue under the name: new partitions from offset 0, old transactionIds are new.
    const [again] = await svc.pushes.push([{ queue: Q, partition: 'a', payload: json('new-a'), transactionId: 't1' }]);
    expect(again).toMatchObject({ status: 'queued', offset: 0 });
    expect(again!.partitionId).not.toBe(a.id);
    const got = await svc.leasePops.pop(req(Q, { group: 'g', batch: 10 }));
    expect(got!.messages.map((m) => text(m.payload))).toEqual(['"new-a"']);
    expect(await svc.claims.describe(Q, 'a', 'w').catch((e: SluiceError) => e.code)).toBe('not_found');
    await svc.pushes.push([{ queue: Q, partition: 'b', payload: json('new-b') }]);
    const polled = await svc.claims.poll(Q, 'b', 'w', { max: 10, principal: 'p' });
    expect(polled.records.map((r) => [r.offset, r.attempts, text(r.message.payload)])).toEqual([[0, 1, '"new-b"']]);
    expect(await svc.claims.listDeadLetters(Q, 'b', 'w')).toEqual({ offsets: [] });

    // Maintenance removes the rest; the new queue's data stays.
    await maintainUntilClean(svc);
    expect(await leftovers(storage, a.id, Q, groups)).toEqual(nothing(await leftovers(storage, a.id, Q, groups)));
    expect(await leftovers(storage, b.id, Q, groups)).toEqual(nothing(await leftovers(storage, b.id, Q, groups)));
    expect((await storage.items.query('dlq', `L#${Q}`)).items).toEqual([]);
    expect((await storage.items.query('dlq', `LG#${Q}#g`)).items).toEqual([]);
    expect((await storage.items.query('dlq', `E#${a.id}#t1`)).items).toEqual([]);
    expect((await svc.segments.read(again!.partitionId, 0, { maxCount: 10 })).map((m) => text(m.payload))).toEqual([
      '"new-a"',
    ]);
    expect(await svc.claims.describe(Q, 'b', 'w')).toMatchObject({ committed: 0, tail: 1, deadLetters: 0 });
  });

  it(
    'a delete cut short anywhere is finished later: the next push replaces a name it did not ' +
      'retire, and maintenance, in bounded passes, the rest',
    async () => {
      const clock = new TestClock();
      const Q = 'del-crash';
      const setupSvc = testServices(storage, { clock });
      for (const p of ['p1', 'p2', 'p3'])
        await setupSvc.pushes.push([{ queue: Q, partition: p, payload: json(p), transactionId: `${p}-tx` }]);
      const old = await setupSvc.queues.listPartitions(Q);
      expect(old).toHaveLength(3);
      // The request dies right after the queue record went, before it retired any partition.
      const crash = testServices(
        crashing(storage, (ops) =>
          ops.some((o) => o.op === 'put' && o.item.sk.startsWith('P#') && o.item.pk === TOMBSTONE_PK),
        ),
        { clock },
      );
      await expect(crash.deletion.deleteQueue(Q)).rejects.toThrow('simulated crash');
      const svc = testServices(storage, { clock });
      expect(await svc.queues.getQueue(Q)).toBeUndefined();
      // The names p1..p3 still point at the old partitions, but they are not this queue's any more.
      const [p1] = await svc.pushes.push([
        { queue: Q, partition: 'p1', payload: json('fresh'), transactionId: 'p1-tx' },
      ]);
      expect(p1).toMatchObject({ status: 'queued', offset: 0 });
      expect(old.map((p) => p.id)).not.toContain(p1!.partitionId);
      expect(await svc.queues.getPartition(Q, 'p2')).toBeUndefined();
      expect((await svc.queues.listPartitions(Q)).map((p) => p.name)).toEqual(['p1']);

      // Maintenance in small steps (2 pages per pass), one of them crashing half-way.
      let crashes = 1;
      const flaky = testServices(
        crashing(storage, (ops) => ops.some((o) => o.op === 'delete' && o.table === 'log') && crashes-- > 0),
        { clock },
      );
      let passes = 0;
      const crashed: string[] = [];
      for (; passes < 100; passes++) {
        clock.advance(flaky.config.sweepGraceMs);
        const r = await flaky.deletion.run({ pages: 2 }).catch((e: unknown) => String(e));
        if (typeof r === 'string') crashed.push(r);
        else if (!r.pending && (await storage.items.query('meta', TOMBSTONE_PK)).items.length === 0) break;
      }
      expect(crashed).toEqual(['Error: simulated crash']);
      expect(passes).toBeGreaterThan(3);
      expect(passes).toBeLessThan(100);
      const groups = { lease: [], claim: [] };
      for (const p of old)
        expect(await leftovers(storage, p.id, Q, groups)).toEqual(nothing(await leftovers(storage, p.id, Q, groups)));
      expect((await storage.items.query('meta', keys.queue(Q).pk)).items.map((it) => it.sk)).toEqual([
        'P#p1',
        'config',
      ]);
      expect((await svc.segments.read(p1!.partitionId, 0, { maxCount: 10 })).map((m) => text(m.payload))).toEqual([
        '"fresh"',
      ]);
    },
  );

  it('another process notices a delete within SLUICE_QUEUE_CACHE_MS; what it pushed meanwhile goes with the deleted queue', async () => {
    const clock = new TestClock();
    const a = testServices(storage, { clock, config: { queueCacheMs: 1000 } });
    const b = testServices(storage, { clock, config: { queueCacheMs: 1000 } });
    await a.pushes.push([{ queue: 'del-x', payload: json('before') }]);
    const oldId = (await a.queues.getPartition('del-x', 'Default'))!.id;
    expect(await a.queues.partitionById(oldId)).toBeDefined();
    await b.deletion.deleteQueue('del-x');
    // Inside the window, `a` still trusts its cached queue and partition.
    const [late] = await a.pushes.push([{ queue: 'del-x', payload: json('late') }]);
    expect(late!.partitionId).toBe(oldId);
    clock.advance(1001);
    const [fresh] = await a.pushes.push([{ queue: 'del-x', payload: json('fresh') }]);
    expect(fresh).toMatchObject({ status: 'queued', offset: 0 });
    expect(fresh!.partitionId).not.toBe(oldId);
    expect(await a.queues.partitionById(oldId)).toBeUndefined();
    const part = (await b.queues.getPartition('del-x', 'Default'))!;
    expect((await b.segments.read(part.id, 0, { maxCount: 10 })).map((m) => text(m.payload))).toEqual(['"fresh"']);
    await maintainUntilClean(b);
    expect((await storage.items.query('log', oldId)).items).toEqual([]);
  });

  it('idle-partition retention marks first and retires only after the grace period; a push in between keeps the partition', async () => {
    const clock = new TestClock();
    const maint = testServices(storage, { clock });
    // A producer that found the partition before the mark and keeps trusting its cache.
    const cached = testServices(storage, { clock, config: { queueCacheMs: 365 * DAY } });
    await configure(maint, 'idle-x', { retentionEnabled: true, retentionSeconds: 60 });
    const [first] = await cached.pushes.push([{ queue: 'idle-x', payload: json('one') }]);
    const pid = first!.partitionId;
    const mark = async () => (await storage.items.get('meta', keys.partition('idle-x', 'Default')))?.attrs.retiring;

    clock.advance(31 * DAY);
    expect(await maint.retention.run()).toMatchObject({ partitionsMarked: 1, partitionsRemoved: 0 });
    expect(await mark()).toMatchObject({ end: 0 });
    // The cached producer pushes without reading the name item: the mark stands, but the
    // partition is active again, so the grace-period pass keeps it.
    const [late] = await cached.pushes.push([{ queue: 'idle-x', payload: json('late') }]);
    expect(late).toMatchObject({ partitionId: pid, offset: 1 });
    clock.advance(maint.config.sweepGraceMs);
    expect(await maint.retention.run()).toMatchObject({ partitionsRemoved: 0 });
    // (`one` itself is gone: retentionSeconds deletes by age.)
    expect((await maint.segments.read(pid, 0, { maxCount: 10 })).map((m) => [m.offset, text(m.payload)])).toEqual([
      [1, '"late"'],
    ]);

    // Idle again and marked again: a producer that reads the partition clears the mark.
    clock.advance(31 * DAY);
    expect(await maint.retention.run()).toMatchObject({ partitionsRemoved: 0 });
    expect(await mark()).toMatchObject({ end: 1 });
    const [revived] = await maint.pushes.push([{ queue: 'idle-x', payload: json('revived') }]);
    expect(revived).toMatchObject({ partitionId: pid, offset: 2 });
    expect(await mark()).toBeUndefined();

    // Left alone: marked, then retired once the grace period has passed.
    clock.advance(31 * DAY);
    await maint.retention.run();
    clock.advance(maint.config.sweepGraceMs - 1);
    expect(await maint.retention.run()).toMatchObject({ partitionsRemoved: 0 });
    clock.advance(1);
    expect(await maint.retention.run()).toMatchObject({ partitionsRemoved: 1 });
    const [next] = await maint.pushes.push([{ queue: 'idle-x', payload: json('next') }]);
    expect(next).toMatchObject({ offset: 0 });
    expect(next!.partitionId).not.toBe(pid);
    await maintainUntilClean(maint);
    expect((await storage.items.query('log', pid)).items).toEqual([]);
  });

  it('a consumer looking a marked partition up does not let a later push skip the mark: the push lands in a live partition', async () => {
    const clock = new TestClock();
    const maint = testServices(storage, { clock });
    const app = testServices(storage, { clock, config: { queueCacheMs: 1000 } });
    await configure(maint, 'idle-c', { retentionEnabled: true, retentionSeconds: 60 });
    const pid = (await maint.queues.getPartition('idle-c', 'Default'))!.id;
    clock.advance(31 * DAY);
    expect(await maint.retention.run()).toMatchObject({ partitionsMarked: 1 });
    // Just before the grace period ends, a consumer in the app process reads the partition
    // (a pop or an ack does): its cache now holds the partition, read with the mark on it.
    clock.advance(maint.config.sweepGraceMs - 500);
    expect((await app.queues.getPartition('idle-c', 'Default'))?.id).toBe(pid);
    clock.advance(500);
    expect(await maint.retention.run()).toMatchObject({ partitionsRemoved: 1 });
    // A push from the app process within its cache window must not use the retired partition.
    clock.advance(100);
    const [r] = await app.pushes.push([{ queue: 'idle-c', payload: json('acked') }]);
    expect(r).toMatchObject({ status: 'queued', offset: 0 });
    expect(r!.partitionId).not.toBe(pid);
    await maintainUntilClean(maint);
    const cur = (await maint.queues.getPartition('idle-c', 'Default'))!;
    expect(cur.id).toBe(r!.partitionId);
    expect((await maint.segments.read(cur.id, 0, { maxCount: 10 })).map((m) => text(m.payload))).toEqual(['"acked"']);
  });

  it(
    'a partition written before queue deletion existed (no queueId) is not adopted by a queue ' +
      'created later under the name, nor is the new data removed',
    async () => {
      const clock = new TestClock();
      const svc = testServices(storage, { clock });
      const [r0] = await svc.pushes.push([{ queue: 'legacy', payload: json('old') }]);
      const pid = r0!.partitionId;
      for (const k of [keys.partition('legacy', 'Default'), keys.partitionById(pid)]) {
        const it = (await storage.items.get('meta', k))!;
        const { queueId: _q, ...attrs } = it.attrs;
        await storage.items.put('meta', { ...it, ver: it.ver + 1, attrs });
      }
      // The delete dies right after its first transaction: the partition's name item stays.
      const crash = testServices(
        crashing(storage, (ops) =>
          ops.some((o) => o.op === 'put' && o.item.pk === TOMBSTONE_PK && o.item.sk.startsWith('P#')),
        ),
        { clock },
      );
      await expect(crash.deletion.deleteQueue('legacy')).rejects.toThrow('simulated crash');
      clock.advance(10 * 60_000);
      const fresh = testServices(storage, { clock });
      const [r1] = await fresh.pushes.push([{ queue: 'legacy', payload: json('new') }]);
      expect(r1).toMatchObject({ status: 'queued', offset: 0 });
      expect(r1!.partitionId).not.toBe(pid);
      await maintainUntilClean(fresh);
      const cur = (await fresh.queues.getPartition('legacy', 'Default'))!;
      expect(cur.id).toBe(r1!.partitionId);
      expect((await fresh.segments.read(cur.id, 0, { maxCount: 10 })).map((m) => text(m.payload))).toEqual(['"new"']);
      expect((await storage.items.query('log', pid)).items).toEqual([]);
    },
  );

  it('a process that read segments before retention deleted them (in another process) does not hand them to a claim group again', async () => {
    const clock = new TestClock();
    const api = testServices(storage, { clock });
    const maint = testServices(storage, { clock });
    const Q = 'ret-claims-warm';
    await configure(maint, Q, { retentionEnabled: true, retentionSeconds: 10 });
    for (let i = 0; i < 4; i++) {
      await api.pushes.push([{ queue: Q, payload: json(i) }]);
      clock.advance(1);
    }
    const first = await api.claims.poll(Q, 'Default', 'w', { max: 2, principal: 'p', visibilityMs: 1000 });
    expect(first.records.map((r) => r.offset)).toEqual([0, 1]);
    clock.advance(11_000);
    expect((await maint.retention.run()).segmentsDeleted).toBe(3);
    // The claims of 0 and 1 lapsed, but their records are gone: only 3 is delivered.
    const again = await api.claims.poll(Q, 'Default', 'w', { max: 4, principal: 'p' });
    expect(again.records.map((r) => r.offset)).toEqual([3]);
  });

  it('a process whose tail hint retention has overtaken does not reuse offsets below the head', async () => {
    const clock = new TestClock();
    const a = testServices(storage, { clock });
    const b = testServices(storage, { clock });
    await configure(a, 'hint-x', { retentionEnabled: true, retentionSeconds: 10 });
    await a.pushes.push([{ queue: 'hint-x', payload: json(0) }]); // a's hint: next base 1
    await b.pushes.push([{ queue: 'hint-x', payload: json(1) }]);
    await b.pushes.push([{ queue: 'hint-x', payload: json(2) }]);
    clock.advance(11_000);
    expect(await a.retention.run()).toMatchObject({ segmentsDeleted: 2 }); // 0 and 1; the newest stays
    const [r] = await a.pushes.push([{ queue: 'hint-x', payload: json(3) }]);
    expect(r).toMatchObject({ status: 'queued', offset: 3 });
    expect((await b.segments.read(r!.partitionId, 0, { maxCount: 10 })).map((m) => m.offset)).toEqual([2, 3]);
  });

  it('completedRetentionSeconds keeps what a record-claim group has not finished; redriving a dead letter retention removed is not_found', async () => {
    const svc = testServices(storage);
    const Q = 'ret-claims';
    await configure(svc, Q, { retentionEnabled: true, completedRetentionSeconds: 1 });
    for (let i = 0; i < 4; i++) {
      await svc.pushes.push([{ queue: Q, payload: json(i) }]);
      svc.testClock.advance(1);
    }
    const pid = (await svc.queues.getPartition(Q, 'Default'))!.id;
    // A segment with messages (retention leaves a skip, its floor, at the lowest key it removed).
    const segment = async (base: number): Promise<boolean> =>
      (await storage.items.get('log', keys.segment(pid, base)))?.attrs['skip'] === undefined &&
      (await storage.items.get('log', keys.segment(pid, base))) !== undefined;
    // The lease group has finished everything; the claim group offsets 0 (acked) and 1 (dead letter).
    const all = await svc.leasePops.pop(req(Q, { group: 'l', batch: 10 }));
    await svc.leaseAcks.ack(
      all!.messages.map((m, index) => ({
        index,
        partitionId: m.partitionId,
        transactionId: m.transactionId,
        status: 'completed' as const,
      })),
      'l',
    );
    await svc.claims.poll(Q, 'Default', 'w', { max: 2, principal: 'p' });
    await svc.claims.ack(Q, 'Default', 'w', [0]);
    await svc.claims.deadLetter(Q, 'Default', 'w', { offset: 1, attempts: 1 });
    // Another partition the claim group (registered on the queue) has not polled yet.
    await svc.pushes.push([{ queue: Q, partition: 'other', payload: json('o1') }]);
    svc.testClock.advance(1);
    await svc.pushes.push([{ queue: Q, partition: 'other', payload: json('o2') }]);
    const other = await svc.leasePops.pop(req(Q, { group: 'l', partition: 'other', batch: 10 }));
    await svc.leaseAcks.ack(
      other!.messages.map((m, index) => ({
        index,
        partitionId: m.partitionId,
        transactionId: m.transactionId,
        status: 'completed' as const,
      })),
      'l',
    );

    svc.testClock.advance(10_000);
    await svc.retention.run();
    // Below the claim group's position (2) only: offsets 2 and 3 stay for it.
    expect([await segment(0), await segment(1), await segment(2), await segment(3)]).toEqual([
      false,
      false,
      true,
      true,
    ]);
    expect(await storage.items.get('log', keys.segment(other!.messages[0]!.partitionId, 0))).toBeDefined();

    // The dead letter at 1 lost its record: redriving it says so; discarding it works.
    const err = await svc.claims.redrive(Q, 'Default', 'w', 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect(err).toMatchObject({ code: 'not_found' });
    expect((err as Error).message).toMatch(/retention has removed its record/);
    expect(await svc.claims.listDeadLetters(Q, 'Default', 'w')).toEqual({ offsets: [1] });
    await svc.claims.discard(Q, 'Default', 'w', 1);

    // A redriven record below the group's position stays until it is finished again.
    expect((await svc.claims.poll(Q, 'Default', 'w', { max: 1, principal: 'p' })).records.map((r) => r.offset)).toEqual(
      [2],
    );
    await svc.claims.deadLetter(Q, 'Default', 'w', { offset: 2, attempts: 1 });
    await svc.claims.redrive(Q, 'Default', 'w', 2);
    svc.testClock.advance(10_000);
    await svc.retention.run();
    expect(await segment(2)).toBe(true);
    const again = await svc.claims.poll(Q, 'Default', 'w', { max: 5, principal: 'p' });
    expect(again.records.map((r) => [r.offset, text(r.message.payload)])).toEqual([
      [2, '2'],
      [3, '3'],
    ]);
    await svc.claims.ack(Q, 'Default', 'w', [2, 3]);
    await svc.retention.run();
    expect([await segment(2), await segment(3)]).toEqual([false, true]);
    expect(await codeOf(svc.claims.redrive(Q, 'Default', 'w', 0))).toBe('not_found');
  });
});
