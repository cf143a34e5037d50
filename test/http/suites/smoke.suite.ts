/**
 * A short end-to-end pass over the consuming routes (push, pop, ack; record claims) as a black
 * box, for targets where the full per-feature suites are too slow or need a server-side clock:
 * the bundles from cdk.out and a deployed API. Each part registers only when its routes exist
 * in the route table, so it grows with the API.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import type { Method } from '../../../server/http/route.js';
import { ALL_ROUTES } from '../../../server/http/routes.js';
import { callTarget, type HttpTarget } from '../../support/http.js';
import type {
  AckReply,
  AckResultReply,
  ConsumerGroupRowReply,
  DlqPageReply,
  LogPageReply,
  PollReply,
  PopReply,
  PushReply,
  TransactionReply,
} from '../../support/replies.js';

export const hasRoute = (method: Method, path: string): boolean =>
  ALL_ROUTES.some((r) => r.method === method && r.path === path);

export function defineQueueSmokeSuite(target: () => HttpTarget, opts: { prefix?: string } = {}): void {
  const q = (name: string): string => `${opts.prefix ?? ''}${name}`;
  const http = <T = unknown>(method: string, path: string, body?: unknown) =>
    callTarget<T>(target(), method, path, body);

  it('smoke: a push is readable back, large payloads included', async () => {
    const queue = q('smoke-read');
    // Incompressible and past the inline limit: stored as a blob (S3 on AWS).
    const big = randomBytes(3000).toString('base64');
    const pushed = await http('POST', '/api/v1/push', {
      items: [
        { queue, payload: { n: 1 } },
        { queue, payload: { big } },
      ],
    });
    expect(pushed.status).toBe(201);
    const read = await http<LogPageReply>('GET', `/api/v1/queues/${queue}/partitions/Default/messages?from=0&limit=10`);
    expect(read.status).toBe(200);
    expect(read.body.messages.map((m) => m.data)).toEqual([{ n: 1 }, { big }]);
  });

  if (hasRoute('GET', '/api/v1/pop/queue/{queue}') && hasRoute('POST', '/api/v1/ack')) {
    it('smoke: pop delivers what was pushed, ack completes it, nothing comes twice', async () => {
      const queue = q('smoke-work');
      expect(
        (await http('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue, payload: { n } })) })).status,
      ).toBe(201);
      const popped = await http<PopReply<{ n: number }>>('GET', `/api/v1/pop/queue/${queue}?batch=10&wait=false`);
      expect(popped.status).toBe(200);
      const messages = popped.body.messages;
      expect(messages.map((m) => m.data.n)).toEqual([1, 2, 3]);
      for (const m of messages) {
        const acked = await http<AckReply>('POST', '/api/v1/ack', {
          transactionId: m.transactionId,
          partitionId: m.partitionId,
          status: 'completed',
          error: null,
          consumerGroup: null,
          leaseId: m.leaseId,
        });
        expect(acked.status).toBe(200);
        expect(acked.body[0]).toMatchObject({ success: true });
      }
      expect((await http('GET', `/api/v1/pop/queue/${queue}?batch=10&wait=false`)).status).toBe(204);
    });

    it('smoke: a message acked to the dead-letter queue is listed there', async () => {
      const queue = q('smoke-dlq');
      await http('POST', '/api/v1/push', { items: [{ queue, payload: { poison: true }, transactionId: 'poison-1' }] });
      const [m] = (await http<PopReply>('GET', `/api/v1/pop/queue/${queue}?batch=1&wait=false`)).body.messages;
      const acked = await http<AckReply>('POST', '/api/v1/ack', {
        transactionId: m!.transactionId,
        partitionId: m!.partitionId,
        status: 'dlq',
        error: 'cannot parse',
        consumerGroup: null,
        leaseId: m!.leaseId,
      });
      expect(acked.body[0]).toMatchObject({ success: true, dlq: true });
    });

    if (hasRoute('GET', '/api/v1/dlq')) {
      it('smoke: the dead-letter queue lists it', async () => {
        const dlq = await http<DlqPageReply>('GET', `/api/v1/dlq?queue=${q('smoke-dlq')}&limit=10&offset=0`);
        expect(dlq.status).toBe(200);
        expect(dlq.body.messages).toMatchObject([
          { transactionId: 'poison-1', errorMessage: 'cannot parse', data: { poison: true } },
        ]);
      });
    }
  }

  if (hasRoute('POST', '/api/v1/transaction') && hasRoute('GET', '/api/v1/pop/queue/{queue}')) {
    it('smoke: a transaction acks one message and pushes another atomically', async () => {
      const from = q('smoke-tx-in');
      const to = q('smoke-tx-out');
      await http('POST', '/api/v1/push', { items: [{ queue: from, payload: { step: 1 } }] });
      const [m] = (await http<PopReply>('GET', `/api/v1/pop/queue/${from}?batch=1&wait=false`)).body.messages;
      const tx = await http<TransactionReply>('POST', '/api/v1/transaction', {
        operations: [
          { type: 'push', items: [{ queue: to, payload: { step: 2 } }] },
          { type: 'ack', transactionId: m!.transactionId, partitionId: m!.partitionId, status: 'completed' },
        ],
        requiredLeases: [m!.leaseId],
      });
      expect(tx.status).toBe(200);
      expect(tx.body.success).toBe(true);
      const next = await http<PopReply>('GET', `/api/v1/pop/queue/${to}?batch=1&wait=false`);
      expect(next.body.messages.map((x) => x.data)).toEqual([{ step: 2 }]);
    });
  }

  const leaseAdmin: [Method, string][] = [
    ['GET', '/api/v1/pop/queue/{queue}/partition/{partition}'],
    ['POST', '/api/v1/ack/batch'],
    ['POST', '/api/v1/lease/{leaseId}/extend'],
    ['POST', '/api/v1/messages/{partitionId}/{transactionId}/retry'],
    ['DELETE', '/api/v1/messages/{partitionId}/{transactionId}'],
    ['POST', '/api/v1/dlq/retry'],
    ['GET', '/api/v1/consumer-groups'],
    ['GET', '/api/v1/consumer-groups/lagging'],
    ['GET', '/api/v1/consumer-groups/{group}'],
    ['POST', '/api/v1/consumer-groups/{group}/subscription'],
    ['POST', '/api/v1/consumer-groups/{group}/queues/{queue}/seek'],
    ['DELETE', '/api/v1/consumer-groups/{group}/queues/{queue}'],
    ['DELETE', '/api/v1/consumer-groups/{group}'],
  ];
  if (leaseAdmin.every(([m, path]) => hasRoute(m, path))) {
    it('smoke: partition pop, batch ack, extend, dead-letter replay / delete / bulk redrive, and consumer-group admin', async () => {
      const queue = q('smoke-admin');
      const group = `${opts.prefix ?? ''}ops`;
      await http('POST', '/api/v1/push', {
        items: ['a1', 'a2', 'a3', 'a4'].map((t, n) => ({ queue, partition: 'p1', payload: { n }, transactionId: t })),
      });
      // One message per pop (a batch ack acts on its lowest failure only): a1 completes, a2..a4
      // go to the dead-letter queue.
      let pid = '';
      for (const [i, t] of ['a1', 'a2', 'a3', 'a4'].entries()) {
        const popped = await http<PopReply>(
          'GET',
          `/api/v1/pop/queue/${queue}/partition/p1?consumerGroup=${group}&batch=1&wait=false`,
        );
        expect(popped.status).toBe(200);
        const [m] = popped.body.messages;
        expect(m!.transactionId).toBe(t);
        pid = m!.partitionId;
        const ext =
          i === 0
            ? (await http('POST', `/api/v1/lease/${encodeURIComponent(m!.leaseId)}/extend`, { seconds: 120 })).body
            : { success: true };
        expect(ext).toMatchObject({ success: true });
        const acked = await http<AckReply | { results?: AckResultReply[] }>('POST', '/api/v1/ack/batch', {
          consumerGroup: group,
          acknowledgments: [
            {
              transactionId: t,
              partitionId: pid,
              leaseId: m!.leaseId,
              status: i === 0 ? 'completed' : 'dlq',
              error: i === 0 ? null : 'bad',
            },
          ],
        });
        const result = Array.isArray(acked.body) ? acked.body[0] : acked.body.results?.[0];
        expect(result).toMatchObject({ success: true });
      }
      const replay = await http('POST', `/api/v1/messages/${pid}/a2/retry?consumerGroup=${group}`, {});
      expect(replay.body).toMatchObject({ replayed: true, dlqRowRemoved: true });
      expect((await http('DELETE', `/api/v1/messages/${pid}/a3?consumerGroup=${group}`)).status).toBe(200);
      const bulk = await http('POST', '/api/v1/dlq/retry', { queue, consumerGroup: group });
      expect(bulk.body).toMatchObject({ moved: 1, failed: 0, more: false });
      expect(
        (await http<DlqPageReply>('GET', `/api/v1/dlq?queue=${queue}&consumerGroup=${group}`)).body.messages,
      ).toEqual([]);

      const groups = await http<ConsumerGroupRowReply[]>('GET', '/api/v1/consumer-groups');
      expect(groups.status).toBe(200);
      expect(groups.body.some((g) => g.name === group)).toBe(true);
      expect((await http('GET', `/api/v1/consumer-groups/${group}`)).status).toBe(200);
      expect((await http('GET', '/api/v1/consumer-groups/lagging?minLagSeconds=0')).status).toBe(200);
      expect(
        (await http('POST', `/api/v1/consumer-groups/${group}/queues/${queue}/seek`, { toEnd: true })).status,
      ).toBe(200);
      expect((await http('GET', `/api/v1/pop/queue/${queue}?consumerGroup=${group}&batch=10&wait=false`)).status).toBe(
        204,
      );
      expect(
        (
          await http('POST', `/api/v1/consumer-groups/${group}/subscription`, {
            subscriptionTimestamp: new Date().toISOString(),
          })
        ).status,
      ).toBe(200);
      expect((await http('DELETE', `/api/v1/consumer-groups/${group}/queues/${queue}`)).status).toBe(200);
      expect((await http('DELETE', `/api/v1/consumer-groups/${group}`)).status).toBe(200);
    });
  }

  const G = '/api/v1/queues/{queue}/partitions/{partition}/groups/{group}';
  if (hasRoute('POST', `${G}/poll`) && hasRoute('POST', `${G}/ack`)) {
    it('smoke: record claims hand each record out once and the ack moves the group on', async () => {
      const queue = q('smoke-claims');
      const group = `${G.replace('{queue}', queue).replace('{partition}', 'Default').replace('{group}', 'workers')}`;
      expect(
        (await http('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue, payload: { n } })) })).status,
      ).toBe(201);
      const first = await http<PollReply<{ n: number }>>('POST', `${group}/poll`, { max: 2, waitMs: 0 });
      expect(first.status).toBe(200);
      expect(first.body.records.map((r) => [r.offset, r.data.n])).toEqual([
        [0, 1],
        [1, 2],
      ]);
      const second = await http<PollReply>('POST', `${group}/poll`, { max: 10, waitMs: 0 });
      expect(second.body.records.map((r) => r.offset)).toEqual([2]);
      const acked = await http<{ committed: number }>('POST', `${group}/ack`, { offsets: [0, 1, 2] });
      expect(acked.status).toBe(200);
      expect(acked.body.committed).toBe(3);
      expect((await http<PollReply>('POST', `${group}/poll`, { max: 10, waitMs: 0 })).body.records).toEqual([]);
    });
  }

  if (
    hasRoute('POST', `${G}/dead-letter`) &&
    hasRoute('GET', `${G}/dead-letters`) &&
    hasRoute('POST', `${G}/dead-letters/{offset}/redrive`)
  ) {
    it('smoke: a claimed record can be dead-lettered, listed and redriven', async () => {
      const queue = q('smoke-claims-dl');
      const group = `${G.replace('{queue}', queue).replace('{partition}', 'Default').replace('{group}', 'workers')}`;
      await http('POST', '/api/v1/push', { items: [{ queue, payload: { bad: true } }] });
      const [r] = (await http<PollReply>('POST', `${group}/poll`, { max: 1, waitMs: 0 })).body.records;
      expect((await http('POST', `${group}/dead-letter`, { offset: r!.offset, attempts: r!.attempts })).status).toBe(
        200,
      );
      const listed = await http<{ offsets: number[] }>('GET', `${group}/dead-letters`);
      expect(listed.body.offsets).toEqual([r!.offset]);
      expect((await http('POST', `${group}/dead-letters/${r!.offset}/redrive`, {})).status).toBe(200);
      const again = await http<PollReply>('POST', `${group}/poll`, { max: 1, waitMs: 0 });
      expect(again.body.records.map((x) => x.offset)).toEqual([r!.offset]);
    });
  }

  if (
    (['PUT', 'GET', 'DELETE'] as Method[]).every((m) => hasRoute(m, G)) &&
    ['nack', 'extend', 'seek'].every((a) => hasRoute('POST', `${G}/${a}`)) &&
    hasRoute('DELETE', `${G}/dead-letters/{offset}`)
  ) {
    it('smoke: claim group admin: create, describe, nack, extend, discard a dead letter, seek, delete', async () => {
      const queue = q('smoke-claims-admin');
      const group = `${G.replace('{queue}', queue).replace('{partition}', 'Default').replace('{group}', 'admins')}`;
      await http('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue, payload: { n } })) });
      expect((await http('PUT', group, { start: 'earliest' })).body).toMatchObject({ offset: 0 });
      const [r0, r1, r2] = (await http<PollReply>('POST', `${group}/poll`, { max: 3, waitMs: 0 })).body.records;
      expect((await http('POST', `${group}/nack`, { offset: r0!.offset, attempts: r0!.attempts })).status).toBe(200);
      expect(
        (await http('POST', `${group}/extend`, { offset: r1!.offset, attempts: r1!.attempts, extendMs: 60_000 })).body,
      ).toMatchObject({ visibleMs: 60_000 });
      expect((await http('POST', `${group}/dead-letter`, { offset: r2!.offset, attempts: r2!.attempts })).status).toBe(
        200,
      );
      expect((await http('DELETE', `${group}/dead-letters/${r2!.offset}`)).status).toBe(200);
      expect((await http('GET', group)).body).toMatchObject({ tail: 3, deadLetters: 0 });
      expect((await http('POST', `${group}/seek`, { start: 'latest' })).body).toMatchObject({ offset: 3 });
      expect((await http('DELETE', group)).body).toEqual({ existed: true });
    });
  }

  if (
    hasRoute('DELETE', '/api/v1/resources/queues/{queue}') &&
    hasRoute('GET', '/api/v1/pop/queue/{queue}') &&
    hasRoute('GET', '/api/v1/dlq') &&
    hasRoute('POST', `${G}/poll`)
  ) {
    it('smoke: a deleted queue takes its messages, cursors, claims and dead letters with it; its groups stay registered', async () => {
      const queue = q('smoke-deleted');
      const enc = encodeURIComponent(queue);
      await http('POST', '/api/v1/push', {
        items: [
          { queue, payload: { n: 1 }, transactionId: 'del-1' },
          { queue, payload: { n: 2 }, transactionId: 'del-2' },
        ],
      });
      // A dead letter, a lease cursor, and a claim group's state.
      const [m] = (await http<PopReply>('GET', `/api/v1/pop/queue/${enc}?consumerGroup=audit&batch=1&wait=false`)).body
        .messages;
      await http('POST', '/api/v1/ack', {
        transactionId: m!.transactionId,
        partitionId: m!.partitionId,
        status: 'dlq',
        error: 'bad',
        consumerGroup: 'audit',
        leaseId: m!.leaseId,
      });
      const claims = `${G.replace('{queue}', enc).replace('{partition}', 'Default').replace('{group}', 'workers')}`;
      expect((await http<PollReply>('POST', `${claims}/poll`, { max: 1, waitMs: 0 })).body.records).toHaveLength(1);

      const del = await http('DELETE', `/api/v1/resources/queues/${enc}`);
      expect(del.status).toBe(200);
      expect(del.body).toEqual({ deleted: true, queue, existed: true });
      expect((await http('GET', `/api/v1/pop/queue/${enc}?consumerGroup=audit&batch=10&wait=false`)).status).toBe(204);
      expect((await http<DlqPageReply>('GET', `/api/v1/dlq?queue=${enc}&consumerGroup=audit`)).body.messages).toEqual(
        [],
      );

      // Pushed again: a new queue. The same transactionIds are new messages, `audit` (still
      // registered) gets only the new one, and nothing of the old queue shows.
      const again = await http<PushReply>('POST', '/api/v1/push', {
        items: [{ queue, payload: { n: 3 }, transactionId: 'del-1' }],
      });
      expect(again.body[0]).toMatchObject({ status: 'queued', offset: 0 });
      expect(again.body[0]!.partition_id).not.toBe(m!.partitionId);
      const popped = await http<PopReply>('GET', `/api/v1/pop/queue/${enc}?consumerGroup=audit&batch=10&wait=false`);
      expect(popped.body.messages.map((x) => x.data)).toEqual([{ n: 3 }]);
      expect((await http<DlqPageReply>('GET', `/api/v1/dlq?queue=${enc}`)).body.messages).toEqual([]);
      const polled = await http<PollReply>('POST', `${claims}/poll`, { max: 10, waitMs: 0 });
      expect(polled.body.records.map((r) => [r.offset, r.data])).toEqual([[0, { n: 3 }]]);
    });
  }
}
