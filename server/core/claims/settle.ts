import { SluiceError } from '../errors.js';
import { Draft, absentKind, neverHandedOut, requireState, staleSeek } from './draft.js';
import { MAX_TOUCHED_ITEMS, effective } from './model.js';
import type { Changes, ClaimItem, ClaimLimits, ClaimRecord, DeadLetter, GroupState, GroupView } from './model.js';

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
  const plan: { offset: number; hits: { item: ClaimItem; record: ClaimRecord }[] }[] = [];
  for (const offset of unique) {
    const hits = d.at(offset);
    if (hits.length === 0) {
      const k = absentKind(state, offset);
      if (k === 'never') throw neverHandedOut(offset);
      if (k === 'stale') stale.push(offset);
      continue;
    }
    if (hits.every((h) => effective(state, h.item, h.record, now) === 'voided')) stale.push(offset);
    else plan.push({ offset, hits });
  }
  if (stale.length > 0) {
    throw new SluiceError(
      'stale_claim',
      `offset${stale.length > 1 ? 's' : ''} ` +
        `${stale.slice(0, 10).join(', ')}${stale.length > 10 ? ', ...' : ''} ` +
        `${stale.length > 1 ? 'were' : 'was'} handed out before a seek voided the claim; the group owes ` +
        `${stale.length > 1 ? 'them' : 'it'} again. Nothing in this call was acknowledged`,
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
    for (const h of p.hits) d.remove(h.item, h.record);
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
): { item: ClaimItem; record: ClaimRecord }[] {
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
  const notVoided = hits.filter((h) => effective(state, h.item, h.record, now) !== 'voided');
  if (notVoided.length === 0) throw staleSeek(offset);
  // A redriven record not handed out since (attempts 0) has no delivery anyone could hold:
  // handing it back or giving up on it would park it (a delayed nack takes an in-flight slot
  // nobody was granted) or list it again without a delivery. It is owed; a poll hands it out.
  const live = notVoided.filter((h) => h.record.attempts > 0);
  if (live.length === 0) {
    throw new SluiceError(
      'stale_claim',
      `offset ${offset} was redriven and has not been handed out since: no delivery of it is current, so it cannot be ${what}`,
      { offset, attempts: 0 },
    );
  }
  if (attempts === undefined) return live;
  const mine = live.filter((h) => h.record.attempts === attempts);
  if (mine.length === 0) {
    const cur = live[0]?.record.attempts;
    throw new SluiceError(
      'stale_claim',
      `offset ${offset}: the delivery with attempts=${attempts} is no longer current (the record is ` +
        `on attempt ${cur}: its claim lapsed and it went out again), so it cannot be ${what}`,
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
  /**
   * The delivery never reached a consumer (a target that was throttled or could not be
   * reached, docs/TARGETS.md): its attempt is given back, so it does not count toward
   * `maxAttempts`. The next delivery carries the same attempt number again.
   */
  refund?: boolean | undefined;
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
  // Delays are capped at maxVisibilityMs, and the answer says what was granted (docs/CLAIMS.md, "Limits").
  const delayMs = Math.min(req.delayMs ?? 0, limits.maxVisibilityMs);
  const d = new Draft(view);
  for (const { item, record } of named(d, state, req.offset, req.attempts, now, 'handed back')) {
    if (delayMs > 0) {
      record.status = 'd';
      record.until = now + delayMs;
    } else {
      record.status = 'o';
      record.until = 0;
    }
    // Given back, it is owed as it was before this delivery (attempts 0: never handed out).
    if (req.refund && record.attempts > 0) record.attempts--;
    record.holder = -1;
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
  const claims = hits.filter((h) => h.record.status === 'c');
  if (claims.length === 0) {
    const s = hits[0]?.record.status === 'd' ? 'waiting out a delayed nack' : 'handed back to the group';
    throw new SluiceError(
      'stale_claim',
      `offset ${req.offset} is ${s}; nobody holds it, so there is no claim to extend`,
      { offset: req.offset },
    );
  }
  for (const { item, record } of claims) {
    record.until = now + extendMs;
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
  const attempts = Math.max(...hits.map((h) => h.record.attempts));
  for (const h of d.at(req.offset)) d.remove(h.item, h.record);
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
      records: [{ offset, attempts: 0, status: 'o', until: 0, holder: -1, stamp: 0 }],
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
