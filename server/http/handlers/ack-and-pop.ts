/**
 * `POST /api/v1/queues/{queue}/ack-and-pop`: our route (not Queen's) for an ack and the next pop
 * in one request, so a steady consumer makes one request per batch (docs/DEPLOYING.md, "Costs per
 * million messages"). Thin: validate, check the grants, one service call
 * (`service/leases/ack-and-pop.ts`), serialise.
 */
import * as leasesApi from '../../../contract/routes/leases.js';
import type { AckRequestItem } from '../../service/leases/ack.js';
import { authorizePartitions } from '../access.js';
import { ackAndPopText } from '../answers/lease-results.js';
import { ackMeter, popMeter } from '../meters.js';
import { implement, type RouteDef } from '../route.js';

export const ackAndPop = implement(
  leasesApi.ackAndPop,
  ['ackAndPop', 'clock', 'queues'],
  async ({ params, body, services, authorize, signal }) => {
    await authorizePartitions(
      services,
      body.acknowledgments.map((a) => a.partitionId),
      authorize,
    );
    const items: AckRequestItem[] = body.acknowledgments.map((a, index) => ({ index, ...a }));
    const r = await services.ackAndPop.run(
      items,
      {
        queue: params.queue,
        partition: body.partition,
        group: body.consumerGroup,
        batch: body.batch,
        partitions: body.partition === undefined ? body.partitions : 1,
        autoAck: body.autoAck,
        leaseSeconds: body.leaseSeconds,
        subscriptionMode: body.subscriptionMode,
        subscriptionFrom: body.subscriptionFrom,
        wait: body.wait,
        timeoutMs: body.timeout,
      },
      body.wait ? signal : undefined,
    );
    const popped = r.pop?.result ?? null;
    const acks = ackMeter(r.acks);
    // A queue that does not exist gets no series: its name is whatever the client sent.
    const pops = r.pop && !r.pop.unknownQueue ? popMeter(params.queue, popped, services.clock()) : undefined;
    const retryAfter = r.pop?.retryAfterSeconds;
    return {
      statusCode: 200,
      ...(retryAfter !== undefined ? { headers: { 'retry-after': String(retryAfter) } } : {}),
      body: ackAndPopText(r),
      meter: (m) => {
        acks(m);
        pops?.(m);
      },
    };
  },
);

export const ackAndPopRoutes: RouteDef[] = [ackAndPop];
