/**
 * Where each kind of blob lives in the bucket (or the embedded blob directory): the stack scopes
 * its grants and lifecycle rules by these prefixes, so they are constants of their own, free of
 * the services that write the blobs (lib/ imports this module, not theirs).
 *
 * @example
 * ```ts
 * `${SEGMENT_BLOB_PREFIX}${partitionId}/${pushId}.zst`; // a segment
 * ```
 */

/** Segments: a push's batch, stored once as zstd (`service/log/log-store.ts`). */
export const SEGMENT_BLOB_PREFIX = 'segments/';
/** Dead-letter payloads too large for their entry item (`service/leases/dlq-store.ts`). */
export const DLQ_BLOB_PREFIX = 'dlq/';
