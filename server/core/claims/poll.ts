import { Draft } from './draft.js';
import {
  MAX_DEAD_PER_CALL,
  MAX_POLL_RECORDS,
  MAX_SESSIONS_PER_MEMBER,
  MAX_TOUCHED_ITEMS,
  MERGE_SPAN,
  effective,
  initialState,
} from './model.js';
import type {
  Changes,
  ClaimItem,
  ClaimLimits,
  ClaimRecord,
  DeadLetter,
  GroupState,
  GroupView,
  Holder,
  Member,
  Randomness,
} from './model.js';

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

/** True when `record` is reserved for the member's last reclaiming session, which `seq` is. */
function reservedFor(
  item: ClaimItem,
  record: ClaimRecord,
  member: Member,
  principal: string,
  consumer: string,
  seq: number,
): boolean {
  if (seq === 0 || seq !== member.reclaimSeq || record.holder < 0) return false;
  const h = item.holders[record.holder];
  return (
    !!h &&
    h.principal === principal &&
    h.consumer === consumer &&
    h.seq < member.reclaimSeq &&
    record.stamp < member.reclaimStamp
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
  random: Randomness,
): PollPlan {
  const state = view.state ?? initialState(0, now, random);
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

  const reserved: { item: ClaimItem; record: ClaimRecord }[] = [];
  const owed: { item: ClaimItem; record: ClaimRecord }[] = [];
  const dead: { item: ClaimItem; record: ClaimRecord }[] = [];
  let inFlight = 0;
  for (const item of view.items) {
    for (const record of item.records) {
      const e = effective(state, item, record, now);
      if (e === 'claimed') {
        inFlight++;
        // A reserved record that already had maxAttempts deliveries is not handed back (that
        // would be one delivery past the bound, and a member crash-looping on a poison record
        // would reclaim it for ever): it waits out its claim and is then dead-lettered.
        if (
          m &&
          req.consumer !== undefined &&
          record.attempts < limits.maxAttempts &&
          reservedFor(item, record, m, req.principal, req.consumer, seq)
        )
          reserved.push({ item, record });
      } else if (e === 'delayed') inFlight++;
      else if (record.attempts >= limits.maxAttempts) dead.push({ item, record });
      else owed.push({ item, record });
    }
  }
  owed.sort((a, b) => a.record.offset - b.record.offset);
  reserved.sort((a, b) => a.record.offset - b.record.offset);

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
    deadLetter.push({ offset: d.record.offset, attempts: d.record.attempts });
  }

  const candidates: number[] = [];
  const chosen = new Set<number>();
  for (const r of reserved) {
    if (candidates.length >= max || !fits(r.item)) break;
    if (chosen.has(r.record.offset)) continue;
    chosen.add(r.record.offset);
    candidates.push(r.record.offset);
  }
  const capacity = limits.maxInFlight - inFlight;
  const capped = capacity <= 0 && candidates.length === 0;
  let owedLeft = owed.length;
  let room = Math.max(0, capacity);
  for (const o of owed) {
    if (chosen.has(o.record.offset)) {
      owedLeft--;
      continue;
    }
    if (candidates.length >= max || room <= 0 || !fits(o.item)) break;
    chosen.add(o.record.offset);
    candidates.push(o.record.offset);
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
  const claim = (item: ClaimItem, record: ClaimRecord): void => {
    record.status = 'c';
    record.attempts++;
    record.until = until;
    record.holder = d.holderIndex(item, holder);
    record.stamp = d.stamp;
    d.touch(item);
  };
  for (const offset of reads.delivered) {
    // Usually one record; after a seek back over a redriven offset, its batch record too.
    const hits = d.at(offset).filter((h) => effective(d.state, h.item, h.record, now) !== 'delayed');
    if (hits.length === 0) throw new Error(`poll plan names offset ${offset}, which has no record to hand out`);
    for (const h of hits) claim(h.item, h.record);
    const first = hits[0] as { item: ClaimItem; record: ClaimRecord };
    records.push({
      offset,
      attempts: Math.max(...hits.map((h) => h.record.attempts)),
      skippedBefore: offset === first.item.first ? first.item.skip : 0,
    });
  }
  for (const offset of reads.missing) for (const hit of d.at(offset)) d.remove(hit.item, hit.record);

  const deadPuts: DeadLetter[] = [];
  for (const x of plan.deadLetter) {
    for (const hit of d.at(x.offset)) d.remove(hit.item, hit.record);
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
        records: [],
        ver: undefined,
      };
      const g = d.garbage.find((x) => x.kind === 'B' && x.first === item.first);
      if (g) item.ver = g.ver; // overwrite what a voided epoch left at this key
      d.items.push(item);
    }
    const h = d.holderIndex(item, holder);
    for (let i = 0; i < reads.newCount; i++) {
      const offset = reads.newFirst + i;
      item.records.push({ offset, attempts: 1, status: 'c', until, holder: h, stamp: d.stamp });
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
