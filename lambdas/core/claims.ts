import { SluiceError, invalid } from './errors.js';

/**
 * Record claims (the Felix design): a consumer group read as a shared work queue on one
 * partition. This module is the whole semantics, as PURE state transitions with an explicit
 * `now`: no I/O, no clocks, no randomness. `service/claim-service.ts` loads a
 * {@link GroupView} from storage, calls one of these functions and writes the returned
 * {@link Changes} in one guarded transaction.
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
 * const plan = planPoll(view, member, { max: 10, visibilityMs: 30_000, principal: 'p', reclaim: false }, now, limits);
 * // ...read plan.candidates and plan.newMax records from the log...
 * const { changes, records } = completePoll(view, member, plan, reads, now);
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
/** Most offsets one ack call may carry. */
export const MAX_ACK_OFFSETS = 1000;

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

export type RecStatus = 'c' | 'd' | 'o';

/** One record that is not finished yet. */
export interface Rec {
  offset: number;
  /** Deliveries so far (a claim counts the delivery it holds). */
  attempts: number;
  /** `c` claimed until `until`, `d` delayed until `until`, `o` owed. */
  status: RecStatus;
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
  recs: Rec[];
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

/** Seeds a pure function cannot make up itself (randomness comes from the caller). */
export interface Seeds {
  /** A random incarnation id for a group created by this call. */
  inc: number;
}

// ------------------------------------------------------------------ reading

export type Effective = 'claimed' | 'delayed' | 'owed' | 'voided';

/** What a record is at `now`: lapsed claims and passed delays are owed. */
export function effective(state: GroupState, item: ClaimItem, rec: Rec, now: number): Effective {
  if (rec.status === 'c' && item.kind === 'R' && rec.stamp < state.seekStamp) return 'voided';
  if (rec.status === 'c') return rec.until > now ? 'claimed' : 'owed';
  if (rec.status === 'd') return rec.until > now ? 'delayed' : 'owed';
  return 'owed';
}

/** The position implied by the items: the lowest unfinished batch record, or the frontier. */
export function computeCommitted(state: GroupState, items: readonly ClaimItem[]): number {
  let c = state.frontier;
  for (const it of items) {
    if (it.kind !== 'B') continue;
    const r = it.recs[0];
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
    );
  let inFlight = 0;
  let owed = 0;
  let delayed = 0;
  for (const it of view.items) {
    for (const r of it.recs) {
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
export function initialState(offset: number, now: number, seeds: Seeds): GroupState {
  return {
    inc: seeds.inc,
    epoch: 1,
    committed: offset,
    frontier: offset,
    high: offset,
    dead: 0,
    seekStamp: 0,
    createdAt: now,
  };
}

// ------------------------------------------------------------ working copy

/** A mutable copy of a view that tracks which items a call changed. */
class Draft {
  readonly state: GroupState;
  readonly items: ClaimItem[];
  readonly touched = new Set<ClaimItem>();
  readonly created = new Set<ClaimItem>();
  readonly stamp: number;
  readonly garbage: Garbage[];

  constructor(view: GroupView, state?: GroupState) {
    this.state = { ...(state ?? (view.state as GroupState)) };
    this.items = view.items.map((it) => ({ ...it, holders: [...it.holders], recs: it.recs.map((r) => ({ ...r })) }));
    this.stamp = (view.stateVer ?? 0) + 1;
    this.garbage = view.garbage;
  }

  /** Every record at `offset` (a batch record and, rarely, a redrive record after a seek back). */
  at(offset: number): { item: ClaimItem; rec: Rec }[] {
    const out: { item: ClaimItem; rec: Rec }[] = [];
    for (const item of this.items) {
      if (offset < item.first || offset >= item.first + item.count) continue;
      const rec = item.recs.find((r) => r.offset === offset);
      if (rec) out.push({ item, rec });
    }
    return out;
  }

  touch(item: ClaimItem): void {
    this.touched.add(item);
  }

  remove(item: ClaimItem, rec: Rec): void {
    item.recs = item.recs.filter((r) => r !== rec);
    this.touch(item);
  }

  holderIndex(item: ClaimItem, h: Holder | undefined): number {
    if (!h) return -1;
    const i = item.holders.findIndex(
      (x) => x.principal === h.principal && x.consumer === h.consumer && x.session === h.session && x.seq === h.seq,
    );
    if (i >= 0) return i;
    item.holders.push(h);
    return item.holders.length - 1;
  }

  /** The write: touched items put (or deleted once empty), the state with its cursor recomputed. */
  changes(
    extra: {
      deadPuts?: DeadLetter[];
      deadDeletes?: number[];
      member?: Member | undefined;
      garbageBudget?: number;
    } = {},
  ): Changes {
    const live = this.items.filter((it) => it.recs.length > 0 || !this.touched.has(it));
    this.state.committed = computeCommitted(this.state, live);
    const puts: ClaimItem[] = [];
    const deletes: ClaimItem[] = [];
    for (const it of this.touched) {
      if (it.recs.length > 0) puts.push(compactHolders(it));
      else if (!this.created.has(it)) deletes.push(it);
    }
    const busy = new Set([...puts, ...deletes].map((i) => `${i.kind}${i.first}`));
    const garbageDeletes = this.garbage
      .filter((g) => !busy.has(`${g.kind}${g.first}`))
      .slice(0, extra.garbageBudget ?? MAX_GARBAGE_PER_CALL);
    return {
      state: this.state,
      puts,
      deletes,
      garbageDeletes,
      deadPuts: extra.deadPuts ?? [],
      deadDeletes: extra.deadDeletes ?? [],
      member: extra.member,
    };
  }
}

/** Drops holders no record points at any more (an item's holder list never grows without bound). */
function compactHolders(item: ClaimItem): ClaimItem {
  const used = new Set(item.recs.map((r) => r.holder).filter((h) => h >= 0));
  if (used.size === item.holders.length) return item;
  const map = new Map<number, number>();
  const holders: Holder[] = [];
  for (const i of [...used].sort((a, b) => a - b)) {
    map.set(i, holders.length);
    holders.push(item.holders[i] as Holder);
  }
  return {
    ...item,
    holders,
    recs: item.recs.map((r) => ({ ...r, holder: r.holder >= 0 ? (map.get(r.holder) as number) : -1 })),
  };
}

function requireState(view: GroupView, what: string): GroupState {
  if (!view.state) throw invalid(`cannot ${what}: this group has handed out nothing on this partition yet`);
  return view.state;
}

/**
 * Classifies an offset a consumer names (ack, nack, extend, dead-letter) that has no record:
 * finished already (a harmless duplicate), handed out only before a seek (stale), or never
 * handed out (invalid).
 */
function absentKind(state: GroupState, offset: number): 'finished' | 'stale' | 'never' {
  if (offset < state.frontier) return 'finished';
  if (offset < state.high) return 'stale';
  return 'never';
}

const staleSeek = (offset: number): SluiceError =>
  new SluiceError(
    'stale_claim',
    `offset ${offset} was handed out before a seek voided its claim; the group owes it again and will deliver it from its new position`,
    { offset },
  );

const neverHandedOut = (offset: number): SluiceError =>
  invalid(
    `offset ${offset} has never been handed out to this group (it is at or past the group's frontier, or past the partition's tail); acknowledging a record that was not delivered would skip it`,
    { offset },
  );

// ---------------------------------------------------------------- members

/**
 * The member after `session` was seen: a session not seen before is newer than every session
 * seen so far. Returns the session's order and the member (changed or not).
 */
export function seeSession(
  member: Member | undefined,
  inc: number,
  session: string | undefined,
): { member: Member; seq: number; changed: boolean } {
  let m: Member =
    member && member.inc === inc
      ? { ...member, sessions: { ...member.sessions } }
      : { inc, next: 1, reclaimSeq: 0, reclaimStamp: 0, sessions: {}, ver: member?.ver };
  if (session === undefined) return { member: m, seq: 0, changed: false };
  let changed = m.inc !== member?.inc;
  const known = m.sessions[session];
  if (known !== undefined) return { member: m, seq: known, changed };
  const seq = m.next;
  m = { ...m, next: seq + 1, sessions: { ...m.sessions, [session]: seq } };
  const entries = Object.entries(m.sessions);
  if (entries.length > MAX_SESSIONS_PER_MEMBER) {
    entries.sort((a, b) => a[1] - b[1]);
    m.sessions = Object.fromEntries(entries.slice(entries.length - MAX_SESSIONS_PER_MEMBER));
  }
  changed = true;
  return { member: m, seq, changed };
}

/** True when `rec` is reserved for the member's last reclaiming session, which `seq` is. */
function reservedFor(
  item: ClaimItem,
  rec: Rec,
  member: Member,
  principal: string,
  consumer: string,
  seq: number,
): boolean {
  if (seq === 0 || seq !== member.reclaimSeq || rec.holder < 0) return false;
  const h = item.holders[rec.holder];
  return (
    !!h &&
    h.principal === principal &&
    h.consumer === consumer &&
    h.seq < member.reclaimSeq &&
    rec.stamp < member.reclaimStamp
  );
}

// -------------------------------------------------------------------- poll

export interface PollRequest {
  /** Records wanted (clamped to {@link MAX_POLL_RECORDS}). */
  max: number;
  /** How long this poll's claims stand. */
  visibilityMs: number;
  principal: string;
  consumer?: string | undefined;
  session?: string | undefined;
  reclaim: boolean;
}

export interface PollPlan {
  /** At the in-flight cap with nothing reserved for this session: answer empty. */
  capped: boolean;
  /** Existing records to hand out, in delivery order (reserved first, then owed by offset). */
  candidates: number[];
  /** New offsets that may follow, read from the frontier on (0 when owed records remain). */
  newMax: number;
  /** Where new offsets start. */
  frontier: number;
  /** Owed records out of attempts: dead-lettered by this poll. */
  deadLetter: { offset: number; attempts: number }[];
  /** The member after this poll saw its session (and maybe reclaimed). */
  member: Member | undefined;
  memberChanged: boolean;
  sessionSeq: number;
  reclaimed: boolean;
  /** The state the poll works on (a fresh one when the group had none). */
  state: GroupState;
  createsState: boolean;
}

/**
 * Decides what a poll hands out, before any payload is read: records reserved for this
 * session by its reclaim, then owed records (lapsed claims, nacks, passed delays, redrives)
 * in offset order, then up to `newMax` new offsets. Owed records out of attempts are
 * dead-lettered instead. A poll at the in-flight cap gets nothing new or owed.
 */
export function planPoll(
  view: GroupView,
  member: Member | undefined,
  req: PollRequest,
  now: number,
  limits: ClaimLimits,
  seeds: Seeds,
): PollPlan {
  const state = view.state ?? initialState(0, now, seeds);
  const stamp = (view.stateVer ?? 0) + 1;
  const max = Math.max(0, Math.min(req.max, MAX_POLL_RECORDS));
  let m: Member | undefined;
  let memberChanged = false;
  let seq = 0;
  let reclaimed = false;
  if (req.consumer !== undefined) {
    const seen = seeSession(member, state.inc, req.session);
    m = seen.member;
    seq = seen.seq;
    memberChanged = seen.changed;
    // Only the first reclaiming poll of a session newer than the last reclaimer reclaims.
    if (req.reclaim && seq > 0 && seq > m.reclaimSeq) {
      m = { ...m, reclaimSeq: seq, reclaimStamp: stamp };
      memberChanged = true;
      reclaimed = true;
    }
  }

  const reserved: { item: ClaimItem; rec: Rec }[] = [];
  const owed: { item: ClaimItem; rec: Rec }[] = [];
  const dead: { item: ClaimItem; rec: Rec }[] = [];
  let inFlight = 0;
  for (const item of view.items) {
    for (const rec of item.recs) {
      const e = effective(state, item, rec, now);
      if (e === 'claimed') {
        inFlight++;
        // A reserved record that already had maxAttempts deliveries is not handed back (that
        // would be one delivery past the bound, and a member crash-looping on a poison record
        // would reclaim it for ever): it waits out its claim and is then dead-lettered.
        if (
          m &&
          req.consumer !== undefined &&
          rec.attempts < limits.maxAttempts &&
          reservedFor(item, rec, m, req.principal, req.consumer, seq)
        )
          reserved.push({ item, rec });
      } else if (e === 'delayed') inFlight++;
      else if (rec.attempts >= limits.maxAttempts) dead.push({ item, rec });
      else owed.push({ item, rec });
    }
  }
  owed.sort((a, b) => a.rec.offset - b.rec.offset);
  reserved.sort((a, b) => a.rec.offset - b.rec.offset);

  // Stay inside one transaction: count the items this poll rewrites.
  const touched = new Set<ClaimItem>();
  const fits = (item: ClaimItem): boolean => {
    if (touched.has(item)) return true;
    if (touched.size >= MAX_TOUCHED_ITEMS) return false;
    touched.add(item);
    return true;
  };
  const deadLetter: { offset: number; attempts: number }[] = [];
  for (const d of dead) {
    if (deadLetter.length >= MAX_DEAD_PER_CALL || !fits(d.item)) break;
    deadLetter.push({ offset: d.rec.offset, attempts: d.rec.attempts });
  }

  const candidates: number[] = [];
  const chosen = new Set<number>();
  for (const r of reserved) {
    if (candidates.length >= max || !fits(r.item)) break;
    if (chosen.has(r.rec.offset)) continue;
    chosen.add(r.rec.offset);
    candidates.push(r.rec.offset);
  }
  const capacity = limits.maxInFlight - inFlight;
  const capped = capacity <= 0 && candidates.length === 0;
  let owedLeft = owed.length;
  let room = Math.max(0, capacity);
  for (const o of owed) {
    if (chosen.has(o.rec.offset)) {
      owedLeft--;
      continue;
    }
    if (candidates.length >= max || room <= 0 || !fits(o.item)) break;
    chosen.add(o.rec.offset);
    candidates.push(o.rec.offset);
    owedLeft--;
    room--;
  }
  // Owed records go out before new ones: nothing new while any is left behind.
  const newMax = owedLeft > 0 ? 0 : Math.max(0, Math.min(max - candidates.length, room));
  return {
    capped,
    candidates: capped ? [] : candidates,
    newMax: capped ? 0 : newMax,
    frontier: state.frontier,
    deadLetter,
    member: m,
    memberChanged,
    sessionSeq: seq,
    reclaimed,
    state,
    createsState: !view.state,
  };
}

/** What the service found in the log for a plan. */
export interface PollReads {
  /** Candidates handed out, in delivery order (a prefix of `plan.candidates`: the byte budget may stop early). */
  delivered: number[];
  /** Candidates retention removed from the log: settled without another delivery. */
  missing: number[];
  /** First new offset read (>= plan.frontier; above it when retention removed the offsets between). */
  newFirst: number;
  /** New offsets read: [newFirst, newFirst + newCount). */
  newCount: number;
}

export interface Delivery {
  offset: number;
  attempts: number;
  skippedBefore: number;
}

/**
 * Applies a poll: claims what was delivered (one more attempt each, claimed until
 * `now + visibilityMs`), settles what retention removed, dead-letters what ran out of
 * attempts and advances the frontier over the new records. Returns the write (undefined
 * when nothing changed) and the deliveries in order.
 */
export function completePoll(
  view: GroupView,
  plan: PollPlan,
  reads: PollReads,
  req: PollRequest,
  now: number,
  knownDead: ReadonlySet<number> = new Set(),
): { changes: Changes | undefined; records: Delivery[] } {
  const d = new Draft(view, plan.state);
  const holder: Holder | undefined =
    req.consumer !== undefined
      ? { principal: req.principal, consumer: req.consumer, session: req.session ?? '', seq: plan.sessionSeq }
      : undefined;
  const until = now + req.visibilityMs;
  const records: Delivery[] = [];
  const claim = (item: ClaimItem, rec: Rec): void => {
    rec.status = 'c';
    rec.attempts++;
    rec.until = until;
    rec.holder = d.holderIndex(item, holder);
    rec.stamp = d.stamp;
    d.touch(item);
  };
  for (const offset of reads.delivered) {
    // Usually one record; after a seek back over a redriven offset, its batch record too.
    const hits = d.at(offset).filter((h) => effective(d.state, h.item, h.rec, now) !== 'delayed');
    if (hits.length === 0) throw new Error(`poll plan names offset ${offset}, which has no record to hand out`);
    for (const h of hits) claim(h.item, h.rec);
    const first = hits[0] as { item: ClaimItem; rec: Rec };
    records.push({
      offset,
      attempts: Math.max(...hits.map((h) => h.rec.attempts)),
      skippedBefore: offset === first.item.first ? first.item.skip : 0,
    });
  }
  for (const offset of reads.missing) for (const hit of d.at(offset)) d.remove(hit.item, hit.rec);

  const deadPuts: DeadLetter[] = [];
  for (const x of plan.deadLetter) {
    for (const hit of d.at(x.offset)) d.remove(hit.item, hit.rec);
    if (!knownDead.has(x.offset)) {
      deadPuts.push({ offset: x.offset, attempts: x.attempts, at: now, reason: 'max-attempts' });
      d.state.dead++;
    }
  }

  if (reads.newCount > 0) {
    const s = d.state;
    if (reads.newFirst < s.frontier)
      throw new Error(`new records start at ${reads.newFirst}, below the frontier ${s.frontier}`);
    const skip = reads.newFirst - s.frontier;
    const last = d.items.filter((it) => it.kind === 'B').at(-1);
    let item: ClaimItem;
    if (last && skip === 0 && last.first + last.count === reads.newFirst && last.count + reads.newCount <= MERGE_SPAN) {
      item = last;
      item.count += reads.newCount;
    } else {
      item = {
        kind: 'B',
        first: reads.newFirst,
        count: reads.newCount,
        skip,
        inc: s.inc,
        epoch: s.epoch,
        holders: [],
        recs: [],
        ver: undefined,
      };
      const g = d.garbage.find((x) => x.kind === 'B' && x.first === item.first);
      if (g) item.ver = g.ver; // overwrite what a voided epoch left at this key
      d.items.push(item);
    }
    const h = d.holderIndex(item, holder);
    for (let i = 0; i < reads.newCount; i++) {
      const offset = reads.newFirst + i;
      item.recs.push({ offset, attempts: 1, status: 'c', until, holder: h, stamp: d.stamp });
      records.push({ offset, attempts: 1, skippedBefore: offset === item.first ? item.skip : 0 });
    }
    d.touch(item);
    s.frontier = reads.newFirst + reads.newCount;
    s.high = Math.max(s.high, s.frontier);
  }

  const wrote = d.touched.size > 0 || deadPuts.length > 0 || plan.memberChanged || plan.createsState;
  if (!wrote) return { changes: undefined, records };
  return { changes: d.changes({ deadPuts, member: plan.memberChanged ? plan.member : undefined }), records };
}

// --------------------------------------------------------------- settling

export interface AckResult {
  /** The write, or undefined when every offset was a harmless duplicate. */
  changes: Changes | undefined;
  committed: number;
  /** Records this call finished. */
  acked: number;
  /** Offsets left for another call (the list touched more items than one write may hold). */
  rest: number[];
}

/**
 * Finishes the records at `offsets` (a list, so a batch costs one write). All or nothing:
 * an offset never handed out is `invalid_request`, one whose claim a seek voided is
 * `stale_claim`, and then nothing is written. Offsets already finished are duplicates.
 */
export function ack(view: GroupView, offsets: readonly number[], now: number): AckResult {
  const state = requireState(view, 'acknowledge');
  const d = new Draft(view);
  const unique = [...new Set(offsets)].sort((a, b) => a - b);
  const stale: number[] = [];
  const plan: { offset: number; hits: { item: ClaimItem; rec: Rec }[] }[] = [];
  for (const offset of unique) {
    const hits = d.at(offset);
    if (hits.length === 0) {
      const k = absentKind(state, offset);
      if (k === 'never') throw neverHandedOut(offset);
      if (k === 'stale') stale.push(offset);
      continue;
    }
    if (hits.every((h) => effective(state, h.item, h.rec, now) === 'voided')) stale.push(offset);
    else plan.push({ offset, hits });
  }
  if (stale.length > 0) {
    throw new SluiceError(
      'stale_claim',
      `offset${stale.length > 1 ? 's' : ''} ${stale.slice(0, 10).join(', ')}${stale.length > 10 ? ', ...' : ''} ${stale.length > 1 ? 'were' : 'was'} handed out before a seek voided the claim; the group owes ${stale.length > 1 ? 'them' : 'it'} again. Nothing in this call was acknowledged`,
      { stale },
    );
  }
  const rest: number[] = [];
  let acked = 0;
  for (const p of plan) {
    const items = new Set(p.hits.map((h) => h.item));
    const newItems = [...items].filter((i) => !d.touched.has(i)).length;
    if (d.touched.size + newItems > MAX_TOUCHED_ITEMS) {
      rest.push(p.offset);
      continue;
    }
    for (const h of p.hits) d.remove(h.item, h.rec);
    acked++;
  }
  if (acked === 0) return { changes: undefined, committed: state.committed, acked, rest };
  const changes = d.changes();
  return { changes, committed: changes.state.committed, acked, rest };
}

/** Finds the record a consumer names for nack/extend/dead-letter, or throws the right error. */
function named(
  d: Draft,
  state: GroupState,
  offset: number,
  attempts: number | undefined,
  now: number,
  what: string,
): { item: ClaimItem; rec: Rec }[] {
  const hits = d.at(offset);
  if (hits.length === 0) {
    const k = absentKind(state, offset);
    if (k === 'never') throw neverHandedOut(offset);
    if (k === 'stale') throw staleSeek(offset);
    throw new SluiceError(
      'stale_claim',
      `offset ${offset} is already finished (acknowledged or dead-lettered); it cannot be ${what}`,
      { offset },
    );
  }
  const notVoided = hits.filter((h) => effective(state, h.item, h.rec, now) !== 'voided');
  if (notVoided.length === 0) throw staleSeek(offset);
  // A redriven record not handed out since (attempts 0) has no delivery anyone could hold:
  // handing it back or giving up on it would park it (a delayed nack takes an in-flight slot
  // nobody was granted) or list it again without a delivery. It is owed; a poll hands it out.
  const live = notVoided.filter((h) => h.rec.attempts > 0);
  if (live.length === 0) {
    throw new SluiceError(
      'stale_claim',
      `offset ${offset} was redriven and has not been handed out since: no delivery of it is current, so it cannot be ${what}`,
      { offset, attempts: 0 },
    );
  }
  if (attempts === undefined) return live;
  const mine = live.filter((h) => h.rec.attempts === attempts);
  if (mine.length === 0) {
    const cur = live[0]?.rec.attempts;
    throw new SluiceError(
      'stale_claim',
      `offset ${offset}: the delivery with attempts=${attempts} is no longer current (the record is on attempt ${cur}: its claim lapsed and it went out again), so it cannot be ${what}`,
      { offset, attempts: cur },
    );
  }
  return mine;
}

export interface NackRequest {
  offset: number;
  /** The delivery being handed back (the record's `attempts` when it was received). */
  attempts?: number | undefined;
  /** Owed again only after this long; 0 or absent: at once. */
  delayMs?: number | undefined;
}

/**
 * Hands a record back: owed at once, or (with a delay) owed once the delay passes; a delayed
 * record holds an in-flight slot meanwhile and cannot be extended or reclaimed.
 */
export function nack(
  view: GroupView,
  req: NackRequest,
  now: number,
  limits: ClaimLimits,
): { changes: Changes; delayMs: number } {
  const state = requireState(view, 'nack');
  // The seed caps delays at maxVisibilityMs (and the answer says what was granted).
  const delayMs = Math.min(req.delayMs ?? 0, limits.maxVisibilityMs);
  const d = new Draft(view);
  for (const { item, rec } of named(d, state, req.offset, req.attempts, now, 'handed back')) {
    if (delayMs > 0) {
      rec.status = 'd';
      rec.until = now + delayMs;
    } else {
      rec.status = 'o';
      rec.until = 0;
    }
    rec.holder = -1;
    d.touch(item);
  }
  return { changes: d.changes(), delayMs };
}

/**
 * Extends the claim named by its delivery (`attempts`): it stands for `extendMs` from now.
 * Refused as `stale_claim` once that delivery lapsed and the record went out again, and for
 * a record handed back (nacked, delayed) or voided by a seek.
 */
export function extend(
  view: GroupView,
  req: { offset: number; attempts: number; extendMs: number },
  now: number,
  limits: ClaimLimits,
): { changes: Changes; visibleMs: number } {
  const state = requireState(view, 'extend');
  // Capped at maxVisibilityMs: the claim stands for the granted duration, which is returned.
  const extendMs = Math.min(req.extendMs, limits.maxVisibilityMs);
  const d = new Draft(view);
  const hits = named(d, state, req.offset, req.attempts, now, 'extended');
  const claims = hits.filter((h) => h.rec.status === 'c');
  if (claims.length === 0) {
    const s = hits[0]?.rec.status === 'd' ? 'waiting out a delayed nack' : 'handed back to the group';
    throw new SluiceError(
      'stale_claim',
      `offset ${req.offset} is ${s}; nobody holds it, so there is no claim to extend`,
      { offset: req.offset },
    );
  }
  for (const { item, rec } of claims) {
    rec.until = now + extendMs;
    d.touch(item);
  }
  return { changes: d.changes(), visibleMs: extendMs };
}

/**
 * A consumer gives up on a record: it is listed as a dead letter and finished, exactly as
 * after the attempt bound. A record already finished is refused and not listed.
 */
export function deadLetter(
  view: GroupView,
  req: { offset: number; attempts?: number | undefined },
  now: number,
  knownDead: ReadonlySet<number> = new Set(),
): { changes: Changes; committed: number } {
  const state = requireState(view, 'dead-letter');
  const d = new Draft(view);
  const hits = named(d, state, req.offset, req.attempts, now, 'dead-lettered');
  const attempts = Math.max(...hits.map((h) => h.rec.attempts));
  for (const h of d.at(req.offset)) d.remove(h.item, h.rec);
  const deadPuts: DeadLetter[] = [];
  if (!knownDead.has(req.offset)) {
    deadPuts.push({ offset: req.offset, attempts, at: now, reason: 'consumer' });
    d.state.dead++;
  }
  const changes = d.changes({ deadPuts });
  return { changes, committed: changes.state.committed };
}

/**
 * Puts a dead letter back: its attempts start again and it is owed (durably, before the
 * answer). The cursor is not rewound: a redriven record below it lives in its own item.
 * When a seek back means the group will deliver the offset again anyway, the pointer is
 * simply removed.
 */
export function redrive(view: GroupView, offset: number, now: number): { changes: Changes } {
  void now;
  const state = requireState(view, 'redrive');
  const d = new Draft(view);
  const inPlay = d.at(offset).length > 0 || offset >= state.frontier;
  if (!inPlay) {
    const item: ClaimItem = {
      kind: 'R',
      first: offset,
      count: 1,
      skip: 0,
      inc: state.inc,
      epoch: 0,
      holders: [],
      recs: [{ offset, attempts: 0, status: 'o', until: 0, holder: -1, stamp: 0 }],
      ver: undefined,
    };
    const g = view.garbage.find((x) => x.kind === 'R' && x.first === offset);
    if (g) item.ver = g.ver;
    d.items.push(item);
    d.created.add(item);
    d.touch(item);
  }
  d.state.dead = Math.max(0, d.state.dead - 1);
  return { changes: d.changes({ deadDeletes: [offset] }) };
}

/** Stops tracking a dead letter. */
export function discard(view: GroupView, offset: number): { changes: Changes } {
  requireState(view, 'discard');
  const d = new Draft(view);
  d.state.dead = Math.max(0, d.state.dead - 1);
  return { changes: d.changes({ deadDeletes: [offset] }) };
}

// ------------------------------------------------------------------ admin

/** Where a create or seek puts the group. */
export type Start = 'earliest' | 'latest' | { offset: number };

/** Resolves a start against the partition's retained range [head, tail]. */
export function resolveStart(start: Start, head: number, tail: number): number {
  if (start === 'earliest') return head;
  if (start === 'latest') return tail;
  const o = start.offset;
  if (!Number.isSafeInteger(o) || o < head || o > tail) {
    throw invalid(
      `start offset ${o} is outside the partition's retained range [${head}, ${tail}] (earliest retained, tail)`,
      { earliest: head, latest: tail },
    );
  }
  return o;
}

/** Creates the group at `offset` unless it exists (then it is left alone). */
export function create(
  view: GroupView,
  offset: number,
  now: number,
  seeds: Seeds,
): { changes: Changes | undefined; offset: number; moved: boolean } {
  if (view.state) return { changes: undefined, offset: view.state.committed, moved: false };
  const d = new Draft({ ...view, items: [] }, initialState(offset, now, seeds));
  return { changes: d.changes(), offset, moved: true };
}

/**
 * Moves the group to `offset` (back to replay, forward to skip). Every claim standing is void
 * (its ack becomes `stale_claim`), in-flight batches are dropped, dead letters are kept, and
 * redriven records stay owed (those at or above `offset` as part of the replay, so that each
 * goes out once). A seek back over more owed redriven records than one write can replace is
 * refused as `conflict`.
 */
export function seek(
  view: GroupView,
  offset: number,
  now: number,
): { changes: Changes; offset: number; moved: boolean } {
  void now;
  const state = view.state;
  if (!state)
    throw new SluiceError('not_found', 'this group does not exist on this partition; create it with PUT first');
  const d = new Draft({ ...view, items: view.items.filter((it) => it.kind !== 'B') });
  // A redriven record at or above the new position is handed out again as the group replays
  // from there: its own item would hand the offset out a second time, alongside the replay.
  // It goes, in this write (it stays owed: the replay owes it).
  const superseded = d.items.filter((it) => it.kind === 'R' && it.first >= offset);
  const maxSuperseded = 100 - 1 - MAX_GARBAGE_PER_CALL;
  if (superseded.length > maxSuperseded) {
    throw new SluiceError(
      'conflict',
      `${superseded.length} redriven records at or above offset ${offset} are still owed; a seek back over them replaces at most ${maxSuperseded} at once. Let the group finish some of them, or seek to a higher offset first`,
      { redriven: superseded.length, limit: maxSuperseded },
    );
  }
  for (const it of superseded) for (const r of [...it.recs]) d.remove(it, r);
  d.state.epoch = state.epoch + 1;
  d.state.frontier = offset;
  d.state.high = Math.max(state.high, offset);
  d.state.seekStamp = d.stamp;
  const changes = d.changes();
  // The old epoch's batches are garbage now: delete as many as one transaction holds, and
  // leave the rest for later calls (readers already ignore them: their epoch is old).
  const room = 100 - 1 - changes.garbageDeletes.length - changes.deletes.length;
  changes.deletes.push(...view.items.filter((it) => it.kind === 'B').slice(0, room));
  return { changes, offset, moved: offset !== state.committed };
}

/**
 * What the clean-up pass may delete: only items a seek or a delete left behind. Nothing of
 * the current epoch ever qualifies, however idle the group: a standing claim, a delayed nack
 * or an owed record is state the group still acts on (Felix keeps such a tracker too; its
 * idle eviction only drops memory, and Sluice keeps nothing in memory).
 */
export function sweepable(view: GroupView): Garbage[] {
  return [...view.garbage];
}

// ------------------------------------------------------------ test support

/**
 * Applies a write to a view, as storage would: for tests of the pure core (a view after a
 * call), never used by the service (which reads back from storage).
 */
export function applyChanges(view: GroupView, changes: Changes): GroupView {
  const key = (i: { kind: string; first: number }): string => `${i.kind}${i.first}`;
  const gone = new Set([...changes.deletes, ...changes.garbageDeletes].map(key));
  const put = new Map(changes.puts.map((p) => [key(p), p]));
  const items = view.items.filter((it) => !gone.has(key(it)) && !put.has(key(it)));
  for (const p of changes.puts) items.push({ ...p, ver: (p.ver ?? 0) + 1 });
  items.sort((a, b) => a.first - b.first || a.kind.localeCompare(b.kind));
  const garbage = view.garbage.filter((g) => !gone.has(key(g)) && !put.has(key(g)));
  // Batches of another epoch are garbage after a seek.
  const live = items.filter(
    (it) => it.inc === changes.state.inc && (it.kind === 'R' || it.epoch === changes.state.epoch),
  );
  for (const it of items) if (!live.includes(it)) garbage.push({ kind: it.kind, first: it.first, ver: it.ver ?? 1 });
  return { state: changes.state, stateVer: (view.stateVer ?? 0) + 1, items: live, garbage };
}
