/**
 * Where the log lives and how its items are encoded: queues, partitions, segments, push
 * markers, dedup reservations, tombstones and the orphan-blob sweep cursor (tables `meta`,
 * `log` and `dedup`; the layout table is in docs/STORAGE.md, "Keys"). Services read and write
 * these items only through the builders and decoders below.
 *
 * @example
 * ```ts
 * const item = await storage.items.get('meta', logKeys.queue('orders'));
 * const queue = item ? decodeQueue(item) : undefined;
 * ```
 */
import { SEGMENT_BLOB_PREFIX } from '../../storage/blob-prefixes.js';
import type { Reservation } from '../../core/dedup.js';
import type { QueueOptions } from '../../core/queue-options.js';
import type { Item, ItemKey, Json } from '../../storage/port.js';

/**
 * Offsets are zero-padded to 16 digits so that the byte order of sort keys is numeric order
 * (2^53 has 16 digits).
 */
export const padOffset = (n: number): string => n.toString().padStart(16, '0');

export const SEGMENT_PREFIX = 'S#';
export const MARKER_PREFIX = 'M#';
export const PARTITION_PREFIX = 'P#';

/** meta: the partition key every tombstone shares (one query lists the work left). */
export const TOMBSTONE_PK = 'TOMB';

export const logKeys = {
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
  /**
   * log: a partition's offset sequencer, whose version is the next offset to hand out. Its own
   * partition key, so its writes do not share the segments' per-key throughput.
   */
  sequencer: (partitionId: string): ItemKey => ({ pk: `SEQ#${partitionId}`, sk: 'seq' }),
  /** log: the commit-or-abort marker of one push. */
  marker: (partitionId: string, pushId: string): ItemKey => ({ pk: partitionId, sk: `${MARKER_PREFIX}${pushId}` }),
  /** dedup: a transactionId's reservation in a partition. */
  dedup: (partitionId: string, transactionId: string): ItemKey => ({ pk: partitionId, sk: transactionId }),
  /**
   * meta: queues by namespace and task, for namespace/task pops: one entry per queue under each
   * selector it answers (namespace alone, task alone, both), sk the queue name. JSON keeps a
   * namespace holding `#` apart from a namespace and a task.
   */
  queueMatch: (sel: QueueSelector, queue: string): ItemKey => ({ pk: queueMatchPk(sel), sk: queue }),
  /**
   * meta: when a queue last joined or rejoined a selector (a `/configure` or PATCH of a queue
   * under it): namespace/task pops prepare their groups on the queues configured since (see
   * `leases/selector-work.ts`). One pk for every selector; written only by configure.
   */
  selectorConfigured: (sel: QueueSelector): ItemKey => ({ pk: 'SELCFG', sk: queueMatchPk(sel) }),
  /** meta: where the orphan-blob sweeper stopped. */
  sweepCursor: (): ItemKey => ({ pk: 'MAINT', sk: 'blob-sweep' }),
  /**
   * meta: a deleted queue incarnation whose partitions and dead letters maintenance still has
   * to remove (see `maintenance/queue-deletion.ts`).
   */
  queueTombstone: (queueId: string): ItemKey => ({ pk: TOMBSTONE_PK, sk: `Q#${queueId}` }),
  /** meta: a retired partition (its queue deleted, or idle) whose data maintenance still has to remove. */
  partitionTombstone: (partitionId: string): ItemKey => ({ pk: TOMBSTONE_PK, sk: `P#${partitionId}` }),
};

/** Blob key of a segment stored in S3 (or the embedded blob directory). */
export const segmentBlobKey = (partitionId: string, pushId: string): string =>
  `${SEGMENT_BLOB_PREFIX}${partitionId}/${pushId}.zst`;
export { SEGMENT_BLOB_PREFIX };

/** Parses a segment blob key back into its partition and push. */
export function parseSegmentBlobKey(key: string): { partitionId: string; pushId: string } | undefined {
  const m = /^segments\/([^/]+)\/([^/]+)\.zst$/.exec(key);
  return m?.[1] && m[2] ? { partitionId: m[1], pushId: m[2] } : undefined;
}

// ------------------------------------------------------------------ queues

/** Which queues a namespace/task pop asks for: a namespace, a task, or both (a missing one matches any). */
export interface QueueSelector {
  namespace?: string | undefined;
  task?: string | undefined;
}

export const queueMatchPk = (sel: QueueSelector): string =>
  sel.namespace && sel.task
    ? `NT#${JSON.stringify([sel.namespace, sel.task])}`
    : sel.namespace
      ? `NS#${sel.namespace}`
      : `TK#${sel.task ?? ''}`;

/** The selectors a queue with this namespace and task answers (none without either). */
export function selectorsOf(namespace: string, task: string): QueueSelector[] {
  const out: QueueSelector[] = [];
  if (namespace) out.push({ namespace });
  if (task) out.push({ task });
  if (namespace && task) out.push({ namespace, task });
  return out;
}

/** A queue's entry under one selector: its priority, so a pop orders the matches without reading every record. */
export const queueMatchItem = (sel: QueueSelector, queue: string, priority: number, at: number): Item => ({
  ...logKeys.queueMatch(sel, queue),
  ver: 1,
  attrs: { priority, at },
});

/** When a queue was last configured under the selector (see {@link logKeys.selectorConfigured}). */
export const selectorConfiguredItem = (sel: QueueSelector, at: number): Item => ({
  ...logKeys.selectorConfigured(sel),
  ver: 1,
  attrs: { at },
});

/** A queue as stored. */
export interface QueueRecord {
  name: string;
  queueId: string;
  namespace: string;
  task: string;
  createdAt: number;
  /** False for a queue a push created: it has no stored lease time. */
  configured: boolean;
  options: QueueOptions;
  /**
   * The options the client set in `/configure` or a PATCH (the rest are defaults); `ttl` and
   * `retryDelay` apply only when named here. Absent on records written before it existed.
   */
  explicit?: string[] | undefined;
  /**
   * When the queue took its namespace and task (the selectors it answers): kept by configures
   * that leave them as they were. Absent on records written before it existed (read as 0).
   */
  selectorsAt?: number | undefined;
}

export const decodeQueue = (item: Item): QueueRecord => item.attrs as unknown as QueueRecord;

/** The queue record item (`ver` is the caller's: 1 for a new queue, the read one + 1 for a replace). */
export function queueItem(rec: QueueRecord, ver: number): Item {
  return { ...logKeys.queue(rec.name), ver, attrs: rec as unknown as Record<string, Json> };
}

/** The queue's directory entry. */
export function queueIndexItem(name: string, createdAt: number): Item {
  return { ...logKeys.queueIndex(name), ver: 1, attrs: { createdAt } };
}

// -------------------------------------------------------------- partitions

/** A partition: a name inside a queue and a globally unique, stable id. */
export interface PartitionRef {
  queue: string;
  name: string;
  id: string;
  createdAt: number;
  /**
   * The queue incarnation (its {@link QueueRecord.queueId}) the partition belongs to. A queue
   * deleted and created again under the same name is another incarnation: a partition of the
   * old one is dead even while its records are still stored. Absent on partitions written
   * before queue deletion existed; those belong to whichever incarnation exists.
   */
  queueId?: string | undefined;
}

/**
 * Set on a partition's name item by idle-partition retention before it retires the partition
 * (see `maintenance/retention.ts`): a push that reads the item clears it.
 */
export interface RetiringMark {
  /** When the partition was marked (epoch ms). */
  at: number;
  /** The partition's last offset then (-1: empty). */
  end: number;
}

/** A partition record as stored (a retiring mark is not part of the ref). */
export function partitionRefOf(item: Item): PartitionRef {
  const { retiring: _retiring, ...ref } = item.attrs as unknown as PartitionRef & { retiring?: RetiringMark };
  return ref;
}

/** The retiring mark on a partition's name item, if any. */
export const retiringMarkOf = (item: Item): RetiringMark | undefined =>
  item.attrs.retiring as unknown as RetiringMark | undefined;

/** The attributes of both partition items (by name and by id). */
export const partitionAttrs = (ref: PartitionRef): Record<string, Json> => ref as unknown as Record<string, Json>;

// ---------------------------------------------------------------- segments

/** Segment index item attributes. */
export interface SegmentAttrs {
  base: number;
  end: number;
  count: number;
  /** Push time (epoch ms) of every message in it. */
  at: number;
  push: string;
  /** Compressed bytes. */
  size: number;
  /** Uncompressed bytes. */
  raw: number;
  /** Blob key when the segment is not inline. */
  blob?: string;
  /**
   * A skip: offsets `base..end` hold nothing (`count` 0). Written by a reader closing a range a
   * push took and never wrote, by a push that cannot write the range it took, and by retention
   * over the offsets it removed.
   */
  skip?: true;
}

export interface SegmentMeta extends SegmentAttrs {
  sk: string;
}

/** A segment index entry with its inline bytes, as a query returns it. */
export type SegmentWithBytes = SegmentMeta & { bin?: Uint8Array | undefined };

export const segmentAttrsOf = (item: Item): SegmentAttrs => item.attrs as unknown as SegmentAttrs;

export const segmentMetaOf = (item: Item): SegmentMeta => ({ ...segmentAttrsOf(item), sk: item.sk });

export const segmentWithBytesOf = (item: Item): SegmentWithBytes => ({
  ...segmentAttrsOf(item),
  sk: item.sk,
  bin: item.bin,
});

/** The segment item: its index attributes, and its bytes when inline. */
export function segmentItem(partitionId: string, seg: SegmentAttrs, inline: Uint8Array | undefined): Item {
  return {
    ...logKeys.segment(partitionId, seg.base),
    ver: 1,
    attrs: seg as unknown as Record<string, Json>,
    bin: inline,
  };
}

/** The push id skips carry (no push wrote them). */
export const SKIP_PUSH = 'skip';

/**
 * A skip segment over offsets `base..end` (see {@link SegmentAttrs.skip}), dated `at`.
 *
 * @example
 * ```ts
 * await items.put('log', skipSegmentItem(pid, 10, 14, now), { kind: 'absent' }); // close 10..14
 * ```
 */
export function skipSegmentItem(partitionId: string, base: number, end: number, at: number): Item {
  return segmentItem(partitionId, { base, end, count: 0, at, push: SKIP_PUSH, size: 0, raw: 0, skip: true }, undefined);
}

// ----------------------------------------------------------------- markers

/**
 * How long a dedup-only marker outlives its reservations: a lookup then never finds a
 * reservation whose marker TTL already collected.
 */
export const MARKER_SLACK_S = 3600;

/** When a marker guarding dedup reservations of a `windowMs` window, written at `now`, may be collected. */
export const markerExpiry = (now: number, windowMs: number): number =>
  Math.ceil((now + windowMs) / 1000) + MARKER_SLACK_S;

/** A push's `committed` marker: where its segment landed. */
export function committedMarker(
  partitionId: string,
  pushId: string,
  c: { base: number; count: number; at: number },
  expiresAt: number | undefined,
): Item {
  return {
    ...logKeys.marker(partitionId, pushId),
    ver: 1,
    attrs: { state: 'committed', base: c.base, count: c.count, at: c.at },
    expiresAt,
  };
}

/** A push's `aborted` marker: it can never commit, and its reservations may be taken over. */
export function abortedMarker(partitionId: string, pushId: string, at: number, expiresAt: number): Item {
  return { ...logKeys.marker(partitionId, pushId), ver: 1, attrs: { state: 'aborted', at }, expiresAt };
}

/** A committed marker's segment base. */
export const markerBase = (item: Item): number => item.attrs.base as number;

// ---------------------------------------------------------- reservations

/**
 * A transactionId's reservation for a push. A plain literal (no spread): a push writes one
 * per message. `attrsJson`, when given, is the attributes' JSON text built already.
 */
export function reservationItem(
  partitionId: string,
  transactionId: string,
  ver: number,
  attrs: Reservation,
  expiresAt: number,
  attrsJson?: string,
): Item {
  const a = attrs as unknown as Record<string, Json>;
  return attrsJson === undefined
    ? { pk: partitionId, sk: transactionId, ver, attrs: a, expiresAt }
    : { pk: partitionId, sk: transactionId, ver, attrs: a, attrsJson, expiresAt };
}

export const decodeReservation = (item: Item): Reservation => item.attrs as unknown as Reservation;
