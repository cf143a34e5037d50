/**
 * Partition leases (seed 002) and consumer-group cursors (seed 004) over the storage port.
 *
 * The semantics live in `core/leases.ts` as pure transitions; this service reads a
 * (partition, group) row, asks the core for the next row and writes it with ONE
 * version-guarded write (or one transaction when a dead letter is filed with it). The version
 * guard is what makes "exactly one leased batch per (partition, group)" hold: of two pops
 * racing on a free lane, only one write lands.
 *
 * Storage requests in steady state (AWS): a partition pop is a get of the row, one query of
 * segments from the row's segment hint (inline segments come with their bytes; blob
 * segments not in this process's decoded-segment cache add one S3 GET each) and one guarded
 * put — 3. A wildcard pop reads the READY index (one query) and the candidates' rows (one
 * getMany) instead of the get — 4. An ack is a get and a guarded put — 2.
 *
 * @example
 * ```ts
 * const r = await svc.leases.pop({ queue: 'orders', group: 'billing', batch: 100, ... }, signal);
 * await svc.leases.ack(r!.messages.map((m) => ({ partitionId: m.partitionId, transactionId: m.transactionId, status: 'completed' })), 'billing');
 * ```
 */
import { randomBytes } from 'node:crypto';
import type { Frame } from '../../codec/segment.js';
import type { SluiceConfig } from '../../config.js';
import { SluiceError } from '../../core/errors.js';
import {
  applyPop,
  decodeLeaseId,
  dlqEnabled,
  emptyCursor,
  encodeLeaseId,
  ERR_NOT_FOUND,
  fingerprint,
  isLive,
  narrowSeek,
  FP_CHARS,
  parseSubscription,
  planAck,
  planExtend,
  planPop,
  seedRule,
  selectDeliverable,
  windowHeld,
  type AckItem,
  type AckPlan,
  type AckStatus,
  type CursorState,
} from '../../core/leases.js';
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import { effectiveLeaseSeconds } from '../../core/queue-options.js';
import { retentionOn, retentionWindows } from '../../core/retention.js';
import {
  ConditionFailedError,
  ContentionError,
  type Item,
  type Json,
  type Storage,
  type WriteOp,
} from '../../storage/port.js';
import type { DlqService } from './dlq-service.js';
import type { GroupRecord, GroupRegistry } from '../groups/group-registry.js';
import { leaseKeys } from './lease-store.js';
import { openPayload, type PayloadCipherLike } from '../encryption.js';
import type { PartitionRef, QueueRecord, SegmentMeta } from '../log/log-store.js';
import type { PushService } from '../log/push.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { SegmentReader, StoredMessage } from '../log/segments.js';
import type { Notifier } from '../notifier.js';
import { ReadyIndex } from './ready-index.js';
import type { Telemetry } from '../telemetry.js';

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
/** Long-poll re-read interval: what another process's push waits at most to be seen. */
export const REPOLL_MS = 1000;

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
}

/** A delivered message: as stored, its payload opened (plaintext JSON text), with where it sits. */
export type PoppedMessage = Omit<StoredMessage, 'sealed'> & { partitionId: string; partition: string };

export interface PopResult {
  queue: string;
  group: string;
  /** '' for an auto-acked pop. */
  leaseId: string;
  partitions: { id: string; name: string }[];
  messages: PoppedMessage[];
}

export interface AckRequestItem {
  index: number;
  partitionId: string;
  transactionId: string;
  status: AckStatus;
  error?: string | null | undefined;
  leaseId?: string | null | undefined;
}

export interface AckResult {
  index: number;
  transactionId: string;
  success: boolean;
  error: string | null;
  queueName: string | null;
  partitionName: string | null;
  leaseReleased: boolean;
  dlq: boolean;
}

export interface ExtendResult {
  leaseId: string;
  success: boolean;
  renewed: number;
  /** Earliest expiry among the renewed rows (epoch ms), null when none. */
  expiresAt: number | null;
}

/** A prepared ack on one lane: the plan and the ops that apply it atomically. */
export interface LanePrep {
  part: PartitionRef;
  group: string;
  plan: AckPlan;
  ops: WriteOp[];
}

interface LaneCtx {
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
}

type LaneOutcome =
  { kind: 'delivered'; messages: PoppedMessage[]; bytes: number } | { kind: 'busy' } | { kind: 'empty' };

export interface LeaseServiceDeps {
  storage: Storage;
  config: SluiceConfig;
  queues: QueueDirectory;
  segments: SegmentReader;
  /** Gets the READY commit hook and the `maxSize` push guard. */
  pushes: PushService;
  /** Opens sealed payloads for delivery. */
  cipher?: PayloadCipherLike | undefined;
  groups: GroupRegistry;
  dlq: DlqService;
  notifier: Notifier;
  telemetry: Telemetry;
  clock: () => number;
}

/** Cursor row attributes: the core state plus names for admin views. */
type CursorAttrs = CursorState & { queue: string; partition: string };

export function decodeCursor(item: Item): CursorState {
  const a = item.attrs as unknown as Partial<CursorAttrs>;
  return { ...emptyCursor(), ...a } as CursorState;
}

function cursorItem(part: PartitionRef, group: string, s: CursorState, ver: number): Item {
  const attrs: CursorAttrs = { ...s, queue: part.queue, partition: part.name };
  return { ...leaseKeys.cursor(part.id, group), ver, attrs: attrs as unknown as Record<string, Json> };
}

export class LeaseService {
  readonly ready: ReadyIndex;
  private readonly storage: Storage;
  private readonly queues: QueueDirectory;
  private readonly segments: SegmentReader;
  private readonly cipher: PayloadCipherLike | undefined;
  private readonly groups: GroupRegistry;
  private readonly dlq: DlqService;
  private readonly notifier: Notifier;
  private readonly telemetry: Telemetry;
  private readonly config: SluiceConfig;
  readonly clock: () => number;
  /**
   * Lanes a pop in this process is working on right now. Concurrent requests skip them
   * rather than race for the same row (the version guard would refuse all but one anyway,
   * after each had read and decoded the same segment).
   */
  private readonly inflight = new Set<string>();
  /** (queue, group) pairs with a woken long poll reading storage right now (see {@link pop}). */
  private readonly probing = new Set<string>();
  /** (queue, group) pairs where a woken waiter was turned away while another was probing. */
  private readonly denied = new Set<string>();

  constructor(deps: LeaseServiceDeps) {
    this.storage = deps.storage;
    this.queues = deps.queues;
    this.segments = deps.segments;
    this.cipher = deps.cipher;
    this.groups = deps.groups;
    this.dlq = deps.dlq;
    this.notifier = deps.notifier;
    this.telemetry = deps.telemetry;
    this.config = deps.config;
    this.clock = deps.clock;
    this.ready = new ReadyIndex(this.storage, this.queues, this.segments, this.groups, decodeCursor, {
      clock: this.clock,
      recheckMs: this.config.queueCacheMs,
    });
    deps.pushes.addCommitHook(this.ready.hook);
    deps.pushes.addPushGuard((c) => this.maxSizeGuard(c.queue, c.partition, c.count));
  }

  // ------------------------------------------------------------------- pop

  /**
   * A pop, long-polling when asked: returns as soon as messages exist, else null (204) at the
   * capped timeout or when `signal` aborts (shutdown, Lambda deadline). Waiters wake on
   * pushes in this process and re-read storage every {@link REPOLL_MS} for other processes.
   */
  async pop(req: PopRequest, signal?: AbortSignal): Promise<PopResult | null> {
    const budget = req.wait ? Math.max(0, Math.min(req.timeoutMs, this.config.maxPopWaitMs)) : 0;
    const deadline = performance.now() + budget;
    const k = `${req.queue}\u0000${req.group}`;
    for (let first = true; ; first = false) {
      // Listen before reading, so a push landing during the read is not missed.
      const remaining = deadline - performance.now();
      const woke =
        req.wait && remaining > 0 && !signal?.aborted
          ? this.notifier.wait(req.queue, Math.min(remaining, REPOLL_MS), signal)
          : undefined;
      // After a wake-up only one waiter per (queue, group) reads storage at a time (the
      // others would find the same freed lane taken); a fresh request always tries once.
      const baton = !first && !this.probing.has(k);
      if (!first && !baton) this.denied.add(k);
      if (first || baton) {
        if (baton) this.probing.add(k);
        let r: PopResult | null = null;
        try {
          // A wake-up that arrived while this one was reading turned a waiter away: read
          // again rather than leave that work to the next re-poll.
          this.denied.delete(k);
          for (let again = 0; !r && again < 3; again++) {
            r = await this.popOnce(req);
            if (!baton || !this.denied.delete(k)) break;
          }
        } finally {
          if (baton) this.probing.delete(k);
        }
        // More may be free: pass the baton to the next waiter.
        if (baton && r) this.notifier.notify(req.queue, '');
        if (r) {
          this.telemetry.count('Pops');
          this.telemetry.count('MessagesDelivered', r.messages.length);
          return r;
        }
      }
      if (!woke) break;
      await woke;
      if (signal?.aborted || performance.now() >= deadline) break;
    }
    this.telemetry.count('EmptyPops');
    return null;
  }

  /** One attempt, no waiting. */
  async popOnce(req: PopRequest): Promise<PopResult | null> {
    const queue = await this.queues.getQueue(req.queue);
    if (!queue) return null; // an unknown queue is "nothing to deliver", never a 404
    const now = this.clock();
    const queueMode = req.group === QUEUE_MODE_GROUP;
    const sub = queueMode
      ? { mode: 'all' as const, from: null }
      : parseSubscription(req.subscriptionMode, req.subscriptionFrom, now);
    const reg = await this.groups.register(queue.name, req.group, 'lease', sub);
    const leaseMs = effectiveLeaseSeconds(req.leaseSeconds, queue.options.leaseTime) * 1000;
    const batch = Math.max(1, Math.min(MAX_POP_BATCH, req.batch));
    const base = { queue, group: req.group, reg, now, leaseMs, autoAck: req.autoAck };
    if (req.partition !== undefined) {
      const part = await this.queues.getPartition(queue.name, req.partition);
      if (!part) return null;
      const leaseId = req.autoAck ? '' : this.mintLeaseId(req.group, [part.id]);
      const out = await this.popLaneOnce({ ...base, part, leaseId, batch, maxBytes: POP_MAX_BYTES });
      if (out.kind !== 'delivered') return null;
      return {
        queue: queue.name,
        group: req.group,
        leaseId,
        partitions: [{ id: part.id, name: part.name }],
        messages: out.messages,
      };
    }
    return this.popWildcard({ ...base, batch, partitions: Math.max(1, Math.min(MAX_POP_PARTITIONS, req.partitions)) });
  }

  private async popWildcard(c: {
    queue: QueueRecord;
    group: string;
    reg: GroupRecord;
    now: number;
    leaseMs: number;
    autoAck: boolean;
    batch: number;
    partitions: number;
  }): Promise<PopResult | null> {
    await this.ready.scanStep(c.reg);
    const r = await this.popCandidates(c);
    // Candidates that turned out to be retired partitions (a deleted queue, an idle partition)
    // were removed from the index: look at it once more rather than answer "nothing".
    return r.result ?? (r.removed ? (await this.popCandidates(c)).result : null);
  }

  private async popCandidates(c: {
    queue: QueueRecord;
    group: string;
    reg: GroupRecord;
    now: number;
    leaseMs: number;
    autoAck: boolean;
    batch: number;
    partitions: number;
  }): Promise<{ result: PopResult | null; removed: boolean }> {
    const busy = (pid: string): boolean => this.inflight.has(`${pid}\u0000${c.group}`);
    const cands = (await this.ready.candidates(c.queue.name, c.group, c.now, busy)).filter((x) => !busy(x.partitionId));
    const messages: PoppedMessage[] = [];
    const claimed: { id: string; name: string }[] = [];
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
        const part = await this.queues.partitionById(cand.partitionId);
        if (!part || part.queue !== c.queue.name) {
          await this.ready.remove(c.queue.name, c.group, cand.partitionId);
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
        this.ready.served(c.queue.name, c.group, part.id);
        if (out.kind !== 'delivered') continue;
        leaseId = roundId;
        claimed.push({ id: part.id, name: part.name });
        messages.push(...out.messages);
        budget -= out.messages.length;
        bytes -= out.bytes;
      }
    }
    if (messages.length === 0) return { result: null, removed };
    return { result: { queue: c.queue.name, group: c.group, leaseId, partitions: claimed, messages }, removed };
  }

  /** {@link popLane}, unless another pop in this process is on the lane already (then: busy). */
  private async popLaneOnce(ctx: LaneCtx, prefetched?: { item: Item | undefined }): Promise<LaneOutcome> {
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
  private async popLane(ctx: LaneCtx, prefetched?: { item: Item | undefined }): Promise<LaneOutcome> {
    const { part, now } = ctx;
    const item = prefetched
      ? prefetched.item
      : await this.storage.items.get('leases', leaseKeys.cursor(part.id, ctx.group));
    const state = item ? decodeCursor(item) : await this.seed(ctx);
    const plan = planPop(state, now);
    if (plan.kind === 'busy') return { kind: 'busy' };
    const o = ctx.queue.options;
    if (o.windowBuffer > 0) {
      const tail = await this.segments.readTail(part.id);
      if (windowHeld(tail.lastAt, o.windowBuffer * 1000, now)) return { kind: 'empty' };
    }
    const w = retentionWindows(o, now);
    const vis = {
      delayMs: o.delayedProcessing * 1000,
      maxWaitMs: o.maxWaitTimeSeconds * 1000,
      retentionMs: w.retentionMs,
    };
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
      // Nothing to deliver. Persist a skip, or a first-seen row (so its seed is durable and
      // the READY index can see the lane is drained).
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
        segAvg,
      });
      if (skipThrough !== null) next.hint = null;
      await this.writeRow(part, ctx.group, next, item);
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
      rl: o.retryLimit,
      dlq: dlqEnabled(o),
      skipThrough,
      autoAck: ctx.autoAck,
      segAvg,
    });
    if (!(await this.writeRow(part, ctx.group, next, item))) return { kind: 'busy' };
    if (next.redeliveries > 0) this.telemetry.count('Redeliveries', picked.length);
    const messages = await Promise.all(
      picked.map(async (p) => ({
        offset: p.offset,
        id: p.frame.id,
        transactionId: p.frame.transactionId,
        traceId: p.frame.traceId,
        createdAt: p.frame.createdAt,
        payload: p.frame.sealed ? await openPayload(this.cipher, p.frame) : p.frame.payload,
        partitionId: part.id,
        partition: part.name,
      })),
    );
    const bytes = picked.reduce((n, p) => n + p.frame.payload.byteLength + p.frame.transactionId.length + overhead, 0);
    return { kind: 'delivered', messages, bytes };
  }

  /** Writes a row guarded by the version it was read at; false when another write won. */
  private async writeRow(
    part: PartitionRef,
    group: string,
    next: CursorState,
    prev: Item | undefined,
  ): Promise<boolean> {
    try {
      await this.storage.items.put(
        'leases',
        cursorItem(part, group, next, (prev?.ver ?? 0) + 1),
        prev ? { kind: 'version', ver: prev.ver } : { kind: 'absent' },
      );
      return true;
    } catch (e) {
      if (e instanceof ConditionFailedError) return false;
      throw e;
    }
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
    const run = indexCache ? this.segments.cachedRun(pid, from, want) : undefined;
    if (run) {
      try {
        const items: { offset: number; frame: Frame; seg: SegmentMeta }[] = [];
        for (const seg of run) {
          const frames = await this.segments.loadSegment(pid, seg);
          for (let j = Math.max(0, from - seg.base); j < frames.length && items.length < want; j++)
            items.push({ offset: seg.base + j, frame: frames[j] as Frame, seg });
        }
        if (items.length >= want) return { items, segAvg };
      } catch {
        this.segments.forgetSegments(pid);
      }
    }
    let base: number;
    if (hint !== null && hint <= from) base = hint;
    else if (from === 0) base = 0;
    else base = (await this.segments.segmentAt(pid, from))?.base ?? from;
    const items: { offset: number; frame: Frame; seg: SegmentMeta }[] = [];
    let segs = 0;
    let msgs = 0;
    for (let pages = 0; pages < 4 && items.length < want; pages++) {
      const est = Math.ceil((want - items.length) / Math.max(1, segAvg)) + 1;
      const page = await this.segments.segmentPage(pid, base, est);
      let lastEnd = -1;
      for (const seg of page.segs) {
        segs++;
        msgs += seg.count;
        lastEnd = seg.end;
        if (seg.end < from) continue;
        const frames = await this.segments.loadSegment(pid, seg, seg.bin);
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

  /**
   * The starting row of a lane the group has never read (seed 004): `all` and queue mode
   * start before the oldest retained message; `new` and `from` after the last message pushed
   * before the recorded instant (a binary search over segment push times).
   */
  private async seed(ctx: { part: PartitionRef; group: string; reg: GroupRecord }): Promise<CursorState> {
    const rule = seedRule(ctx.reg.subscription, ctx.group === QUEUE_MODE_GROUP, ctx.part.createdAt);
    if (rule.kind === 'head') return emptyCursor(-1, null);
    const c = await this.lastBefore(ctx.part.id, rule.at, false);
    return emptyCursor(c, null);
  }

  /**
   * The last offset whose push time is before `at` (or at it, when `inclusive`), -1 when
   * none. O(log n) queries: the head and tail first (which settle "all before" and "none
   * before" in two), then a binary search over offsets.
   */
  async lastBefore(pid: string, at: number, inclusive: boolean): Promise<number> {
    const before = (t: number): boolean => (inclusive ? t <= at : t < at);
    const tail = await this.segments.segmentAt(pid, Number.MAX_SAFE_INTEGER);
    if (!tail) return -1;
    if (before(tail.at)) return tail.end;
    const head = (await this.segments.segmentPage(pid, 0, 1)).segs[0];
    if (!head || !before(head.at)) return (head?.base ?? tail.base) - 1;
    let range = { lo: head.end + 1, hi: tail.base - 1, best: head.end };
    for (let steps = 0; range.lo <= range.hi && steps < 64; steps++) {
      const mid = Math.floor((range.lo + range.hi) / 2);
      const seg = await this.segments.segmentAt(pid, mid);
      if (!seg) break;
      range = narrowSeek(range, seg, at, inclusive);
    }
    return range.best;
  }

  private mintLeaseId(group: string, partitionIds: string[]): string {
    return encodeLeaseId({ group, partitionIds }, randomBytes(16), QUEUE_MODE_GROUP);
  }

  // ------------------------------------------------------------------- ack

  /**
   * Acks, grouped per (partition, group) lane: each lane is one plan and one write (a
   * transaction when a dead letter is filed with it). Results come back in input order.
   */
  async ack(items: readonly AckRequestItem[], group: string): Promise<AckResult[]> {
    const results: AckResult[] = items.map((it) => ({
      index: it.index,
      transactionId: it.transactionId,
      success: false,
      error: ERR_NOT_FOUND,
      queueName: null,
      partitionName: null,
      leaseReleased: false,
      dlq: false,
    }));
    const lanes = new Map<string, number[]>();
    items.forEach((it, i) => lanes.set(it.partitionId, [...(lanes.get(it.partitionId) ?? []), i]));
    await Promise.all(
      [...lanes.entries()].map(async ([pid, idx]) => {
        const part = await this.queues.partitionById(pid);
        if (!part) return;
        const laneItems = idx.map((i) => items[i] as AckRequestItem);
        for (let attempt = 0; ; attempt++) {
          const prep = await this.prepareLane(part, group, laneItems, 'ack');
          try {
            await this.applyOps(prep.ops);
          } catch (e) {
            if ((e instanceof ConditionFailedError || e instanceof ContentionError) && attempt < 20) continue; // the row moved (pop, extend): plan again
            throw e;
          }
          this.afterLane(prep);
          prep.plan.results.forEach((r, j) => {
            const i = idx[j] as number;
            results[i] = {
              index: (items[i] as AckRequestItem).index,
              transactionId: (items[i] as AckRequestItem).transactionId,
              success: r.success,
              error: r.error,
              queueName: part.queue,
              partitionName: part.name,
              leaseReleased: r.leaseReleased,
              dlq: r.dlq,
            };
          });
          return;
        }
      }),
    );
    this.telemetry.count('Acks', items.length);
    return results;
  }

  /** Reads a lane and plans an ack on it, returning the ops that apply it (not written). */
  async prepareLane(
    part: PartitionRef,
    group: string,
    items: readonly Omit<AckRequestItem, 'partitionId'>[],
    mode: 'ack' | 'transaction',
  ): Promise<LanePrep> {
    const now = this.clock();
    const row = await this.storage.items.get('leases', leaseKeys.cursor(part.id, group));
    const state = row ? decodeCursor(row) : emptyCursor();
    const lease = state.lease;
    const ackItems: AckItem[] = [];
    // Fingerprint -> offsets of the leased span, built once per lane (a batch ack is O(n)).
    const byFp = new Map<string, number[]>();
    if (isLive(lease, now)) {
      for (let i = 0; i + FP_CHARS <= lease.fp.length; i += FP_CHARS) {
        const f = lease.fp.slice(i, i + FP_CHARS);
        const offs = byFp.get(f);
        if (offs) offs.push(lease.start + i / FP_CHARS);
        else byFp.set(f, [lease.start + i / FP_CHARS]);
      }
    }
    for (let j = 0; j < items.length; j++) {
      const it = items[j] as Omit<AckRequestItem, 'partitionId'>;
      let offset: number | null = null;
      if (isLive(lease, now)) {
        const offs = byFp.get(fingerprint(it.transactionId)) ?? [];
        if (offs.length === 1) offset = offs[0] as number;
        else if (offs.length > 1) offset = await this.exactOffset(part.id, lease.start, lease.end, it.transactionId);
      }
      ackItems.push({ index: j, offset, status: it.status, error: it.error, leaseId: it.leaseId });
    }
    const plan = planAck(state, ackItems, { now, mode });
    const ops: WriteOp[] = [];
    if (plan.next)
      ops.push({
        op: 'put',
        table: 'leases',
        item: cursorItem(part, group, plan.next, (row?.ver ?? 0) + 1),
        cond: row ? { kind: 'version', ver: row.ver } : { kind: 'absent' },
      });
    if (plan.file) {
      const [found] = await this.segments.readRaw(part.id, plan.file.offset, { maxCount: 1 });
      // A message retention already removed is filed without its payload.
      const msg: StoredMessage =
        found && found.offset === plan.file.offset
          ? found
          : {
              offset: plan.file.offset,
              id: '',
              transactionId: `offset-${plan.file.offset}`,
              traceId: null,
              createdAt: now,
              payload: Buffer.from('null'),
            };
      ops.push(
        ...(await this.dlq.filingOps({
          part,
          group,
          msg,
          error: plan.file.error,
          retryCount: plan.file.retryCount,
          now,
        })),
      );
    }
    return { part, group, plan, ops };
  }

  /** Where a transactionId sits in a leased span when fingerprints alone are ambiguous. */
  private async exactOffset(pid: string, start: number, end: number, transactionId: string): Promise<number | null> {
    const msgs = await this.segments.readRaw(pid, start, { maxCount: end - start + 1 });
    return msgs.find((m) => m.transactionId === transactionId)?.offset ?? null;
  }

  private async applyOps(ops: WriteOp[]): Promise<void> {
    if (ops.length === 0) return;
    const only = ops[0];
    if (ops.length === 1 && only?.op === 'put') await this.storage.items.put(only.table, only.item, only.cond);
    else await this.storage.items.transact(ops);
  }

  /** Telemetry and wake-ups after a lane's ops were written. */
  afterLane(prep: LanePrep): void {
    const { plan, part } = prep;
    if (plan.outcome === 'dead-lettered') this.telemetry.count('DeadLettered');
    if (plan.outcome === 'dropped') this.telemetry.count('MessagesDropped');
    // A released lease with work left: parked long polls get it at once.
    if (plan.outcome !== 'none' && plan.outcome !== 'partial') this.notifier.notify(part.queue, part.id);
  }

  // ---------------------------------------------------------------- extend

  /**
   * Renews every live lease held by `leaseId` (every partition of a multi-partition pop):
   * never shortens, never revives an expired one. The id names its rows, so this is one
   * getMany and one guarded put per renewed row.
   */
  async extend(leaseId: string, seconds: number): Promise<ExtendResult> {
    const ref = decodeLeaseId(leaseId, QUEUE_MODE_GROUP);
    if (!ref) return { leaseId, success: false, renewed: 0, expiresAt: null };
    let renewed = 0;
    let earliest: number | null = null;
    let pending = ref.partitionIds;
    for (let attempt = 0; pending.length > 0 && attempt < 10; attempt++) {
      const now = this.clock();
      const rows = await this.storage.items.getMany(
        'leases',
        pending.map((p) => leaseKeys.cursor(p, ref.group)),
      );
      const writes: { pid: string; item: Item; cond: { kind: 'version'; ver: number }; exp: number }[] = [];
      rows.forEach((row, i) => {
        if (!row) return;
        const plan = planExtend(decodeCursor(row), leaseId, now, seconds);
        if (!plan.renewed) return;
        const a = row.attrs as unknown as CursorAttrs;
        writes.push({
          pid: pending[i] as string,
          item: {
            ...row,
            ver: row.ver + 1,
            attrs: { ...plan.next, queue: a.queue, partition: a.partition } as unknown as Record<string, Json>,
          },
          cond: { kind: 'version', ver: row.ver },
          exp: plan.exp,
        });
      });
      if (writes.length === 0) break;
      const res = await this.storage.items.writeEach(
        writes.map((w) => ({ op: 'put' as const, table: 'leases' as const, item: w.item, cond: w.cond })),
      );
      const retry: string[] = [];
      res.forEach((r, i) => {
        const w = writes[i] as (typeof writes)[number];
        if (r.ok) {
          renewed++;
          earliest = earliest === null ? w.exp : Math.min(earliest, w.exp);
        } else retry.push(w.pid);
      });
      pending = retry;
    }
    if (renewed > 0) this.telemetry.count('LeaseExtends', renewed);
    return { leaseId, success: renewed > 0, renewed, expiresAt: earliest };
  }

  // --------------------------------------------------------------- helpers

  /** The cursor rows of one group on the given partitions (getMany in pages of 100). */
  async cursorRows(pids: readonly string[], group: string): Promise<(Item | undefined)[]> {
    const out: (Item | undefined)[] = [];
    for (let i = 0; i < pids.length; i += 100)
      out.push(
        ...(await this.storage.items.getMany(
          'leases',
          pids.slice(i, i + 100).map((p) => leaseKeys.cursor(p, group)),
        )),
      );
    return out;
  }

  /**
   * Moves a group's cursor on one partition (seek): the lease goes, the next delivery is
   * `committed + 1`. The partition is marked READY when it has messages after the cursor.
   */
  async setCursor(part: PartitionRef, group: string, committed: number, tailNext: number): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const row = await this.storage.items.get('leases', leaseKeys.cursor(part.id, group));
      const state = row ? decodeCursor(row) : emptyCursor();
      const next: CursorState = {
        ...state,
        committed,
        lease: null,
        retry: 0,
        redeliveries: 0,
        lastStart: null,
        hint: null,
      };
      if (await this.writeRow(part, group, next, row)) {
        if (committed < tailNext - 1) await this.ready.markAtLeast(part.queue, group, part.id, tailNext - 1);
        this.notifier.notify(part.queue, part.id);
        return;
      }
    }
    throw new SluiceError(
      'unavailable',
      `could not move ${group}'s cursor on ${part.queue}/${part.name}: too contended; retry`,
    );
  }

  /**
   * maxSize (when > 0): refuses a push that would leave more unconsumed messages in the
   * partition than the limit — unconsumed meaning after the slowest lease group's cursor, or
   * everything retained when no group has read it. Two reads per push on such queues; two
   * concurrent pushes can both pass (a soft limit).
   */
  private async maxSizeGuard(queue: QueueRecord, part: PartitionRef, count: number): Promise<void> {
    const max = queue.options.maxSize;
    if (!max || max <= 0) return;
    const [tail, rows] = await Promise.all([
      this.segments.readTail(part.id),
      this.storage.items.query('leases', part.id, { limit: 1000 }),
    ]);
    const floors = rows.items.map((r) => decodeCursor(r).committed + 1);
    const floor = floors.length > 0 ? Math.min(...floors) : await this.segments.readHead(part.id);
    const pending = Math.max(0, tail.next - floor);
    if (pending + count > max) {
      throw new SluiceError(
        'queue_full',
        `queue ${queue.name} partition ${part.name} holds ${pending} unconsumed messages; maxSize is ${max}, so ${count} more do not fit`,
        { maxSize: max, pending },
      );
    }
  }
}
