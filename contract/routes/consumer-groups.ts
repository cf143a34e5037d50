/**
 * Consumer groups, as admins see them (docs/LEASES.md, Consumer groups and subscriptions):
 * every group of both designs with its lag, the lagging ones, one lease group in detail,
 * delete, the stored subscription time, seek. Record-claim groups are driven under their own
 * path (claims.ts).
 */
import { z } from 'zod';
import { route } from '../route.js';
import { boundedQueryInteger, count, instant, integer, isoTimeOrNull, nameSchema, newNameSchema } from '../schemas.js';

const GroupParams = z.object({ group: nameSchema('consumer group') });
const onQueue = { queues: ({ params }: { params: { queue: string } }) => [params.queue] };

const kind = z.enum(['lease', 'claim']);
const Subscription = z
  .object({
    mode: z.enum(['all', 'new', 'from']),
    from: isoTimeOrNull.describe('`new`: when it registered; `from`: the instant.'),
  })
  .strict();
/** A group's lag on one queue. */
const QueueLag = z.object({
  queue: z.string(),
  subscription: Subscription,
  partitions: count,
  lagMessages: count,
  lagSeconds: count.describe('Age of the oldest message the group has not finished.'),
  leasedPartitions: count,
});

export const listGroups = route({
  method: 'GET',
  path: '/api/v1/consumer-groups',
  group: 'admin',
  summary:
    'Every consumer group (partition leases and record claims) per queue the caller can see it on: a bare array of Queen rows with lag.',
  access: { action: 'consume' },
  response: {
    // Sluice's per-queue lag (`queues`, one entry) rides along, for clients of the older per-group shape.
    200: z.array(
      z
        .object({
          name: z.string(),
          kind,
          topics: z.array(z.string()),
          queueName: z.string(),
          members: count,
          partitionsWithLag: count,
          totalLag: count,
          maxTimeLag: count,
          state: z.enum(['Lagging', 'Stable', 'Dead']),
          subscriptionMode: z.enum(['all', 'new', 'from']),
          subscriptionTimestamp: isoTimeOrNull,
          subscriptionCreatedAt: isoTimeOrNull,
          lagMessages: count,
          maxLagSeconds: count,
          queues: z.array(QueueLag.strict()),
        })
        .strict(),
    ),
  },
});

export const laggingGroups = route({
  method: 'GET',
  path: '/api/v1/consumer-groups/lagging',
  group: 'admin',
  summary:
    'Per group and partition whose oldest unfinished message is more than minLagSeconds old (default 3600), highest lag first (Queen: snake_case, a bare array).',
  query: z.object({ minLagSeconds: boundedQueryInteger(0, 10 * 365 * 86_400, 3600) }),
  access: { action: 'consume' },
  response: {
    200: z.array(
      z
        .object({
          consumer_group: z.string(),
          queue_name: z.string(),
          partition_name: z.string(),
          partition_id: z.string(),
          worker_id: z.null(),
          offset_lag: count,
          time_lag_seconds: count,
          lag_hours: z.number().min(0),
          oldest_unconsumed_at: isoTimeOrNull,
          last_consumed_at: z.null(),
          kind,
        })
        .strict(),
    ),
  },
});

export const describeGroup = route({
  method: 'GET',
  path: '/api/v1/consumer-groups/{group}',
  group: 'admin',
  summary: 'One lease consumer group: per queue and partition, cursor, lag and lease.',
  params: GroupParams,
  access: { action: 'consume' },
  response: {
    200: z
      .object({
        name: z.string(),
        lagMessages: count,
        maxLagSeconds: count,
        queues: z.array(
          QueueLag.extend({
            detail: z
              .array(
                z
                  .object({
                    partition: z.string(),
                    partitionId: z.string(),
                    committed: integer.nullable().describe('Last completed offset (-1: none); null: not read yet.'),
                    next: count.describe('Next offset to be written.'),
                    lagMessages: count,
                    lagSeconds: count,
                    leaseExpiresAt: isoTimeOrNull,
                    retryCount: count,
                    redeliveries: count,
                  })
                  .strict(),
              )
              .optional(),
          }).strict(),
        ),
      })
      .strict(),
  },
});

const DeleteQuery = z.object({
  deleteMetadata: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => v === undefined || v === 'true' || v === '1'),
});
const Deleted = z.object({
  success: z.literal(true),
  consumerGroup: z.string(),
  deletedPartitions: count,
  metadataDeleted: z.boolean(),
});

export const deleteGroup = route({
  method: 'DELETE',
  path: '/api/v1/consumer-groups/{group}',
  group: 'admin',
  summary:
    "Delete a group's cursors and scan watermarks on every queue the caller can see it on (and its subscription unless deleteMetadata=false).",
  params: GroupParams,
  query: DeleteQuery,
  access: { action: 'manage' },
  response: { 200: Deleted.strict() },
});

export const deleteGroupOnQueue = route({
  method: 'DELETE',
  path: '/api/v1/consumer-groups/{group}/queues/{queue}',
  group: 'admin',
  summary: "Delete a group's cursors and scan watermark on one queue.",
  params: z.object({ group: nameSchema('consumer group'), queue: nameSchema('queue') }),
  query: DeleteQuery,
  access: { action: 'manage', ...onQueue },
  response: { 200: Deleted.extend({ queueName: z.string() }).strict() },
});

export const setSubscription = route({
  method: 'POST',
  path: '/api/v1/consumer-groups/{group}/subscription',
  group: 'admin',
  summary: "Set a group's stored start time (used for partitions it has not read yet); cursors stay put.",
  params: GroupParams,
  body: z.object({ subscriptionTimestamp: instant.optional() }).nullish(),
  access: { action: 'manage' },
  response: {
    200: z
      .object({
        success: z.literal(true),
        consumerGroup: z.string(),
        newTimestamp: isoTimeOrNull,
        rowsUpdated: count,
      })
      .strict(),
  },
});

export const seekGroup = route({
  method: 'POST',
  path: '/api/v1/consumer-groups/{group}/queues/{queue}/seek',
  group: 'admin',
  summary:
    'Move a group on a queue to the end or to a timestamp (the next delivery is the first message after it); releases its leases there.',
  // A seek registers the group on the queue: only a name a new group may have.
  params: z.object({ group: newNameSchema('consumer group'), queue: nameSchema('queue') }),
  body: z.object({ timestamp: instant.optional(), toEnd: z.boolean().optional() }).nullish(),
  access: { action: 'manage', ...onQueue },
  response: {
    200: z
      .object({
        success: z.literal(true),
        consumerGroup: z.string(),
        queueName: z.string(),
        seekToEnd: z.boolean(),
        targetTimestamp: isoTimeOrNull,
        partitionsUpdated: count,
      })
      .strict(),
  },
});

export const seekPartition = route({
  method: 'POST',
  path: '/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek',
  group: 'admin',
  summary:
    "Move a group's position on one partition to its newest message (skip to end); a record-claim group is moved to latest.",
  params: z.object({
    group: newNameSchema('consumer group'),
    queue: nameSchema('queue'),
    partition: nameSchema('partition'),
  }),
  access: { action: 'manage', ...onQueue },
  response: {
    200: z
      .object({
        success: z.literal(true),
        consumerGroup: z.string(),
        queueName: z.string(),
        partitionName: z.string(),
        updated: z.literal(true),
        cursorMovedTo: integer.describe('The offset now last finished (-1: none).'),
      })
      .strict(),
  },
});
