import type { Storage } from '../../storage/port.js';
import type { PayloadCipherLike } from '../encryption.js';
import { SEGMENT_PREFIX, decodeReservation, logKeys, markerBase, segmentMetaOf } from './log-store.js';
import { messageAt, openMessage, type SegmentReader, type StoredMessage } from './segments.js';

export interface MessageLookupDeps {
  storage: Storage;
  segments: SegmentReader;
  cipher?: PayloadCipherLike | undefined;
}

/**
 * Finds a message by its transactionId (`GET /api/v1/messages/{partitionId}/{transactionId}`):
 * inside the queue's dedup window its reservation names the push, whose marker names the
 * segment; otherwise the newest segments are scanned (docs/STORAGE.md, "Dedup by
 * transactionId").
 *
 * @example
 * ```ts
 * const msg = await lookup.findByTransactionId(partitionId, 'order-42');
 * ```
 */
export class MessageLookup {
  constructor(private readonly deps: MessageLookupDeps) {}

  /**
   * Finds a message by transactionId: through its dedup reservation inside the queue's
   * window, else by scanning the newest `scanSegments` segments.
   */
  async findByTransactionId(
    partitionId: string,
    transactionId: string,
    scanSegments = 64,
  ): Promise<StoredMessage | undefined> {
    const m = await this.findRaw(partitionId, transactionId, scanSegments);
    return m ? openMessage(this.deps.cipher, m) : undefined;
  }

  private async findRaw(
    partitionId: string,
    transactionId: string,
    scanSegments: number,
  ): Promise<StoredMessage | undefined> {
    const res = await this.deps.storage.items.get('dedup', logKeys.dedup(partitionId, transactionId));
    if (res) {
      const r = decodeReservation(res);
      const marker = await this.deps.storage.items.get('log', logKeys.marker(partitionId, r.push));
      if (marker?.attrs.state === 'committed') {
        const segItem = await this.deps.storage.items.get('log', logKeys.segment(partitionId, markerBase(marker)));
        if (segItem) {
          const seg = segmentMetaOf(segItem);
          const frames = await this.deps.segments.loadSegment(partitionId, seg, segItem.bin);
          const j = frames.findIndex((f) => f.id === r.mid);
          if (j >= 0) return messageAt(seg.base, frames, j);
        }
      }
    }
    let after: string | undefined;
    let scanned = 0;
    while (scanned < scanSegments) {
      const page = await this.deps.storage.items.query('log', partitionId, {
        prefix: SEGMENT_PREFIX,
        reverse: true,
        limit: Math.min(16, scanSegments - scanned),
        after,
      });
      for (const it of page.items) {
        scanned++;
        const seg = segmentMetaOf(it);
        const frames = await this.deps.segments.loadSegment(partitionId, seg, it.bin);
        for (let j = frames.length - 1; j >= 0; j--)
          if (frames[j]?.transactionId === transactionId) return messageAt(seg.base, frames, j);
      }
      if (!page.next) break;
      after = page.next;
    }
    return undefined;
  }
}
