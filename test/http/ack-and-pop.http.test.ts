// Black-box tests of our ack-and-pop route (one request per batch for a steady consumer:
// docs/LEASES.md, "`POST /api/v1/queues/{queue}/ack-and-pop`") against the local server, on
// both backends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../server/local/server.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, startTestServer } from '../support/http.js';
import { acksOf, leaseCalls } from '../support/lease-calls.js';
import { testServices } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

interface Msg {
  transactionId: string;
  partitionId: string;
  leaseId: string;
  data: unknown;
}
interface PopReply {
  leaseId: string;
  consumerGroup: string;
  messages: Msg[];
}
interface AckAndPopReply {
  acks: { index: number; transactionId: string; success: boolean; error: string | null; queueName: string | null }[];
  popped: boolean;
  pop: PopReply | null;
}

describe.each(backends)('http: ack-and-pop on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let server: LocalServer;
  let url: string;

  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
    server = await startTestServer(testServices(storage));
    url = server.url;
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });

  const { push } = leaseCalls(() => url);
  const ackAndPop = (queue: string, body: Record<string, unknown>) =>
    call<AckAndPopReply>(url, 'POST', `/api/v1/queues/${queue}/ack-and-pop`, body);

  it('acks the batch it was given and pops the next one for the same group, in one request', async () => {
    await push('ap1', [1, 2, 3, 4, 5]);
    const first = await ackAndPop('ap1', { consumerGroup: 'g', batch: 2 });
    expect(first.status).toBe(200);
    expect(first.body.acks).toEqual([]);
    expect(first.body.popped).toBe(true);
    expect(first.body.pop?.consumerGroup).toBe('g');
    expect(first.body.pop?.messages.map((m) => m.data)).toEqual([1, 2]);

    const second = await ackAndPop('ap1', {
      consumerGroup: 'g',
      batch: 2,
      acknowledgments: acksOf(first.body.pop!.messages),
    });
    expect(second.status).toBe(200);
    expect(second.body.acks.map((a) => [a.success, a.queueName])).toEqual([
      [true, 'ap1'],
      [true, 'ap1'],
    ]);
    expect(second.body.pop?.messages.map((m) => m.data)).toEqual([3, 4]);

    const third = await ackAndPop('ap1', {
      consumerGroup: 'g',
      batch: 2,
      acknowledgments: acksOf(second.body.pop!.messages),
    });
    expect(third.body.pop?.messages.map((m) => m.data)).toEqual([5]);
    const last = await ackAndPop('ap1', { consumerGroup: 'g', acknowledgments: acksOf(third.body.pop!.messages) });
    // Nothing left: the acks applied, the pop ran and found nothing.
    expect(last.body).toMatchObject({ popped: true, pop: null });
    expect(last.body.acks.every((a) => a.success)).toBe(true);
    // The group really finished: a plain pop has nothing either.
    expect((await call(url, 'GET', '/api/v1/pop/queue/ap1?consumerGroup=g')).status).toBe(204);
  });

  it('does not pop when an ack fails, and says so', async () => {
    await push('ap2', ['a', 'b']);
    const got = await ackAndPop('ap2', { consumerGroup: 'g', batch: 1 });
    const msg = got.body.pop!.messages[0]!;
    // An ack with a lease that is not the one held fails.
    const r = await ackAndPop('ap2', {
      consumerGroup: 'g',
      acknowledgments: [{ ...acksOf([msg])[0], leaseId: 'not-the-lease' }],
    });
    expect(r.status).toBe(200);
    expect(r.body.acks[0]?.success).toBe(false);
    expect(r.body).toMatchObject({ popped: false, pop: null });
    // The first message is still leased to the group, so the second was never handed out.
    const ok = await ackAndPop('ap2', { consumerGroup: 'g', acknowledgments: acksOf([msg]) });
    expect(ok.body.acks[0]?.success).toBe(true);
    expect(ok.body.pop?.messages.map((m) => m.data)).toEqual(['b']);
  });

  it('validates everything before the first write: a partition of another queue, a bad body', async () => {
    await push('ap3', ['x']);
    await push('ap4', ['y']);
    const other = await ackAndPop('ap4', { consumerGroup: 'g' });
    const foreign = acksOf(other.body.pop!.messages);
    const r = await ackAndPop('ap3', { consumerGroup: 'g', acknowledgments: foreign });
    expect(r.status).toBe(400);
    // Nothing was acked: ap4's message is still leased, and acking it now succeeds once.
    const ok = await call<{ success: boolean }[]>(url, 'POST', '/api/v1/ack/batch', {
      consumerGroup: 'g',
      acknowledgments: foreign,
    });
    expect(ok.body.map((a) => a.success)).toEqual([true]);
    // And nothing was popped from ap3.
    expect((await ackAndPop('ap3', { consumerGroup: 'g' })).body.pop?.messages.map((m) => m.data)).toEqual(['x']);
    expect((await ackAndPop('ap3', { consumerGroup: 'g', batch: 0 })).status).toBe(400);
    expect((await ackAndPop('ap3', { consumerGroup: 'g', acknowledgments: [{ transactionId: 'x' }] })).status).toBe(
      400,
    );
  });
});
