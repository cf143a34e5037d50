/**
 * `POST /api/v1/queues/{queue}/ack-and-pop`: our route (not Queen's) for an ack and the next pop
 * in one request, so a steady consumer makes one request per batch (docs/DEPLOYING.md, "Costs per
 * million messages"). Thin: validate, check the grants, one service call
 * (`service/leases/ack-and-pop.ts`), serialise.
 */
import { z } from 'zod';
import { newNameProblem, QUEUE_MODE_GROUP } from '../../core/names.js';
import type { AckRequestItem } from '../../service/leases/ack.js';
import { authorizePartitions } from '../access.js';
import { AckItemSchema } from '../ack-items.js';
import { ackAndPopText } from '../answers/lease-results.js';
import { ackMeter, popMeter } from '../meters.js';
import { defineRoute, type RouteDef } from '../route.js';
import { instantProblem, nameSchema } from '../schemas.js';

const Body = z.object({
  consumerGroup: z
    .string()
    .nullish()
    .superRefine((v, ctx) => {
      const p = v ? newNameProblem(v, 'consumer group') : undefined;
      if (p) ctx.addIssue({ code: 'custom', message: p });
    })
    .transform((v) => v || QUEUE_MODE_GROUP),
  /** Pop one partition; absent: any partition with work, as `GET /pop/queue/{queue}`. */
  partition: nameSchema('partition').optional(),
  acknowledgments: z.array(AckItemSchema, { error: 'acknowledgments must be an array' }).max(10_000).default([]),
  batch: z.number().int().min(1).default(1),
  partitions: z.number().int().min(1).default(1),
  wait: z.boolean().default(false),
  timeout: z.number().int().min(0).default(30_000),
  autoAck: z.boolean().default(false),
  leaseSeconds: z.number().int().min(0).max(43_200).optional(),
  subscriptionMode: z.string().max(64).optional(),
  subscriptionFrom: z
    .string()
    .max(64)
    .optional()
    .refine((v) => v === undefined || v === 'now' || instantProblem(v) === undefined, {
      message: 'subscriptionFrom must be "now" or an ISO-8601 instant such as 2026-01-31T12:00:00Z',
    }),
});

export const ackAndPop = defineRoute({
  method: 'POST',
  path: '/api/v1/queues/{queue}/ack-and-pop',
  group: 'leases',
  summary:
    'Ack a batch (as /ack/batch), then pop the next one for the same queue and group, unless an ack failed: {acks, pop}.',
  params: z.object({ queue: nameSchema('queue') }),
  body: Body,
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  async run({ params, body, services, authorize, signal }) {
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
});

export const ackAndPopRoutes: RouteDef[] = [ackAndPop];
