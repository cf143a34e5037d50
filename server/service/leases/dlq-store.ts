/**
 * Where the partition-lease dead-letter queue lives and how its rows are encoded (table
 * `dlq`; layout table in docs/LEASES.md, "Storage layout"). One filing writes three items in
 * the same transaction as the cursor advance: the entry (everything, payload in `bin` or a
 * blob) and two list pointers, so listing by queue or by (queue, group), newest first, and
 * the lookup by (partitionId, transactionId) are each one query.
 *
 * @example
 * ```ts
 * const rows = await storage.items.query('dlq', entryPk(partitionId, transactionId));
 * const entry = decodeEntry(rows.items[0]!);
 * ```
 */
import { DLQ_BLOB_PREFIX } from '../../storage/blob-prefixes.js';
import type { Item, ItemKey, Json } from '../../storage/port.js';
import { padOffset } from '../log/log-store.js';

/** Epoch ms as a 13-digit sort key part (ordered until the year 2286). */
const padTime = (ms: number): string => Math.max(0, Math.floor(ms)).toString().padStart(13, '0');

export const dlqKeys = {
  /** The entry: one per (partition, transactionId, group). */
  entry: (partitionId: string, transactionId: string, group: string): ItemKey => ({
    pk: entryPk(partitionId, transactionId),
    sk: group,
  }),
  /** The partition key of a queue's listing, or of one group's listing in it. */
  listPk: (queue: string, group?: string): string => (group !== undefined ? `LG#${queue}#${group}` : `L#${queue}`),
  /** Listing pointer by queue: sk orders by failure time. */
  byQueue: (queue: string, sk: string): ItemKey => ({ pk: dlqKeys.listPk(queue), sk }),
  /** Listing pointer by (queue, group). */
  byGroup: (queue: string, group: string, sk: string): ItemKey => ({ pk: dlqKeys.listPk(queue, group), sk }),
  /**
   * A payload blob's marker, written (put-if-absent, `committed`) with the entry that points
   * at the blob and deleted with it. The orphan sweep writes it `aborted` first when absent, so
   * a filing that commits after the sweep judged its blob orphaned fails instead of pointing
   * at a deleted blob.
   */
  blobMarker: (partitionId: string, blobId: string): ItemKey => ({ pk: `DB#${partitionId}`, sk: blobId }),
  /** meta: where the dead-letter blob sweep continues. */
  blobSweepCursor: (): ItemKey => ({ pk: 'MAINT', sk: 'dlq-blob-sweep' }),
};

export const entryPk = (partitionId: string, transactionId: string): string => `E#${partitionId}#${transactionId}`;
/** List sort key: failure time, then log order (partition, offset) for ties, then what makes it unique. */
export const listSk = (
  failedAt: number,
  partitionId: string,
  offset: number,
  group: string,
  transactionId: string,
): string => `${padTime(failedAt)}#${partitionId}#${padOffset(offset)}#${group}#${transactionId}`;

export { DLQ_BLOB_PREFIX };
/**
 * Blob key of a DLQ payload too large to keep inside its entry. The `.bin` suffix marks keys
 * guarded by a {@link dlqKeys.blobMarker}: blobs written before markers existed have none and
 * the orphan sweep leaves them alone.
 */
export const dlqBlobKey = (partitionId: string, blobId: string): string =>
  `${DLQ_BLOB_PREFIX}${partitionId}/${blobId}.bin`;

/** Parses a marker-guarded DLQ blob key; undefined for anything else (older keys included). */
export function parseDlqBlobKey(key: string): { partitionId: string; blobId: string } | undefined {
  const m = /^dlq\/([^/]+)\/([^/]+)\.bin$/.exec(key);
  return m?.[1] && m[2] ? { partitionId: m[1], blobId: m[2] } : undefined;
}

/** A dead-letter entry's attributes: everything about the filing but the payload bytes. */
export interface EntryAttrs {
  id: string;
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
  consumerGroup: string;
  errorMessage: string;
  retryCount: number;
  failedAt: number;
  offset: number;
  traceId: string | null;
  sealed: boolean;
  blob?: string;
  /** Sort key of both list pointers. */
  listSk: string;
  /** The queue incarnation it was filed in (absent on rows filed before queue deletion existed). */
  queueId?: string;
}

export const decodeEntry = (item: Item): EntryAttrs => item.attrs as unknown as EntryAttrs;

export const entryAttrs = (a: EntryAttrs): Record<string, Json> => a as unknown as Record<string, Json>;

/** A list pointer's attributes: the entry it points at, when it failed, and the queue incarnation. */
export interface PointerAttrs {
  entryPk: string;
  entrySk: string;
  failedAt: number;
  queueId?: string;
}

export const decodePointer = (item: Item): PointerAttrs => item.attrs as unknown as PointerAttrs;

/** The entry a list pointer (or a blob marker) names. */
export const pointedEntry = (item: Item): ItemKey => ({
  pk: item.attrs.entryPk as string,
  sk: item.attrs.entrySk as string,
});
