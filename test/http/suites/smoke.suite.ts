/**
 * A short end-to-end pass over the consuming routes (push, pop, ack; record claims) as a black
 * box, for targets where the full per-feature suites are too slow or need a server-side clock:
 * the bundles from cdk.out and a deployed API. Each part registers only when its routes exist
 * in the route table, so it grows with the API.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import type { Method } from '../../../lambdas/http/route.js';
import { ALL_ROUTES } from '../../../lambdas/http/routes.js';
import { callTarget, type HttpTarget } from '../../support/http.js';

export const hasRoute = (method: Method, path: string): boolean => ALL_ROUTES.some((r) => r.method === method && r.path === path);

export function defineQueueSmokeSuite(target: () => HttpTarget, opts: { prefix?: string } = {}): void {
  const q = (name: string): string => `${opts.prefix ?? ''}${name}`;
  const http = (method: string, path: string, body?: unknown) => callTarget(target(), method, path, body);

  it('smoke: a push is readable back, large payloads included', async () => {
    const queue = q('smoke-read');
    // Incompressible and past the inline limit: stored as a blob (S3 on AWS).
    const big = randomBytes(3000).toString('base64');
    const pushed = await http('POST', '/api/v1/push', { items: [{ queue, payload: { n: 1 } }, { queue, payload: { big } }] });
    expect(pushed.status).toBe(201);
    const read = await http('GET', `/api/v1/queues/${queue}/partitions/Default/messages?from=0&limit=10`);
    expect(read.status).toBe(200);
    expect(read.body.messages.map((m: { data: unknown }) => m.data)).toEqual([{ n: 1 }, { big }]);
  });

  if (hasRoute('GET', '/api/v1/pop/queue/{queue}') && hasRoute('POST', '/api/v1/ack')) {
    it('smoke: pop delivers what was pushed, ack completes it, nothing comes twice', async () => {
      const queue = q('smoke-work');
      expect((await http('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue, payload: { n } })) })).status).toBe(201);
      const popped = await http('GET', `/api/v1/pop/queue/${queue}?batch=10&wait=false`);
      expect(popped.status).toBe(200);
      const messages = popped.body.messages as { data: { n: number }; transactionId: string; partitionId: string; leaseId: string }[];
      expect(messages.map((m) => m.data.n)).toEqual([1, 2, 3]);
      for (const m of messages) {
        const acked = await http('POST', '/api/v1/ack', { transactionId: m.transactionId, partitionId: m.partitionId, status: 'completed', error: null, consumerGroup: null, leaseId: m.leaseId });
        expect(acked.status).toBe(200);
        expect(acked.body[0]).toMatchObject({ success: true });
      }
      expect((await http('GET', `/api/v1/pop/queue/${queue}?batch=10&wait=false`)).status).toBe(204);
    });

    it('smoke: a message acked to the dead-letter queue is listed there', async () => {
      const queue = q('smoke-dlq');
      await http('POST', '/api/v1/push', { items: [{ queue, payload: { poison: true }, transactionId: 'poison-1' }] });
      const [m] = (await http('GET', `/api/v1/pop/queue/${queue}?batch=1&wait=false`)).body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
      const acked = await http('POST', '/api/v1/ack', { transactionId: m!.transactionId, partitionId: m!.partitionId, status: 'dlq', error: 'cannot parse', consumerGroup: null, leaseId: m!.leaseId });
      expect(acked.body[0]).toMatchObject({ success: true, dlq: true });
    });

    if (hasRoute('GET', '/api/v1/dlq')) {
      it('smoke: the dead-letter queue lists it', async () => {
        const dlq = await http('GET', `/api/v1/dlq?queue=${q('smoke-dlq')}&limit=10&offset=0`);
        expect(dlq.status).toBe(200);
        expect(dlq.body.messages).toMatchObject([{ transactionId: 'poison-1', errorMessage: 'cannot parse', data: { poison: true } }]);
      });
    }
  }

  if (hasRoute('POST', '/api/v1/transaction') && hasRoute('GET', '/api/v1/pop/queue/{queue}')) {
    it('smoke: a transaction acks one message and pushes another atomically', async () => {
      const from = q('smoke-tx-in');
      const to = q('smoke-tx-out');
      await http('POST', '/api/v1/push', { items: [{ queue: from, payload: { step: 1 } }] });
      const [m] = (await http('GET', `/api/v1/pop/queue/${from}?batch=1&wait=false`)).body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
      const tx = await http('POST', '/api/v1/transaction', {
        operations: [
          { type: 'push', items: [{ queue: to, payload: { step: 2 } }] },
          { type: 'ack', transactionId: m!.transactionId, partitionId: m!.partitionId, status: 'completed' },
        ],
        requiredLeases: [m!.leaseId],
      });
      expect(tx.status).toBe(200);
      expect(tx.body.success).toBe(true);
      const next = await http('GET', `/api/v1/pop/queue/${to}?batch=1&wait=false`);
      expect(next.body.messages.map((x: { data: unknown }) => x.data)).toEqual([{ step: 2 }]);
    });
  }

  const G = '/api/v1/queues/{queue}/partitions/{partition}/groups/{group}';
  if (hasRoute('POST', `${G}/poll`) && hasRoute('POST', `${G}/ack`)) {
    it('smoke: record claims hand each record out once and the ack moves the group on', async () => {
      const queue = q('smoke-claims');
      const group = `${G.replace('{queue}', queue).replace('{partition}', 'Default').replace('{group}', 'workers')}`;
      expect((await http('POST', '/api/v1/push', { items: [1, 2, 3].map((n) => ({ queue, payload: { n } })) })).status).toBe(201);
      const first = await http('POST', `${group}/poll`, { max: 2, waitMs: 0 });
      expect(first.status).toBe(200);
      expect(first.body.records.map((r: { offset: number; data: { n: number } }) => [r.offset, r.data.n])).toEqual([
        [0, 1],
        [1, 2],
      ]);
      const second = await http('POST', `${group}/poll`, { max: 10, waitMs: 0 });
      expect(second.body.records.map((r: { offset: number }) => r.offset)).toEqual([2]);
      const acked = await http('POST', `${group}/ack`, { offsets: [0, 1, 2] });
      expect(acked.status).toBe(200);
      expect(acked.body.committed).toBe(3);
      expect((await http('POST', `${group}/poll`, { max: 10, waitMs: 0 })).body.records).toEqual([]);
    });
  }

  if (hasRoute('POST', `${G}/dead-letter`) && hasRoute('GET', `${G}/dead-letters`) && hasRoute('POST', `${G}/dead-letters/{offset}/redrive`)) {
    it('smoke: a claimed record can be dead-lettered, listed and redriven', async () => {
      const queue = q('smoke-claims-dl');
      const group = `${G.replace('{queue}', queue).replace('{partition}', 'Default').replace('{group}', 'workers')}`;
      await http('POST', '/api/v1/push', { items: [{ queue, payload: { bad: true } }] });
      const [r] = (await http('POST', `${group}/poll`, { max: 1, waitMs: 0 })).body.records as { offset: number; attempts: number }[];
      expect((await http('POST', `${group}/dead-letter`, { offset: r!.offset, attempts: r!.attempts })).status).toBe(200);
      const listed = await http('GET', `${group}/dead-letters`);
      expect(listed.body.offsets).toEqual([r!.offset]);
      expect((await http('POST', `${group}/dead-letters/${r!.offset}/redrive`, {})).status).toBe(200);
      const again = await http('POST', `${group}/poll`, { max: 1, waitMs: 0 });
      expect(again.body.records.map((x: { offset: number }) => x.offset)).toEqual([r!.offset]);
    });
  }

  if (hasRoute('DELETE', '/api/v1/resources/queues/{queue}') && hasRoute('GET', '/api/v1/pop/queue/{queue}') && hasRoute('GET', '/api/v1/dlq') && hasRoute('POST', `${G}/poll`)) {
    it('smoke: a deleted queue takes its messages, cursors, claims and dead letters with it; its groups stay registered', async () => {
      const queue = q('smoke-deleted');
      const enc = encodeURIComponent(queue);
      await http('POST', '/api/v1/push', { items: [{ queue, payload: { n: 1 }, transactionId: 'del-1' }, { queue, payload: { n: 2 }, transactionId: 'del-2' }] });
      // A dead letter, a lease cursor, and a claim group's state.
      const [m] = (await http('GET', `/api/v1/pop/queue/${enc}?consumerGroup=audit&batch=1&wait=false`)).body.messages as { transactionId: string; partitionId: string; leaseId: string }[];
      await http('POST', '/api/v1/ack', { transactionId: m!.transactionId, partitionId: m!.partitionId, status: 'dlq', error: 'bad', consumerGroup: 'audit', leaseId: m!.leaseId });
      const claims = `${G.replace('{queue}', enc).replace('{partition}', 'Default').replace('{group}', 'workers')}`;
      expect((await http('POST', `${claims}/poll`, { max: 1, waitMs: 0 })).body.records).toHaveLength(1);

      const del = await http('DELETE', `/api/v1/resources/queues/${enc}`);
      expect(del.status).toBe(200);
      expect(del.body).toEqual({ deleted: true, queue, existed: true });
      expect((await http('GET', `/api/v1/pop/queue/${enc}?consumerGroup=audit&batch=10&wait=false`)).status).toBe(204);
      expect((await http('GET', `/api/v1/dlq?queue=${enc}&consumerGroup=audit`)).body.messages).toEqual([]);

      // Pushed again: a new queue. The same transactionIds are new messages, `audit` (still
      // registered) gets only the new one, and nothing of the old queue shows.
      const again = await http('POST', '/api/v1/push', { items: [{ queue, payload: { n: 3 }, transactionId: 'del-1' }] });
      expect(again.body[0]).toMatchObject({ status: 'queued', offset: 0 });
      expect(again.body[0].partition_id).not.toBe(m!.partitionId);
      const popped = await http('GET', `/api/v1/pop/queue/${enc}?consumerGroup=audit&batch=10&wait=false`);
      expect(popped.body.messages.map((x: { data: unknown }) => x.data)).toEqual([{ n: 3 }]);
      expect((await http('GET', `/api/v1/dlq?queue=${enc}`)).body.messages).toEqual([]);
      const polled = await http('POST', `${claims}/poll`, { max: 10, waitMs: 0 });
      expect(polled.body.records.map((r: { offset: number; data: unknown }) => [r.offset, r.data])).toEqual([[0, { n: 3 }]]);
    });
  }
}
