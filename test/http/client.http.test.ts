/**
 * The TypeScript client end to end against the local server (embedded backend, real clock):
 * push, pop, ack, consume with auto-ack and manual ack, lease renewal, transactions, the DLQ,
 * group admin, queue deletion, and the claim-group consumer (nack after a delay, extend, dead-letter,
 * reclaim after a restart, graceful stop).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice, type ClaimRecord, type Message } from '../../client/index.js';
import { embeddedServer } from '../support/embedded-server.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const local = embeddedServer('sluice-client-');
let sluice: Sluice;

beforeAll(async () => {
  await local.start();
  sluice = new Sluice({ endpoint: local.url, retry: { attempts: 2, baseDelayMs: 10 } });
});
afterAll(local.stop);

describe('client e2e: partition leases', () => {
  it('pushes, pops and acks; a repeated push is a duplicate', async () => {
    const q = sluice.queue('e2e-basic').partition('a');
    const items = [1, 2, 3].map((n) => ({ data: { n }, transactionId: `basic-${n}` }));
    expect((await q.push(items)).map((r) => r.status)).toEqual(['queued', 'queued', 'queued']);
    expect((await q.push(items)).map((r) => r.status)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    const msgs = await q.batch(10).wait(false).pop<{ n: number }>();
    expect(msgs.map((m) => m.data.n)).toEqual([1, 2, 3]);
    expect(msgs.every((m) => m.leaseId && m.consumerGroup === '__QUEUE_MODE__' && m.queue === 'e2e-basic')).toBe(true);
    const acks = await sluice.ack(msgs);
    expect(acks.map((a) => a.success)).toEqual([true, true, true]);
    expect(await q.batch(10).wait(false).pop()).toEqual([]);
  });

  it('splits a big push into several requests under the limits', async () => {
    const small = new Sluice({ endpoint: local.url, maxPushItems: 400 });
    const results = await small
      .queue('e2e-big')
      .partition('a')
      .push(Array.from({ length: 1500 }, (_, i) => ({ data: { i } })));
    expect(results.filter((r) => r.status === 'queued')).toHaveLength(1500);
    expect(results.map((r) => r.offset)).toEqual(Array.from({ length: 1500 }, (_, i) => i));
  });

  it('consumes with auto-ack across workers and partitions', async () => {
    const q = sluice.queue('e2e-consume');
    for (const p of ['a', 'b', 'c'])
      await q.partition(p).push(Array.from({ length: 10 }, (_, i) => ({ data: { p, i } })));
    const seen: string[] = [];
    const stats = await q
      .group('billing')
      .batch(4)
      .consume<{ p: string; i: number }>(
        async (msgs: Message<{ p: string; i: number }>[]) => {
          for (const m of msgs) seen.push(`${m.data.p}${m.data.i}`);
        },
        { concurrency: 3, idleMs: 1500 },
      );
    expect(new Set(seen).size).toBe(30);
    expect(seen).toHaveLength(30);
    expect(stats).toMatchObject({ messages: 30, completed: 30, failed: 0 });
    expect(await q.group('billing').batch(10).wait(false).pop()).toEqual([]);
  });

  it('acks failed when the handler throws: redelivered, then dead-lettered, then replayed', async () => {
    const q = sluice.queue('e2e-fail');
    await q.config({ retryLimit: 1 }).create();
    await q.partition('a').push([{ data: { poison: true }, transactionId: 'poison-1' }]);
    let deliveries = 0;
    const errors: string[] = [];
    const stats = await q.group('g').consume(
      () => {
        deliveries++;
        throw new Error('cannot bill this order');
      },
      { each: true, idleMs: 1200, onError: (e, { phase }) => errors.push(`${phase}: ${(e as Error).message}`) },
    );
    expect(deliveries).toBe(2);
    expect(stats.failed).toBe(2);
    expect(errors).toEqual(['handler: cannot bill this order', 'handler: cannot bill this order']);
    const page = await sluice.dlq('e2e-fail').group('g').list();
    expect(page.messages).toHaveLength(1);
    expect(page.messages[0]).toMatchObject({
      transactionId: 'poison-1',
      consumerGroup: 'g',
      errorMessage: 'cannot bill this order',
      data: { poison: true },
    });
    const r = await sluice.retryMessage(page.messages[0]!.partitionId, 'poison-1', { consumerGroup: 'g' });
    expect(r).toMatchObject({ replayed: true, dlqRowRemoved: true });
    expect((await sluice.dlq('e2e-fail').list()).messages).toHaveLength(0);
    const again = await q.group('g').wait(false).pop();
    expect(again.map((m) => m.data)).toEqual([{ poison: true }]);
    expect(again[0]?.transactionId).not.toBe('poison-1');
    await sluice.ack(again);
  });

  it('acks manually from the handler context', async () => {
    const q = sluice.queue('e2e-manual').partition('a');
    await q.push([{ data: 1 }, { data: 2 }]);
    const stats = await q
      .group('m')
      .batch(10)
      .consume(
        async (msgs: Message[], ctx) => {
          const r = await ctx.ack(msgs, 'completed');
          expect(r.every((x) => x.success)).toBe(true);
        },
        { autoAck: false, limit: 2 },
      );
    expect(stats).toMatchObject({ messages: 2, completed: 0 });
    expect(await q.group('m').batch(10).wait(false).pop()).toEqual([]);
  });

  it("renews a long handler's lease so nobody else gets the batch, and the ack lands", async () => {
    const q = sluice.queue('e2e-renew');
    await q.config({ leaseTime: 2 }).create();
    await q.partition('a').push([{ data: 'slow-1' }, { data: 'slow-2' }]);
    const errors: string[] = [];
    let stolen: Message[] = ['x' as unknown as Message];
    const stats = await q
      .partition('a')
      .group('r')
      .batch(10)
      .consume(
        async () => {
          await pause(2600); // past the 2 s lease
          stolen = await q.partition('a').group('r').batch(10).wait(false).pop();
          await pause(400);
        },
        {
          renewLease: 400,
          renewSeconds: 2,
          limit: 2,
          onError: (e, { phase }) => errors.push(`${phase}: ${String(e)}`),
        },
      );
    expect(stolen).toEqual([]);
    expect(errors).toEqual([]);
    expect(stats.completed).toBe(2);
    expect(await q.partition('a').group('r').wait(false).pop()).toEqual([]);

    // Control: the same handler without renewal loses its lease and its ack.
    await q.partition('b').push([{ data: 'slow-3' }]);
    const lostErrors: string[] = [];
    let taken: Message[] = [];
    await q
      .partition('b')
      .group('r')
      .consume(
        async () => {
          await pause(2600);
          taken = await q.partition('b').group('r').wait(false).pop();
        },
        { limit: 1, renewLease: 0, onError: (e, { phase }) => lostErrors.push(phase) },
      );
    expect(taken.map((m) => m.data)).toEqual(['slow-3']);
    expect(lostErrors).toEqual(['ack']);
    await sluice.ack(taken);
  });

  it('stops gracefully in each mode: finishes the message in hand, hands back the rest', async () => {
    const q = sluice.queue('e2e-stop').partition('a');
    await q.push(Array.from({ length: 20 }, (_, i) => ({ data: i })));
    const handled: number[] = [];
    const stop = new AbortController();
    const first = await q
      .group('s')
      .batch(10)
      .consume(
        async (m: Message) => {
          handled.push(m.data as number);
          if (handled.length === 3) stop.abort();
          await pause(30);
        },
        { each: true, signal: stop.signal },
      );
    // One pop took all 20 (the loop pops up to 1,000); what the handler never saw went back.
    expect(first).toMatchObject({ messages: 20, batches: 1, completed: 3, handedBack: 17 });
    await q
      .group('s')
      .batch(10)
      .consume(async (m: Message) => void handled.push(m.data as number), { each: true, idleMs: 1000 });
    expect(handled).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('applies a transaction atomically', async () => {
    await sluice
      .queue('e2e-tx-in')
      .partition('a')
      .push([{ data: 'in' }]);
    const [m] = await sluice.queue('e2e-tx-in').partition('a').wait(false).pop();
    const r = await sluice
      .transaction()
      .queue('e2e-tx-out')
      .partition('a')
      .push([{ data: 'out-1' }, { data: 'out-2' }])
      .ack(m!, 'completed')
      .commit();
    expect(r.success).toBe(true);
    expect(await sluice.queue('e2e-tx-in').partition('a').wait(false).pop()).toEqual([]);
    const out = await sluice.queue('e2e-tx-out').partition('a').batch(10).wait(false).pop();
    expect(out.map((x) => x.data)).toEqual(['out-1', 'out-2']);
    await sluice.ack(out);

    const bad = sluice
      .transaction()
      .queue('e2e-tx-out')
      .partition('a')
      .push([{ data: 'never' }])
      .ack({ ...m!, transactionId: 'no-such-message' });
    await expect(bad.commit()).rejects.toMatchObject({ code: 'operation_failed' });
    expect(await sluice.queue('e2e-tx-out').partition('a').wait(false).pop()).toEqual([]);
  });

  it('redrives a whole DLQ in calls, and manages groups', async () => {
    const q = sluice.queue('e2e-dlq').partition('a');
    await q.push(Array.from({ length: 7 }, (_, i) => ({ data: i })));
    for (let i = 0; i < 7; i++) {
      const msgs = await q.group('d').wait(false).pop();
      await sluice.ack(msgs, 'dlq', { error: `bad ${i}` });
    }
    expect(await sluice.dlq('e2e-dlq').count()).toBe(7);
    const steps: number[] = [];
    const p = await sluice
      .dlq('e2e-dlq')
      .group('d')
      .redriveAll({ batch: 3, onProgress: (x) => steps.push(x.moved) });
    expect(p).toMatchObject({ moved: 7, failed: 0, more: false });
    expect(steps).toEqual([3, 6, 7]);
    expect(await sluice.dlq('e2e-dlq').count()).toBe(0);

    // The redriven copies are new messages for the group.
    const back = await q.group('d').batch(10).wait(false).pop();
    expect(back.map((m) => m.data)).toEqual([0, 1, 2, 3, 4, 5, 6]);

    const groups = await sluice.groups.list();
    expect(groups.map((g) => g.name)).toContain('d');
    const d = await sluice.groups.describe('d');
    expect(d.queues.find((x) => x.queue === 'e2e-dlq')?.detail?.[0]).toMatchObject({ partition: 'a' });
    // Lagging is Queen's rule: oldest unfinished message strictly older than the threshold (these are fresh).
    expect((await sluice.groups.lagging(3600)).map((g) => g.name)).not.toContain('d');
    await sluice.ack(back);
    await q.push([{ data: 'later' }]);
    const seek = await sluice.groups.seek('d', 'e2e-dlq', { toEnd: true });
    expect(seek).toMatchObject({ success: true, seekToEnd: true, partitionsUpdated: 1 });
    expect(await q.group('d').wait(false).pop()).toEqual([]);
    expect(await sluice.groups.subscription('d', new Date())).toMatchObject({ success: true });
    const del = await sluice.groups.delete('d', { queue: 'e2e-dlq' });
    expect(del).toMatchObject({ success: true, deletedPartitions: 1 });
    await expect(sluice.groups.describe('never-used-group')).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it('deletes a queue: its messages and dead letters go, a push afterwards starts a new queue', async () => {
    const q = sluice.queue('e2e-del');
    await q.create();
    await q.partition('a').push([{ transactionId: 'del-1', data: 'old-1' }, { data: 'old-2' }]);
    const [first] = await q.partition('a').group('g').wait(false).pop();
    await sluice.ack([first!], 'dlq', { error: 'bad' });
    expect(await sluice.dlq('e2e-del').count()).toBe(1);

    expect(await q.delete()).toEqual({ deleted: true, queue: 'e2e-del', existed: true });
    expect(await q.delete()).toEqual({ deleted: true, queue: 'e2e-del', existed: false });
    expect(await q.group('g').wait(false).pop()).toEqual([]);
    expect(await sluice.dlq('e2e-del').count()).toBe(0);

    const [again] = await q.partition('a').push([{ transactionId: 'del-1', data: 'new' }]);
    expect(again).toMatchObject({ status: 'queued' });
    expect(again!.partitionId).not.toBe(first!.partitionId);
    const got = await q.group('g').batch(10).wait(false).pop();
    expect(got.map((m) => m.data)).toEqual(['new']);
    await sluice.ack(got);
  });
});

describe('client e2e: record claims', () => {
  it('works a claim group: delayed nack, explicit and automatic extension, dead letter', async () => {
    const q = sluice.queue('e2e-claims').partition('p0');
    const kinds = ['ok', 'retry', 'slow', 'dead', 'ok', 'auto-slow'];
    await q.push(kinds.map((kind, i) => ({ data: { kind, i } })));
    const g = q.claimGroup('workers');
    await g.create('earliest');
    const deliveries: { offset: number; attempts: number; kind: string; at: number }[] = [];
    const nackedAt = new Map<number, number>();
    const granted: number[] = [];
    const stats = await g.consume<{ kind: string; i: number }>(
      async (rec: ClaimRecord<{ kind: string; i: number }>, ctx) => {
        deliveries.push({ offset: rec.offset, attempts: rec.attempts, kind: rec.data.kind, at: Date.now() });
        switch (rec.data.kind) {
          case 'retry':
            if (rec.attempts === 1) {
              nackedAt.set(rec.offset, Date.now());
              return ctx.nackAfter(400);
            }
            return;
          case 'slow':
            granted.push(await ctx.extend(3000));
            await pause(1500);
            return;
          case 'auto-slow':
            await pause(2500); // 2.5 × the visibility: kept by automatic extension
            return;
          case 'dead':
            return ctx.deadLetter();
          default:
            return;
        }
      },
      { concurrency: 4, visibilityMs: 1000, idleMs: 1500 },
    );
    expect(granted).toEqual([3000]);
    const byKind = (k: string) => deliveries.filter((d) => d.kind === k);
    expect(byKind('slow').map((d) => d.attempts)).toEqual([1]);
    expect(byKind('auto-slow').map((d) => d.attempts)).toEqual([1]);
    expect(byKind('retry').map((d) => d.attempts)).toEqual([1, 2]);
    const [r1, r2] = byKind('retry');
    expect(r2!.at - nackedAt.get(r1!.offset)!).toBeGreaterThanOrEqual(350);
    expect(byKind('ok')).toHaveLength(2);
    expect(stats).toMatchObject({ records: 7, acked: 5, nacked: 1, deadLettered: 1, lost: 0 });
    expect(stats.extended).toBeGreaterThanOrEqual(4);
    const state = await g.describe();
    expect(state).toMatchObject({ committed: 6, tail: 6, lag: 0, inFlight: 0, deadLetters: 1 });
    expect(await g.allDeadLetters()).toEqual([3]);
    await g.redrive(3);
    const { records } = await g.poll({ max: 5 });
    expect(records.map((r) => [r.offset, r.attempts])).toEqual([[3, 1]]);
    await g.ack(3);
  });

  it('takes back its claims at once after a restart (named member, new session)', async () => {
    const q = sluice.queue('e2e-claims').partition('p1');
    await q.push([{ data: 'a' }, { data: 'b' }, { data: 'c' }]);
    const g = q.claimGroup('members');
    const before = await g.poll({ max: 10, consumer: 'w1', session: 'boot-1', reclaim: true, visibilityMs: 60_000 });
    expect(before.records).toHaveLength(3);
    // The process "crashes" holding all three; another member gets nothing of them.
    expect((await g.poll({ max: 10, consumer: 'w2', session: 'x' })).records).toEqual([]);
    const started = Date.now();
    const seen: [string, number][] = [];
    const stats = await g.consume<string>(async (rec) => void seen.push([rec.data, rec.attempts]), {
      consumer: 'w1',
      limit: 3,
      waitMs: 1000,
      visibilityMs: 5000,
    });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(seen).toEqual([
      ['a', 2],
      ['b', 2],
      ['c', 2],
    ]);
    expect(stats.session).toMatch(/^[0-9a-f-]{36}$/);
    expect(await g.describe()).toMatchObject({ committed: 3, inFlight: 0 });
  });

  it('stops gracefully losing nothing: running handlers finish and ack, the rest is handed back', async () => {
    const q = sluice.queue('e2e-claims').partition('p2');
    await q.push(Array.from({ length: 40 }, (_, i) => ({ data: i })));
    const g = q.claimGroup('stoppers');
    const handled = new Map<number, number>();
    const stop = new AbortController();
    const handler = async (rec: ClaimRecord<number>): Promise<void> => {
      handled.set(rec.data, (handled.get(rec.data) ?? 0) + 1);
      if (handled.size === 10) stop.abort();
      await pause(40);
    };
    const first = await g.consume<number>(handler, {
      signal: stop.signal,
      consumer: 'stopper',
      concurrency: 3,
      max: 9,
      visibilityMs: 2000,
    });
    expect(first.acked + first.handedBack).toBeGreaterThanOrEqual(10);
    expect(first.handedBack).toBeGreaterThan(0);
    const second = await g.consume<number>(handler, { consumer: 'stopper', concurrency: 3, idleMs: 1000 });
    expect(first.acked + second.acked).toBe(40);
    expect([...handled.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect([...handled.values()].every((n) => n === 1)).toBe(true);
    expect(await g.describe()).toMatchObject({ committed: 40, inFlight: 0, owed: 0 });
  });
});
