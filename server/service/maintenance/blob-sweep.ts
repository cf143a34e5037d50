// The orphan-blob sweeps' shared walk. Segment blobs and dead-letter payload blobs are both
// uploaded before the write that points at them commits, with a marker item in that write;
// a sweep deletes a blob only once its marker says `aborted`, writing that itself (put-if-
// absent) when there is none, so a commit that comes later fails instead of pointing at a
// deleted blob.
import {
  ConditionFailedError,
  ContentionError,
  type Item,
  type ItemKey,
  type Json,
  type Storage,
  type TableName,
} from '../../storage/port.js';

export interface SweepReport {
  scanned: number;
  deleted: number;
  kept: number;
  /** The walk reached the end of the prefix; the next page starts from the top. */
  wrapped: boolean;
}

/** How long an `aborted` marker is kept: long past any commit that could still try. */
const ABORTED_MARKER_TTL_S = 7 * 86400;

/**
 * One page of a sweep over `prefix`, continuing where the page before stopped (the cursor item
 * in `meta`). Blobs younger than `graceMs` are kept; for the others `orphaned` decides, and
 * those it calls orphaned are deleted. A marker another writer is changing right now
 * (contention) keeps its blob until the next pass.
 *
 * @example
 * ```ts
 * await sweepBlobPage(storage, {
 *   prefix: 'segments/',
 *   cursor: { pk: 'MAINT', sk: 'blob-sweep' },
 *   now: Date.now(),
 *   graceMs: 900_000,
 *   limit: 1000,
 *   orphaned: async (key) => false,
 * });
 * ```
 */
export async function sweepBlobPage(
  storage: Storage,
  o: {
    prefix: string;
    cursor: ItemKey;
    now: number;
    graceMs: number;
    limit: number;
    orphaned(key: string): Promise<boolean>;
  },
): Promise<SweepReport> {
  const cursorItem = await storage.items.get('meta', o.cursor);
  const after = cursorItem?.attrs.after as string | undefined;
  const page = await storage.blobs.list(o.prefix, { after, limit: o.limit });
  let deleted = 0;
  let kept = 0;
  for (const b of page.blobs) {
    let orphan = false;
    if (o.now - b.modifiedAt >= o.graceMs) {
      try {
        orphan = await o.orphaned(b.key);
      } catch (e) {
        if (!(e instanceof ContentionError)) throw e;
      }
    }
    if (orphan) {
      await storage.blobs.delete(b.key);
      deleted++;
    } else kept++;
  }
  const wrapped = !page.next;
  await storage.items.put('meta', {
    ...o.cursor,
    ver: (cursorItem?.ver ?? 0) + 1,
    attrs: wrapped ? { at: o.now } : { after: page.next ?? null, at: o.now },
  });
  return { scanned: page.blobs.length, deleted, kept, wrapped };
}

/**
 * The marker at `key`, or, when there is none, an `aborted` one written now (put-if-absent:
 * if the commit it guards lands first, that one is returned).
 */
export async function markerOrAbort(
  storage: Storage,
  table: TableName,
  key: ItemKey,
  now: number,
  attrs: Record<string, Json> = {},
): Promise<Item | undefined> {
  const marker = await storage.items.get(table, key);
  if (marker) return marker;
  const aborted: Item = {
    ...key,
    ver: 1,
    attrs: { ...attrs, state: 'aborted', at: now },
    expiresAt: Math.ceil(now / 1000) + ABORTED_MARKER_TTL_S,
  };
  try {
    await storage.items.put(table, aborted, { kind: 'absent' });
    return aborted;
  } catch (e) {
    if (!(e instanceof ConditionFailedError)) throw e;
    return storage.items.get(table, key);
  }
}
