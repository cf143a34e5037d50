/**
 * Queen's resource routes (docs/QUEEN-COMPAT.md): queues with their counters, one queue with
 * its partitions, the cluster overview, namespaces and tasks. Reads only; a listing shows the
 * queues the caller may consume, and naming a queue it may not consume is refused (403).
 */
import { z } from 'zod';
import { route } from '../../route.js';
import { count, integer, isoTime, lenientInteger, nameSchema, optionalFilter } from '../../schemas.js';
import { Counters, PartitionAnswer, QueueIdentity, QueueRow, rate } from './views.js';

export const listQueues = route({
  method: 'GET',
  path: '/api/v1/resources/queues',
  group: 'admin',
  summary: 'Queues the caller may consume, newest first, with partition count and message counters.',
  query: z.object({
    namespace: optionalFilter,
    task: optionalFilter,
    limit: lenientInteger(1, 10_000, 1000),
    offset: lenientInteger(0, 1_000_000, 0),
  }),
  access: { action: 'consume' },
  response: { 200: z.object({ queues: z.array(QueueRow) }).strict() },
});

export const describeQueue = route({
  method: 'GET',
  path: '/api/v1/resources/queues/{queue}',
  group: 'admin',
  summary: 'One queue: its partitions with counters, offsets and each consumer group position; totals.',
  params: z.object({ queue: nameSchema('queue') }),
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  response: {
    200: QueueIdentity.extend({
      priority: integer,
      partitions: z.array(PartitionAnswer),
      totals: Counters,
    }).strict(),
  },
});

/** Mean, median, min and max of some numbers (0 for none). */
const Spread = z
  .object({ avg: z.number().min(0), median: z.number().min(0), min: z.number().min(0), max: z.number().min(0) })
  .strict();

export const overview = route({
  method: 'GET',
  path: '/api/v1/resources/overview',
  group: 'admin',
  summary:
    'Counts of queues, partitions, namespaces, tasks and messages, current consumer lag, and throughput over 5 minutes.',
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        queues: count,
        partitions: count,
        namespaces: count,
        tasks: count,
        messages: Counters,
        lag: z.object({ time: Spread, offset: Spread }).strict(),
        throughput: z.object({ ingestedPerSecond: rate, processedPerSecond: rate }).strict(),
        timestamp: isoTime,
        statsAge: z.literal(0),
      })
      .strict(),
  },
});

/** Queues grouped by namespace or task (named twice, as Queen's views read either): counts and totals. */
const Grouped = {
  name: z.string(),
  queues: count,
  queueCount: count,
  partitions: count,
  messages: z.object({ total: count, pending: count }).strict(),
};

export const namespaces = route({
  method: 'GET',
  path: '/api/v1/resources/namespaces',
  group: 'admin',
  summary: 'Namespaces of the queues the caller may see, with queue, partition and message counts.',
  access: { action: 'consume' },
  response: {
    200: z.object({ namespaces: z.array(z.object({ namespace: z.string(), ...Grouped }).strict()) }).strict(),
  },
});

export const tasks = route({
  method: 'GET',
  path: '/api/v1/resources/tasks',
  group: 'admin',
  summary: 'Tasks of the queues the caller may see, with queue, partition and message counts.',
  access: { action: 'consume' },
  response: { 200: z.object({ tasks: z.array(z.object({ task: z.string(), ...Grouped }).strict()) }).strict() },
});
