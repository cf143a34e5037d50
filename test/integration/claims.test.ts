import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countingStorage } from '../../bench/counting-storage.js';
import { MAX_POLL_BYTES } from '../../server/core/claims/index.js';
import { resolveQueueOptions, type QueueOptionsInput } from '../../server/core/queue-options.js';
import { claimKeys } from '../../server/service/claims/claim-store.js';
import { logKeys as keys, skipSegmentItem } from '../../server/service/log/log-store.js';
import type { Services } from '../../server/service/runtime.js';
import type { MemoryTelemetry } from '../../server/service/telemetry.js';
import type { Storage, WriteOp } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { TestClock, json, testServices, text } from '../support/services.js';
import { codeOf } from '../support/storage.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const P = 'Default';

async function queueWith(
  svc: Services,
  queue: string,
  n: number,
  options: QueueOptionsInput = {},
  batch = 500,
): Promise<void> {
  await svc.queues.configure({ queue, options: resolveQueueOptions(options, svc.config.claimDefaults) });
  for (let i = 0; i < n; i += batch) {
    const items = Array.from({ length: Math.min(batch, n - i) }, (_, j) => ({ queue, payload: json({ n: i + j }) }));
    await svc.pushes.push(items);
  }
}

const offsetsOf = (r: { records: { offset: number }[] }): number[] => r.records.map((x) => x.offset);

describe.each(backends)('integration: record claims on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('keeps claims in storage: another instance (or a restart) sees them, and payloads come back byte-identical', async () => {
    const clock = new TestClock();
    const a = testServices(storage, { clock });
    await queueWith(a, 'durable', 5);
    const got = await a.claims.poll('durable', P, 'g', { max: 3, principal: 'p' });
    expect(offsetsOf(got)).toEqual([0, 1, 2]);
    expect(got.records.map((r) => (JSON.parse(text(r.message.payload)) as { n: number }).n)).toEqual([0, 1, 2]);
    // A second process over the same storage: nothing of the claims is lost or handed out twice.
    const b = testServices(storage, { clock });
    expect(offsetsOf(await b.claims.poll('durable', P, 'g', { max: 5, principal: 'p' }))).toEqual([3, 4]);
    expect(await b.claims.ack('durable', P, 'g', [0, 1, 2, 3])).toMatchObject({ committed: 4 });
    clock.advance(30_000);
    expect(offsetsOf(await a.claims.poll('durable', P, 'g', { max: 5, principal: 'p' }))).toEqual([4]);
    expect(await a.claims.describe('durable', P, 'g')).toMatchObject({
      committed: 4,
      tail: 5,
      lag: 1,
      inFlight: 1,
      owed: 0,
    });
  });

  it('costs a constant number of storage requests per poll and per batch ack, whatever the batch size', async () => {
    const counted = countingStorage(storage);
    const svc = testServices(counted.storage, { config: { queueCacheMs: 60_000 } });
    const sizes = backend.name === 'aws' ? [1, 10, 100] : [1, 10, 100, 1000];
    const perPoll: number[] = [];
    const perAck: number[] = [];
    for (const n of sizes) {
      const q = `cost-${n}`;
      await queueWith(svc, q, n, {}, n);
      // Creating the group registers it and warms the per-process caches (queue, partition,
      // registration); it does not read the segment, so the poll below pays for that read.
      await svc.claims.create(q, P, 'g', 'earliest');
      counted.reset();
      const got = await svc.claims.poll(q, P, 'g', { max: n, principal: 'p' });
      expect(got.records).toHaveLength(n);
      perPoll.push(counted.total());
      counted.reset();
      await svc.claims.ack(q, P, 'g', offsetsOf(got));
      perAck.push(counted.total());
    }
    // One query of the group, the log's index query (these segments are inline: their bytes
    // come with it), one transaction.
    expect(perPoll).toEqual(sizes.map(() => 3));
    // One query of the group, one transaction.
    expect(perAck).toEqual(sizes.map(() => 2));
  });

  it('refuses an ack that raced a seek: the new cursor stays where the seek put it', async () => {
    const clock = new TestClock();
    // The ack's transaction is held until the seek has landed.
    let hold: Promise<void> | undefined;
    let arrived: () => void = () => {};
    const gate: Storage = {
      ...storage,
      kind: storage.kind,
      blobs: storage.blobs,
      close: () => storage.close(),
      items: {
        ...storage.items,
        get: (t, k) => storage.items.get(t, k),
        getMany: (t, k) => storage.items.getMany(t, k),
        query: (t, pk, o) => storage.items.query(t, pk, o),
        put: (t, i, c) => storage.items.put(t, i, c),
        delete: (t, k, c) => storage.items.delete(t, k, c),
        writeEach: (ops) => storage.items.writeEach(ops),
        transact: async (ops: WriteOp[]) => {
          if (hold) {
            const h = hold;
            hold = undefined;
            arrived();
            await h;
          }
          return storage.items.transact(ops);
        },
      },
    };
    const svc = testServices(storage, { clock });
    const racer = testServices(gate, { clock });
    await queueWith(svc, 'race-seek', 3);
    await svc.claims.poll('race-seek', P, 'g', { max: 3, principal: 'p' });
    let release: () => void = () => {};
    hold = new Promise<void>((r) => (release = r));
    const held = new Promise<void>((r) => (arrived = r));
    const ack = racer.claims.ack('race-seek', P, 'g', [0, 1, 2]);
    await held; // the ack decided on the old view and is about to write
    await svc.claims.seek('race-seek', P, 'g', { offset: 0 });
    release();
    expect(await codeOf(ack)).toBe('stale_claim');
    expect(await svc.claims.describe('race-seek', P, 'g')).toMatchObject({ committed: 0, inFlight: 0 });
    expect(offsetsOf(await svc.claims.poll('race-seek', P, 'g', { max: 3, principal: 'p' }))).toEqual([0, 1, 2]);
  });

  it('sets TTL on member entries only, and losing one changes nothing the group owes', async () => {
    const clock = new TestClock();
    const svc = testServices(storage, { clock });
    await queueWith(svc, 'ttl', 4);
    await svc.claims.poll('ttl', P, 'g', { max: 2, principal: 'p', consumer: 'w', session: 's1' });
    await svc.claims.nack('ttl', P, 'g', { offset: 1 });
    await svc.claims.deadLetter('ttl', P, 'g', { offset: 0 });
    await svc.claims.poll('ttl', P, 'g', { max: 1, principal: 'p', consumer: 'w', session: 's1' });
    const part = await svc.queues.getPartition('ttl', P);
    const pid = part!.id;
    for (const pk of [claimKeys.groupPk(pid, 'g'), claimKeys.deadPk(pid, 'g')]) {
      const page = await storage.items.query('claims', pk);
      expect(page.items.length).toBeGreaterThan(0);
      expect(page.items.every((i) => i.expiresAt === undefined)).toBe(true);
    }
    const memberKey = claimKeys.member(pid, 'g', 'p', 'w');
    const member = await storage.items.get('claims', memberKey);
    expect(member?.expiresAt).toBeGreaterThanOrEqual(Math.ceil((clock.t + 86_400_000) / 1000));
    const before = await svc.claims.describe('ttl', P, 'g');
    // TTL removes the member entry: what the group owes is the same, and so is what it hands out.
    await storage.items.delete('claims', memberKey);
    expect(await svc.claims.describe('ttl', P, 'g')).toEqual(before);
    clock.advance(30_000);
    expect(
      offsetsOf(await svc.claims.poll('ttl', P, 'g', { max: 5, principal: 'p', consumer: 'w', session: 's1' })),
    ).toEqual([1, 2, 3]);
  });

  it('reports skippedBefore for records retention removed before the group reached them', async () => {
    const svc = testServices(storage);
    await queueWith(svc, 'retained', 6, {}, 2);
    const part = await svc.queues.getPartition('retained', P);
    // Retention removed the first two segments (offsets 0..3), leaving its floor (a skip) over them.
    await storage.items.put('log', skipSegmentItem(part!.id, 0, 3, Date.now()));
    await storage.items.delete('log', keys.segment(part!.id, 2));
    svc.segments.forgetSegments(part!.id);
    const got = await svc.claims.poll('retained', P, 'g', { max: 5, principal: 'p' });
    expect(got.records.map((r) => [r.offset, r.skippedBefore])).toEqual([
      [4, 4],
      [5, 0],
    ]);
    expect(await svc.claims.ack('retained', P, 'g', [4, 5])).toMatchObject({ committed: 6 });
  });

  it('stops a poll at about 4 MiB of payload; the rest stays for the next poll', async () => {
    const svc = testServices(storage, { config: { maxMessageBytes: 2 * 1024 * 1024, maxBodyBytes: 8 * 1024 * 1024 } });
    await svc.queues.configure({ queue: 'big', options: resolveQueueOptions({}) });
    const blob = 'x'.repeat(900 * 1024);
    await svc.pushes.push(Array.from({ length: 6 }, (_, n) => ({ queue: 'big', payload: json({ n, blob }) })));
    const first = await svc.claims.poll('big', P, 'g', { max: 10, principal: 'p' });
    const bytes = first.records.reduce((a, r) => a + r.message.payload.byteLength, 0);
    expect(first.records.length).toBe(4);
    expect(bytes).toBeLessThanOrEqual(MAX_POLL_BYTES);
    expect(offsetsOf(await svc.claims.poll('big', P, 'g', { max: 10, principal: 'p' }))).toEqual([4, 5]);
  });

  it('long-polls: woken by a push in this process, by another process within about a second, and by the signal', async () => {
    const svc = testServices(storage);
    await queueWith(svc, 'wait', 0);
    let t0 = Date.now();
    const waiting = svc.claims.poll('wait', P, 'g', { max: 5, waitMs: 5000, principal: 'p' });
    setTimeout(() => void svc.pushes.push([{ queue: 'wait', payload: json('hello') }]), 100);
    expect(offsetsOf(await waiting)).toEqual([0]);
    expect(Date.now() - t0).toBeLessThan(2500);
    // Another process's push (its own notifier) is found by looking at storage again.
    const other = testServices(storage);
    expect(other.notifier).not.toBe(svc.notifier);
    t0 = Date.now();
    const waiting2 = svc.claims.poll('wait', P, 'g', { max: 5, waitMs: 5000, principal: 'p' });
    setTimeout(() => void other.pushes.push([{ queue: 'wait', payload: json('again') }]), 100);
    expect(offsetsOf(await waiting2)).toEqual([1]);
    expect(Date.now() - t0).toBeLessThan(3000);
    const ac = new AbortController();
    t0 = Date.now();
    const aborted = svc.claims.poll('wait', P, 'g', { max: 5, waitMs: 20_000, principal: 'p' }, ac.signal);
    setTimeout(() => ac.abort(), 100);
    expect((await aborted).records).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('applies an ack spanning more batches than one transaction holds in several steps, all of it', async () => {
    const counted = countingStorage(storage);
    const svc = testServices(counted.storage, { config: { queueCacheMs: 60_000 } });
    const batches = 70;
    const per = 129; // above the merge span, so every poll makes its own batch
    await queueWith(svc, 'wide', batches * per, {}, 1000);
    const firsts: number[] = [];
    const rest: number[] = [];
    for (let b = 0; b < batches; b++) {
      const got = offsetsOf(await svc.claims.poll('wide', P, 'g', { max: per, principal: 'p' }));
      firsts.push(got[0]!);
      rest.push(...got.slice(1));
    }
    for (let i = 0; i < rest.length; i += 1000) await svc.claims.ack('wide', P, 'g', rest.slice(i, i + 1000));
    expect((await svc.claims.describe('wide', P, 'g')).inFlight).toBe(batches);
    counted.reset();
    expect(await svc.claims.ack('wide', P, 'g', firsts)).toEqual({ committed: batches * per, acked: batches });
    expect(counted.counts['transact']).toBe(2);
    expect(await svc.claims.describe('wide', P, 'g')).toMatchObject({ inFlight: 0, owed: 0, committed: batches * per });
  });

  it('answers capped at the in-flight cap and counts it', async () => {
    const svc = testServices(storage);
    await queueWith(svc, 'cap', 5, { maxInFlight: 2 });
    expect(offsetsOf(await svc.claims.poll('cap', P, 'g', { max: 5, principal: 'p' }))).toEqual([0, 1]);
    expect(await svc.claims.poll('cap', P, 'g', { max: 5, principal: 'p' })).toEqual({ records: [], capped: true });
    expect((svc.telemetry as MemoryTelemetry).counters.get('ClaimPollsCapped')).toBe(1);
    await svc.claims.ack('cap', P, 'g', [0]);
    expect(offsetsOf(await svc.claims.poll('cap', P, 'g', { max: 5, principal: 'p' }))).toEqual([2]);
    expect((svc.telemetry as MemoryTelemetry).counters.get('ClaimAcks')).toBe(1);
  });

  it('uses the service-wide defaults (SLUICE_GROUP_*) for a queue a push created', async () => {
    const clock = new TestClock();
    const svc = testServices(storage, {
      clock,
      config: {
        claimDefaults: { visibilityTimeoutMs: 5000, maxAttempts: 2, maxInFlight: 100, maxVisibilityMs: 60_000 },
      },
    });
    await svc.pushes.push([{ queue: 'implicit', payload: json(1) }]);
    await svc.claims.poll('implicit', P, 'g', { principal: 'p' });
    clock.advance(5000);
    expect((await svc.claims.poll('implicit', P, 'g', { principal: 'p' })).records[0]?.attempts).toBe(2);
    clock.advance(5000);
    expect(offsetsOf(await svc.claims.poll('implicit', P, 'g', { principal: 'p' }))).toEqual([]);
    expect((await svc.claims.listDeadLetters('implicit', P, 'g')).offsets).toEqual([0]);
    // The default maxVisibilityMs (60 s here) caps a poll's visibility.
    await svc.pushes.push([{ queue: 'implicit', payload: json(2) }]);
    expect(offsetsOf(await svc.claims.poll('implicit', P, 'g', { principal: 'p', visibilityMs: 600_000 }))).toEqual([
      1,
    ]);
    clock.advance(59_999);
    expect(offsetsOf(await svc.claims.poll('implicit', P, 'g', { principal: 'p' }))).toEqual([]);
    clock.advance(1);
    expect(offsetsOf(await svc.claims.poll('implicit', P, 'g', { principal: 'p' }))).toEqual([1]);
  });

  it('refuses a group that consumes by partition leases, and unknown queues and partitions', async () => {
    const svc = testServices(storage);
    await queueWith(svc, 'modes', 1);
    await svc.groups.register('modes', 'leasers', 'lease', { mode: 'all', from: null });
    expect(await codeOf(svc.claims.poll('modes', P, 'leasers', { principal: 'p' }))).toBe('conflict');
    expect(await codeOf(svc.claims.ack('modes', P, 'leasers', [0]))).toBe('conflict');
    await svc.claims.poll('modes', P, 'claimers', { principal: 'p' });
    expect(await codeOf(svc.groups.register('modes', 'claimers', 'lease', { mode: 'all', from: null }))).toBe(
      'conflict',
    );
    expect(await codeOf(svc.claims.poll('nope', P, 'g', { principal: 'p' }))).toBe('not_found');
    expect(await codeOf(svc.claims.poll('modes', 'nope', 'g', { principal: 'p' }))).toBe('not_found');
  });

  it('deletes a group with its position, claims, members and dead letters; it starts over at 0', async () => {
    const svc = testServices(storage);
    await queueWith(svc, 'del', 3);
    await svc.claims.poll('del', P, 'g', { max: 2, principal: 'p', consumer: 'w', session: 's' });
    await svc.claims.deadLetter('del', P, 'g', { offset: 0 });
    expect(await svc.claims.deleteGroup('del', P, 'g')).toEqual({ existed: true });
    const pid = (await svc.queues.getPartition('del', P))!.id;
    for (const pk of [claimKeys.groupPk(pid, 'g'), claimKeys.deadPk(pid, 'g'), claimKeys.memberPk(pid, 'g')]) {
      expect((await storage.items.query('claims', pk)).items).toEqual([]);
    }
    expect(await svc.claims.deleteGroup('del', P, 'g')).toEqual({ existed: false });
    expect(await codeOf(svc.claims.describe('del', P, 'g'))).toBe('not_found');
    expect((await svc.claims.listDeadLetters('del', P, 'g')).offsets).toEqual([]);
    expect(offsetsOf(await svc.claims.poll('del', P, 'g', { max: 3, principal: 'p' }))).toEqual([0, 1, 2]);
  });

  it('ignores what a cut-short delete left behind, and the clean-up pass removes only that', async () => {
    const clock = new TestClock();
    const svc = testServices(storage, { clock });
    await queueWith(svc, 'leftover', 4);
    await svc.claims.poll('leftover', P, 'g', { max: 2, principal: 'p' });
    await svc.claims.deadLetter('leftover', P, 'g', { offset: 0 });
    const pid = (await svc.queues.getPartition('leftover', P))!.id;
    // A delete that only got as far as the position.
    await storage.items.delete('claims', claimKeys.state(pid, 'g'));
    // The new incarnation holds a long claim.
    expect(
      offsetsOf(await svc.claims.poll('leftover', P, 'g', { max: 1, principal: 'p', visibilityMs: 3_600_000 })),
    ).toEqual([0]);
    expect((await svc.claims.listDeadLetters('leftover', P, 'g')).offsets).toEqual([]);
    clock.advance(30 * 60_000); // idle far longer than Felix's ten minutes
    // The new incarnation's batch took over the old batch's key; the old dead letter is left.
    expect((await storage.items.query('claims', claimKeys.deadPk(pid, 'g'))).items).toHaveLength(1);
    const swept = await svc.claims.sweep('leftover', P, 'g');
    expect(swept.removed).toBe(1);
    expect((await storage.items.query('claims', claimKeys.deadPk(pid, 'g'))).items).toEqual([]);
    expect(await svc.claims.describe('leftover', P, 'g')).toMatchObject({ inFlight: 1, committed: 0 });
    expect(offsetsOf(await svc.claims.poll('leftover', P, 'g', { max: 1, principal: 'p' }))).toEqual([1]);
    // A dead letter can be listed again at an offset the old incarnation had listed.
    await svc.claims.deadLetter('leftover', P, 'g', { offset: 0 });
    expect((await svc.claims.listDeadLetters('leftover', P, 'g')).offsets).toEqual([0]);
    expect((await svc.claims.describe('leftover', P, 'g')).deadLetters).toBe(1);
  });

  // 2,000 records on both backends (~15 s on DynamoDB Local with the whole suite sharing two
  // cores); CLAIMS_RANDOM_TOTAL sets another size.
  const total = Number(process.env['CLAIMS_RANDOM_TOTAL'] ?? 2000);
  it(
    `4 consumers, ${total.toLocaleString('en-US')} records, random ack / nack / delayed nack / ` +
      `abandon / extend / dead-letter: every offset finishes exactly once`,
    async () => {
      const clock = new TestClock();
      // Own tables, so the other tests' items are not in its way.
      const own = await backend.newStorage();
      const storage = own.storage;
      // Queue configuration cached as in production (the default is 1 s), not re-read per call.
      const config = { queueCacheMs: 3_600_000 };
      const svc = testServices(storage, { clock, config });
      await queueWith(svc, 'random', total, { visibilityTimeoutMs: 30_000, maxAttempts: 4 });
      let seed = backend.name === 'aws' ? 7 : 11;
      const rnd = (): number => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed / 2 ** 31;
      };
      const acked = new Map<number, number>();
      const consumerDead = new Set<number>();
      // Deliveries per offset (attempts must count them, this one included) and who holds a
      // standing claim: a record is held by one consumer at a time.
      const deliveries = new Map<number, number>();
      const holder = new Map<number, string>();
      // Each consumer is its own process (own services, own caches) over the same storage.
      const consumers = Array.from({ length: 4 }, (_, i) => ({
        name: `c${i}`,
        svc: testServices(storage, { clock, config }),
        extended: [] as { offset: number; attempts: number }[],
      }));
      let rounds = 0;
      for (;;) {
        rounds++;
        expect(rounds).toBeLessThan(400);
        await Promise.all(
          consumers.map(async (c) => {
            const got = await c.svc.claims.poll('random', P, 'g', {
              max: 40,
              principal: 'p',
              consumer: c.name,
              session: 's',
            });
            const toAck: number[] = [];
            // What this consumer extended last round is finished now.
            for (const e of c.extended) toAck.push(e.offset);
            c.extended = [];
            for (const r of got.records) {
              expect(
                holder.get(r.offset),
                `offset ${r.offset} handed to ${c.name} while another consumer's claim stands`,
              ).toBeUndefined();
              const n = (deliveries.get(r.offset) ?? 0) + 1;
              deliveries.set(r.offset, n);
              expect(r.attempts).toBe(n);
              expect(acked.has(r.offset) || consumerDead.has(r.offset)).toBe(false);
              holder.set(r.offset, c.name);
            }
            for (const r of got.records) {
              const x = rnd();
              if (x < 0.55) toAck.push(r.offset);
              else if (x < 0.65) {
                holder.delete(r.offset);
                await c.svc.claims.nack('random', P, 'g', { offset: r.offset, attempts: r.attempts });
              } else if (x < 0.72) {
                holder.delete(r.offset);
                await c.svc.claims.nack('random', P, 'g', { offset: r.offset, attempts: r.attempts, delayMs: 20_000 });
              } else if (x < 0.8) {
                await c.svc.claims.extend('random', P, 'g', {
                  offset: r.offset,
                  attempts: r.attempts,
                  extendMs: 90_000,
                });
                c.extended.push({ offset: r.offset, attempts: r.attempts });
              } else if (x < 0.82) {
                holder.delete(r.offset);
                await c.svc.claims.deadLetter('random', P, 'g', { offset: r.offset, attempts: r.attempts });
                consumerDead.add(r.offset);
              }
              // else: abandoned, its claim lapses
            }
            if (toAck.length > 0) {
              await c.svc.claims.ack('random', P, 'g', toAck);
              for (const o of toAck) acked.set(o, (acked.get(o) ?? 0) + 1);
            }
          }),
        );
        // Acked claims are settled; what was not extended lapses now (extended ones are acked next round).
        holder.clear();
        for (const c of consumers) for (const e of c.extended) holder.set(e.offset, c.name);
        clock.advance(31_000); // everything not extended or acked lapses; delays pass
        const d = await svc.claims.describe('random', P, 'g');
        if (d.committed === total && d.inFlight === 0 && d.owed === 0) break;
      }
      const dead: number[] = [];
      for (let after: number | undefined; ;) {
        const page = await svc.claims.listDeadLetters('random', P, 'g', { after, limit: 500 });
        dead.push(...page.offsets);
        if (page.next === undefined) break;
        after = page.next;
      }
      // Every offset is finished exactly once: acknowledged (once) or dead-lettered, never both.
      expect([...acked.values()].every((n) => n === 1)).toBe(true);
      for (const o of dead) expect(acked.has(o)).toBe(false);
      for (const o of consumerDead) expect(dead).toContain(o);
      expect(acked.size + dead.length).toBe(total);
      // Never more deliveries than the attempt bound (4); every offset was delivered at least once.
      expect(deliveries.size).toBe(total);
      expect(Math.max(...deliveries.values())).toBeLessThanOrEqual(4);
      expect(new Set([...acked.keys(), ...dead]).size).toBe(total);
      expect(await svc.claims.describe('random', P, 'g')).toMatchObject({
        committed: total,
        tail: total,
        lag: 0,
        inFlight: 0,
        owed: 0,
        deadLetters: dead.length,
      });
      await own.cleanup();
      // Alone it takes ~30-40 s on moto; with the whole suite sharing two cores, longer.
    },
    240_000,
  );
});
