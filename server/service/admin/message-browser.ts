/**
 * Browsing messages without consuming them (`GET /api/v1/messages`, `sluice peek`): the newest
 * messages pushed in a time window, across the partitions of the queues asked for, each with
 * Queen's status for the groups reading its partition. Nothing is leased or moved.
 *
 * Each partition is read backwards from its tail, one page of segment items at a time, until
 * the window's start or until enough messages are found; at most {@link MAX_SEGMENTS_READ}
 * segments per partition per request, so a filter that matches little cannot turn one request
 * into a read of the whole log.
 *
 * @example
 * ```ts
 * const page = await browser.browse([queue], { window: { from, to }, limit: 50, offset: 0 });
 * ```
 */
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import { consumptionMode, heldBy, messageStatus, type MessageStatus, type Window } from '../../core/queue-stats.js';
import type { Storage } from '../../storage/port.js';
import type { PayloadCipherLike } from '../encryption.js';
import { SEGMENT_PREFIX, segmentWithBytesOf, type QueueRecord } from '../log/log-store.js';
import type { SegmentReader } from '../log/segments.js';
import { mapBounded } from '../../core/map-bounded.js';
import type { PartitionStats, QueueStats } from './queue-stats.js';

/**
 * Queues browsed at once, and partitions scanned at once in each: at most 8 partition scans in
 * flight per request, each reading segments one after another (up to MAX_SEGMENTS_READ).
 */
const QUEUES_AT_ONCE = 2;
const PARTITIONS_AT_ONCE = 4;

/** Segments one request reads per partition, at most. */
export const MAX_SEGMENTS_READ = 200;

export interface BrowsedMessage {
  id: string;
  offset: number;
  transactionId: string;
  traceId: string | null;
  createdAt: number;
  queue: QueueRecord;
  partition: PartitionStats;
  status: MessageStatus;
  consumedBy: number;
  /** When a live lease on it lapses (partition leases), else null. */
  leaseExpiresAt: number | null;
  /** The payload as stored (sealed payloads are not opened: listings carry no payload). */
  payload: Uint8Array;
  sealed: boolean;
}

export interface BrowseQuery {
  window: Window;
  partition?: string | undefined;
  status?: MessageStatus | undefined;
  limit: number;
  offset: number;
}

export interface BrowseResult {
  messages: BrowsedMessage[];
  /** Queen's consumption mode over the partitions read. */
  mode: ReturnType<typeof consumptionMode>;
}

export interface MessageBrowserDeps {
  storage: Storage;
  segments: SegmentReader;
  stats: QueueStats;
  /** Opens sealed payloads for callers that show them. */
  cipher?: PayloadCipherLike | undefined;
}

export class MessageBrowser {
  constructor(private readonly deps: MessageBrowserDeps) {}

  /** What opens the sealed payloads of encrypted queues (undefined without a key). */
  get cipher(): PayloadCipherLike | undefined {
    return this.deps.cipher;
  }

  /** The newest messages of `queues` in the window, newest first, one page of them. */
  async browse(queues: readonly QueueRecord[], q: BrowseQuery): Promise<BrowseResult> {
    const need = q.offset + q.limit;
    const found: BrowsedMessage[] = [];
    const groups = new Set<string>();
    const perQueue = await mapBounded(queues, QUEUES_AT_ONCE, async (queue) => {
      const detail = await this.deps.stats.queueDetail(queue, { withDeadLetters: true });
      const parts = detail.partitions.filter(
        (p) =>
          (q.partition === undefined || p.ref.name === q.partition) &&
          p.newestAt !== null &&
          p.newestAt >= q.window.from &&
          (p.oldestAt ?? 0) < q.window.to,
      );
      const lists = await mapBounded(parts, PARTITIONS_AT_ONCE, (p) =>
        this.newest(queue, p, detail.deadOffsets, q, need),
      );
      return { detail, lists };
    });
    // In the queues' order, as the stable sort below breaks ties by it.
    for (const { detail, lists } of perQueue) {
      for (const p of detail.partitions) for (const l of p.lanes) groups.add(l.group);
      for (const list of lists) found.push(...list);
    }
    found.sort((a, b) => b.createdAt - a.createdAt || b.offset - a.offset);
    return {
      messages: found.slice(q.offset, need),
      mode: consumptionMode([...groups], QUEUE_MODE_GROUP),
    };
  }

  /** Up to `need` of a partition's newest messages in the window that pass the status filter. */
  private async newest(
    queue: QueueRecord,
    p: PartitionStats,
    dead: Set<string>,
    q: BrowseQuery,
    need: number,
  ): Promise<BrowsedMessage[]> {
    const out: BrowsedMessage[] = [];
    let after: string | undefined;
    let read = 0;
    while (out.length < need && read < MAX_SEGMENTS_READ) {
      const page = await this.deps.storage.items.query('log', p.ref.id, {
        prefix: SEGMENT_PREFIX,
        reverse: true,
        after,
        limit: Math.min(16, MAX_SEGMENTS_READ - read),
      });
      let older = false;
      for (const it of page.items) {
        read++;
        const seg = segmentWithBytesOf(it);
        if (seg.at >= q.window.to) continue;
        if (seg.at < q.window.from) {
          older = true;
          break;
        }
        const frames = await this.deps.segments.loadSegment(p.ref.id, seg, seg.bin);
        for (let j = frames.length - 1; j >= 0 && out.length < need; j--) {
          const f = frames[j]!;
          const offset = seg.base + j;
          const { status, consumedBy } = messageStatus(offset, p.lanes, dead.has(`${p.ref.id}#${offset}`));
          if (q.status !== undefined && status !== q.status) continue;
          out.push({
            id: f.id,
            offset,
            transactionId: f.transactionId,
            traceId: f.traceId,
            createdAt: f.createdAt,
            queue,
            partition: p,
            status,
            consumedBy,
            leaseExpiresAt: heldBy(p.lanes, offset)?.out?.until ?? null,
            payload: f.payload,
            sealed: f.sealed === true,
          });
        }
        if (out.length >= need) break;
      }
      if (older || !page.next || page.items.length === 0) break;
      after = page.next;
    }
    return out;
  }
}
