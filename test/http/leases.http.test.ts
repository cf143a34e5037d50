// Black-box tests of the partition-lease routes (seed 002) against the local server, on both
// backends. Lease time is driven by the services' TestClock; only long polls wait for real
// (briefly). Test names cite the seed rule they check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../server/local/server.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, startTestServer } from '../support/http.js';
import { leaseCalls } from '../support/lease-calls.js';
import type {
  AckReply,
  ConsumerGroupReply,
  DlqPageReply,
  ErrorReply,
  ExtendReply,
  RedriveReply,
  PoppedMessage,
  TransactionReply,
} from '../support/replies.js';
import { testServices, type TestClock } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

type Msg = PoppedMessage;

describe.each(backends)('http: partition leases on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let server: LocalServer;
  let url: string;
  let clock: TestClock;

  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
    const svc = testServices(storage, { config: { maxPopWaitMs: 1200 } });
    clock = svc.testClock;
    server = await startTestServer(svc);
    url = server.url;
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });

  const { push, pop, popped, ackBatch } = leaseCalls(() => url);
  const configure = (queue: string, options: Record<string, unknown>) =>
    call(url, 'POST', '/api/v1/configure', { queue, options });
  const data = (ms: Msg[]): unknown[] => ms.map((m) => m.data);

  // ------------------------------------------------------------------ pop

  it('002.1 a pop leases the next batch (Queen shape); 204 for an empty or unknown queue or partition', async () => {
    await push('p1', [{ n: 1 }, null, [1, 2]]);
    const r = await pop('p1', 'batch=2');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      success: true,
      queue: 'p1',
      partition: 'Default',
      consumerGroup: '__QUEUE_MODE__',
      partitionsClaimed: 1,
    });
    expect(r.body.leaseId.length).toBeGreaterThan(10);
    expect(data(r.body.messages)).toEqual([{ n: 1 }, null]);
    const m = r.body.messages[0] as Msg;
    expect(m).toMatchObject({
      partition: 'Default',
      leaseId: r.body.leaseId,
      consumerGroup: '__QUEUE_MODE__',
      producerSub: null,
    });
    expect(m.createdAt).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    expect(typeof m.transactionId).toBe('string');
    expect((await pop('nope')).status).toBe(204);
    expect((await pop('p1', '', 'nope')).status).toBe(204);
    expect((await pop('p1', '', 'Default')).status).toBe(204); // leased
  });

  it('002.3 autoAck=true takes no lease, answers an empty leaseId and commits at delivery', async () => {
    await push('auto', [1, 2, 3]);
    const a = await popped('auto', 'batch=2&autoAck=true');
    expect(a.leaseId).toBe('');
    expect(data(a.messages)).toEqual([1, 2]);
    const b = await popped('auto', 'batch=2&autoAck=1');
    expect(data(b.messages)).toEqual([3]);
    expect((await pop('auto', 'autoAck=true')).status).toBe(204);
  });

  it('002.4 one leased batch per (partition, group): the lane answers 204 while leased; other groups and partitions are free', async () => {
    await push('lane', [1, 2], 'a');
    await push('lane', [3], 'b');
    const first = await popped('lane', 'consumerGroup=g1&batch=10');
    const second = await popped('lane', 'consumerGroup=g1&batch=10');
    expect([first.messages[0]?.partition, second.messages[0]?.partition].sort()).toEqual(['a', 'b']);
    expect((await pop('lane', 'consumerGroup=g1')).status).toBe(204);
    const other = await popped('lane', 'consumerGroup=g2&batch=10', 'a');
    expect(data(other.messages)).toEqual([1, 2]);
  });

  it('002.4 50 concurrent pops on one (partition, group) lane: exactly one wins, every time', async () => {
    await push('race', [1, 2, 3]);
    for (let round = 0; round < 2; round++) {
      const replies = await Promise.all(
        Array.from({ length: 50 }, () => pop('race', 'consumerGroup=r&batch=3', 'Default')),
      );
      const winners = replies.filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      expect(replies.filter((r) => r.status === 204)).toHaveLength(49);
      expect(data(winners[0]!.body.messages)).toEqual([1, 2, 3]);
      clock.advance(61_000); // the lease lapses: the next round races again
    }
  });

  it('002.5 effective lease time: ?leaseSeconds > 0, else the stored leaseTime (300 after /configure), else 60 s', async () => {
    const expiry = async (leaseId: string): Promise<number> => {
      // An extend never shortens: extending by 1 s reports the current expiry.
      const r = await call<ExtendReply>(url, 'POST', `/api/v1/lease/${leaseId}/extend`, { seconds: 1 });
      return Date.parse(r.body.newExpiresAt) - clock.t;
    };
    await push('implicit', [1]);
    expect(await expiry((await popped('implicit')).leaseId)).toBe(60_000);
    await configure('configured', {});
    await push('configured', [1, 2]);
    expect(await expiry((await popped('configured')).leaseId)).toBe(300_000);
    expect(await expiry((await popped('configured', 'leaseSeconds=7&consumerGroup=x')).leaseId)).toBe(7_000);
  });

  it('002.6 extend renews every live lease of the id (all partitions of one pop), never shortens; expired renews nothing', async () => {
    await push('ext', [1], 'a');
    await push('ext', [2], 'b');
    const p = await popped('ext', 'partitions=2&batch=10');
    expect(p.messages).toHaveLength(2);
    clock.advance(30_000);
    const r = await call<ExtendReply>(url, 'POST', `/api/v1/lease/${p.leaseId}/extend`, {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ leaseId: p.leaseId, success: true, renewed: 2 });
    expect(Date.parse(r.body.newExpiresAt)).toBe(clock.t + 60_000);
    expect(r.body.expiresAt).toBe(r.body.newExpiresAt);
    expect(r.body.lease_expires_at).toBe(r.body.newExpiresAt);
    clock.advance(60_000);
    const late = await call<ExtendReply>(url, 'POST', `/api/v1/lease/${p.leaseId}/extend`, { seconds: 60 });
    expect(late.body).toMatchObject({ success: false, renewed: 0 });
    expect((await call(url, 'POST', '/api/v1/lease/unknown/extend')).body).toMatchObject({
      success: false,
      renewed: 0,
    });
  });

  it('002.7 an expired lease redelivers the whole un-acked span from committed + 1, charging no budget', async () => {
    await configure('exp', { retryLimit: 0 });
    await push('exp', [1, 2, 3]);
    const p = await popped('exp', 'batch=3');
    await ackBatch(p.messages.slice(0, 1), 'completed');
    clock.advance(300_000);
    const again = await popped('exp', 'batch=3');
    expect(data(again.messages)).toEqual([2, 3]);
    clock.advance(300_000);
    expect(data((await popped('exp', 'batch=3')).messages)).toEqual([2, 3]);
    // Still no budget spent: a failed now charges (retryLimit 0 files at once only when spent).
    const g = await call<ConsumerGroupReply>(url, 'GET', '/api/v1/consumer-groups/__QUEUE_MODE__');
    const part = g.body.queues.find((q) => q.queue === 'exp')!.detail[0];
    expect(part).toMatchObject({ committed: 0, retryCount: 0, redeliveries: 1 });
  });

  it('002.8 completed is an offset commit: the lease goes once the whole batch is acked', async () => {
    await push('commit', [1, 2, 3, 4]);
    const p = await popped('commit', 'batch=3');
    const partial = await ackBatch(p.messages.slice(0, 2), 'completed');
    expect(partial.body.map((x) => x.leaseReleased)).toEqual([false, false]);
    expect((await pop('commit')).status).toBe(204);
    const rest = await call(url, 'POST', '/api/v1/ack', {
      transactionId: p.messages[2]!.transactionId,
      partitionId: p.messages[2]!.partitionId,
      leaseId: p.leaseId,
      status: 'success',
    });
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual([
      {
        index: 0,
        transactionId: p.messages[2]!.transactionId,
        success: true,
        error: null,
        queueName: 'commit',
        partitionName: 'Default',
        leaseReleased: true,
        dlq: false,
      },
    ]);
    expect(data((await popped('commit')).messages)).toEqual([4]);
  });

  it('002.9 the lowest explicit signal decides: the cursor stays on the completed prefix before it', async () => {
    await push('mixed', [1, 2, 3, 4]);
    const p = await popped('mixed', 'batch=4');
    const r = await ackBatch(p.messages, ['completed', 'failed', 'completed', 'retry']);
    expect(r.body.every((x) => x.success && x.leaseReleased)).toBe(true);
    expect(data((await popped('mixed', 'batch=4')).messages)).toEqual([2, 3, 4]);
  });

  it('002.10 an ack naming a foreign or expired lease is refused for that item (200, success false), and the message returns', async () => {
    await push('foreign', [1]);
    const p = await popped('foreign');
    const bad = await ackBatch(p.messages, 'completed', { leaseId: 'someone-else' });
    expect(bad.body[0]).toMatchObject({ success: false, error: 'Invalid or expired lease' });
    clock.advance(61_000);
    const late = await ackBatch(p.messages, 'completed');
    expect(late.body[0]).toMatchObject({ success: false, error: 'Invalid or expired lease' });
    const unknown = await call<AckReply>(url, 'POST', '/api/v1/ack', {
      transactionId: 'nope',
      partitionId: p.messages[0]!.partitionId,
    });
    expect(unknown.body[0]).toMatchObject({ success: false });
    expect(data((await popped('foreign')).messages)).toEqual([1]);
    expect((await call(url, 'POST', '/api/v1/ack', { partitionId: 'x' })).status).toBe(400);
  });

  // --------------------------------------------------------------- budget

  it('002.11 failed charges the lane while below retryLimit and redelivers at once; the (retryLimit+1)-th files it', async () => {
    await configure('budget', { retryLimit: 1 });
    await push('budget', [{ bad: true }, 'next']);
    let p = await popped('budget');
    expect((await ackBatch(p.messages, 'failed', { error: 'first' })).body[0]).toMatchObject({
      dlq: false,
      leaseReleased: true,
    });
    p = await popped('budget');
    expect(data(p.messages)).toEqual([{ bad: true }]);
    const filed = await ackBatch(p.messages, 'failed', { error: 'bad payload' });
    expect(filed.body[0]).toMatchObject({ success: true, dlq: true, leaseReleased: true });
    expect(data((await popped('budget')).messages)).toEqual(['next']);
    const dlq = await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=budget');
    expect(dlq.body.messages).toHaveLength(1);
    expect(dlq.body.messages[0]).toMatchObject({
      errorMessage: 'bad payload',
      retryCount: 1,
      data: { bad: true },
      consumerGroup: '__QUEUE_MODE__',
    });
  });

  it('002.12 retry charges nothing: a message retried many times is not filed', async () => {
    await configure('retry', { retryLimit: 0 });
    await push('retry', ['r']);
    for (let i = 0; i < 3; i++) await ackBatch((await popped('retry')).messages, 'retry');
    const p = await popped('retry');
    expect(data(p.messages)).toEqual(['r']);
    expect((await ackBatch(p.messages, 'failed')).body[0]!.dlq).toBe(true);
  });

  it('002.13 with retryLimit 3, a batch that fails twice and then succeeds is delivered 3 times and filed nowhere', async () => {
    await configure('thrice', { retryLimit: 3 });
    await push(
      'thrice',
      Array.from({ length: 20 }, (_, i) => i),
    );
    let deliveries = 0;
    for (const status of ['failed', 'failed', 'completed']) {
      const p = await popped('thrice', 'batch=100');
      expect(p.messages).toHaveLength(20);
      deliveries++;
      await ackBatch(p.messages, status);
    }
    expect(deliveries).toBe(3);
    expect((await pop('thrice')).status).toBe(204);
    expect((await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=thrice')).body.total).toBe(0);
  });

  it('002.14 dlq files the message at once whatever budget is left; the error falls back to “Retries exhausted”', async () => {
    await push('direct', ['x', 'y']);
    const p = await popped('direct', 'batch=2');
    const r = await ackBatch(p.messages, ['dlq', 'completed']);
    expect(r.body[0]).toMatchObject({ dlq: true });
    expect(data((await popped('direct')).messages)).toEqual(['y']);
    const dlq = await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=direct');
    expect(dlq.body.messages[0]).toMatchObject({ errorMessage: 'Retries exhausted', data: 'x' });
  });

  it('002.15 both DLQ options false: an exhausted failed drops the message (cursor passes, nothing filed)', async () => {
    await configure('drop', { retryLimit: 0, deadLetterQueue: false, dlqAfterMaxRetries: false });
    await push('drop', ['gone', 'kept']);
    const p = await popped('drop');
    expect((await ackBatch(p.messages, 'failed')).body[0]).toMatchObject({
      success: true,
      dlq: false,
      leaseReleased: true,
    });
    expect(data((await popped('drop')).messages)).toEqual(['kept']);
    expect((await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=drop')).body.total).toBe(0);
  });

  it('002.16 a nack releases the lease and wakes a parked long poll at once', async () => {
    await push('wake', ['w']);
    const p = await popped('wake', 'consumerGroup=w');
    const started = Date.now();
    const waiting = pop('wake', 'consumerGroup=w&wait=true&timeout=5000');
    await new Promise((r) => setTimeout(r, 100));
    await ackBatch(p.messages, 'retry', {}, 'w');
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(data(r.body.messages)).toEqual(['w']);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  // ------------------------------------------------------------------ DLQ

  it('002.17 GET /dlq: entry fields, createdAt = failedAt, producerSub null, newest first, total = rows on the page', async () => {
    await push('list', ['a', 'b', 'c']);
    for (let i = 0; i < 3; i++) {
      clock.advance(1000);
      await ackBatch((await popped('list', 'consumerGroup=lg')).messages, 'dlq', { error: `e${i}` }, 'lg');
    }
    const all = await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=list&consumerGroup=lg&limit=2&offset=0');
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(2);
    expect(all.body.pagination).toEqual({ limit: 2, offset: 0 });
    expect(all.body.messages.map((m) => m.errorMessage)).toEqual(['e2', 'e1']);
    const e = all.body.messages[0]!;
    expect(Object.keys(e).sort()).toEqual(
      [
        'consumerGroup',
        'createdAt',
        'data',
        'errorMessage',
        'failedAt',
        'id',
        'partition',
        'partitionId',
        'producerSub',
        'queue',
        'retryCount',
        'transactionId',
      ].sort(),
    );
    expect(e).toMatchObject({
      queue: 'list',
      partition: 'Default',
      consumerGroup: 'lg',
      producerSub: null,
      data: 'c',
      retryCount: 0,
    });
    expect(e.createdAt).toBe(e.failedAt);
    const page2 = await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=list&consumerGroup=lg&limit=2&offset=2');
    expect(page2.body.messages.map((m) => m.errorMessage)).toEqual(['e0']);
    expect((await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=list&consumerGroup=other')).body.total).toBe(0);
  });

  it('002.18 POST /messages/:p/:t/retry re-pushes under a fresh transactionId, then removes the row', async () => {
    await push('replay', [{ v: 1 }]);
    const p = await popped('replay');
    await ackBatch(p.messages, 'dlq');
    const m = p.messages[0]!;
    const r = await call<{ transactionId: string }>(
      url,
      'POST',
      `/api/v1/messages/${m.partitionId}/${m.transactionId}/retry`,
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ replayed: true, dlqRowRemoved: true, partitionId: m.partitionId });
    expect(r.body.transactionId).not.toBe(m.transactionId);
    const again = await popped('replay');
    expect(data(again.messages)).toEqual([{ v: 1 }]);
    expect(again.messages[0]!.transactionId).toBe(r.body.transactionId);
    expect((await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=replay')).body.total).toBe(0);
    expect((await call(url, 'POST', `/api/v1/messages/${m.partitionId}/${m.transactionId}/retry`)).status).toBe(404);
  });

  it('002.19 DELETE /messages/:p/:t removes only the DLQ row; 200 success false when there is none', async () => {
    await push('del', ['d']);
    const p = await popped('del');
    const m = p.messages[0]!;
    const path = `/api/v1/messages/${m.partitionId}/${m.transactionId}`;
    const none = { success: false, deleted: false, rowsRemoved: 0 };
    expect(await call(url, 'DELETE', path)).toMatchObject({ status: 200, body: none });
    await ackBatch(p.messages, 'dlq');
    const r = await call(url, 'DELETE', path);
    expect(r).toMatchObject({ status: 200, body: { success: true, deleted: true, rowsRemoved: 1 } });
    expect((await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=del')).body.total).toBe(0);
    expect(await call(url, 'DELETE', path)).toMatchObject({ status: 200, body: none });
  });

  it('002.20 bulk redrive moves dead letters back in bounded, resumable calls', async () => {
    await push('bulk', [1, 2, 3]);
    for (let i = 0; i < 3; i++) await ackBatch((await popped('bulk')).messages, 'dlq');
    const first = await call(url, 'POST', '/api/v1/dlq/retry', { queue: 'bulk', limit: 2 });
    expect(first.body).toMatchObject({ moved: 2, failed: 0, more: true });
    const second = await call(url, 'POST', '/api/v1/dlq/retry', { queue: 'bulk', limit: 2 });
    expect(second.body).toMatchObject({ moved: 1, more: false });
    expect(data((await popped('bulk', 'batch=10')).messages)).toEqual([1, 2, 3]);
    expect((await call(url, 'POST', '/api/v1/dlq/retry', { queue: 'bulk' })).body).toMatchObject({
      moved: 0,
      more: false,
    });
  });

  it('002.20 bulk redrive goes on past rows whose partition refuses them, and refuses filters it does not have', async () => {
    await configure('bulkfull', { maxSize: 1 });
    await push('bulkfull', ['a'], 'p1');
    await push('bulkfull', ['b'], 'p2');
    await ackBatch((await popped('bulkfull', '', 'p1')).messages, 'dlq');
    await ackBatch((await popped('bulkfull', '', 'p2')).messages, 'dlq');
    await push('bulkfull', ['c'], 'p1'); // p1 is full again: the oldest dead letter cannot go back yet
    const bad = await call<ErrorReply>(url, 'POST', '/api/v1/dlq/retry', { queue: 'bulkfull', partition: 'p1' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_request');
    // One row per call, each call going on after the last (the two rows may share a timestamp,
    // so either may come first): the refused one does not stop the other.
    const steps: { moved: number; failed: number; more: boolean }[] = [];
    let after: string | undefined;
    for (let more = true; more && steps.length < 5;) {
      const r = await call<RedriveReply>(url, 'POST', '/api/v1/dlq/retry', {
        queue: 'bulkfull',
        limit: 1,
        ...(after ? { after } : {}),
      });
      expect(r.status).toBe(200);
      steps.push({ moved: r.body.moved, failed: r.body.failed, more: r.body.more });
      after = r.body.next;
      more = r.body.more;
    }
    expect(steps).toHaveLength(2);
    expect(steps.reduce((a, x) => [a[0]! + x.moved, a[1]! + x.failed], [0, 0])).toEqual([1, 1]);
    expect(data((await popped('bulkfull', 'batch=10', 'p2')).messages)).toEqual(['b']);
    // The refused row stays listed until its partition has room.
    expect(
      (await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=bulkfull')).body.messages.map((m) => m.data),
    ).toEqual(['a']);
  });

  // ------------------------------------------------------------- long poll

  it('long poll: a push landing mid-wait is returned by the waiting pop', async () => {
    const started = Date.now();
    const waiting = pop('lp', 'wait=true&timeout=5000');
    await new Promise((r) => setTimeout(r, 150));
    await push('lp', ['late']);
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(data(r.body.messages)).toEqual(['late']);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('long poll: answers 204 at the timeout, capped by SLUICE_MAX_POP_WAIT_MS (never 404)', async () => {
    let started = Date.now();
    expect((await pop('lp-empty', 'wait=true&timeout=300')).status).toBe(204);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    started = Date.now();
    expect((await pop('lp-empty', 'wait=true&timeout=30000')).status).toBe(204);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(1100);
    expect(waited).toBeLessThan(1900);
  });

  // -------------------------------------------------------------- options

  it('partitions=N claims up to N partitions under one lease id, batch capping the total', async () => {
    for (const p of ['x', 'y', 'z']) await push('multi', [`${p}1`, `${p}2`], p);
    const r = await popped('multi', 'partitions=3&batch=5');
    expect(r.messages).toHaveLength(5);
    expect(new Set(r.messages.map((m) => m.leaseId))).toEqual(new Set([r.leaseId]));
    expect(new Set(r.messages.map((m) => m.partition)).size).toBe(3);
    const ack = await ackBatch(r.messages, 'completed');
    expect(ack.body.every((a) => a.success)).toBe(true);
  });

  it('partitions=N: a partition claimed in a later round (an earlier candidate had nothing to deliver) is renewed by the pop’s one lease id', async () => {
    // Work-index candidates come in partition-id order (a, b, c). b holds only a message older
    // than maxWaitTimeSeconds: the first round [a, b] claims a alone, the second claims c.
    await configure('rounds', { maxWaitTimeSeconds: 10 });
    await push('rounds', ['a-old'], 'a');
    clock.advance(1);
    await push('rounds', ['b-old'], 'b');
    clock.advance(1);
    await push('rounds', ['c-old'], 'c');
    clock.advance(11_000);
    await push('rounds', ['a-new'], 'a');
    await push('rounds', ['c-new'], 'c');
    const p = await popped('rounds', 'partitions=2&batch=10');
    expect(data(p.messages).sort()).toEqual(['a-new', 'c-new']);
    expect(new Set(p.messages.map((m) => m.leaseId))).toEqual(new Set([p.leaseId]));
    clock.advance(30_000);
    const r = await call<ExtendReply>(url, 'POST', `/api/v1/lease/${p.leaseId}/extend`, { seconds: 120 });
    expect(r.body).toMatchObject({ success: true, renewed: 2 });
    clock.advance(60_000); // past the original expiry: both lanes are still leased
    expect((await pop('rounds', 'partitions=2')).status).toBe(204);
    expect((await ackBatch(p.messages, 'completed')).body.every((a) => a.success)).toBe(true);
  });

  it('a pop answers at most ~5 MB of JSON, counting the lease id every message repeats (Lambda answers at most 6 MB)', async () => {
    // 20 partitions x 500 tiny messages; one pop of all 20 carries a lease id naming 20 partitions.
    for (let p = 0; p < 20; p++)
      await push(
        'big-pop',
        Array.from({ length: 500 }, (_, i) => i),
        `bp${p}`,
      );
    const res = await fetch(`${url}/api/v1/pop/queue/big-pop?partitions=20&batch=10000`);
    expect(res.status).toBe(200);
    const raw = await res.text();
    const body = JSON.parse(raw) as { leaseId: string; messages: Msg[] };
    expect(body.leaseId.length).toBeGreaterThan(400);
    expect(body.messages.length).toBeGreaterThan(1000);
    expect(Buffer.byteLength(raw)).toBeLessThanOrEqual(5.5 * 1024 * 1024);
  });

  it('002.18 a replay whose push is refused leaves the dead-letter row in place', async () => {
    await configure('full-replay', { maxSize: 1 });
    await push('full-replay', ['a']);
    const p = await popped('full-replay');
    await ackBatch(p.messages, 'dlq');
    await push('full-replay', ['b']); // the partition is full again
    const m = p.messages[0]!;
    const r = await call(url, 'POST', `/api/v1/messages/${m.partitionId}/${m.transactionId}/retry`);
    expect(r.status).toBe(429);
    const dlq = await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=full-replay');
    expect(dlq.body.messages.map((x) => x.data)).toEqual(['a']);
  });

  it('delayedProcessing hides a message until that many seconds after it was pushed', async () => {
    await configure('delayed', { delayedProcessing: 10 });
    await push('delayed', ['d']);
    expect((await pop('delayed')).status).toBe(204);
    clock.advance(10_000);
    expect(data((await popped('delayed')).messages)).toEqual(['d']);
  });

  it('windowBuffer holds a partition back until that long after its newest message, then delivers all at once', async () => {
    await configure('window', { windowBuffer: 5 });
    await push('window', [1, 2]);
    clock.advance(3000);
    await push('window', [3]);
    clock.advance(3000);
    expect((await pop('window', 'batch=10')).status).toBe(204);
    clock.advance(2000);
    expect(data((await popped('window', 'batch=10')).messages)).toEqual([1, 2, 3]);
  });

  it('windowBuffer: a page of held-back partitions does not keep wildcard pops from the partitions after it', async () => {
    await configure('held', { windowBuffer: 5 });
    const names = Array.from({ length: 21 }, (_, p) => `h${String(p).padStart(2, '0')}`);
    for (const n of names) {
      await push('held', ['h'], n);
      clock.advance(1); // partition ids follow creation time: the work index lists them in this order
    }
    await push('held', ['ready'], 'last');
    clock.advance(5_000);
    for (const n of names) await push('held', ['h2'], n); // held back for 5 s more
    const got: unknown[] = [];
    for (let i = 0; i < 4 && got.length === 0; i++) {
      const r = await pop('held', 'batch=10');
      if (r.status === 200) got.push(...data(r.body.messages));
      await new Promise((res) => setTimeout(res, 300)); // past this process’s 250 ms work-index page cache
    }
    expect(got).toEqual(['ready']);
  });

  it('maxWaitTimeSeconds discards pending messages older than it; retention hides expired messages on read', async () => {
    await configure('maxwait', { maxWaitTimeSeconds: 10 });
    await push('maxwait', ['old']);
    clock.advance(11_000);
    await push('maxwait', ['new']);
    expect(data((await popped('maxwait', 'batch=10')).messages)).toEqual(['new']);
    await configure('ret', { retentionEnabled: true, retentionSeconds: 10 });
    await push('ret', ['r']);
    clock.advance(15_000);
    expect((await pop('ret')).status).toBe(204);
  });

  it('maxSize refuses a push that would overfill a partition (429 queue_full); consuming makes room', async () => {
    await configure('small', { maxSize: 3 });
    await push('small', [1, 2]);
    const full = await call<ErrorReply>(url, 'POST', '/api/v1/push', {
      items: [2, 3].map((payload) => ({ queue: 'small', payload })),
    });
    expect(full.status).toBe(429);
    expect(full.body.code).toBe('queue_full');
    await ackBatch((await popped('small', 'batch=2')).messages, 'completed');
    expect(
      (await call(url, 'POST', '/api/v1/push', { items: [3, 4].map((payload) => ({ queue: 'small', payload })) }))
        .status,
    ).toBe(201);
  });

  // ---------------------------------------------------------- transactions

  it('transactions apply pushes and acks together; a bad ack undoes everything', async () => {
    await push('tx-src', ['job']);
    const p = await popped('tx-src', 'consumerGroup=tx');
    const m = p.messages[0]!;
    const bad = await call<ErrorReply>(url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'push', items: [{ queue: 'tx-dst', payload: { never: true } }] },
        { type: 'ack', transactionId: 'unknown', partitionId: m.partitionId, status: 'completed', consumerGroup: 'tx' },
      ],
    });
    expect(bad.status).toBe(200);
    expect(bad.body).toMatchObject({ success: false });
    expect(bad.body.error).toMatch(/^ACK operation failed: /);
    expect((await pop('tx-dst')).status).toBe(204);
    const ok = await call<TransactionReply>(url, 'POST', '/api/v1/transaction', {
      operations: [
        {
          type: 'push',
          items: [
            { queue: 'tx-dst', payload: { result: 1 } },
            { queue: 'tx-dst', partition: 'p2', data: { result: 2 } },
          ],
        },
        {
          type: 'ack',
          transactionId: m.transactionId,
          partitionId: m.partitionId,
          status: 'completed',
          consumerGroup: 'tx',
        },
      ],
      requiredLeases: [p.leaseId],
    });
    expect(ok.status).toBe(200);
    expect(ok.body.success).toBe(true);
    expect(ok.body.results[0]).toMatchObject({ index: 0, type: 'push', success: true, queueName: 'tx-dst' });
    expect(ok.body.results[1]).toMatchObject({
      index: 1,
      type: 'ack',
      success: true,
      transactionId: m.transactionId,
      error: null,
      dlq: false,
    });
    expect(
      data((await popped('tx-dst', 'partitions=2&batch=10')).messages).sort((a, b) =>
        JSON.stringify(a).localeCompare(JSON.stringify(b)),
      ),
    ).toEqual([{ result: 1 }, { result: 2 }]);
    expect((await pop('tx-src', 'consumerGroup=tx')).status).toBe(204);
    clock.advance(61_000);
    expect((await pop('tx-src', 'consumerGroup=tx')).status).toBe(204);
  });

  it('a transaction pushing into a full maxSize queue answers 200 success false and applies none of its acks', async () => {
    await configure('tx-small', { maxSize: 1 });
    await push('tx-small', ['held']);
    await push('tx-small-src', ['job']);
    const m = (await popped('tx-small-src', 'consumerGroup=tx')).messages[0]!;
    const full = await call<ErrorReply>(url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'push', items: [{ queue: 'tx-small', payload: { more: true } }] },
        { type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, consumerGroup: 'tx' },
      ],
    });
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({ success: false, results: [] });
    expect(full.body.error).toMatch(/maxSize is 1/);
    expect(data((await popped('tx-small', 'batch=10')).messages)).toEqual(['held']);
    clock.advance(61_000);
    expect(data((await popped('tx-small-src', 'consumerGroup=tx')).messages)).toEqual(['job']);
  });

  it('a transactional failed files the message at once; an empty operations list is a 400', async () => {
    await push('tx-fail', ['f']);
    const m = (await popped('tx-fail')).messages[0]!;
    const r = await call<TransactionReply>(url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'ack', transactionId: m.transactionId, partitionId: m.partitionId, status: 'failed' }],
    });
    expect(r.body.results[0]).toMatchObject({ success: true, dlq: true });
    expect((await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=tx-fail')).body.total).toBe(1);
    expect((await call(url, 'POST', '/api/v1/transaction', { operations: [] })).status).toBe(400);
    const boolStatus = await call<TransactionReply>(url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'ack', transactionId: 'x', partitionId: m.partitionId, status: true }],
    });
    expect(boolStatus.body.success).toBe(false);
  });
});
