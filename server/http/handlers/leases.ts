/**
 * Partition-lease routes (Queen wire format; semantics in docs/LEASES.md, The model): pop, ack,
 * ack batch, lease extension and transactions. Thin: parse and validate, call the lease
 * service, serialise.
 */
import * as leasesApi from '../../../contract/routes/leases.js';
import type { z } from 'zod';
import { SluiceError, invalid } from '../../core/errors.js';
import { decodeLeaseId } from '../../core/leases.js';
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import type { AckRequestItem } from '../../service/leases/ack.js';
import type { Services } from '../../service/runtime.js';
import type { TxOp } from '../../service/transaction-service.js';
import { authorizePartitions } from '../access.js';
import { ackJson, popResultText } from '../answers/lease-results.js';
import { ackMeter, popMeter, transactionMeter } from '../meters.js';
import { preparePushItems } from '../push-items.js';
import { implement, type Action, type RouteDef } from '../route.js';
import { iso } from '../iso.js';

async function runPop(
  services: Pick<Services, 'clock' | 'leasePops'>,
  signal: () => AbortSignal,
  queue: string,
  partition: string | undefined,
  q: z.output<typeof leasesApi.PopQuery>,
) {
  const {
    result: r,
    retryAfterSeconds,
    expired,
    unknownQueue,
  } = await services.leasePops.answer(
    {
      queue,
      partition,
      group: q.consumerGroup,
      batch: q.batch,
      partitions: partition === undefined ? q.partitions : 1,
      autoAck: q.autoAck,
      leaseSeconds: q.leaseSeconds,
      subscriptionMode: q.subscriptionMode,
      subscriptionFrom: q.subscriptionFrom,
      wait: q.wait,
      timeoutMs: q.timeout,
    },
    // Only a waiting pop needs to hear of shutdown or the deadline.
    q.wait ? signal() : undefined,
  );
  // A queue that does not exist gets no series: its name is whatever the client sent.
  const meter = popMeter(unknownQueue ? undefined : queue, r, services.clock(), expired);
  // 204 for every "nothing to deliver": empty, unknown, leased, held back, timed out; with
  // `Retry-After` when the wait cap turned the wait away (our client sleeps that long).
  if (!r)
    return retryAfterSeconds === undefined
      ? { statusCode: 204, meter }
      : { statusCode: 204, headers: { 'retry-after': String(retryAfterSeconds) }, meter };
  return { statusCode: 200, body: popResultText(r), meter };
}

export const popPartition = implement(leasesApi.popPartition, ['clock', 'leasePops'], (i) =>
  runPop(i.services, () => i.signal, i.params.queue, i.params.partition, i.query),
);

export const popQueue = implement(leasesApi.popQueue, ['clock', 'leasePops'], (i) =>
  runPop(i.services, () => i.signal, i.params.queue, undefined, i.query),
);

export const popMatching = implement(leasesApi.popMatching, ['clock', 'matchingPops'], async (i) => {
  const { query: q, services, allowed } = i;
  const {
    result: r,
    retryAfterSeconds,
    expired,
  } = await services.matchingPops.answer(
    {
      namespace: q.namespace,
      task: q.task,
      allowed: (queue) => allowed(queue),
      principal: i.principal,
      group: q.consumerGroup,
      batch: q.batch,
      partitions: q.partitions,
      autoAck: q.autoAck,
      leaseSeconds: q.leaseSeconds,
      subscriptionMode: q.subscriptionMode,
      subscriptionFrom: q.subscriptionFrom,
      wait: q.wait,
      timeoutMs: q.timeout,
    },
    // Only a waiting pop needs to hear of shutdown or the deadline (the signal is made on first read).
    q.wait ? i.signal : undefined,
  );
  const meter = popMeter(r?.queue, r, services.clock(), expired);
  if (!r)
    return retryAfterSeconds === undefined
      ? { statusCode: 204, meter }
      : { statusCode: 204, headers: { 'retry-after': String(retryAfterSeconds) }, meter };
  return { statusCode: 200, body: popResultText(r), meter };
});

// ---------------------------------------------------------------------- ack

/** What `/ack` and `/ack/batch` share: the grant check per acked partition, the acks, their JSON. */
async function runAcks(
  services: Pick<Services, 'leaseAcks' | 'queues'>,
  authorize: (queue: string, action?: Action) => void,
  acks: readonly z.output<typeof leasesApi.AckItemSchema>[],
  group: string,
) {
  await authorizePartitions(
    services,
    acks.map((a) => a.partitionId),
    authorize,
  );
  const items: AckRequestItem[] = acks.map((a, index) => ({
    index,
    partitionId: a.partitionId,
    transactionId: a.transactionId,
    status: a.status,
    error: a.error,
    leaseId: a.leaseId,
  }));
  const results = await services.leaseAcks.ack(items, group);
  return { statusCode: 200, body: results.map(ackJson), meter: ackMeter(results) };
}

export const ack = implement(leasesApi.ack, ['leaseAcks', 'queues'], async ({ body, services, authorize }) => {
  return runAcks(services, authorize, [body], body.consumerGroup);
});

export const ackBatch = implement(
  leasesApi.ackBatch,
  ['leaseAcks', 'queues'],
  async ({ body, services, authorize }) => {
    return runAcks(services, authorize, body.acknowledgments, body.consumerGroup);
  },
);

// ------------------------------------------------------------------- extend

export const extendLease = implement(
  leasesApi.extendLease,
  ['leaseAcks', 'queues'],
  async ({ params, body, services, authorize }) => {
    const lease = decodeLeaseId(params.leaseId, QUEUE_MODE_GROUP);
    if (lease) await authorizePartitions(services, lease.partitionIds, authorize);
    const r = await services.leaseAcks.extend(params.leaseId, body?.seconds ?? 60);
    const at = iso(r.expiresAt);
    return {
      statusCode: 200,
      body: {
        leaseId: r.leaseId,
        success: r.success,
        renewed: r.renewed,
        newExpiresAt: at,
        expiresAt: at,
        lease_expires_at: at,
      },
    };
  },
);

export const transaction = implement(
  leasesApi.transaction,
  ['config', 'queues', 'transactions'],
  async ({ body, services, authorize }) => {
    await authorizePartitions(
      services,
      body.operations.flatMap((o) => (o.type === 'ack' ? [o.partitionId] : [])),
      authorize,
    );
    const operations: TxOp[] = body.operations.map((o, i) => {
      if (o.type === 'ack')
        return {
          type: 'ack',
          transactionId: o.transactionId,
          partitionId: o.partitionId,
          status: o.status,
          consumerGroup: o.consumerGroup,
          error: o.error,
        };
      o.items.forEach((it, j) => {
        if (it.transactionId !== undefined)
          throw invalid(
            `operations[${i}].items[${j}].transactionId: transaction pushes take no transactionId; the server mints one`,
          );
      });
      return {
        type: 'push',
        items: preparePushItems(
          o.items.map((it) => ({
            queue: it.queue,
            partition: it.partition,
            payload: 'payload' in it ? it.payload : 'data' in it ? it.data : {},
            traceId: it.traceId,
          })),
          services,
          `operations[${i}].items`,
        ),
      };
    });
    try {
      const r = await services.transactions.run(operations);
      const pushed = operations.flatMap((o) => (o.type === 'push' ? o.items : []));
      return { statusCode: 200, body: r, ...(r.success ? { meter: transactionMeter(pushed) } : {}) };
    } catch (e) {
      // Business failures answer 200 with success false (a 5xx would make the client retry a non-idempotent call).
      if (e instanceof SluiceError && (e.code === 'queue_full' || e.code === 'not_found'))
        return { statusCode: 200, body: { transactionId: null, success: false, error: e.message, results: [] } };
      throw e;
    }
  },
);

export const leaseRoutes: RouteDef[] = [popPartition, popQueue, popMatching, ack, ackBatch, extendLease, transaction];
