/**
 * The dead-letter queue of the partition-lease design (docs/LEASES.md, "Dead-letter queue").
 *
 * A filing is written in the same atomic write as the cursor advance and lease release
 * (the ack service decodes the segment before writing, so filing is one transaction rather than
 * an advance and a filing in two steps). Each filing is three items in table `dlq` (see
 * `dlq-store.ts`): the entry, holding everything (the payload verbatim — sealed on an
 * encrypted queue — in the item's bytes, or in a blob when large), and two list pointers
 * (by queue, by queue + group) whose sort keys start with the failure time, so listing is
 * newest first. Rows survive retention; only replay, delete and bulk redrive remove them.
 */
import { SluiceError, notFound } from '../../core/errors.js';
import { uuidv7 } from '../../core/ids.js';
import {
  ConditionFailedError,
  MAX_GET_MANY,
  type Item,
  type Json,
  type Storage,
  type WriteOp,
} from '../../storage/port.js';
import { markerOrAbort, sweepBlobPage, type SweepReport } from '../maintenance/blob-sweep.js';
import {
  DLQ_BLOB_PREFIX,
  decodeEntry,
  decodePointer,
  dlqBlobKey,
  dlqKeys,
  entryAttrs,
  entryPk,
  listSk,
  parseDlqBlobKey,
  pointedEntry,
  type EntryAttrs,
} from './dlq-store.js';
import { openPayload, type PayloadCipherLike } from '../encryption.js';
import type { PartitionRef } from '../log/log-store.js';
import type { PushResult, PushService } from '../log/push.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { StoredMessage } from '../log/segments.js';
import type { Telemetry } from '../telemetry.js';

/** Payloads up to this size stay inside the entry item; larger ones go to a blob. */
const INLINE_PAYLOAD_BYTES = 256 * 1024;

/** A DLQ row as the API shows it (payload as plaintext JSON text). */
export type DlqEntry = Omit<EntryAttrs, 'sealed' | 'blob' | 'listSk' | 'queueId'> & { payload: Uint8Array };

/** Checks the caller may act on a dead letter of `queue` (throws when not): the route's grant check. */
export type QueueCheck = (queue: string) => void;

export interface DlqServiceDeps {
  storage: Storage;
  /** Rows of a deleted queue incarnation are neither listed nor replayed. */
  queues: QueueDirectory;
  /** Replays push the payload again. */
  pushes: PushService;
  /** Opens sealed payloads for listings and replays. */
  cipher?: PayloadCipherLike | undefined;
  /** Where a payload blob a delete left behind is logged. */
  telemetry: Pick<Telemetry, 'error'>;
}

/**
 * Files dead letters (ops written with the ack's cursor advance), lists, replays, deletes and
 * redrives them, and sweeps orphaned payload blobs.
 *
 * @example
 * ```ts
 * const rows = await dlq.list({ queue: 'orders', limit: 50, offset: 0 });
 * await dlq.retry(rows[0]!.partitionId, rows[0]!.transactionId); // pushed again, row removed
 * ```
 */
export class DlqService {
  constructor(private readonly deps: DlqServiceDeps) {}

  /**
   * The ops that file `msg` (as stored: sealed stays sealed) for `group`, to be written with
   * the cursor advance. A large payload is uploaded to a blob first.
   */
  async filingOps(a: {
    part: PartitionRef;
    group: string;
    msg: StoredMessage;
    error: string;
    retryCount: number;
    now: number;
  }): Promise<WriteOp[]> {
    const { part, group, msg, now } = a;
    const e = dlqKeys.entry(part.id, msg.transactionId, group);
    const sk = listSk(now, part.id, msg.offset, group, msg.transactionId);
    const byQueue = dlqKeys.byQueue(part.queue, sk);
    const attrs: EntryAttrs = {
      id: msg.id,
      transactionId: msg.transactionId,
      partitionId: part.id,
      queue: part.queue,
      partition: part.name,
      consumerGroup: group,
      errorMessage: a.error,
      retryCount: a.retryCount,
      failedAt: now,
      offset: msg.offset,
      traceId: msg.traceId,
      sealed: msg.sealed === true,
      listSk: byQueue.sk,
    };
    if (part.queueId !== undefined) attrs.queueId = part.queueId;
    let bin: Uint8Array | undefined = msg.payload;
    let marker: WriteOp | undefined;
    if (msg.payload.byteLength > INLINE_PAYLOAD_BYTES) {
      // The blob goes first, so a crash before the commit leaves an unreferenced blob (without
      // a committed marker) for the sweep, never an entry pointing at nothing.
      const blobId = uuidv7(now);
      attrs.blob = dlqBlobKey(part.id, blobId);
      await this.deps.storage.blobs.put(attrs.blob, msg.payload);
      bin = undefined;
      marker = {
        op: 'put',
        table: 'dlq',
        item: {
          ...dlqKeys.blobMarker(part.id, blobId),
          ver: 1,
          attrs: { state: 'committed', entryPk: e.pk, entrySk: e.sk },
        },
        cond: { kind: 'absent' },
      };
    }
    const pointer: Record<string, Json> = { entryPk: e.pk, entrySk: e.sk, failedAt: now };
    if (part.queueId !== undefined) pointer.queueId = part.queueId;
    // The same message may be filed again for the same group (a seek back redelivered it and
    // it failed again): the entry is replaced under a version guard, so a removal that read
    // the earlier filing cannot delete this one, and the earlier filing's list pointers and
    // blob marker go in the same write (its blob is then the sweep's).
    const earlier = await this.deps.storage.items.get('dlq', e);
    const ops: WriteOp[] = [
      {
        op: 'put',
        table: 'dlq',
        item: { ...e, ver: (earlier?.ver ?? 0) + 1, attrs: entryAttrs(attrs), bin },
        cond: earlier ? { kind: 'version', ver: earlier.ver } : { kind: 'absent' },
      },
      { op: 'put', table: 'dlq', item: { ...byQueue, ver: 1, attrs: pointer } },
      { op: 'put', table: 'dlq', item: { ...dlqKeys.byGroup(part.queue, group, sk), ver: 1, attrs: pointer } },
    ];
    if (marker) ops.push(marker);
    if (earlier) {
      const old = decodeEntry(earlier);
      if (old.listSk !== byQueue.sk) {
        ops.push({ op: 'delete', table: 'dlq', key: dlqKeys.byQueue(old.queue, old.listSk) });
        ops.push({ op: 'delete', table: 'dlq', key: dlqKeys.byGroup(old.queue, old.consumerGroup, old.listSk) });
      }
      const oldBlob = old.blob ? parseDlqBlobKey(old.blob) : undefined;
      if (oldBlob)
        ops.push({ op: 'delete', table: 'dlq', key: dlqKeys.blobMarker(oldBlob.partitionId, oldBlob.blobId) });
    }
    return ops;
  }

  /**
   * One page of the dead-letter blob sweep: removes payload blobs older than `graceMs` that
   * no committed filing points at (an ack that uploaded one and then failed or crashed, or a
   * removal that crashed between its rows and its blob). Resumes where the last page ended.
   */
  async sweepOrphanBlobs(now: number, graceMs: number, limit = 1000): Promise<SweepReport> {
    return sweepBlobPage(this.deps.storage, {
      prefix: DLQ_BLOB_PREFIX,
      cursor: dlqKeys.blobSweepCursor(),
      now,
      graceMs,
      limit,
      orphaned: async (key) => {
        const ref = parseDlqBlobKey(key);
        if (!ref) return false; // written before markers existed: nothing says whether it is live
        const mk = dlqKeys.blobMarker(ref.partitionId, ref.blobId);
        const marker = await markerOrAbort(this.deps.storage, 'dlq', mk, now);
        if (marker?.attrs.state !== 'committed') return marker?.attrs.state === 'aborted';
        // Committed, but is the entry still pointing here? Filing the same message again for
        // the same group overwrites the entry with a new blob; nothing ever points at an older
        // blob id again, so its marker and blob can go.
        const entry = await this.deps.storage.items.get('dlq', pointedEntry(marker));
        if (entry?.attrs.blob === key) return false;
        try {
          await this.deps.storage.items.delete('dlq', mk, { kind: 'version', ver: marker.ver });
          return true;
        } catch (e) {
          if (e instanceof ConditionFailedError) return false; // changed meanwhile: next pass
          throw e;
        }
      },
    });
  }

  /**
   * One page of a queue's dead letters (optionally one group's), newest first. `offset`
   * rows are skipped (read and dropped: deep offsets cost reads).
   */
  async list(q: {
    queue: string;
    consumerGroup?: string | undefined;
    limit: number;
    offset: number;
    oldestFirst?: boolean;
  }): Promise<DlqEntry[]> {
    return (await this.page(q)).map((r) => r.entry);
  }

  /** As {@link list}, each entry with its place in the list (`cursor`: continue after it). */
  private async page(q: {
    queue: string;
    consumerGroup?: string | undefined;
    limit: number;
    offset: number;
    oldestFirst?: boolean;
    after?: string | undefined;
  }): Promise<{ entry: DlqEntry; cursor: string }[]> {
    const pk = dlqKeys.listPk(q.queue, q.consumerGroup);
    const live = await this.liveIn(q.queue);
    const pointers: Item[] = [];
    let skip = q.offset;
    let after: string | undefined = q.after;
    while (pointers.length < q.limit) {
      const want = skip + q.limit - pointers.length;
      const page = await this.deps.storage.items.query('dlq', pk, {
        reverse: !q.oldestFirst,
        after,
        limit: Math.min(1000, want),
      });
      for (const it of page.items) {
        if (!live(it.attrs.queueId)) continue; // a deleted incarnation's row, not removed yet
        if (skip > 0) skip--;
        else if (pointers.length < q.limit) pointers.push(it);
      }
      if (!page.next || page.items.length === 0) break;
      after = page.next;
    }
    const out: { entry: DlqEntry; cursor: string }[] = [];
    for (let i = 0; i < pointers.length; i += MAX_GET_MANY) {
      const chunk = pointers.slice(i, i + MAX_GET_MANY);
      const got = await this.deps.storage.items.getMany('dlq', chunk.map(pointedEntry));
      for (let j = 0; j < got.length; j++) {
        const it = got[j];
        if (it) out.push({ entry: await this.toEntry(it), cursor: (chunk[j] as Item).sk });
      }
    }
    return out;
  }

  /**
   * Whether a row filed in queue incarnation `queueId` belongs to the queue as it exists now:
   * rows of a deleted incarnation stay stored until maintenance removes them, and must not
   * show up in (or be replayed into) a queue created again under the same name. Rows filed
   * before queue deletion existed carry no incarnation and always count.
   */
  private async liveIn(queue: string): Promise<(queueId: Json | undefined) => boolean> {
    const q = await this.deps.queues.getQueue(queue);
    return (queueId) => queueId === undefined || queueId === q?.queueId;
  }

  /** The rows filed for (partitionId, transactionId), every group's or one group's. */
  async lookup(partitionId: string, transactionId: string, group?: string): Promise<Item[]> {
    const page = await this.deps.storage.items.query('dlq', entryPk(partitionId, transactionId), { limit: 1000 });
    const rows = page.items.filter((it) => group === undefined || it.sk === group);
    const first = rows[0];
    if (!first) return rows;
    const live = await this.liveIn(decodeEntry(first).queue);
    return rows.filter((it) => live(it.attrs.queueId));
  }

  /**
   * Deletes the DLQ rows of (partitionId, transactionId); `removed: 0` when there are none (Queen
   * answers a missing message with `success: false`, not an error, and so does the route).
   */
  async delete(
    partitionId: string,
    transactionId: string,
    group?: string,
    check?: QueueCheck,
  ): Promise<{ removed: number }> {
    const rows = await this.lookup(partitionId, transactionId, group);
    if (rows[0]) check?.(decodeEntry(rows[0]).queue);
    for (const r of rows) await this.removeRow(r);
    return { removed: rows.length };
  }

  /**
   * Replays a dead letter: re-pushes the payload to its queue and partition under a fresh
   * transactionId (the original would be a duplicate), then removes the row(s). The row goes
   * only after the push was accepted; if that delete fails the answer says so.
   */
  async retry(
    partitionId: string,
    transactionId: string,
    group?: string,
    check?: QueueCheck,
  ): Promise<{ replayed: boolean; dlqRowRemoved: boolean; push: PushResult; removed: number }> {
    const rows = await this.lookup(partitionId, transactionId, group);
    const first = rows[0];
    if (!first) throw notFound(`no dead-letter row for transactionId ${transactionId} in partition ${partitionId}`);
    check?.(decodeEntry(first).queue);
    const entry = await this.toEntry(first);
    const [push] = await this.deps.pushes.push([
      { queue: entry.queue, partition: entry.partition, payload: entry.payload, traceId: entry.traceId },
    ]);
    if (!push || push.status !== 'queued')
      throw new SluiceError(
        'unavailable',
        `replay push failed: ${push?.error ?? 'unknown error'}; the row stays in the dead-letter queue`,
      );
    let removed = 0;
    try {
      for (const r of rows) {
        await this.removeRow(r);
        removed++;
      }
    } catch {
      return { replayed: true, dlqRowRemoved: false, push, removed };
    }
    return { replayed: true, dlqRowRemoved: true, push, removed };
  }

  /**
   * Bulk redrive: replays up to `limit` dead letters of a queue (optionally one group's),
   * oldest first, after `after` (a `next` an earlier call returned), one push per partition,
   * then removes their rows. Resumable: `next` is where this call stopped, `more` whether rows
   * remain after it. A partition that refuses its push (full, say) fails only its own rows,
   * which stay listed; passing `next` on continues past them. A crash between a push and its
   * row deletes replays those rows again on the next call (at least once).
   */
  async redrive(q: {
    queue: string;
    consumerGroup?: string | undefined;
    limit: number;
    after?: string | undefined;
  }): Promise<{ moved: number; failed: number; more: boolean; next: string | null; errors: string[] }> {
    const rows = await this.page({
      queue: q.queue,
      consumerGroup: q.consumerGroup,
      limit: q.limit + 1,
      offset: 0,
      oldestFirst: true,
      after: q.after,
    });
    const more = rows.length > q.limit;
    const examined = rows.slice(0, q.limit);
    const next = examined.at(-1)?.cursor ?? null;
    const batch = examined.map((r) => r.entry);
    // The same message dead-lettered by several groups is replayed once when no group is named.
    const unique = new Map<string, DlqEntry[]>();
    for (const e of batch) {
      const k = `${e.partitionId}\u0000${e.transactionId}`;
      unique.set(k, [...(unique.get(k) ?? []), e]);
    }
    const groups = [...unique.values()];
    // One push per partition: a partition that refuses (full, say) fails only its own rows.
    const byPartition = new Map<string, number[]>();
    groups.forEach(([e], i) =>
      byPartition.set((e as DlqEntry).partitionId, [...(byPartition.get((e as DlqEntry).partitionId) ?? []), i]),
    );
    const results: (PushResult | undefined)[] = [];
    const errors: string[] = [];
    for (const idx of byPartition.values()) {
      try {
        const got = await this.deps.pushes.push(
          idx.map((i) => {
            const e = (groups[i] as DlqEntry[])[0] as DlqEntry;
            return { queue: e.queue, partition: e.partition, payload: e.payload, traceId: e.traceId };
          }),
        );
        idx.forEach((i, j) => (results[i] = got[j]));
      } catch (e) {
        if (!(e instanceof SluiceError)) throw e;
        errors.push(e.message);
      }
    }
    let moved = 0;
    let failed = 0;
    for (let i = 0; i < groups.length; i++) {
      const r = results[i];
      const es = groups[i] as DlqEntry[];
      if (!r || r.status !== 'queued') {
        failed += es.length;
        if (r?.error) errors.push(r.error);
        continue;
      }
      for (const e of es) {
        const [row] = await this.lookup(e.partitionId, e.transactionId, e.consumerGroup);
        if (row) await this.removeRow(row);
        moved++;
      }
    }
    return { moved, failed, more, next, errors: errors.slice(0, 5) };
  }

  private async removeRow(row: Item): Promise<void> {
    const a = decodeEntry(row);
    const ops: WriteOp[] = [
      { op: 'delete', table: 'dlq', key: { pk: row.pk, sk: row.sk }, cond: { kind: 'version', ver: row.ver } },
      { op: 'delete', table: 'dlq', key: dlqKeys.byQueue(a.queue, a.listSk) },
      { op: 'delete', table: 'dlq', key: dlqKeys.byGroup(a.queue, a.consumerGroup, a.listSk) },
    ];
    // The marker goes with the rows: should the blob delete below not happen, the sweep finds
    // a blob without a committed marker and removes it.
    const guarded = a.blob ? parseDlqBlobKey(a.blob) : undefined;
    if (guarded) ops.push({ op: 'delete', table: 'dlq', key: dlqKeys.blobMarker(guarded.partitionId, guarded.blobId) });
    try {
      await this.deps.storage.items.transact(ops);
    } catch (e) {
      if (e instanceof ConditionFailedError) return; // removed (or replaced) meanwhile
      throw e;
    }
    if (!a.blob) return;
    try {
      await this.deps.storage.blobs.delete(a.blob);
    } catch (e) {
      // The row is gone, which is what the caller asked for. A guarded blob is collected by the
      // sweep (its marker went with the rows); a blob from before markers is logged here.
      if (!guarded)
        this.deps.telemetry.error('dead-letter blob left behind', {
          blob: a.blob,
          error: e instanceof Error ? e.message : String(e),
        });
    }
  }

  private async toEntry(it: Item): Promise<DlqEntry> {
    const a = decodeEntry(it);
    let payload = it.bin;
    if (a.blob) payload = await this.deps.storage.blobs.get(a.blob);
    if (!payload) throw new SluiceError('unavailable', `dead-letter payload of ${a.transactionId} is missing`);
    const plain = await openPayload(this.deps.cipher, { payload, sealed: a.sealed });
    return {
      id: a.id,
      transactionId: a.transactionId,
      partitionId: a.partitionId,
      queue: a.queue,
      partition: a.partition,
      consumerGroup: a.consumerGroup,
      errorMessage: a.errorMessage,
      retryCount: a.retryCount,
      failedAt: a.failedAt,
      offset: a.offset,
      traceId: a.traceId,
      payload: plain,
    };
  }

  /**
   * One page of removing the dead letters of a deleted queue incarnation (`queueId`, deleted at
   * `deletedAt`): walks the queue's list pointers from `after` (exclusive) and removes the rows
   * filed in that incarnation, leaving those of a later one alone. Rows from before queue
   * deletion existed carry no incarnation: those filed up to `deletedAt` go. Returns how many
   * rows went and where to continue (undefined: the walk is done).
   */
  async purgeIncarnation(
    q: { queue: string; queueId: string; deletedAt: number },
    after: string | undefined,
    limit = 100,
  ): Promise<{ removed: number; next?: string | undefined }> {
    const page = await this.deps.storage.items.query('dlq', dlqKeys.listPk(q.queue), { after, limit });
    if (page.items.length === 0) return { removed: 0 };
    const rows = await this.deps.storage.items.getMany('dlq', page.items.map(pointedEntry));
    const dead = (queueId: Json | undefined, failedAt: number): boolean =>
      queueId === undefined ? failedAt <= q.deletedAt : queueId === q.queueId;
    let removed = 0;
    await Promise.all(
      page.items.map(async (ptr, i) => {
        const row = rows[i];
        if (row) {
          const a = decodeEntry(row);
          if (!dead(a.queueId, a.failedAt)) return;
          await this.removeRow(row);
          removed++;
        } else if (dead(ptr.attrs.queueId, decodePointer(ptr).failedAt)) {
          // A pointer whose entry is gone: remove it and its per-group twin.
          await this.deps.storage.items.writeEach([
            { op: 'delete', table: 'dlq', key: { pk: ptr.pk, sk: ptr.sk } },
            { op: 'delete', table: 'dlq', key: dlqKeys.byGroup(q.queue, decodePointer(ptr).entrySk, ptr.sk) },
          ]);
          removed++;
        }
      }),
    );
    return { removed, next: page.next };
  }
}
