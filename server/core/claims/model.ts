import { SluiceError } from '../errors.js';

/**
 * Record claims (the Felix design): a consumer group read as a shared work queue on one
 * partition. `core/claims/` is the whole semantics, as PURE state transitions with an explicit
 * `now`: no I/O, no clocks, no randomness; this module holds the model, its limits and how to
 * read it. `service/claims/claim-service.ts` loads a {@link GroupView} from storage, calls one
 * of the transitions and writes the returned {@link Changes} in one guarded transaction.
 *
 * The model, per (partition, group):
 * - `committed`: every offset below it is finished (acked, dead-lettered, or skipped). It only
 *   advances over a contiguous run of finished records, and only a seek moves it back.
 * - `frontier`: the next offset never handed out in the current epoch. `high`: the highest
 *   frontier ever, so offsets at or past it were never handed out at all.
 * - Between `committed` and `frontier`, offsets live in *claim batches*: one item per poll
 *   hand-out (small consecutive hand-outs are merged), keyed by the first offset, holding only
 *   the records that are not finished yet. An offset in that range with no record is finished.
 *   A batch whose last record finishes is deleted in the same write.
 * - A record is `c` (claimed until `until`), `d` (delayed nack, owed at `until`) or `o`
 *   (owed). Expiry is `until <= now`: a lapsed claim is owed again, with no write needed.
 * - Redriven dead letters live in single-record *redrive* items (they may sit below the
 *   cursor: a redrive never rewinds it).
 * - A seek bumps `epoch`: batches of another epoch are garbage (ignored, deleted lazily);
 *   redrive items survive a seek, but a claim on one made before the seek (its `stamp` is
 *   below `seekStamp`) is void.
 * - Every write bumps the state item's version; a claim carries that version as its `stamp`,
 *   which orders claims against seeks and reclaims without trusting any clock.
 *
 * @example
 * ```ts
 * const req = { max: 10, visibilityMs: 30_000, principal: 'p', reclaim: false };
 * const plan = planPoll(view, member, req, now, limits, { inc: randomInc() });
 * // ...read plan.candidates and plan.newMax records from the log...
 * const { changes, records } = completePoll(view, plan, reads, req, now);
 * ```
 */

/** One poll hands out at most this many records, whatever `max` asks for. */
export const MAX_POLL_RECORDS = 1000;
/** One poll stops adding records once about this much payload is collected. */
export const MAX_POLL_BYTES = 4 * 1024 * 1024;
/** Consecutive hand-outs are merged into one batch item while it spans at most this many offsets. */
export const MERGE_SPAN = 128;
/** Most claim items (batches, redrive items) one call rewrites: keeps a write inside one transaction. */
export const MAX_TOUCHED_ITEMS = 60;
/** Most records one poll dead-letters for running out of attempts (the rest on the next poll). */
export const MAX_DEAD_PER_CALL = 25;
/** Most garbage items (of a voided epoch or a deleted incarnation) one call deletes on the side. */
export const MAX_GARBAGE_PER_CALL = 5;
/** Sessions remembered per member name (the oldest first-seen ones are forgotten first). */
export const MAX_SESSIONS_PER_MEMBER = 64;
/** Most offsets one ack call may carry: the wire's limit (the claim ack schema checks it). */
export { MAX_ACK_OFFSETS } from '../../../contract/limits.js';

/** Per-queue claim settings (queue options, or the service-wide defaults). */
export interface ClaimLimits {
  visibilityTimeoutMs: number;
  maxAttempts: number;
  maxInFlight: number;
  maxVisibilityMs: number;
}

/** Who holds a claim: a named member's session, scoped to the authenticated principal. */
export interface Holder {
  principal: string;
  consumer: string;
  session: string;
  /** The session's order among the name's sessions (first seen = lower). */
  seq: number;
}

export type ClaimRecordStatus = 'c' | 'd' | 'o';

/** One record that is not finished yet. */
export interface ClaimRecord {
  offset: number;
  /** Deliveries so far (a claim counts the delivery it holds). */
  attempts: number;
  /** `c` claimed until `until`, `d` delayed until `until`, `o` owed. */
  status: ClaimRecordStatus;
  until: number;
  /** Index into the item's holders, or -1 for an anonymous claim. */
  holder: number;
  /** State version of the write that made the current claim (0 when never claimed). */
  stamp: number;
}

/** A claim batch (`B`) or a redrive item (`R`). */
export interface ClaimItem {
  kind: 'B' | 'R';
  /** First offset the item covers (its key). */
  first: number;
  /** Offsets covered: [first, first + count). */
  count: number;
  /** Offsets directly below `first` settled without delivery (retention), for `skippedBefore`. */
  skip: number;
  /** The group incarnation and (for batches) epoch it belongs to. */
  inc: number;
  epoch: number;
  holders: Holder[];
  /** Unfinished records, ascending by offset. */
  records: ClaimRecord[];
  /** Stored version; undefined for an item not written yet. */
  ver: number | undefined;
}

/** The group's position on one partition. */
export interface GroupState {
  /** Random per creation: items of a deleted-and-recreated group are told apart by it. */
  inc: number;
  epoch: number;
  committed: number;
  frontier: number;
  high: number;
  /** Dead letters listed for this group on this partition. */
  dead: number;
  /** State version written by the last seek: claims stamped below it are void. */
  seekStamp: number;
  createdAt: number;
}

/** A member name's sessions, per (partition, group, principal, consumer). */
export interface Member {
  inc: number;
  /** Next session order number. */
  next: number;
  /** Order of the last session that reclaimed (0: none). */
  reclaimSeq: number;
  /** State version written by that reclaim: claims stamped below it are reserved for it. */
  reclaimStamp: number;
  /** Session token -> order, for the sessions seen most recently. */
  sessions: Record<string, number>;
  ver: number | undefined;
}

/** An item another epoch or incarnation left behind: ignored, deleted on the side. */
export interface Garbage {
  kind: 'B' | 'R';
  first: number;
  ver: number;
}

/** Everything one call needs to know about a (partition, group), as read from storage. */
export interface GroupView {
  state: GroupState | undefined;
  stateVer: number | undefined;
  /** Live items of the current incarnation (and epoch, for batches), ascending by `first`. */
  items: ClaimItem[];
  garbage: Garbage[];
}

/** A dead-letter pointer: the record stays in the log at `offset`. */
export interface DeadLetter {
  offset: number;
  attempts: number;
  at: number;
  reason: 'max-attempts' | 'consumer';
}

/** What one call writes: all of it in one transaction, every part guarded. */
export interface Changes {
  /** The new state (always written, version bumped; guarded by `GroupView.stateVer`). */
  state: GroupState;
  /** Items to put (guarded by their `ver`, or put-if-absent / over garbage). */
  puts: ClaimItem[];
  /** Items to delete (guarded by their `ver`). */
  deletes: ClaimItem[];
  garbageDeletes: Garbage[];
  deadPuts: DeadLetter[];
  deadDeletes: number[];
  member?: Member | undefined;
}

/** Randomness a pure function cannot make up itself: the caller draws it. */
export interface Randomness {
  /** A random incarnation id for a group created by this call. */
  inc: number;
}

// ------------------------------------------------------------------ reading

export type Effective = 'claimed' | 'delayed' | 'owed' | 'voided';

/** What a record is at `now`: lapsed claims and passed delays are owed. */
export function effective(state: GroupState, item: ClaimItem, record: ClaimRecord, now: number): Effective {
  if (record.status === 'c' && item.kind === 'R' && record.stamp < state.seekStamp) return 'voided';
  if (record.status === 'c') return record.until > now ? 'claimed' : 'owed';
  if (record.status === 'd') return record.until > now ? 'delayed' : 'owed';
  return 'owed';
}

/** The position implied by the items: the lowest unfinished batch record, or the frontier. */
export function computeCommitted(state: GroupState, items: readonly ClaimItem[]): number {
  let c = state.frontier;
  for (const it of items) {
    if (it.kind !== 'B') continue;
    const r = it.records[0];
    if (r && r.offset < c) c = r.offset;
  }
  return c;
}

export interface GroupCounts {
  committed: number;
  frontier: number;
  inFlight: number;
  owed: number;
  delayed: number;
  deadLetters: number;
}

/** What `GET G` reports (tail and lag are added by the service). */
export function describe(view: GroupView, now: number): GroupCounts {
  const s = view.state;
  if (!s)
    throw new SluiceError(
      'not_found',
      'this group has no state on this partition: it was never created or polled here (or it was deleted)',
      { missing: 'group' },
    );
  let inFlight = 0;
  let owed = 0;
  let delayed = 0;
  for (const it of view.items) {
    for (const r of it.records) {
      const e = effective(s, it, r, now);
      if (e === 'claimed') inFlight++;
      else if (e === 'delayed') {
        inFlight++;
        delayed++;
      } else owed++;
    }
  }
  return { committed: s.committed, frontier: s.frontier, inFlight, owed, delayed, deadLetters: s.dead };
}

/** A fresh group starting at `offset`. */
export function initialState(offset: number, now: number, random: Randomness): GroupState {
  return {
    inc: random.inc,
    epoch: 1,
    committed: offset,
    frontier: offset,
    high: offset,
    dead: 0,
    seekStamp: 0,
    createdAt: now,
  };
}
