// Black-box tests of consumer groups on partition leases (seed 004): fan-out, where a group
// starts, lag views, per-message progress, delete, seek, retention; plus encrypted queues.
// Both backends; time is the services' TestClock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeSegment } from '../../server/codec/segment.js';
import type { LocalServer } from '../../server/local/server.js';
import { logKeys as keys } from '../../server/service/log/log-store.js';
import { runMaintenance } from '../../server/service/maintenance/maintenance.js';
import type { Services } from '../../server/service/runtime.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, startTestServer } from '../support/http.js';
import { leaseCalls } from '../support/lease-calls.js';
import type {
  ConfigureReply,
  ConsumerGroupReply,
  ConsumerGroupRowReply,
  LaggingRowReply,
  DlqPageReply,
  ErrorReply,
  MessageReply,
  PoppedMessage,
} from '../support/replies.js';
import { testServices, type TestClock } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

type Msg = PoppedMessage;

describe.each(backends)('http: consumer groups on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let server: LocalServer;
  let url: string;
  let svc: Services;
  let clock: TestClock;

  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
    const s = testServices(storage, {
      config: { maxPopWaitMs: 1000, encryptionKey: Buffer.alloc(32, 3).toString('base64') },
    });
    svc = s;
    clock = s.testClock;
    server = await startTestServer(svc);
    url = server.url;
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });

  const { push, pop, ackBatch } = leaseCalls(() => url);
  /** Pops and completes everything a group can get now; returns the payloads in order. */
  const drain = async (queue: string, group: string, extra = ''): Promise<unknown[]> => {
    const out: unknown[] = [];
    for (;;) {
      const r = await pop(queue, `consumerGroup=${group}&batch=100${extra}`);
      if (r.status === 204) return out;
      expect(r.status).toBe(200);
      out.push(...r.body.messages.map((m) => m.data));
      const ack = await ackBatch(r.body.messages, 'completed', {}, group);
      expect(ack.body.every((a) => a.success)).toBe(true);
    }
  };

  it('004.1 fan-out: each named group (and queue mode) receives every message; one group’s failures do not touch another', async () => {
    await push('fan', [1, 2, 3]);
    const bad = await pop('fan', 'consumerGroup=billing&batch=10');
    await call(url, 'POST', '/api/v1/ack/batch', {
      consumerGroup: 'billing',
      acknowledgments: bad.body.messages.map((m) => ({
        transactionId: m.transactionId,
        partitionId: m.partitionId,
        status: 'failed',
      })),
    });
    expect(await drain('fan', 'analytics')).toEqual([1, 2, 3]);
    expect(await drain('fan', 'billing')).toEqual([1, 2, 3]);
    expect(await drain('fan', '')).toEqual([1, 2, 3]);
  });

  it('004.2 subscription new (or subscriptionFrom=now): the first pop gets 204, later pops keep skipping history', async () => {
    await push('sub-new', ['old']);
    clock.advance(1);
    expect((await pop('sub-new', 'consumerGroup=fresh&subscriptionMode=new')).status).toBe(204);
    clock.advance(1);
    await push('sub-new', ['new']);
    expect(await drain('sub-new', 'fresh')).toEqual(['new']);
    expect((await pop('sub-new', 'consumerGroup=now&subscriptionFrom=now')).status).toBe(204);
    expect(await drain('sub-new', 'now', '&subscriptionMode=all')).toEqual([]);
  });

  it('004.2 subscriptionFrom=<ISO> delivers from that instant on; all (or any unknown mode) delivers history', async () => {
    await push('sub-from', ['a']);
    clock.advance(10_000);
    const cut = new Date(clock.t).toISOString();
    await push('sub-from', ['b', 'c']);
    expect(await drain('sub-from', 'since', `&subscriptionFrom=${encodeURIComponent(cut)}`)).toEqual(['b', 'c']);
    expect(await drain('sub-from', 'hist', '&subscriptionMode=from_beginning')).toEqual(['a', 'b', 'c']);
    // A subscriptionFrom that is neither `now` nor an instant is refused, not read as "all".
    const bad = await pop('sub-from', 'consumerGroup=typo&subscriptionFrom=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_request' });
    expect(await drain('sub-from', 'typo', `&subscriptionFrom=${encodeURIComponent(cut)}`)).toEqual(['b', 'c']);
  });

  it('004.3 the choice is recorded on the first pop and never revisited; a partition created later is read from its start', async () => {
    await push('sub-later', ['before'], 'p1');
    clock.advance(1);
    expect((await pop('sub-later', 'consumerGroup=late&subscriptionMode=new')).status).toBe(204);
    clock.advance(1);
    await push('sub-later', ['fresh-partition'], 'p2');
    // Options on later pops are ignored: still `new`.
    expect(await drain('sub-later', 'late', '&subscriptionMode=all')).toEqual(['fresh-partition']);
  });

  it('004.4 queue mode ignores subscription options (always from the oldest message)', async () => {
    await push('qm', ['h1', 'h2']);
    clock.advance(1);
    expect(await drain('qm', '', '&subscriptionMode=new')).toEqual(['h1', 'h2']);
  });

  it('004.5 lag views: GET /consumer-groups, /consumer-groups/:group and /lagging?minLagSeconds (default 3600)', async () => {
    await push('lag', [1, 2, 3]);
    await drain('lag', 'fast');
    const slow = await pop('lag', 'consumerGroup=slow&batch=1');
    await call(url, 'POST', '/api/v1/ack', {
      consumerGroup: 'slow',
      transactionId: slow.body.messages[0]!.transactionId,
      partitionId: slow.body.messages[0]!.partitionId,
    });
    clock.advance(600_000);
    const list = await call<ConsumerGroupRowReply[]>(url, 'GET', '/api/v1/consumer-groups');
    expect(list.status).toBe(200);
    // Queen's shape: a bare array, one row per (group, queue).
    const rowOf = (name: string) => list.body.find((g) => g.name === name && g.queueName === 'lag');
    expect(rowOf('fast')).toMatchObject({ totalLag: 0, state: 'Stable', queues: [{ lagMessages: 0 }] });
    expect(rowOf('slow')).toMatchObject({
      totalLag: 2,
      maxTimeLag: 600,
      state: 'Lagging',
      queues: [{ lagMessages: 2, lagSeconds: 600 }],
    });
    const one = await call<ConsumerGroupReply>(url, 'GET', '/api/v1/consumer-groups/slow');
    expect(one.body.queues[0]!.detail[0]).toMatchObject({
      partition: 'Default',
      committed: 0,
      next: 3,
      lagMessages: 2,
    });
    // Queen's lagging rows: snake_case, one per (group, partition), lag strictly above the threshold.
    expect(
      (await call<LaggingRowReply[]>(url, 'GET', '/api/v1/consumer-groups/lagging')).body.map((g) => g.consumer_group),
    ).not.toContain('slow');
    const lagging = await call<LaggingRowReply[]>(url, 'GET', '/api/v1/consumer-groups/lagging?minLagSeconds=300');
    expect(lagging.body.find((g) => g.consumer_group === 'slow')).toMatchObject({
      queue_name: 'lag',
      partition_name: 'Default',
      offset_lag: 2,
      time_lag_seconds: 600,
    });
    expect(lagging.body.map((g) => g.consumer_group)).not.toContain('fast');
    expect((await call(url, 'GET', '/api/v1/consumer-groups/nobody')).status).toBe(404);
  });

  it('004.6 GET /messages/:p/:t reports each group’s progress; status completed once every group passed it', async () => {
    const [r] = await push('progress', ['m']);
    const path = `/api/v1/messages/${r!.partition_id}/${r!.transaction_id}`;
    await drain('progress', 'one');
    const held = await pop('progress', 'consumerGroup=two');
    let m = await call<MessageReply>(url, 'GET', path);
    expect(m.body.status).toBe('processing');
    expect(m.body.consumerGroups).toEqual(
      expect.arrayContaining([
        { name: 'one', consumed: true, leaseExpiresAt: null },
        { name: 'two', consumed: false, leaseExpiresAt: new Date(clock.t + 60_000).toISOString() },
      ]),
    );
    await call(url, 'POST', '/api/v1/ack', {
      consumerGroup: 'two',
      transactionId: held.body.messages[0]!.transactionId,
      partitionId: r!.partition_id,
    });
    m = await call<MessageReply>(url, 'GET', path);
    expect(m.body.status).toBe('completed');
    expect(m.body.data).toBe('m');
  });

  it('004.7 DELETE /consumer-groups/:group drops its cursors: the same name re-consumes from the start', async () => {
    await push('regroup', ['x', 'y'], 'a');
    await push('regroup', ['z'], 'b');
    expect((await drain('regroup', 'again')).length).toBe(3);
    const del = await call(url, 'DELETE', '/api/v1/consumer-groups/again?deleteMetadata=true');
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({
      success: true,
      consumerGroup: 'again',
      deletedPartitions: 2,
      metadataDeleted: true,
    });
    expect((await drain('regroup', 'again')).sort()).toEqual(['x', 'y', 'z']);
    const perQueue = await call(url, 'DELETE', '/api/v1/consumer-groups/again/queues/regroup');
    expect(perQueue.body).toMatchObject({
      success: true,
      consumerGroup: 'again',
      queueName: 'regroup',
      deletedPartitions: 2,
    });
    expect((await call(url, 'DELETE', '/api/v1/consumer-groups/never-was')).body).toMatchObject({
      success: true,
      deletedPartitions: 0,
    });
  });

  it(
    '004.7 DELETE with deleteMetadata=false keeps the subscription: a `new` group re-consumes what ' +
      'was pushed after its start, through wildcard pops',
    async () => {
      await push('keepsub', ['before']);
      clock.advance(1);
      expect((await pop('keepsub', 'consumerGroup=nw&subscriptionMode=new')).status).toBe(204);
      clock.advance(1);
      await push('keepsub', ['n1', 'n2']);
      expect(await drain('keepsub', 'nw')).toEqual(['n1', 'n2']);
      const del = await call(url, 'DELETE', '/api/v1/consumer-groups/nw/queues/keepsub?deleteMetadata=false');
      expect(del.body).toMatchObject({ success: true, deletedPartitions: 1, metadataDeleted: false });
      expect(await drain('keepsub', 'nw')).toEqual(['n1', 'n2']);
    },
  );

  it('004.8 seek to the end or to a timestamp moves the group; the subscription route sets the stored start time', async () => {
    await push('seek', ['s1']);
    clock.advance(5000);
    const mid = new Date(clock.t - 1).toISOString();
    await push('seek', ['s2', 's3']);
    expect((await drain('seek', 'sk')).length).toBe(3);
    const back = await call(url, 'POST', '/api/v1/consumer-groups/sk/queues/seek/seek', { timestamp: mid });
    expect(back.body).toMatchObject({
      success: true,
      consumerGroup: 'sk',
      queueName: 'seek',
      seekToEnd: false,
      partitionsUpdated: 1,
    });
    expect(await drain('seek', 'sk')).toEqual(['s2', 's3']);
    const toEnd = await call(url, 'POST', '/api/v1/consumer-groups/sk2/queues/seek/seek', { toEnd: true });
    expect(toEnd.body).toMatchObject({ seekToEnd: true, partitionsUpdated: 1 });
    expect(await drain('seek', 'sk2')).toEqual([]);
    expect((await call(url, 'POST', '/api/v1/consumer-groups/sk/queues/seek/seek', {})).status).toBe(400);
    const sub = await call(url, 'POST', '/api/v1/consumer-groups/sk/subscription', { subscriptionTimestamp: mid });
    expect(sub.body).toMatchObject({ success: true, consumerGroup: 'sk', rowsUpdated: 1 });
    expect((await call(url, 'POST', '/api/v1/consumer-groups/sk/subscription', {})).status).toBe(400);
  });

  it('004.8b seek and the subscription route refuse a timestamp no date can hold (400) before anything moves', async () => {
    await push('seek-range', ['r1', 'r2']);
    expect(await drain('seek-range', 'sr')).toEqual(['r1', 'r2']);
    const before = await call(url, 'GET', '/api/v1/consumer-groups/sr');
    // Each of these was saved (the group moved to the end or to -1) and then answered 500.
    for (const timestamp of [9e15, -9e15, 1e308, -1e308, '+275760-09-13T00:00:00.000Z', '-010000-01-01T00:00:00Z']) {
      const seek = await call<ErrorReply>(url, 'POST', '/api/v1/consumer-groups/sr/queues/seek-range/seek', {
        timestamp,
      });
      expect(seek.status).toBe(400);
      expect(seek.body.code).toBe('invalid_request');
      const sub = await call<ErrorReply>(url, 'POST', '/api/v1/consumer-groups/sr/subscription', {
        subscriptionTimestamp: timestamp,
      });
      expect(sub.status).toBe(400);
    }
    expect((await call(url, 'GET', '/api/v1/consumer-groups/sr')).body).toEqual(before.body);
    // The range is ISO-8601's years 0000 to 9999, both ends included.
    const start = await call(url, 'POST', '/api/v1/consumer-groups/sr/queues/seek-range/seek', {
      timestamp: '0000-01-01T00:00:00.000Z',
    });
    expect(start.body).toMatchObject({ success: true, targetTimestamp: '0000-01-01T00:00:00.000Z' });
    expect(await drain('seek-range', 'sr')).toEqual(['r1', 'r2']);
    const end = await call(url, 'POST', '/api/v1/consumer-groups/sr/subscription', {
      subscriptionTimestamp: '9999-12-31T23:59:59.999Z',
    });
    expect(end.body).toMatchObject({ success: true, newTimestamp: '9999-12-31T23:59:59.999Z' });
  });

  it('004.9 retention: retentionSeconds deletes by age; completedRetentionSeconds only below the slowest cursor; DLQ rows survive', async () => {
    await call(url, 'POST', '/api/v1/configure', {
      queue: 'keep',
      options: { retentionEnabled: true, completedRetentionSeconds: 1 },
    });
    await push('keep', ['k1']);
    clock.advance(1);
    await push('keep', ['k2']);
    clock.advance(1);
    await push('keep', ['k3']);
    await drain('keep', 'fast');
    const slow = await pop('keep', 'consumerGroup=slow&batch=1');
    await call(url, 'POST', '/api/v1/ack/batch', {
      consumerGroup: 'slow',
      acknowledgments: slow.body.messages.map((m) => ({
        transactionId: m.transactionId,
        partitionId: m.partitionId,
        status: 'dlq',
      })),
    });
    clock.advance(10_000);
    await runMaintenance(svc);
    // Only k1 is below both cursors; the slow group still gets k2 and k3.
    const pid = slow.body.messages[0]!.partitionId;
    // Retention leaves a skip over what it removed (the log's floor), no messages.
    expect((await svc.storage.items.get('log', keys.segment(pid, 0)))?.attrs).toMatchObject({ skip: true, count: 0 });
    expect(await drain('keep', 'slow')).toEqual(['k2', 'k3']);
    expect((await call<DlqPageReply>(url, 'GET', '/api/v1/dlq?queue=keep')).body.messages.map((m) => m.data)).toEqual([
      'k1',
    ]);

    await call(url, 'POST', '/api/v1/configure', {
      queue: 'age',
      options: { retentionEnabled: true, retentionSeconds: 10 },
    });
    await push('age', ['a1']);
    clock.advance(1);
    await push('age', ['a2']);
    clock.advance(11_000);
    await runMaintenance(svc);
    expect((await pop('age')).status).toBe(204);
  });

  it('004.9 completedRetentionSeconds keeps what a registered group that has not read the partition yet is owed', async () => {
    await call(url, 'POST', '/api/v1/configure', {
      queue: 'owed',
      options: { retentionEnabled: true, completedRetentionSeconds: 1 },
    });
    await push('owed', ['o1']);
    clock.advance(1);
    await push('owed', ['o2']);
    clock.advance(1);
    await push('owed', ['o3']);
    await drain('owed', 'reader');
    // `late` subscribes to everything but has only popped another partition so far.
    await push('owed', ['elsewhere'], 'other');
    const other = await call<{ messages: Msg[] }>(
      url,
      'GET',
      '/api/v1/pop/queue/owed/partition/other?consumerGroup=late',
    );
    expect(other.body.messages.map((m) => m.data)).toEqual(['elsewhere']);
    clock.advance(10_000);
    await runMaintenance(svc);
    const got: unknown[] = [];
    for (;;) {
      const r = await call<{ messages: Msg[] }>(
        url,
        'GET',
        '/api/v1/pop/queue/owed/partition/Default?consumerGroup=late&batch=100',
      );
      if (r.status === 204) break;
      got.push(...r.body.messages.map((m) => m.data));
      await call(url, 'POST', '/api/v1/ack/batch', {
        consumerGroup: 'late',
        acknowledgments: r.body.messages.map((m) => ({
          transactionId: m.transactionId,
          partitionId: m.partitionId,
          status: 'completed',
        })),
      });
    }
    expect(got).toEqual(['o1', 'o2', 'o3']);
    // Now every group has passed them: the next sweep deletes all but the newest segment.
    await runMaintenance(svc);
    const pid = (await svc.queues.getPartition('owed', 'Default'))!.id;
    // Retention leaves a skip over what it removed (the log's floor), no messages.
    expect((await svc.storage.items.get('log', keys.segment(pid, 0)))?.attrs).toMatchObject({ skip: true, count: 0 });
    expect(await svc.storage.items.get('log', keys.segment(pid, 2))).toBeDefined();
  });

  it('004.10 an empty partition idle for 30 days is removed with its cursors; a push recreates it from offset 0', async () => {
    await call(url, 'POST', '/api/v1/configure', {
      queue: 'idle',
      options: { retentionEnabled: true, retentionSeconds: 60 },
    });
    const [first] = await push('idle', ['i']);
    expect(await drain('idle', 'g')).toEqual(['i']);
    clock.advance(31 * 86_400_000);
    // The first pass only marks it; a push meanwhile keeps it (and its offsets).
    await runMaintenance(svc);
    const [kept] = await push('idle', ['k']);
    expect(kept!.partition_id).toBe(first!.partition_id);
    expect(await drain('idle', 'g')).toEqual(['k']);
    clock.advance(31 * 86_400_000);
    await runMaintenance(svc);
    // Retired once the grace period has passed with the mark standing.
    clock.advance(svc.config.sweepGraceMs);
    await runMaintenance(svc);
    const [again] = await push('idle', ['j']);
    expect(again!.partition_id).not.toBe(first!.partition_id);
    expect(again).toMatchObject({ offset: 0 });
    expect(await drain('idle', 'g')).toEqual(['j']);
    // The next passes remove what the old partition left: its cursor and its segments.
    clock.advance(svc.config.sweepGraceMs);
    await runMaintenance(svc);
    await runMaintenance(svc);
    expect(await svc.storage.items.get('leases', { pk: first!.partition_id, sk: 'g' })).toBeUndefined();
    expect((await svc.storage.items.query('log', first!.partition_id)).items).toEqual([]);
    expect((await svc.storage.items.query('meta', 'TOMB')).items).toEqual([]);
  });

  it('encryptionEnabled: payloads are sealed at rest and come back as plaintext', async () => {
    const cfg = await call<ConfigureReply>(url, 'POST', '/api/v1/configure', {
      queue: 'secret',
      options: { encryptionEnabled: true },
    });
    expect(cfg.body.options.encryptionEnabled).toBe(true);
    const [r] = await push('secret', [{ card: '4111-1111' }]);
    const seg = await svc.storage.items.get('log', keys.segment(r!.partition_id, 0));
    const [frame] = await decodeSegment(seg!.bin!);
    expect(frame!.sealed).toBe(true);
    expect(Buffer.from(frame!.payload).includes('4111')).toBe(false);
    const p = await pop('secret');
    expect(p.body.messages[0]!.data).toEqual({ card: '4111-1111' });
    const one = await call<MessageReply>(url, 'GET', `/api/v1/messages/${r!.partition_id}/${r!.transaction_id}`);
    expect(one.body.data).toEqual({ card: '4111-1111' });
  });
});
