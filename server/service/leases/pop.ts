// One concept past 500 lines: a partition-lease pop from request to leased span (one lane, wildcard rounds, what it passed over).
/**
 * Partition-lease pops over the storage port (docs/LEASES.md, "A lane, its cursor and its
 * lease"). The semantics live in `core/leases.ts` as pure transitions; a pop reads a
 * (partition, group) row, asks the core for the next row and writes it with ONE
 * version-guarded write. The version guard is what makes "exactly one leased batch per
 * (partition, group)" hold: of two pops racing on a free lane, only one write lands.
 *
 * Storage requests in steady state (AWS): a partition pop is a get of the row, one query of
 * segments from the row's segment hint (inline segments come with their bytes; blob
 * segments not in this process's decoded-segment cache add one S3 GET each) and one guarded
 * put — 3. A wildcard pop reads the work index (one query), the candidates' rows and their
 * sequencers (two getMany) instead of the get — 5 (the page is reused for 250 ms: then 3).
 */
import type { Frame } from '../../codec/segment.js';
import type { SluiceConfig } from '../../config.js';
import {
  applyPop,
  dlqEnabled,
  encodeLeaseId,
  fingerprint,
  parseSubscription,
  planPop,
  selectDeliverable,
  windowHeld,
} from '../../core/leases.js';
import { randomFromPool } from '../../core/ids.js';
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import { appliedTimers, effectiveLeaseSeconds } from '../../core/queue-options.js';
import { retentionOn, retentionWindows } from '../../core/retention.js';
import type { Item, Storage } from '../../storage/port.js';
import { openPayload, type PayloadCipherLike } from '../encryption.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import type { GroupRecord } from '../groups/group-store.js';
import type { PartitionRef, QueueRecord, SegmentMeta } from '../log/log-store.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { SegmentReader, StoredMessage } from '../log/segments.js';
import type { Telemetry } from '../telemetry.js';
import { decodeCursor, leaseKeys, putCursor } from './lease-store.js';
import { CAPPED_RETRY_AFTER_S, type LongPoll } from './long-poll.js';
import type { WorkIndex } from './work-index.js';
import { startCursor } from './start-position.js';

/** Payload bytes one pop returns at most (Lambda answers at most 6 MB synchronously). */
export const POP_MAX_BYTES = 5 * 1024 * 1024;
/**
 * JSON overhead counted per message against {@link POP_MAX_BYTES}, besides its payload, its
 * transactionId and the names and lease id every message repeats (see
 * {@link messageOverhead}): ids, timestamps and keys (~350 bytes).
 */
const MESSAGE_OVERHEAD_BYTES = 400;

/**
 * What one message of a pop response costs besides its payload: the fixed part plus the
 * strings each message repeats. A multi-partition pop's lease id names up to
 * {@link MAX_POP_PARTITIONS} partitions (~450 characters), which a fixed estimate would
 * leave uncounted: 10,000 small messages would then answer well over Lambda's 6 MB.
 */
export function messageOverhead(m: { leaseId: string; group: string; queue: string; partition: string }): number {
  return MESSAGE_OVERHEAD_BYTES + Buffer.byteLength(JSON.stringify([m.leaseId, m.group, m.queue, m.partition]));
}

/** Most messages one pop returns. */
export const MAX_POP_BATCH = 10_000;
/** Most partitions one wildcard pop claims. */
export const MAX_POP_PARTITIONS = 20;

export interface PopRequest {
  queue: string;
  /** The partition route; undefined for the wildcard (queue) route. */
  partition?: string | undefined;
  group: string;
  batch: number;
  /** Partitions one wildcard pop may claim (batch caps the total). */
  partitions: number;
  autoAck: boolean;
  leaseSeconds?: number | undefined;
  subscriptionMode?: string | undefined;
  subscriptionFrom?: string | undefined;
  wait: boolean;
  /** Long-poll budget asked for (capped by configuration). */
  timeoutMs: number;
  /** A target's own retry rules for the leases this pop takes (service/targets/); absent: the queue's. */
  overrides?: LaneOverrides | undefined;
}

/**
 * What a target's dispatcher sets on the leases it takes, in place of the queue's options: its
 * `maximumRetryAttempts`, dead letters always on (a target's failures are never dropped), and
 * a hold after a failed batch so a failing record is not retried at once.
 */
export interface LaneOverrides {
  retryLimit?: number | undefined;
  deadLetter?: boolean | undefined;
  retryDelayMs?: number | undefined;
}

function addExpired(ctx: LaneContext, n: number): void {
  if (n > 0 && ctx.tally) ctx.tally.set(ctx.queue.name, (ctx.tally.get(ctx.queue.name) ?? 0) + n);
}

/** A pop as the route answers it: the result, and after an empty one when to ask again. */
export interface PopAnswer {
  result: PopResult | null;
  /** Per queue, the messages this request passed over because they outlived the queue's ttl. */
  expired: ReadonlyMap<string, number>;
  /** Set when the wait cap turned the wait away: the client should wait this long before asking again. */
  retryAfterSeconds?: number | undefined;
  /**
   * True when no look found the queue: the route meters nothing under a name any client can
   * send (per-queue series would grow without bound).
   */
  unknownQueue?: boolean | undefined;
}

/** A delivered message: as stored, its payload opened (plaintext JSON text), with where it sits. */
export type PoppedMessage = Omit<StoredMessage, 'sealed'> & { partitionId: string; partition: string };

export interface PopResult {
  queue: string;
  group: string;
  /** '' for an auto-acked pop. */
  leaseId: string;
  /** `attempt`: 1 on a span's first delivery, plus the failed deliveries charged since (the lane's retry budget spent). */
  partitions: { id: string; name: string; attempt?: number | undefined }[];
  messages: PoppedMessage[];
}

interface LaneContext {
  queue: QueueRecord;
  part: PartitionRef;
  group: string;
  reg: GroupRecord;
  now: number;
  leaseId: string;
  leaseMs: number;
  batch: number;
  maxBytes: number;
  autoAck: boolean;
  /** Adds up what the pop's looks passed over (see {@link PopTally}). */
  tally?: PopTally | undefined;
  overrides?: LaneOverrides | undefined;
}

/**
 * What one pop request (all its looks) passed over without delivering, for the meters: per
 * queue, the messages not delivered because they outlived the queue's explicit ttl.
 */
export type PopTally = Map<string, number>;

/** A wildcard pop: up to `partitions` partitions of the queue, `batch` messages in all. */
interface WildcardPop {
  queue: QueueRecord;
  group: string;
  reg: GroupRecord;
  now: number;
  leaseMs: number;
  autoAck: boolean;
  batch: number;
  partitions: number;
  tally?: PopTally | undefined;
  overrides?: LaneOverrides | undefined;
}

type LaneOutcome =
  | { kind: 'delivered'; messages: PoppedMessage[]; bytes: number; attempt: number }
  | { kind: 'busy' }
  | { kind: 'empty' };

export interface PopServiceDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'maxPopWaitMs'>;
  queues: QueueDirectory;
  segments: SegmentReader;
  /** Opens sealed payloads for delivery. */
  cipher?: PayloadCipherLike | undefined;
  groups: GroupRegistry;
  work: WorkIndex;
  longPoll: LongPoll;
  telemetry: Telemetry;
  clock: () => number;
}

/**
 * Pops: lease a span of one partition (or, on the wildcard route, of a few partitions the
 * work index names) for one consumer group, long-polling when asked.
 *
 * @example
 * ```ts
 * const req = { queue: 'orders', group: 'billing', batch: 100, partitions: 1, autoAck: false };
 * const r = await pops.pop({ ...req, wait: true, timeoutMs: 20_000 }, signal);
 * r?.leaseId; // ack or extend with it
 * ```
 */
export class PopService {
  /**
   * Lanes a pop in this process is working on right now. Concurrent requests skip them
   * rather than race for the same row (the version guard would refuse all but one anyway,
   * after each had read and decoded the same segment).
   */
  private readonly inflight = new Set<string>();

  constructor(private readonly deps: PopServiceDeps) {}

  /**
   * A pop, long-polling when asked: returns as soon as messages exist, else null (204) at the
   * capped timeout or when `signal` aborts (shutdown, Lambda deadline). Waiters wake on
   * pushes in this process and re-read storage every second for other processes (`long-poll.ts`).
   * For callers in this process, which have no client to pace: the route answers {@link answer}.
   */
  async pop(req: PopRequest, signal?: AbortSignal): Promise<PopResult | null> {
    return (await this.answer(req, signal)).result;
  }

  /**
   * {@link pop}, with when the client should ask again after an empty answer: set when the
   * deployment's wait cap turned the wait away (docs/DEPLOYING.md, "The wait cap").
   */
  async answer(req: PopRequest, signal?: AbortSignal): Promise<PopAnswer> {
    const tally: PopTally = new Map();
    // Every pop looks at least once, so no look finding the queue means there is none.
    const found = { queue: false };
    const { value: r, capped } = await this.deps.longPoll.wait({
      queue: req.queue,
      budgetMs: req.wait ? Math.max(0, Math.min(req.timeoutMs, this.deps.config.maxPopWaitMs)) : 0,
      signal,
      baton: `${req.queue}\u0000${req.group}`,
      look: () => this.popOnce(req, tally, found),
    });
    const answer = this.settle(r, capped, tally);
    return found.queue ? answer : { ...answer, unknownQueue: true };
  }

  /** The answer to a pop request that ended with `r` (its telemetry counted), for {@link answer} and pops over several queues. */
  settle(r: PopResult | null, capped: boolean, tally: PopTally): PopAnswer {
    for (const [queue, n] of tally) this.deps.telemetry.count('MessagesExpired', n, { queue });
    if (r) {
      this.deps.telemetry.count('Pops');
      this.deps.telemetry.count('MessagesDelivered', r.messages.length);
      return { result: r, expired: tally };
    }
    this.deps.telemetry.count('EmptyPops');
    return capped
      ? { result: null, retryAfterSeconds: CAPPED_RETRY_AFTER_S, expired: tally }
      : { result: null, expired: tally };
  }

  /** One attempt, no waiting; sets `found.queue` when the queue exists. */
  async popOnce(req: PopRequest, tally?: PopTally, found?: { queue: boolean }): Promise<PopResult | null> {
    const queue = await this.deps.queues.getQueue(req.queue);
    if (!queue) return null; // an unknown queue is "nothing to deliver", never a 404
    if (found) found.queue = true;
    const now = this.deps.clock();
    const queueMode = req.group === QUEUE_MODE_GROUP;
    const sub = queueMode
      ? { mode: 'all' as const, from: null }
      : parseSubscription(req.subscriptionMode, req.subscriptionFrom, now);
    const reg = await this.deps.groups.register(queue.name, req.group, 'lease', sub);
    const leaseMs = effectiveLeaseSeconds(req.leaseSeconds, queue.options.leaseTime) * 1000;
    const batch = Math.max(1, Math.min(MAX_POP_BATCH, req.batch));
    const base = { queue, group: req.group, reg, now, leaseMs, autoAck: req.autoAck, tally, overrides: req.overrides };
    if (req.partition !== undefined) {
      const part = await this.deps.queues.getPartition(queue.name, req.partition);
      if (!part) return null;
      const leaseId = req.autoAck ? '' : this.mintLeaseId(req.group, [part.id]);
      const out = await this.popLaneOnce({ ...base, part, leaseId, batch, maxBytes: POP_MAX_BYTES });
      if (out.kind !== 'delivered') return null;
      return {
        queue: queue.name,
        group: req.group,
        leaseId,
        partitions: [{ id: part.id, name: part.name, attempt: out.attempt }],
        messages: out.messages,
      };
    }
    return this.popWildcard({ ...base, batch, partitions: Math.max(1, Math.min(MAX_POP_PARTITIONS, req.partitions)) });
  }

  private async popWildcard(c: WildcardPop): Promise<PopResult | null> {
    await this.deps.work.scanStep(c.reg);
    const r = await this.popCandidates(c);
    // Candidates that turned out to be retired partitions (a deleted queue, an idle partition)
    // were removed from the index: look at it once more rather than answer "nothing".
    return r.result ?? (r.removed ? (await this.popCandidates(c)).result : null);
  }

  private async popCandidates(c: WildcardPop): Promise<{ result: PopResult | null; removed: boolean }> {
    const busy = (pid: string): boolean => this.inflight.has(`${pid}\u0000${c.group}`);
    const cands = (await this.deps.work.candidates(c.queue, c.group, c.now, busy)).filter((x) => !busy(x.partitionId));
    const messages: PoppedMessage[] = [];
    const claimed: PopResult['partitions'] = [];
    let removed = false;
    let budget = c.batch;
    let bytes = POP_MAX_BYTES;
    let leaseId = '';
    // One lease id per pop, naming every partition the pop may claim (an extend finds the
    // rows by it). A single-partition pop tries one candidate per round and has claimed
    // nothing when a round starts, so each round mints its own. A multi-partition pop may
    // claim in a later round (when a candidate of an earlier one turned out busy or empty)
    // after claiming in an earlier one: its id must name every candidate from the start.
    const shared =
      !c.autoAck && c.partitions > 1 && cands.length > 0
        ? this.mintLeaseId(
            c.group,
            cands.map((x) => x.partitionId),
          )
        : undefined;
    for (let i = 0; i < cands.length && claimed.length < c.partitions && budget > 0 && bytes > 0;) {
      const round = cands.slice(i, i + (c.partitions - claimed.length));
      i += round.length;
      const parts: { part: PartitionRef; row: Item | undefined }[] = [];
      for (const cand of round) {
        const part = await this.deps.queues.partitionById(cand.partitionId);
        if (!part || part.queue !== c.queue.name) {
          await this.deps.work.remove(c.queue, c.group, cand.partitionId);
          removed = true;
          continue;
        }
        parts.push({ part, row: cand.row });
      }
      if (parts.length === 0) continue;
      const roundId = c.autoAck
        ? ''
        : (shared ??
          this.mintLeaseId(
            c.group,
            parts.map((p) => p.part.id),
          ));
      for (const { part, row } of parts) {
        if (budget <= 0 || bytes <= 0) break;
        const out = await this.popLaneOnce(
          { ...c, part, leaseId: roundId, batch: budget, maxBytes: bytes },
          { item: row },
        );
        // Rotation moves past a candidate that delivered nothing (held back by windowBuffer or
        // delayedProcessing, or taken meanwhile), so a page of such partitions cannot keep the
        // next pops from reaching the partitions after it.
        this.deps.work.served(c.queue, c.group, part.id);
        if (out.kind !== 'delivered') continue;
        leaseId = roundId;
        claimed.push({ id: part.id, name: part.name, attempt: out.attempt });
        messages.push(...out.messages);
        budget -= out.messages.length;
        bytes -= out.bytes;
      }
    }
    if (messages.length === 0) return { result: null, removed };
    return { result: { queue: c.queue.name, group: c.group, leaseId, partitions: claimed, messages }, removed };
  }

  /** {@link popLane}, unless another pop in this process is on the lane already (then: busy). */
  private async popLaneOnce(ctx: LaneContext, prefetched?: { item: Item | undefined }): Promise<LaneOutcome> {
    const k = `${ctx.part.id}\u0000${ctx.group}`;
    if (this.inflight.has(k)) return { kind: 'busy' };
    this.inflight.add(k);
    try {
      return await this.popLane(ctx, prefetched);
    } finally {
      this.inflight.delete(k);
    }
  }

  /** Pops one (partition, group) lane: at most one guarded write. */
  private async popLane(ctx: LaneContext, prefetched?: { item: Item | undefined }): Promise<LaneOutcome> {
    const { part, now } = ctx;
    const item = prefetched
      ? prefetched.item
      : await this.deps.storage.items.get('leases', leaseKeys.cursor(part.id, ctx.group));
    const state = item ? decodeCursor(item) : await startCursor(this.deps.segments, ctx);
    const plan = planPop(state, now);
    if (plan.kind === 'busy') return { kind: 'busy' };
    const o = ctx.queue.options;
    if (o.windowBuffer > 0) {
      const tail = await this.deps.segments.readTail(part.id);
      if (windowHeld(tail.lastAt, o.windowBuffer * 1000, now)) return { kind: 'empty' };
    }
    const w = retentionWindows(o, now);
    const timers = appliedTimers(o, ctx.queue.explicit);
    const vis = {
      delayMs: o.delayedProcessing * 1000,
      maxWaitMs: o.maxWaitTimeSeconds * 1000,
      retentionMs: w.retentionMs,
      ttlMs: timers.ttlMs,
    };
    let expired = 0;
    let from = plan.from;
    let hint = state.hint;
    let skipThrough: number | null = null;
    let picked: { offset: number; frame: Frame; seg: SegmentMeta }[] = [];
    let segAvg = state.segAvg;
    const overhead = messageOverhead({
      leaseId: ctx.leaseId,
      group: ctx.group,
      queue: ctx.queue.name,
      partition: part.name,
    });
    // Leading expired messages are skipped; a few rounds bound the work of one pop.
    for (let round = 0; round < 3; round++) {
      const read = await this.readFrom(part.id, from, hint, ctx.batch, segAvg, !retentionOn(o));
      segAvg = read.segAvg;
      const sel = selectDeliverable(
        read.items.map((x) => ({
          offset: x.offset,
          createdAt: x.frame.createdAt,
          bytes: x.frame.payload.byteLength + x.frame.transactionId.length + overhead,
        })),
        { ...vis, now, batch: ctx.batch, maxBytes: ctx.maxBytes },
      );
      if (sel.skipThrough !== null) skipThrough = sel.skipThrough;
      expired += sel.expired;
      picked = read.items.slice(sel.first, sel.first + sel.count);
      const allSkipped = sel.skipThrough !== null && sel.first === read.items.length;
      if (picked.length > 0 || !allSkipped || read.items.length < ctx.batch) break;
      from = (sel.skipThrough as number) + 1;
      const lastSeg = read.items[read.items.length - 1]?.seg;
      hint = lastSeg ? (from > lastSeg.end ? from : lastSeg.base) : null;
    }
    const first = picked[0];
    const last = picked[picked.length - 1];
    if (!first || !last) {
      // Nothing to deliver. Persist a skip, or a first-seen row (so its start is durable and
      // the work index can see the lane is drained).
      if (skipThrough === null && item) return { kind: 'empty' };
      const next = applyPop(state, {
        now,
        leaseId: '',
        leaseMs: 0,
        start: 0,
        end: -1,
        fp: '',
        segs: [],
        segEnd: -1,
        rl: 0,
        dlq: false,
        skipThrough,
        expired,
        segAvg,
      });
      if (skipThrough !== null) next.hint = null;
      if (await putCursor(this.deps.storage, part, ctx.group, next, item)) addExpired(ctx, expired);
      return { kind: 'empty' };
    }
    const segs: number[] = [];
    for (const p of picked) if (segs[segs.length - 1] !== p.seg.base) segs.push(p.seg.base);
    const next = applyPop(state, {
      now,
      leaseId: ctx.leaseId,
      leaseMs: ctx.leaseMs,
      start: first.offset,
      end: last.offset,
      fp: ctx.autoAck ? '' : picked.map((p) => fingerprint(p.frame.transactionId)).join(''),
      segs,
      segEnd: last.seg.end,
      rl: ctx.overrides?.retryLimit ?? o.retryLimit,
      dlq: ctx.overrides?.deadLetter ?? dlqEnabled(o),
      rd: ctx.overrides?.retryDelayMs ?? timers.retryDelayMs,
      skipThrough,
      expired,
      autoAck: ctx.autoAck,
      segAvg,
    });
    if (!(await putCursor(this.deps.storage, part, ctx.group, next, item))) return { kind: 'busy' };
    addExpired(ctx, expired);
    if (next.redeliveries > 0) this.deps.telemetry.count('Redeliveries', picked.length);
    const messages = await Promise.all(
      picked.map(async (p) => ({
        offset: p.offset,
        id: p.frame.id,
        transactionId: p.frame.transactionId,
        traceId: p.frame.traceId,
        createdAt: p.frame.createdAt,
        payload: p.frame.sealed ? await openPayload(this.deps.cipher, p.frame) : p.frame.payload,
        partitionId: part.id,
        partition: part.name,
      })),
    );
    const bytes = picked.reduce((n, p) => n + p.frame.payload.byteLength + p.frame.transactionId.length + overhead, 0);
    return { kind: 'delivered', messages, bytes, attempt: state.retry + 1 };
  }

  /**
   * Reads messages from `from` on with as few queries as possible: one page of segments
   * starting at the segment hint, sized by the lane's messages-per-segment estimate.
   */
  private async readFrom(
    pid: string,
    from: number,
    hint: number | null,
    want: number,
    segAvg: number,
    indexCache: boolean,
  ): Promise<{ items: { offset: number; frame: Frame; seg: SegmentMeta }[]; segAvg: number }> {
    // Segments an earlier query returned (segments never change) may already cover the whole
    // batch: then the index query is not needed (queues without retention only: see cachedRun).
    const run = indexCache ? this.deps.segments.cachedRun(pid, from, want) : undefined;
    if (run) {
      try {
        const items: { offset: number; frame: Frame; seg: SegmentMeta }[] = [];
        for (const seg of run) {
          const frames = await this.deps.segments.loadSegment(pid, seg);
          for (let j = Math.max(0, from - seg.base); j < frames.length && items.length < want; j++)
            items.push({ offset: seg.base + j, frame: frames[j] as Frame, seg });
        }
        if (items.length >= want) return { items, segAvg };
      } catch {
        this.deps.segments.forgetSegments(pid);
      }
    }
    let base: number;
    if (hint !== null && hint <= from) base = hint;
    else if (from === 0) base = 0;
    else base = (await this.deps.segments.segmentAt(pid, from))?.base ?? from;
    const items: { offset: number; frame: Frame; seg: SegmentMeta }[] = [];
    let segs = 0;
    let msgs = 0;
    let expected = from;
    pages: for (let pages = 0; pages < 4 && items.length < want; pages++) {
      const est = Math.ceil((want - items.length) / Math.max(1, segAvg)) + 1;
      const page = await this.deps.segments.segmentPage(pid, base, est);
      let lastEnd = -1;
      for (const seg of page.segs) {
        segs++;
        msgs += seg.count;
        lastEnd = seg.end;
        if (seg.end < expected) continue;
        // Never past offsets a push took and has not written (see SegmentReader.passGap).
        if (seg.base > expected && !(await this.deps.segments.passGap(pid, expected, seg))) break pages;
        expected = seg.end + 1;
        const frames = await this.deps.segments.loadSegment(pid, seg, seg.bin);
        for (let j = Math.max(0, from - seg.base); j < frames.length && items.length < want; j++)
          items.push({ offset: seg.base + j, frame: frames[j] as Frame, seg });
        if (items.length >= want) break;
      }
      if (!page.more || page.segs.length === 0) break;
      base = lastEnd + 1;
      if (segs > 0) segAvg = msgs / segs;
    }
    return { items, segAvg: segs > 0 ? Math.max(1, msgs / segs) : segAvg };
  }

  private mintLeaseId(group: string, partitionIds: string[]): string {
    return encodeLeaseId({ group, partitionIds }, randomFromPool(16), QUEUE_MODE_GROUP);
  }
}
