// One concept past 500 lines: the whole partition-lease state machine (pop, ack, extend, start, lag), pure.
/**
 * Partition leases and consumer-group cursors (docs/LEASES.md, "The model") as pure state
 * transitions. Every function here takes `now` explicitly and does no I/O: the pop and ack
 * services (`service/leases/`) read a cursor row, ask these functions what the next row is,
 * and write it back with one version-guarded write (or one transaction).
 *
 * The model, in one paragraph: a (partition, group) lane has a cursor `committed` (the last
 * completed offset, -1 for none) and at most one lease. A pop leases the span
 * (committed, end] and does not move the cursor. An ack moves the cursor over the completed
 * prefix, and the lowest explicit signal of the call (failed / retry / dlq) decides what
 * happens to the rest: release and redeliver, charge the lane's retry budget, or dead-letter
 * the head message. Expiry needs no sweeper: a lease with `exp <= now` is simply not live.
 *
 * @example
 * ```ts
 * const s0 = emptyCursor();
 * const s1 = applyPop(s0, { now, leaseId, leaseMs: 60_000, start: 0, end: 9, fp, segs: [0], segEnd: 9, rl: 3, dlq: true });
 * const r = planAck(s1, [{ index: 0, offset: 9, status: 'completed' }], { now, mode: 'ack' });
 * r.next?.committed; // 9, lease released, retry counter reset
 * ```
 */
import { invalid } from './errors.js';
import type { AckStatus } from '../../contract/ack-status.js';

// ------------------------------------------------------------------------- state

/** The claim a pop writes on a (partition, group) row. */
export interface Lease {
  /** The lease id the pop returned (shared by every partition one pop claimed). */
  id: string;
  /** Epoch ms; the lease is live while `exp > now`. */
  exp: number;
  /** First offset delivered. */
  start: number;
  /** Inclusive last offset delivered. */
  end: number;
  /** Fingerprints of the delivered transactionIds, {@link FP_CHARS} characters per offset from `start`. */
  fp: string;
  /** Base offsets of the segments holding [start, end], ascending. */
  segs: number[];
  /** Last offset of the last segment in `segs` (the next segment starts after it). */
  segEnd: number;
  /** The queue's retryLimit when the lease was taken. */
  rl: number;
  /** Whether dead-lettering was enabled (either DLQ flag) when the lease was taken. */
  dlq: boolean;
  /** The queue's applied retryDelay (ms) when the lease was taken: an expired lease redelivers that long after `exp`. */
  rd?: number | undefined;
}

/** A (partition, group) cursor row. */
export interface CursorState {
  /** Last completed offset; -1 when nothing is. */
  committed: number;
  lease: Lease | null;
  /** The retry budget spent: failed acks charged since the last completed batch or filing. */
  retry: number;
  /** Telemetry: consecutive deliveries starting at the same offset. */
  redeliveries: number;
  /** Start offset of the last delivery (for the redelivery counter). */
  lastStart: number | null;
  /** Base of the segment holding committed + 1, when known: lets a pop read with one query. */
  hint: number | null;
  /** Messages per segment, as last seen: sizes the pop's segment query. */
  segAvg: number;
  /** Counters (telemetry and admin views). */
  delivered: number;
  completed: number;
  deadLettered: number;
  dropped: number;
  /** Epoch ms before which the lane is not redelivered after a failed ack (retryDelay); 0 = none. */
  heldUntil: number;
  /** Counter: messages this group passed without delivery because they outlived the queue's ttl. */
  expired: number;
}

export const emptyCursor = (committed = -1, hint: number | null = null): CursorState => ({
  committed,
  lease: null,
  retry: 0,
  redeliveries: 0,
  lastStart: null,
  hint,
  segAvg: 1,
  delivered: 0,
  completed: 0,
  deadLettered: 0,
  dropped: 0,
  heldUntil: 0,
  expired: 0,
});

/**
 * A lease is live while its expiry lies in the future; `exp <= now` is expired (docs/LEASES.md,
 * "A lane, its cursor and its lease").
 */
export const isLive = (lease: Lease | null | undefined, now: number): lease is Lease => !!lease && lease.exp > now;

// ------------------------------------------------------------------ fingerprints

/** Characters per transactionId fingerprint (48 bits, base64url). */
export const FP_CHARS = 8;

/**
 * A short fingerprint of a transactionId (48 bits of the cyrb53 string hash, base64url). The
 * lease stores one per delivered offset, so an ack can find a message's offset from its
 * transactionId without reading the segment again. Two different ids in one batch share a
 * fingerprint with probability ~n²/2^49; when an id matches several offsets the service
 * reads the span to decide. Not cryptographic: it only has to tell a batch's ids apart.
 */
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

export function fingerprint(transactionId: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < transactionId.length; i++) {
    const c = transactionId.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  // 24 bits from each half, 6 bits per character.
  const a = h1 >>> 8;
  const b = h2 >>> 8;
  return (
    B64[(a >>> 18) & 63]! +
    B64[(a >>> 12) & 63]! +
    B64[(a >>> 6) & 63]! +
    B64[a & 63]! +
    B64[(b >>> 18) & 63]! +
    B64[(b >>> 12) & 63]! +
    B64[(b >>> 6) & 63]! +
    B64[b & 63]!
  );
}

/** Offsets in the lease whose fingerprint matches `transactionId`. */
export function offsetsByFingerprint(lease: Pick<Lease, 'fp' | 'start'>, transactionId: string): number[] {
  const f = fingerprint(transactionId);
  const out: number[] = [];
  for (let i = 0; i + FP_CHARS <= lease.fp.length; i += FP_CHARS) {
    if (lease.fp.startsWith(f, i)) out.push(lease.start + i / FP_CHARS);
  }
  return out;
}

// ------------------------------------------------------------------------- pop

/** What can be done on a lane right now. */
export type PopPlan =
  /** A live lease holds the lane: nothing for this group here (204). */
  | { kind: 'busy'; until: number }
  /** Free: read from `from`; `redelivery` when an un-acked span is being handed out again. */
  | { kind: 'free'; from: number; redelivery: boolean };

/**
 * When a lane may be redelivered under the queue's explicit retryDelay: `retryDelay` after its
 * lease expired, or after the failed ack that released it; 0 when nothing holds it.
 *
 * @example
 * ```ts
 * redeliveryAt({ ...emptyCursor(), heldUntil: 5_000 }); // 5000
 * ```
 */
export function redeliveryAt(s: Pick<CursorState, 'lease' | 'heldUntil'>): number {
  const afterExpiry = s.lease?.rd ? s.lease.exp + s.lease.rd : 0;
  return Math.max(s.heldUntil, afterExpiry);
}

/**
 * A pop skips a lane whose lease is live, or that retryDelay still holds after an expired lease
 * or a failed ack; otherwise it reads from committed + 1 (docs/LEASES.md, "A lane, its cursor
 * and its lease").
 */
export function planPop(s: CursorState, now: number): PopPlan {
  if (isLive(s.lease, now)) return { kind: 'busy', until: s.lease.exp };
  const held = redeliveryAt(s);
  if (held > now) return { kind: 'busy', until: held };
  return { kind: 'free', from: s.committed + 1, redelivery: s.lease !== null };
}

/** A message as the pop sees it before deciding to deliver it. */
export interface Candidate {
  offset: number;
  createdAt: number;
  bytes: number;
}

/** Queue options that decide visibility, in milliseconds (0 = off). */
export interface Visibility {
  /** delayedProcessing: a message is invisible until createdAt + delayMs. */
  delayMs: number;
  /** maxWaitTimeSeconds: a pending message older than this is discarded. */
  maxWaitMs: number;
  /** retentionSeconds (when retention is enabled): older messages are gone, even if still stored. */
  retentionMs: number;
  /** The queue's ttl, only when the client set it explicitly: an unconsumed older message is not delivered. */
  ttlMs?: number | undefined;
}

export interface Selection {
  /** Offsets to skip over (discarded or expired), ending at this one; null when none. */
  skipThrough: number | null;
  /** Index into the candidates of the first message to deliver, and how many. */
  first: number;
  count: number;
  /** Epoch ms at which the next invisible (delayed) message becomes visible, if one stopped the batch. */
  visibleAt: number | null;
  /** How many of the skipped messages outlived the ttl (the count the `expired` counters add). */
  expired: number;
}

/**
 * Picks what a pop delivers from the candidates (consecutive offsets from the cursor), FIFO:
 * leading messages that are expired (retention) or too old (maxWaitTimeSeconds) are skipped
 * — the cursor passes them — then up to `batch` visible messages are taken, stopping at the
 * first delayed one and before `maxBytes` of payload (always at least one message).
 */
export function selectDeliverable(
  cands: readonly Candidate[],
  opts: Visibility & { now: number; batch: number; maxBytes: number },
): Selection {
  const { now } = opts;
  const ttlMs = opts.ttlMs ?? 0;
  let i = 0;
  let skipThrough: number | null = null;
  let expired = 0;
  const outlived = (c: Candidate): boolean => ttlMs > 0 && c.createdAt + ttlMs <= now;
  const gone = (c: Candidate): boolean =>
    (opts.retentionMs > 0 && c.createdAt + opts.retentionMs <= now) ||
    (opts.maxWaitMs > 0 && c.createdAt + opts.maxWaitMs <= now) ||
    outlived(c);
  while (i < cands.length && gone(cands[i] as Candidate)) {
    const c = cands[i++] as Candidate;
    if (outlived(c)) expired++;
    skipThrough = c.offset;
  }
  const first = i;
  let bytes = 0;
  let visibleAt: number | null = null;
  while (i < cands.length && i - first < opts.batch) {
    const c = cands[i] as Candidate;
    if (opts.delayMs > 0 && c.createdAt + opts.delayMs > now) {
      visibleAt = c.createdAt + opts.delayMs;
      break;
    }
    // An expired message after a visible one (clocks of different pushers disagree): stop
    // here; the next pop skips it.
    if (gone(c)) break;
    if (i > first && bytes + c.bytes > opts.maxBytes) break;
    bytes += c.bytes;
    i++;
  }
  return { skipThrough, first, count: i - first, visibleAt, expired };
}

/** windowBuffer: a partition is held back until `windowMs` after its newest message. */
export const windowHeld = (lastAt: number | undefined, windowMs: number, now: number): boolean =>
  windowMs > 0 && lastAt !== undefined && now < lastAt + windowMs;

/** What one pop delivers on a lane. */
export interface PopGrant {
  now: number;
  leaseId: string;
  leaseMs: number;
  /** First and last offset delivered; `end < start` when nothing is delivered (a pure skip). */
  start: number;
  end: number;
  fp: string;
  segs: number[];
  segEnd: number;
  rl: number;
  dlq: boolean;
  /** Offsets passed without delivery (expired / too old). */
  skipThrough?: number | null | undefined;
  /** How many of the passed offsets outlived the ttl (added to the lane's `expired` counter). */
  expired?: number | undefined;
  /** The queue's applied retryDelay in ms (0: redeliver as soon as the lease ends). */
  rd?: number | undefined;
  /** Commit at delivery and take no lease (autoAck). */
  autoAck?: boolean | undefined;
  /** Messages per segment seen by this read. */
  segAvg?: number | undefined;
}

/**
 * The row after a pop. The cursor does not move at pop time, except over offsets that no
 * longer exist (retention) or were discarded (maxWaitTimeSeconds), and, with autoAck, over
 * everything delivered (no lease is taken, and the completed batch resets the budget).
 */
export function applyPop(s: CursorState, g: PopGrant): CursorState {
  const n = g.end >= g.start ? g.end - g.start + 1 : 0;
  let committed = Math.max(s.committed, g.skipThrough ?? -1);
  if (n > 0) committed = Math.max(committed, g.start - 1);
  const next: CursorState = { ...s, committed, segAvg: g.segAvg ?? s.segAvg, expired: s.expired + (g.expired ?? 0) };
  if (n > 0) next.heldUntil = 0;
  if (n === 0) {
    next.lease = isLive(s.lease, g.now) ? s.lease : null;
    next.hint = committed === s.committed ? s.hint : hintFor(committed + 1, g.segs, g.segEnd, null);
    return next;
  }
  next.delivered = s.delivered + n;
  next.redeliveries = s.lastStart === g.start ? s.redeliveries + 1 : 0;
  next.lastStart = g.start;
  if (g.autoAck) {
    next.committed = g.end;
    next.lease = null;
    next.retry = 0;
    next.completed = s.completed + n;
    next.lastStart = null;
    next.redeliveries = 0;
    next.hint = hintFor(g.end + 1, g.segs, g.segEnd, s.hint);
    return next;
  }
  next.lease = {
    id: g.leaseId,
    exp: g.now + g.leaseMs,
    start: g.start,
    end: g.end,
    fp: g.fp,
    segs: g.segs,
    segEnd: g.segEnd,
    rl: g.rl,
    dlq: g.dlq,
  };
  if (g.rd) next.lease.rd = g.rd;
  next.hint = hintFor(committed + 1, g.segs, g.segEnd, s.hint);
  return next;
}

/**
 * Base of the segment holding offset `x`, given the bases of consecutive segments and the
 * end of the last one (offsets are dense, so the segment after it starts at segEnd + 1).
 */
export function hintFor(x: number, segs: readonly number[], segEnd: number, fallback: number | null): number | null {
  if (segs.length === 0 || x < (segs[0] as number)) return fallback;
  if (x > segEnd) return x === segEnd + 1 ? x : fallback;
  let best = segs[0] as number;
  for (const b of segs) if (b <= x) best = b;
  return best;
}

// ------------------------------------------------------------------------- ack

// Ack statuses are the wire's (the ack schemas parse them): the contract holds them.
export { parseAckStatus, type AckStatus } from '../../contract/ack-status.js';

export interface AckItem {
  /** Position in the caller's request. */
  index: number;
  /** The message's offset, or null when the transactionId is not in the lease. */
  offset: number | null;
  status: AckStatus;
  error?: string | null | undefined;
  /** When sent, must be the live lease's id. */
  leaseId?: string | null | undefined;
}

export interface AckItemResult {
  index: number;
  success: boolean;
  error: string | null;
  leaseReleased: boolean;
  dlq: boolean;
}

/** What happened to the lane as a whole. */
export type AckOutcome = 'none' | 'partial' | 'completed' | 'retry' | 'failed' | 'dead-lettered' | 'dropped';

export interface AckPlan {
  results: AckItemResult[];
  /** The row to write, or null when nothing changes. */
  next: CursorState | null;
  outcome: AckOutcome;
  /** A message to file in the dead-letter queue in the same write. */
  file?: { offset: number; error: string; retryCount: number } | undefined;
  /** A message deliberately dropped (both DLQ flags off). */
  drop?: { offset: number } | undefined;
}

export const ERR_LEASE = 'Invalid or expired lease';
export const ERR_NOT_FOUND = 'Message not found';
export const ERR_DONE = 'Message already completed';
export const DEFAULT_DLQ_ERROR = 'Retries exhausted';

/**
 * The ack rules (docs/LEASES.md, "Ack: an offset commit, decided by the lowest explicit signal") for one
 * (partition, group) lane and one ack call.
 *
 * - Every item needs the lane's live lease (and, when it names one, that lease's id).
 * - Acknowledgement is an offset commit: `completed` on offset N completes the lease's span
 *   up to N. The cursor moves over the completed prefix only: up to the highest `completed`
 *   offset that lies below the lowest explicit signal (`failed`, `retry`, `dlq`) of the call.
 * - The lowest explicit signal decides: `retry` releases the lease (budget untouched);
 *   `failed` charges the lane's counter by one while it is below `retryLimit` and releases the
 *   lease, holding the lane for the lease's retryDelay (`heldUntil`); `failed` with the budget spent, or `dlq`, dead-letters the head un-acked message
 *   (committed + 1 after the prefix), moves the cursor past it, resets the counter and
 *   releases the lease — or drops it when both DLQ flags are off.
 * - With no explicit signal, the cursor reaching the lease's end completes the batch: the
 *   lease is released and the counter reset.
 * - In a transaction (`mode: 'transaction'`), `failed` files at once, like `dlq`, and
 *   `retry` is not accepted.
 */
export function planAck(
  s: CursorState,
  items: readonly AckItem[],
  ctx: { now: number; mode: 'ack' | 'transaction' },
): AckPlan {
  const results: AckItemResult[] = items.map((it) => ({
    index: it.index,
    success: false,
    error: null,
    leaseReleased: false,
    dlq: false,
  }));
  const lease = s.lease;
  const fail = (i: number, error: string): void => {
    const r = results[i] as AckItemResult;
    r.success = false;
    r.error = error;
  };
  if (!isLive(lease, ctx.now)) {
    items.forEach((_, i) => fail(i, ERR_LEASE));
    return { results, next: null, outcome: 'none' };
  }
  const valid: { i: number; it: AckItem; offset: number; status: AckStatus }[] = [];
  items.forEach((it, i) => {
    if (it.leaseId !== undefined && it.leaseId !== null && it.leaseId !== '' && it.leaseId !== lease.id)
      return fail(i, ERR_LEASE);
    if (it.offset === null || it.offset < lease.start || it.offset > lease.end) return fail(i, ERR_NOT_FOUND);
    const status: AckStatus = ctx.mode === 'transaction' && it.status === 'failed' ? 'dlq' : it.status;
    if (ctx.mode === 'transaction' && status === 'retry')
      return fail(i, 'retry is not a valid status in a transaction');
    if (it.offset <= s.committed && status !== 'completed') return fail(i, ERR_DONE);
    valid.push({ i, it, offset: it.offset, status });
    (results[i] as AckItemResult).success = true;
  });
  if (valid.length === 0) return { results, next: null, outcome: 'none' };

  const explicit = valid.filter((v) => v.status !== 'completed');
  const lowest = explicit.reduce<(typeof explicit)[number] | undefined>(
    (a, b) => (a === undefined || b.offset < a.offset ? b : a),
    undefined,
  );
  const bound = lowest ? lowest.offset : Number.POSITIVE_INFINITY;
  const completedBelow = valid.filter((v) => v.status === 'completed' && v.offset < bound).map((v) => v.offset);
  const committed = Math.max(s.committed, ...completedBelow);
  const base: CursorState = {
    ...s,
    committed,
    hint: hintFor(committed + 1, lease.segs, lease.segEnd, s.hint),
    completed: s.completed + (committed - s.committed),
  };
  const release = (next: CursorState): CursorState => ({ ...next, lease: null });
  const markReleased = (): void => valid.forEach((v) => ((results[v.i] as AckItemResult).leaseReleased = true));

  if (!lowest) {
    if (committed >= lease.end) {
      markReleased();
      return { results, next: release({ ...base, retry: 0, redeliveries: 0, lastStart: null }), outcome: 'completed' };
    }
    if (committed === s.committed) return { results, next: null, outcome: 'none' };
    return { results, next: base, outcome: 'partial' };
  }
  markReleased();
  if (lowest.status === 'retry') return { results, next: release(base), outcome: 'retry' };
  if (lowest.status === 'failed' && s.retry < lease.rl)
    return {
      results,
      next: release({ ...base, retry: s.retry + 1, heldUntil: lease.rd ? ctx.now + lease.rd : 0 }),
      outcome: 'failed',
    };

  // Budget spent (or dlq): the head un-acked message leaves the lane.
  const poison = committed + 1;
  const passed: CursorState = {
    ...base,
    committed: poison,
    lease: null,
    retry: 0,
    redeliveries: 0,
    lastStart: null,
    hint: hintFor(poison + 1, lease.segs, lease.segEnd, null),
  };
  (results[lowest.i] as AckItemResult).dlq = lease.dlq;
  if (!lease.dlq)
    return { results, next: { ...passed, dropped: s.dropped + 1 }, outcome: 'dropped', drop: { offset: poison } };
  const error =
    nonEmpty(lowest.it.error) ??
    explicit.map((v) => nonEmpty(v.it.error)).find((e) => e !== undefined) ??
    valid.map((v) => nonEmpty(v.it.error)).find((e) => e !== undefined) ??
    DEFAULT_DLQ_ERROR;
  return {
    results,
    next: { ...passed, deadLettered: s.deadLettered + 1 },
    outcome: 'dead-lettered',
    file: { offset: poison, error, retryCount: s.retry },
  };
}

const nonEmpty = (s: string | null | undefined): string | undefined =>
  typeof s === 'string' && s.length > 0 ? s : undefined;

/** Dead-lettering is on when either flag is (both default true); both off means an exhausted failure drops the message. */
export const dlqEnabled = (o: { deadLetterQueue: boolean; dlqAfterMaxRetries: boolean }): boolean =>
  o.deadLetterQueue || o.dlqAfterMaxRetries;

// ---------------------------------------------------------------------- extend

/**
 * Renewal (docs/LEASES.md, "A lane, its cursor and its lease"): a live lease moves to the later
 * of its expiry and now + seconds; it is never shortened, and an expired one is not revived.
 */
export function planExtend(
  s: CursorState,
  leaseId: string,
  now: number,
  seconds: number,
): { renewed: false } | { renewed: true; next: CursorState; exp: number } {
  const lease = s.lease;
  if (!isLive(lease, now) || lease.id !== leaseId) return { renewed: false };
  const exp = Math.max(lease.exp, now + seconds * 1000);
  return { renewed: true, exp, next: { ...s, lease: { ...lease, exp } } };
}

// ---------------------------------------------------------------------- seek

/**
 * A seek: the group's lease on the lane goes and the cursor is set, so the next delivery is
 * `committed + 1`. The budget and redelivery state start over.
 */
export function applySeek(s: CursorState, committed: number, hint: number | null): CursorState {
  return { ...s, committed, lease: null, retry: 0, redeliveries: 0, lastStart: null, hint, heldUntil: 0 };
}

// ---------------------------------------------------------------- subscription

/**
 * Where a lease group starts on a partition it has never read (docs/LEASES.md, "Consumer groups
 * and subscriptions").
 */
export interface SubscriptionSpec {
  mode: 'all' | 'new' | 'from';
  /** Epoch ms: for `new`, the registration time; for `from`, the given instant. */
  from: number | null;
}

/**
 * The subscription a first pop records, from Queen's parameters: `subscriptionFrom=now`,
 * `subscriptionMode=new` or `new-only` → new (from now); `subscriptionFrom=<ISO-8601>` → from
 * that instant; anything else (`all`, empty, `from_beginning`, unknown) → all.
 */
export function parseSubscription(mode: string | undefined, from: string | undefined, now: number): SubscriptionSpec {
  const f = from?.trim();
  if (f) {
    if (f.toLowerCase() === 'now') return { mode: 'new', from: now };
    if (/^\d{4}-\d\d-\d\d/.test(f)) {
      const t = Date.parse(f);
      if (Number.isFinite(t)) return { mode: 'from', from: t };
    }
  }
  const m = mode?.trim().toLowerCase();
  if (m === 'new' || m === 'new-only') return { mode: 'new', from: now };
  return { mode: 'all', from: null };
}

/**
 * Where a cursor row that does not exist yet starts. `all` (and queue mode): before the
 * oldest retained message. `new` and `from`: at the first message committed at or after the
 * stored instant (`core/time-seek.ts`); a partition created at or after that instant has
 * nothing before it.
 */
export function startRule(
  sub: SubscriptionSpec,
  queueMode: boolean,
  partitionCreatedAt: number,
): { kind: 'head' } | { kind: 'before'; at: number } {
  if (queueMode || sub.mode === 'all' || sub.from === null) return { kind: 'head' };
  if (partitionCreatedAt >= sub.from) return { kind: 'head' };
  return { kind: 'before', at: sub.from };
}

// ------------------------------------------------------------- group progress

/**
 * Per-group progress of one message (docs/LEASES.md, "Consumer groups and subscriptions"): a
 * group has consumed offset N once its cursor has passed it (`committed >= N`); a live lease
 * covering N means it is being processed. The summary is `completed` only when every lease
 * group of the queue has passed the message, `processing` while some group holds it under a
 * live lease, else `pending`. A group with no cursor row on the partition (`state` undefined)
 * has consumed nothing there.
 */
export function messageProgress(
  lanes: readonly { group: string; state: CursorState | undefined }[],
  offset: number,
  now: number,
): {
  consumerGroups: { name: string; consumed: boolean; leaseExpiresAt: number | null }[];
  status: 'completed' | 'processing' | 'pending';
} {
  const consumerGroups = lanes.map(({ group, state }) => {
    const held =
      state && isLive(state.lease, now) && offset >= state.lease.start && offset <= state.lease.end
        ? state.lease.exp
        : null;
    return { name: group, consumed: state !== undefined && state.committed >= offset, leaseExpiresAt: held };
  });
  const status =
    consumerGroups.length > 0 && consumerGroups.every((g) => g.consumed)
      ? 'completed'
      : consumerGroups.some((g) => g.leaseExpiresAt !== null)
        ? 'processing'
        : 'pending';
  return { consumerGroups, status };
}

/**
 * A lane's lag (the lag views of docs/LEASES.md, "Consumer groups"): messages from the group's
 * next wanted offset to the partition's end, and the age of the oldest of them. `oldest` is the
 * segment holding the next wanted offset, or the first one after it when retention removed it
 * (undefined: nothing is retained there, so nothing is owed).
 */
export function laneLag(a: {
  committed: number;
  next: number;
  oldest: { base: number; at: number } | undefined;
  now: number;
}): { lagMessages: number; lagSeconds: number } {
  if (a.next - 1 - a.committed <= 0 || !a.oldest) return { lagMessages: 0, lagSeconds: 0 };
  return {
    lagMessages: Math.max(0, a.next - Math.max(a.committed + 1, a.oldest.base)),
    lagSeconds: Math.max(0, Math.floor((a.now - a.oldest.at) / 1000)),
  };
}

// -------------------------------------------------------------------- lease ids

/** What a lease id names: the group and every partition one pop claimed. */
export interface LeaseRef {
  group: string;
  partitionIds: string[];
}

const QUEUE_MODE_TAG = '';

/**
 * Mints a lease id that names what it holds, so an extend finds its rows with one read and
 * no index: base64url of [1][16-byte nonce][group length][group][16 bytes per partition id].
 * Partition ids are UUIDs. URL-path safe (the client does not percent-encode lease paths).
 */
export function encodeLeaseId(ref: LeaseRef, nonce: Uint8Array, queueModeGroup: string): string {
  const group = Buffer.from(ref.group === queueModeGroup ? QUEUE_MODE_TAG : ref.group, 'utf8');
  if (group.length > 255) throw invalid('consumer group name too long for a lease id');
  const parts = ref.partitionIds.map((p) => {
    const hex = p.replace(/-/g, '');
    if (!/^[0-9a-f]{32}$/i.test(hex)) throw new Error(`partition id ${p} is not a UUID`);
    return Buffer.from(hex, 'hex');
  });
  return Buffer.concat([
    Buffer.from([1]),
    Buffer.from(nonce.subarray(0, 16)),
    Buffer.from([group.length]),
    group,
    ...parts,
  ]).toString('base64url');
}

/** The group and partitions a lease id names, or undefined when it is not one of ours. */
export function decodeLeaseId(id: string, queueModeGroup: string): LeaseRef | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) return undefined;
  const b = Buffer.from(id, 'base64url');
  if (b.length < 18 || b[0] !== 1) return undefined;
  const glen = b[17] as number;
  const rest = b.length - 18 - glen;
  if (rest < 16 || rest % 16 !== 0) return undefined;
  const gtext = b.subarray(18, 18 + glen).toString('utf8');
  const partitionIds: string[] = [];
  for (let o = 18 + glen; o < b.length; o += 16) {
    const h = b.subarray(o, o + 16).toString('hex');
    partitionIds.push(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`);
  }
  return { group: gtext === QUEUE_MODE_TAG ? queueModeGroup : gtext, partitionIds };
}
