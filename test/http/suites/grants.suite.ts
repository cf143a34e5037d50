/**
 * Per-queue authorization as a black box, for any target that can call as different
 * principals: the local server with bearer tokens, the bundles behind the simulated gateway.
 *
 * The principals must be granted as in {@link grantsFor}: `producer` may push to `orders-*`,
 * `reader` may consume `orders-*`, `operator` may consume and manage `orders-*`, `admin` may do
 * everything, `stranger` nothing.
 */
import { expect, it } from 'vitest';
import type { GrantsConfig } from '../../../server/http/grants.js';
import { callTarget, type HttpTarget } from '../../support/http.js';
import type { ConsumerGroupReply, ErrorReply, PopReply, PushReply, TransactionReply } from '../../support/replies.js';

export type Role = 'producer' | 'reader' | 'operator' | 'admin' | 'stranger';

/** The grants the suite expects, with each role's principal as `principal(role)` names it. */
export function grantsFor(principal: (role: Role) => string): GrantsConfig['grants'] {
  return [
    { principal: principal('producer'), actions: ['push'], queues: ['orders-*'] },
    { principal: principal('reader'), actions: ['consume'], queues: ['orders-*'] },
    { principal: principal('operator'), actions: ['consume', 'manage'], queues: ['orders-*'] },
    { principal: principal('admin'), actions: ['push', 'consume', 'manage'], queues: ['*'] },
  ];
}

export interface GrantsSuiteOptions {
  /** Status for a request with no credentials: 401 locally, 403 from API Gateway's IAM authorizer. */
  unauthenticatedStatus: 401 | 403;
}

export function defineGrantsSuite(as: (role: Role | 'anonymous') => HttpTarget, opts: GrantsSuiteOptions): void {
  const http = <T = unknown>(role: Role | 'anonymous', method: string, path: string, body?: unknown) =>
    callTarget<T>(as(role), method, path, body);

  it('a request without credentials is refused before any handler runs', async () => {
    const r = await http('anonymous', 'POST', '/api/v1/push', { items: [{ queue: 'orders-a', payload: 1 }] });
    expect(r.status).toBe(opts.unauthenticatedStatus);
    expect((await http('admin', 'GET', '/api/v1/queues/orders-a/partitions/Default/messages')).status).toBe(404);
  });

  it('every authenticated principal may call /health', async () => {
    expect((await http('stranger', 'GET', '/health')).status).toBe(200);
  });

  it('a producer pushes to its queues and nowhere else', async () => {
    expect(
      (await http('producer', 'POST', '/api/v1/push', { items: [{ queue: 'orders-a', payload: 1 }] })).status,
    ).toBe(201);
    const denied = await http<ErrorReply>('producer', 'POST', '/api/v1/push', {
      items: [
        { queue: 'orders-b', payload: 1 },
        { queue: 'billing', payload: 2 },
      ],
    });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('forbidden');
    expect(denied.body.error).toContain('push');
    expect(denied.body.error).toContain('"billing"');
    // All or nothing: the allowed item of a refused push was not written either.
    expect((await http('admin', 'GET', '/api/v1/queues/orders-b/partitions/Default/messages')).status).toBe(404);
  });

  it('a producer may not configure or read; a reader may not push', async () => {
    expect((await http<ErrorReply>('producer', 'POST', '/api/v1/configure', { queue: 'orders-a' })).body.code).toBe(
      'forbidden',
    );
    expect((await http('producer', 'GET', '/api/v1/queues/orders-a/partitions/Default/messages')).status).toBe(403);
    expect((await http('reader', 'POST', '/api/v1/push', { items: [{ queue: 'orders-a', payload: 1 }] })).status).toBe(
      403,
    );
    expect((await http('stranger', 'POST', '/api/v1/configure', { queue: 'anything' })).status).toBe(403);
  });

  it('a reader reads its queues; a lookup by partition id checks the queue it resolves to', async () => {
    const mine = await http<PushReply>('admin', 'POST', '/api/v1/push', {
      items: [{ queue: 'orders-c', payload: { n: 1 }, transactionId: 'tx-c' }],
    });
    const theirs = await http<PushReply>('admin', 'POST', '/api/v1/push', {
      items: [{ queue: 'payroll', payload: { n: 2 }, transactionId: 'tx-p' }],
    });
    expect((await http('reader', 'GET', '/api/v1/queues/orders-c/partitions/Default/messages')).status).toBe(200);
    expect((await http('reader', 'GET', `/api/v1/messages/${mine.body[0]!.partition_id}/tx-c`)).status).toBe(200);
    const denied = await http('reader', 'GET', `/api/v1/messages/${theirs.body[0]!.partition_id}/tx-p`);
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: 'forbidden' });
    // Neither the message nor the name of the queue the partition id belongs to (docs/SECURITY.md,
    // "What a caller may not see").
    expect(JSON.stringify(denied.body)).not.toContain('"n":2');
    expect(JSON.stringify(denied.body)).not.toContain('payroll');
    const ack = await http('reader', 'POST', '/api/v1/ack', {
      transactionId: 'tx-p',
      partitionId: theirs.body[0]!.partition_id,
      status: 'completed',
    });
    expect(ack.status).toBe(403);
    expect(JSON.stringify(ack.body)).not.toContain('payroll');
  });

  it('a transaction needs push on the queues it pushes to and consume on the queues it acks, nothing more', async () => {
    await http('admin', 'POST', '/api/v1/push', {
      items: [
        { queue: 'orders-tx', payload: { n: 1 } },
        { queue: 'payroll-tx', payload: { n: 2 } },
      ],
    });
    const [m] = (await http<PopReply>('reader', 'GET', '/api/v1/pop/queue/orders-tx?batch=1&wait=false')).body.messages;
    const ackOp = { type: 'ack', transactionId: m!.transactionId, partitionId: m!.partitionId, status: 'completed' };
    const pushOp = (queue: string) => ({ type: 'push', items: [{ queue, payload: { out: true } }] });
    // Refused: a producer acking, a reader pushing, anyone acking a queue they may not consume.
    expect((await http('producer', 'POST', '/api/v1/transaction', { operations: [ackOp] })).status).toBe(403);
    expect(
      (await http('producer', 'POST', '/api/v1/transaction', { operations: [pushOp('orders-tx'), ackOp] })).status,
    ).toBe(403);
    expect(
      (await http('reader', 'POST', '/api/v1/transaction', { operations: [pushOp('orders-tx'), ackOp] })).status,
    ).toBe(403);
    expect((await http('stranger', 'POST', '/api/v1/transaction', { operations: [ackOp] })).status).toBe(403);
    const [p] = (await http<PopReply>('admin', 'GET', '/api/v1/pop/queue/payroll-tx?batch=1&wait=false')).body.messages;
    const theirs = await http('reader', 'POST', '/api/v1/transaction', {
      operations: [{ type: 'ack', transactionId: p!.transactionId, partitionId: p!.partitionId, status: 'completed' }],
    });
    expect(theirs.status).toBe(403);
    expect(theirs.body).toMatchObject({ code: 'forbidden' });
    expect(JSON.stringify(theirs.body)).not.toContain('payroll');
    // Allowed: a reader's ack-only transaction (no push grant needed), a producer's push-only one.
    const acked = await http<TransactionReply>('reader', 'POST', '/api/v1/transaction', { operations: [ackOp] });
    expect(acked.status).toBe(200);
    expect(acked.body.success).toBe(true);
    const pushed = await http<TransactionReply>('producer', 'POST', '/api/v1/transaction', {
      operations: [pushOp('orders-tx-out')],
    });
    expect(pushed.status).toBe(200);
    expect(pushed.body.success).toBe(true);
    expect((await http('reader', 'GET', '/api/v1/pop/queue/orders-tx?batch=1&wait=false')).status).toBe(204);
  });

  it('group lookups and admin calls tell a caller nothing of queues it may not see', async () => {
    await http('admin', 'POST', '/api/v1/push', {
      items: [
        { queue: 'orders-grp', payload: 1 },
        { queue: 'payroll-grp', payload: 2 },
      ],
    });
    // `shared` reads both queues, `hidden` only payroll-grp.
    for (const [queue, group] of [
      ['orders-grp', 'shared'],
      ['payroll-grp', 'shared'],
      ['payroll-grp', 'hidden'],
    ])
      expect((await http('admin', 'GET', `/api/v1/pop/queue/${queue}?consumerGroup=${group}&wait=false`)).status).toBe(
        200,
      );
    const hidden = await http<ErrorReply>('reader', 'GET', '/api/v1/consumer-groups/hidden');
    const never = await http<ErrorReply>('reader', 'GET', '/api/v1/consumer-groups/never-was');
    expect([hidden.status, never.status]).toEqual([404, 404]);
    expect(hidden.body.error.replace('hidden', 'X')).toBe(never.body.error.replace('never-was', 'X'));
    const shared = await http<ConsumerGroupReply>('reader', 'GET', '/api/v1/consumer-groups/shared');
    expect(shared.body.queues.map((q) => q.queue)).toEqual(['orders-grp']);
    // Admin calls act where the caller can see the group and leave the rest alone, unmentioned.
    const gone = await http('operator', 'DELETE', '/api/v1/consumer-groups/hidden');
    const none = await http('operator', 'DELETE', '/api/v1/consumer-groups/never-was');
    expect(gone.status).toBe(200);
    expect({ ...(gone.body as object), consumerGroup: 'X' }).toEqual({ ...(none.body as object), consumerGroup: 'X' });
    const sub = await http<{ rowsUpdated: number }>('operator', 'POST', '/api/v1/consumer-groups/shared/subscription', {
      subscriptionTimestamp: '2026-01-01T00:00:00Z',
    });
    expect(sub.status).toBe(200);
    expect(sub.body.rowsUpdated).toBe(1);
    expect((await http('operator', 'DELETE', '/api/v1/consumer-groups/shared')).status).toBe(200);
    const left = await http<ConsumerGroupReply>('admin', 'GET', '/api/v1/consumer-groups/shared');
    expect(left.body.queues.map((q) => [q.queue, q.subscription.mode])).toEqual([['payroll-grp', 'all']]);
    expect((await http('admin', 'GET', '/api/v1/consumer-groups/hidden')).status).toBe(200);
  });

  it('deleting a queue needs manage on it', async () => {
    await http('admin', 'POST', '/api/v1/push', { items: [{ queue: 'orders-del', payload: 1 }] });
    expect((await http('producer', 'DELETE', '/api/v1/resources/queues/orders-del')).status).toBe(403);
    expect((await http<ErrorReply>('reader', 'DELETE', '/api/v1/resources/queues/orders-del')).body.code).toBe(
      'forbidden',
    );
    expect((await http('reader', 'GET', '/api/v1/queues/orders-del/partitions/Default/messages')).status).toBe(200);
    expect((await http('admin', 'DELETE', '/api/v1/resources/queues/orders-del')).body).toEqual({
      deleted: true,
      queue: 'orders-del',
      existed: true,
    });
    expect((await http('reader', 'GET', '/api/v1/queues/orders-del/partitions/Default/messages')).status).toBe(404);
  });
}
