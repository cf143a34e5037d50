/**
 * Consumer-group admin of the partition-lease design (docs/LEASES.md, Consumer groups and
 * subscriptions): lag views, delete, the stored subscription time, seek. Groups that consume
 * by record claims are managed under handlers/claims.timestamp.
 */
import * as consumerGroupsApi from '../../../contract/routes/consumer-groups.js';
import { invalid } from '../../core/errors.js';
import { groupState } from '../../core/queue-stats.js';
import type { GroupQueueRow } from '../../service/admin/group-lag.js';
import type { GroupView } from '../../service/leases/lease-groups.js';
import { implement, type RouteDef } from '../route.js';
import { seesGroupsOn } from '../access.js';
import { iso } from '../iso.js';

function viewJson(view: GroupView, allowed: (queue: string) => boolean): Record<string, unknown> {
  const queues = view.queues.filter((q) => allowed(q.queue));
  return {
    name: view.name,
    lagMessages: queues.reduce((n, q) => n + q.lagMessages, 0),
    maxLagSeconds: queues.reduce((n, q) => Math.max(n, q.lagSeconds), 0),
    queues: queues.map((q) => ({
      queue: q.queue,
      subscription: { mode: q.subscription.mode, from: iso(q.subscription.from) },
      partitions: q.partitions,
      lagMessages: q.lagMessages,
      lagSeconds: q.lagSeconds,
      leasedPartitions: q.leased,
      ...(q.detail ? { detail: q.detail.map((d) => ({ ...d, leaseExpiresAt: iso(d.leaseExpiresAt) })) } : {}),
    })),
  };
}

/**
 * A (group, queue) row in Queen's shape (a bare array of them is the list), for either design,
 * with Sluice's per-queue lag alongside (`queues`, one entry) so clients that read the older
 * per-group shape keep working.
 */
function groupRowJson(r: GroupQueueRow): Record<string, unknown> {
  return {
    name: r.group,
    kind: r.kind,
    topics: [r.queue],
    queueName: r.queue,
    members: r.members,
    partitionsWithLag: r.partitionsWithLag,
    totalLag: r.lagMessages,
    maxTimeLag: r.lagSeconds,
    state: groupState(r.lagSeconds, r.everConsumed),
    subscriptionMode: r.subscription.mode,
    subscriptionTimestamp: iso(r.subscription.from),
    subscriptionCreatedAt: iso(r.createdAt),
    lagMessages: r.lagMessages,
    maxLagSeconds: r.lagSeconds,
    queues: [
      {
        queue: r.queue,
        subscription: { mode: r.subscription.mode, from: iso(r.subscription.from) },
        partitions: r.partitions.length,
        lagMessages: r.lagMessages,
        lagSeconds: r.lagSeconds,
        leasedPartitions: r.partitions.filter((p) => p.busy).length,
      },
    ],
  };
}

export const listGroups = implement(consumerGroupsApi.listGroups, ['admin'], async ({ services, allowed }) => {
  const rows = await services.admin.groupLag.rows(seesGroupsOn(allowed));
  return { statusCode: 200, body: rows.map(groupRowJson) };
});

export const laggingGroups = implement(
  consumerGroupsApi.laggingGroups,
  ['admin'],
  async ({ query, services, allowed }) => {
    const rows = await services.admin.groupLag.rows(seesGroupsOn(allowed));
    const out = rows
      .flatMap((r) =>
        r.partitions
          .filter((p) => p.lagMessages > 0 && p.lagSeconds > query.minLagSeconds)
          .map((p) => ({
            consumer_group: r.group,
            queue_name: r.queue,
            partition_name: p.partition,
            partition_id: p.partitionId,
            worker_id: null,
            offset_lag: p.lagMessages,
            time_lag_seconds: p.lagSeconds,
            lag_hours: Math.round((p.lagSeconds / 3600) * 100) / 100,
            oldest_unconsumed_at: iso(p.oldestUnfinishedAt),
            last_consumed_at: null,
            kind: r.kind,
          })),
      )
      .sort((a, b) => b.time_lag_seconds - a.time_lag_seconds || b.offset_lag - a.offset_lag);
    return { statusCode: 200, body: out };
  },
);

export const describeGroup = implement(
  consumerGroupsApi.describeGroup,
  ['leaseGroups'],
  async ({ params, services, allowed }) => {
    // A group only on queues the caller may not consume is answered 404, as one that does not exist.
    const view = await services.leaseGroups.describe(params.group, true, (q) => allowed(q));
    return { statusCode: 200, body: viewJson(view, (q) => allowed(q)) };
  },
);

export const deleteGroup = implement(
  consumerGroupsApi.deleteGroup,
  ['groups', 'leaseGroups'],
  async ({ params, query, services, authorize, allowed }) => {
    // Queues where the caller cannot see the group are left alone, unmentioned; where it can, it must manage them.
    const among = seesGroupsOn(allowed);
    for (const q of await services.groups.queuesOf(params.group)) if (among(q)) authorize(q);
    const r = await services.leaseGroups.delete(params.group, { deleteMetadata: query.deleteMetadata, among });
    return {
      statusCode: 200,
      body: {
        success: true,
        consumerGroup: params.group,
        deletedPartitions: r.deletedPartitions,
        metadataDeleted: r.metadataDeleted,
      },
    };
  },
);

export const deleteGroupOnQueue = implement(
  consumerGroupsApi.deleteGroupOnQueue,
  ['leaseGroups'],
  async ({ params, query, services }) => {
    const r = await services.leaseGroups.delete(params.group, {
      queue: params.queue,
      deleteMetadata: query.deleteMetadata,
    });
    return {
      statusCode: 200,
      body: {
        success: true,
        consumerGroup: params.group,
        queueName: params.queue,
        deletedPartitions: r.deletedPartitions,
        metadataDeleted: r.metadataDeleted,
      },
    };
  },
);

export const setSubscription = implement(
  consumerGroupsApi.setSubscription,
  ['groups', 'leaseGroups'],
  async ({ params, body, services, authorize, allowed }) => {
    const timestamp = body?.subscriptionTimestamp;
    if (timestamp === undefined) throw invalid('subscriptionTimestamp is required');
    // As for delete: only the queues where the caller can see the group.
    const among = seesGroupsOn(allowed);
    for (const q of await services.groups.queuesOf(params.group)) if (among(q)) authorize(q);
    const rowsUpdated = await services.leaseGroups.updateSubscription(params.group, timestamp, among);
    return {
      statusCode: 200,
      body: { success: true, consumerGroup: params.group, newTimestamp: iso(timestamp), rowsUpdated },
    };
  },
);

export const seekGroup = implement(consumerGroupsApi.seekGroup, ['leaseGroups'], async ({ params, body, services }) => {
  const toEnd = body?.toEnd === true;
  const timestamp = body?.timestamp;
  if (!toEnd && timestamp === undefined) throw invalid('give either {"timestamp": "<ISO-8601>"} or {"toEnd": true}');
  const partitionsUpdated = await services.leaseGroups.seek(
    params.group,
    params.queue,
    toEnd ? { toEnd: true } : { timestamp: timestamp as number },
  );
  return {
    statusCode: 200,
    body: {
      success: true,
      consumerGroup: params.group,
      queueName: params.queue,
      seekToEnd: toEnd,
      targetTimestamp: toEnd ? null : iso(timestamp),
      partitionsUpdated,
    },
  };
});

export const seekPartition = implement(
  consumerGroupsApi.seekPartition,
  ['claims', 'groups', 'leaseGroups'],
  async ({ params, services }) => {
    const reg = await services.groups.get(params.queue, params.group);
    let movedTo: number;
    if (reg?.kind === 'claim') {
      const r = await services.claims.seek(params.queue, params.partition, params.group, 'latest');
      movedTo = r.offset - 1;
    } else movedTo = await services.leaseGroups.seekPartition(params.group, params.queue, params.partition);
    return {
      statusCode: 200,
      body: {
        success: true,
        consumerGroup: params.group,
        queueName: params.queue,
        partitionName: params.partition,
        updated: true,
        cursorMovedTo: movedTo,
      },
    };
  },
);

export const leaseConsumerGroupRoutes: RouteDef[] = [
  listGroups,
  laggingGroups,
  describeGroup,
  deleteGroup,
  deleteGroupOnQueue,
  setSubscription,
  seekGroup,
  seekPartition,
];
