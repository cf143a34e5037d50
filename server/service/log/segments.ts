/**
 * Reads of the log: messages by offset, a partition's tail and head, and the segment index,
 * through two per-process caches. Decoded segments are kept (many groups read the same
 * bytes), and so are recently queried index entries: a committed segment never changes, so
 * an entry stays true for as long as the segment exists.
 */
import { decodeSegment, type Frame } from '../../codec/segment.js';
import { ConditionFailedError, type Storage } from '../../storage/port.js';
import { openPayload, type PayloadCipherLike } from '../encryption.js';
import {
  SEGMENT_PREFIX,
  logKeys,
  segmentAttrsOf,
  segmentMetaOf,
  segmentWithBytesOf,
  skipSegmentItem,
  type SegmentMeta,
  type SegmentWithBytes,
} from './log-store.js';

/** A message read back from a partition. */
export interface StoredMessage {
  offset: number;
  id: string;
  transactionId: string;
  traceId: string | null;
  createdAt: number;
  payload: Uint8Array;
  sealed?: boolean | undefined;
}

/** What {@link SegmentReader.read} reads. */
export interface ReadOptions {
  maxCount: number;
  /** Stop once this many payload bytes are collected (always at least one message). */
  maxBytes?: number;
  /**
   * May remembered segment index entries replace the index query? Only for a queue without
   * retention (`retentionOn`), whose segments are never deleted while the partition lives.
   */
  indexCache?: boolean;
}

/** The message at frame `j` of the segment whose first offset is `base`. */
export function messageAt(base: number, frames: readonly Frame[], j: number): StoredMessage {
  const f = frames[j] as Frame;
  return {
    offset: base + j,
    id: f.id,
    transactionId: f.transactionId,
    traceId: f.traceId,
    createdAt: f.createdAt,
    payload: f.payload,
    sealed: f.sealed,
  };
}

/** A message with its payload opened (plaintext), when it was sealed. */
export async function openMessage(cipher: PayloadCipherLike | undefined, m: StoredMessage): Promise<StoredMessage> {
  return m.sealed ? { ...m, payload: await openPayload(cipher, m), sealed: undefined } : m;
}

export interface SegmentReaderDeps {
  storage: Storage;
  /** Opens sealed payloads for {@link SegmentReader.read}. */
  cipher?: PayloadCipherLike | undefined;
  /** Epoch ms; injected so tests can move time. */
  clock?: () => number;
  /** How long a gap holds readers back before they close it (`SluiceConfig.gapCloseMs`). */
  gapCloseMs?: number;
}

/** Gaps remembered per process (when each was first seen); past this the oldest are forgotten. */
const GAPS_REMEMBERED = 10_000;

const SEGMENT_CACHE_BYTES = 32 * 1024 * 1024;
/** Segment index entries remembered per partition, and partitions remembered (see `indexCache`). */
const INDEX_CACHE_PER_PARTITION = 32;
const INDEX_CACHE_PARTITIONS = 4096;

/**
 * The log's read side over the storage port.
 *
 * @example
 * ```ts
 * const msgs = await segments.read(partitionId, 0, { maxCount: 10 });
 * const { next } = await segments.readTail(partitionId); // the offset the next push gets
 * ```
 */
export class SegmentReader {
  private readonly segmentCache = new Map<string, { frames: Frame[]; bytes: number }>();
  private segmentCacheBytes = 0;
  /**
   * Segment index entries as the last queries returned them, per partition (at most
   * {@link INDEX_CACHE_PER_PARTITION} each, without their bytes). A committed segment never
   * changes, so an entry is true for as long as the segment exists: a pop whose batch the
   * entries already cover skips the index query ({@link cachedRun}).
   */
  private readonly indexCache = new Map<string, SegmentMeta[]>();
  /** Gaps (`partitionId@from`) this process has seen, with when it first saw each. */
  private readonly gapsSeen = new Map<string, number>();
  private readonly clock: () => number;

  constructor(private readonly deps: SegmentReaderDeps) {
    this.clock = deps.clock ?? Date.now;
  }

  /**
   * Whether a reader may move past offsets `from..to-1`, which no segment covers: a range a push
   * took and has not written yet, or never will (it died in between). A gap this process first
   * saw less than `gapCloseMs` ago holds the reader back (false). An older one is closed with a
   * skip segment, put if absent, so the push that took it can never write it (true); when the
   * put finds a segment there (the push landed after all), false: the next read sees it. The
   * skip is dated `at`, the push time of the segment after the gap (the range was taken before
   * it), so seeks by time still find offsets in push-time order.
   *
   * @example
   * ```ts
   * if (seg.base > expected && !(await segments.passGap(pid, expected, seg))) return out;
   * ```
   */
  async passGap(partitionId: string, from: number, next: { base: number; at: number }): Promise<boolean> {
    const to = next.base;
    const k = `${partitionId}@${from}`;
    const now = this.clock();
    const seen = this.gapsSeen.get(k);
    if (seen === undefined) {
      if (this.gapsSeen.size >= GAPS_REMEMBERED) this.gapsSeen.delete(this.gapsSeen.keys().next().value as string);
      this.gapsSeen.set(k, now);
    }
    if (now - (seen ?? now) < (this.deps.gapCloseMs ?? 60_000)) return false;
    this.gapsSeen.delete(k);
    try {
      await this.deps.storage.items.put('log', skipSegmentItem(partitionId, from, to - 1, next.at), {
        kind: 'absent',
      });
    } catch (e) {
      if (e instanceof ConditionFailedError) return false;
      throw e;
    }
    this.forgetIndex(partitionId);
    return true;
  }

  /**
   * One page of segment items from the segment whose base is `fromBase` (or the first one
   * after it) on, with their inline bytes: what a pop reads in one query when it knows where
   * its cursor's segment starts.
   */
  async segmentPage(
    partitionId: string,
    fromBase: number,
    limit: number,
  ): Promise<{ segs: SegmentWithBytes[]; more: boolean }> {
    const page = await this.deps.storage.items.query('log', partitionId, {
      prefix: SEGMENT_PREFIX,
      gte: logKeys.segment(partitionId, fromBase).sk,
      limit: Math.max(1, Math.min(100, Math.ceil(limit))),
    });
    const segs = page.items.map(segmentWithBytesOf);
    this.rememberSegments(partitionId, segs);
    return { segs, more: page.next !== undefined };
  }

  private rememberSegments(partitionId: string, segs: readonly SegmentMeta[]): void {
    if (segs.length === 0) return;
    // The page just read is what its reader needs next: it stays (its first entries, when it is
    // longer than the cap); older entries fill what room is left, the newest of them first.
    const fresh = segs.slice(0, INDEX_CACHE_PER_PARTITION).map((s): SegmentMeta => ({
      base: s.base,
      end: s.end,
      count: s.count,
      at: s.at,
      push: s.push,
      size: s.size,
      raw: s.raw,
      sk: s.sk,
      ...(s.blob !== undefined ? { blob: s.blob } : {}),
      ...(s.skip ? { skip: true as const } : {}),
    }));
    const taken = new Set(fresh.map((s) => s.base));
    const older = (this.indexCache.get(partitionId) ?? [])
      .filter((s) => !taken.has(s.base))
      .sort((a, b) => b.base - a.base);
    this.indexCache.delete(partitionId); // re-inserted last: the map's order is least recently used first
    this.indexCache.set(
      partitionId,
      [...fresh, ...older.slice(0, INDEX_CACHE_PER_PARTITION - fresh.length)].sort((a, b) => a.base - b.base),
    );
    if (this.indexCache.size > INDEX_CACHE_PARTITIONS) {
      const oldest = this.indexCache.keys().next().value;
      if (oldest !== undefined) this.indexCache.delete(oldest);
    }
  }

  /**
   * Remembered segments that cover offsets `from` to `from + want - 1` without a gap, or
   * undefined when they do not: then only a query can tell what follows. Only for queues
   * without retention (`retentionOn`): retention in another process may have deleted a
   * remembered segment whose frames this process still holds, and nothing would tell.
   */
  cachedRun(partitionId: string, from: number, want: number): SegmentMeta[] | undefined {
    const known = this.indexCache.get(partitionId);
    if (!known || want <= 0) return undefined;
    const out: SegmentMeta[] = [];
    let next = from;
    for (const s of known) {
      if (s.end < next) continue;
      if (s.base > next) return undefined; // a gap: what lies there only a query can tell
      // An inline segment's bytes come with the query: without its frames cached, reading it
      // alone would cost as much as the query.
      if (s.blob === undefined && !s.skip && !this.segmentCache.has(`${partitionId}:${s.base}`)) return undefined;
      out.push(s);
      next = s.end + 1;
      if (next - from >= want) return out;
    }
    return undefined;
  }

  /** The segment holding `offset` (the last one whose base is at or below it), if any. */
  async segmentAt(partitionId: string, offset: number): Promise<SegmentMeta | undefined> {
    const page = await this.deps.storage.items.query('log', partitionId, {
      prefix: SEGMENT_PREFIX,
      lte: logKeys.segment(partitionId, Math.max(0, offset)).sk,
      reverse: true,
      limit: 1,
    });
    const it = page.items[0];
    return it ? segmentMetaOf(it) : undefined;
  }

  /** The next offset to be written (the tail) and the push time of the newest message. */
  async readTail(partitionId: string): Promise<{ next: number; lastAt: number | undefined }> {
    const page = await this.deps.storage.items.query('log', partitionId, {
      prefix: SEGMENT_PREFIX,
      reverse: true,
      limit: 1,
    });
    const newest = page.items[0];
    const last = newest ? segmentAttrsOf(newest) : undefined;
    const next = last ? last.end + 1 : 0;
    return { next, lastAt: last?.at };
  }

  /**
   * The lowest offset that may still hold a message: past a leading skip (retention's floor, or
   * a closed range), else 0. Unlike {@link readHead} never the oldest written segment's base:
   * offsets below it may be taken and not yet written (on AWS a take and its write are two
   * requests), so a bound computed from this never overshoots.
   *
   * @example
   * ```ts
   * const atMost = (await segments.readFloor(partitionId)) + maxSize;
   * ```
   */
  async readFloor(partitionId: string): Promise<number> {
    const page = await this.deps.storage.items.query('log', partitionId, { prefix: SEGMENT_PREFIX, limit: 1 });
    const oldest = page.items[0] ? segmentAttrsOf(page.items[0]) : undefined;
    return oldest?.skip ? oldest.end + 1 : 0;
  }

  /** The oldest offset still stored (retention may have removed a prefix), or the tail when empty. */
  async readHead(partitionId: string): Promise<number> {
    const page = await this.deps.storage.items.query('log', partitionId, { prefix: SEGMENT_PREFIX, limit: 1 });
    const oldest = page.items[0] ? segmentAttrsOf(page.items[0]) : undefined;
    // A skip first is retention's floor (or a closed range): nothing is stored below its end.
    if (oldest) return oldest.skip ? oldest.end + 1 : oldest.base;
    return (await this.readTail(partitionId)).next;
  }

  /**
   * Segment index entries covering offsets from `from` onward, in order, until `maxCount`
   * offsets are covered or the log ends.
   */
  async segmentsFrom(partitionId: string, from: number, maxCount: number): Promise<SegmentWithBytes[]> {
    const out: SegmentWithBytes[] = [];
    const first = await this.deps.storage.items.query('log', partitionId, {
      prefix: SEGMENT_PREFIX,
      lte: logKeys.segment(partitionId, from).sk,
      reverse: true,
      limit: 1,
    });
    let after: string | undefined;
    const f = first.items[0];
    if (f) {
      const s = segmentWithBytesOf(f);
      if (s.end >= from) out.push(s);
      after = f.sk;
    }
    // Skips hold no messages: they do not count towards what the caller asked for.
    const holds = (s: SegmentWithBytes): number => (s.skip ? 0 : s.end - Math.max(s.base, from) + 1);
    let covered = out.reduce((n, s) => n + holds(s), 0);
    while (covered < maxCount) {
      const page = await this.deps.storage.items.query('log', partitionId, {
        prefix: SEGMENT_PREFIX,
        ...(after ? { after } : { gte: logKeys.segment(partitionId, from).sk }),
        limit: Math.min(100, Math.max(1, maxCount - covered)),
      });
      for (const it of page.items) {
        const s = segmentWithBytesOf(it);
        out.push(s);
        covered += holds(s);
      }
      if (!page.next || page.items.length === 0) break;
      after = page.next;
    }
    this.rememberSegments(partitionId, out);
    return out;
  }

  /** Decoded frames of one segment (cached per process: many groups read the same bytes). */
  async loadSegment(partitionId: string, seg: SegmentMeta, bin?: Uint8Array): Promise<Frame[]> {
    if (seg.skip) return [];
    const ck = `${partitionId}:${seg.base}`;
    const hit = this.segmentCache.get(ck);
    if (hit && hit.frames.length === seg.count) {
      this.segmentCache.delete(ck);
      this.segmentCache.set(ck, hit);
      return hit.frames;
    }
    let bytes = bin;
    if (!bytes) {
      if (seg.blob) bytes = await this.deps.storage.blobs.get(seg.blob);
      else bytes = (await this.deps.storage.items.get('log', logKeys.segment(partitionId, seg.base)))?.bin;
    }
    if (!bytes) throw new Error(`segment ${partitionId}@${seg.base} has no data (removed by retention?)`);
    const frames = await decodeSegment(bytes);
    if (frames.length !== seg.count)
      throw new Error(`segment ${partitionId}@${seg.base} holds ${frames.length} frames, index says ${seg.count}`);
    this.segmentCache.set(ck, { frames, bytes: seg.raw });
    this.segmentCacheBytes += seg.raw;
    for (const [k, v] of this.segmentCache) {
      if (this.segmentCacheBytes <= SEGMENT_CACHE_BYTES) break;
      this.segmentCache.delete(k);
      this.segmentCacheBytes -= v.bytes;
    }
    return frames;
  }

  /** Drops cached segments of a partition (after retention deleted some). */
  forgetSegments(partitionId: string): void {
    this.forgetIndex(partitionId);
    for (const [k, v] of this.segmentCache) {
      if (k.startsWith(`${partitionId}:`)) {
        this.segmentCache.delete(k);
        this.segmentCacheBytes -= v.bytes;
      }
    }
  }

  /** Drops the remembered index entries of a partition (it was retired). */
  forgetIndex(partitionId: string): void {
    this.indexCache.delete(partitionId);
  }

  /**
   * Messages from offset `from` on, in order: at most `maxCount`, and stopping once
   * `maxBytes` of payload are collected (always at least one message).
   */
  async read(partitionId: string, from: number, opts: ReadOptions): Promise<StoredMessage[]> {
    const raw = await this.readRaw(partitionId, from, opts);
    return raw.some((m) => m.sealed) ? Promise.all(raw.map((m) => openMessage(this.deps.cipher, m))) : raw;
  }

  /** As {@link read}, but sealed payloads stay sealed (`sealed: true`): for verbatim snapshots. */
  async readRaw(partitionId: string, from: number, opts: ReadOptions): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    if (opts.maxCount <= 0) return out;
    const maxBytes = opts.maxBytes ?? Number.POSITIVE_INFINITY;
    // Segments remembered from earlier queries (they never change) save the index query when
    // they cover the range (queues without retention only: see cachedRun).
    const cached = opts.indexCache ? this.cachedRun(partitionId, from, opts.maxCount) : undefined;
    if (cached) {
      try {
        return await this.collect(partitionId, cached, from, opts.maxCount, maxBytes);
      } catch {
        this.forgetSegments(partitionId);
      }
    }
    return this.collect(
      partitionId,
      await this.segmentsFrom(partitionId, from, opts.maxCount),
      from,
      opts.maxCount,
      maxBytes,
    );
  }

  private async collect(
    partitionId: string,
    segs: readonly SegmentWithBytes[],
    from: number,
    maxCount: number,
    maxBytes: number,
  ): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    let bytes = 0;
    let expected = from;
    for (const seg of segs) {
      if (seg.end < expected) continue;
      // Never past offsets nobody has written or closed: a push may still be writing them.
      if (seg.base > expected && !(await this.passGap(partitionId, expected, seg))) return out;
      expected = seg.end + 1;
      const frames = await this.loadSegment(partitionId, seg, seg.bin);
      for (let j = Math.max(0, from - seg.base); j < frames.length; j++) {
        const f = frames[j] as Frame;
        if (out.length >= maxCount || (out.length > 0 && bytes + f.payload.byteLength > maxBytes)) return out;
        out.push(messageAt(seg.base, frames, j));
        bytes += f.payload.byteLength;
      }
    }
    return out;
  }
}
