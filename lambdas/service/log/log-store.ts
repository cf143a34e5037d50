import type { ItemKey } from '../../storage/port.js';

/**
 * Every key Sluice writes, in one place. Offsets are zero-padded to 16 digits so that the
 * byte order of sort keys is numeric order (2^53 has 16 digits).
 */
export const padOffset = (n: number): string => n.toString().padStart(16, '0');

export const SEGMENT_PREFIX = 'S#';
export const MARKER_PREFIX = 'M#';
export const PARTITION_PREFIX = 'P#';

export const keys = {
  /** meta: a queue's configuration. */
  queue: (queue: string): ItemKey => ({ pk: `Q#${queue}`, sk: 'config' }),
  /** meta: directory of queues, for listings. */
  queueIndex: (queue: string): ItemKey => ({ pk: 'QUEUES', sk: queue }),
  /** meta: a partition of a queue, by name. */
  partition: (queue: string, partition: string): ItemKey => ({
    pk: `Q#${queue}`,
    sk: `${PARTITION_PREFIX}${partition}`,
  }),
  /** meta: a partition by its id (acks and DLQ rows name partitions only by id). */
  partitionById: (partitionId: string): ItemKey => ({ pk: `PID#${partitionId}`, sk: 'info' }),
  /** log: the segment whose first offset is `base`. */
  segment: (partitionId: string, base: number): ItemKey => ({
    pk: partitionId,
    sk: `${SEGMENT_PREFIX}${padOffset(base)}`,
  }),
  /** log: the commit-or-abort marker of one push. */
  marker: (partitionId: string, pushId: string): ItemKey => ({ pk: partitionId, sk: `${MARKER_PREFIX}${pushId}` }),
  /** dedup: a transactionId's reservation in a partition. */
  dedup: (partitionId: string, transactionId: string): ItemKey => ({ pk: partitionId, sk: transactionId }),
  /** meta: where the orphan-blob sweeper stopped. */
  sweepCursor: (): ItemKey => ({ pk: 'MAINT', sk: 'blob-sweep' }),
  /**
   * meta: a deleted queue incarnation whose partitions and dead letters maintenance still has
   * to remove (see `queue-deletion.ts`).
   */
  queueTombstone: (queueId: string): ItemKey => ({ pk: TOMBSTONE_PK, sk: `Q#${queueId}` }),
  /** meta: a retired partition (its queue deleted, or idle) whose data maintenance still has to remove. */
  partitionTombstone: (partitionId: string): ItemKey => ({ pk: TOMBSTONE_PK, sk: `P#${partitionId}` }),
};

/** meta: the partition key every tombstone shares (one query lists the work left). */
export const TOMBSTONE_PK = 'TOMB';

/** Blob key of a segment stored in S3 (or the embedded blob directory). */
export const segmentBlobKey = (partitionId: string, pushId: string): string => `segments/${partitionId}/${pushId}.zst`;
export const SEGMENT_BLOB_PREFIX = 'segments/';

/** Parses a segment blob key back into its partition and push. */
export function parseSegmentBlobKey(key: string): { partitionId: string; pushId: string } | undefined {
  const m = /^segments\/([^/]+)\/([^/]+)\.zst$/.exec(key);
  return m?.[1] && m[2] ? { partitionId: m[1], pushId: m[2] } : undefined;
}
