/**
 * Idempotent producers, as pure rules over the partition sequencer's remembered state and `now`
 * (docs/DELIVERY.md). A push may carry a stamp `(producerId, sequence)`; per partition the
 * sequencer item remembers, in a few fixed slots, the last stamp each recent producer committed
 * there: its sequence, how many messages, when, and (beside it) the base offset the take handed
 * out. The take that hands out a push's offsets writes the slot and is refused when a slot
 * already holds this producer at this sequence or later, so recognising a retry costs no write
 * beyond the take the push makes anyway.
 *
 * The rule, per partition: a sequence above the remembered one is a new push; the same
 * sequence is a retry and gets the first attempt's answer (`queued`, its offsets); a lower one
 * is stale (a retry the producer has moved past) and is refused without storing anything.
 */

/** A push's producer stamp: who sent it and its place in that producer's pushes. */
export interface ProducerStamp {
  producerId: string;
  /** Whole number, 0 to 2^53 - 1; rises with every new push of the producer (gaps allowed). */
  sequence: number;
}

/** What a slot remembers of one producer's last push to a partition. */
export interface ProducerEntry {
  producerId: string;
  sequence: number;
  /** Messages the push carried (a retry must carry as many). */
  count: number;
  /**
   * Offsets its take handed out: the messages stored, fewer than `count` when some were
   * duplicates (what a retry closes when the attempt died before writing them).
   */
  taken: number;
  /** Epoch ms of the attempt whose segment the take is for (its message ids derive from it). */
  at: number;
  /**
   * Takes made for this stamp (0 for the first): a push whose offsets were closed before its
   * segment landed takes again with the next number, so that of two racing re-stores one wins.
   */
  attempt: number;
}

/**
 * Producers remembered per partition. Eight entries of at most ~110 bytes (a 64-character id;
 * our client's ids are 15 characters, ~45 bytes an entry) keep the sequencer item near or under
 * 1 KB, so the take stays 1 write unit with every slot in use.
 */
export const PRODUCER_SLOTS = 8;
/** Attribute of slot `i`'s entry on the sequencer item. */
export const slotAttr = (i: number): string => `p${i}`;
/** Attribute of slot `i`'s base offset (the first number its take handed out). */
export const slotBaseAttr = (i: number): string => `b${i}`;
export const SLOT_ATTRS: readonly string[] = Array.from({ length: PRODUCER_SLOTS }, (_, i) => slotAttr(i));

const SEQ_WIDTH = 11; // base 36: 2^53 fits in 11 digits
const AT_WIDTH = 9; // base 36 epoch ms until the year 5188
const ATTEMPT_WIDTH = 2;
/** Most takes one stamp may make (re-stores after closed ranges); past it the push fails. */
export const MAX_STAMP_ATTEMPTS = 36 ** ATTEMPT_WIDTH - 1;

/**
 * A slot's text: `producerId|sequence|count|attempt|at|taken`, the numbers base 36 and sequence,
 * attempt and time fixed-width, so that entries of one producer sort by sequence, then attempt
 * (the take's refusal compares them as strings).
 *
 * @example
 * ```ts
 * encodeEntry({ producerId: 'p1', sequence: 5, count: 100, at: 0, attempt: 0, taken: 100 }); // 'p1|00000000005|2s|00|000000000|2s'
 * ```
 */
export function encodeEntry(e: ProducerEntry): string {
  const seq = e.sequence.toString(36).padStart(SEQ_WIDTH, '0');
  const attempt = e.attempt.toString(36).padStart(ATTEMPT_WIDTH, '0');
  const at = e.at.toString(36).padStart(AT_WIDTH, '0');
  return `${e.producerId}|${seq}|${e.count.toString(36)}|${attempt}|${at}|${e.taken.toString(36)}`;
}

/** The entry a slot holds, or `undefined` for an empty or foreign value. */
export function decodeEntry(v: unknown): ProducerEntry | undefined {
  if (typeof v !== 'string') return undefined;
  const parts = v.split('|');
  if (parts.length !== 6) return undefined;
  const [producerId, seq, count, attempt, at, taken] = parts as [string, string, string, string, string, string];
  const entry: ProducerEntry = {
    producerId,
    sequence: parseInt(seq, 36),
    count: parseInt(count, 36),
    at: parseInt(at, 36),
    attempt: parseInt(attempt, 36),
    taken: parseInt(taken, 36),
  };
  return [entry.sequence, entry.count, entry.at, entry.attempt, entry.taken].every(Number.isFinite) ? entry : undefined;
}

/**
 * The range of slot texts a take must be refused on for `stamp`: this producer at this sequence
 * or later (`after` < text ≤ `upTo`). With `past`, the entry a re-store replaces is excluded:
 * only a later attempt or sequence refuses it.
 *
 * @example
 * ```ts
 * refusalRange({ producerId: 'p1', sequence: 5 }); // { after: 'p1|00000000005', upTo: 'p1|~' }
 * ```
 */
export function refusalRange(stamp: ProducerStamp, past?: ProducerEntry): { after: string; upTo: string } {
  return {
    after: past ? encodeEntry(past) : `${stamp.producerId}|${stamp.sequence.toString(36).padStart(SEQ_WIDTH, '0')}`,
    upTo: `${stamp.producerId}|~`,
  };
}

/**
 * Whether a take for `range` (see {@link refusalRange}) would be refused on these sequencer
 * attributes: what the store checks, asked ahead of work a refusal would waste.
 *
 * @example
 * ```ts
 * wouldRefuse(item.attrs, refusalRange(stamp)); // true when the stamp was committed here
 * ```
 */
export function wouldRefuse(
  attrs: Readonly<Record<string, unknown>> | undefined,
  range: { after: string; upTo: string },
): boolean {
  if (!attrs) return false;
  for (const k of SLOT_ATTRS) {
    const v = attrs[k];
    if (typeof v === 'string' && v > range.after && v <= range.upTo) return true;
  }
  return false;
}

/** The slots of a sequencer item's attributes: entry and base per slot (absent ones skipped). */
export function readSlots(
  attrs: Readonly<Record<string, unknown>> | undefined,
): { slot: number; entry: ProducerEntry; base: number | undefined }[] {
  const out: { slot: number; entry: ProducerEntry; base: number | undefined }[] = [];
  if (!attrs) return out;
  for (let i = 0; i < PRODUCER_SLOTS; i++) {
    const entry = decodeEntry(attrs[slotAttr(i)]);
    const b = attrs[slotBaseAttr(i)];
    if (entry) out.push({ slot: i, entry, base: typeof b === 'number' ? b : undefined });
  }
  return out;
}

/**
 * The slot a producer's next entry goes to, from what this process last saw of the sequencer
 * (possibly stale; `undefined` when it saw nothing): the producer's own slot, else an empty
 * one, else the least recently used (oldest `at`). With nothing seen, a hash of the id, so
 * processes that know nothing spread producers over the slots. A stale choice can only evict
 * an entry early; retries are still recognised in whichever slot holds them.
 *
 * @example
 * ```ts
 * chooseSlot('p1', { p0: encodeEntry({ producerId: 'p1', sequence: 4, count: 1, at: 0, attempt: 0, taken: 1 }) }); // 0
 * ```
 */
export function chooseSlot(producerId: string, attrs: Readonly<Record<string, unknown>> | undefined): number {
  if (!attrs) return hashSlot(producerId);
  let empty: number | undefined;
  let oldest: { slot: number; at: number } | undefined;
  for (let i = 0; i < PRODUCER_SLOTS; i++) {
    const e = decodeEntry(attrs[slotAttr(i)]);
    if (!e) {
      empty ??= i;
      continue;
    }
    if (e.producerId === producerId) return i;
    if (!oldest || e.at < oldest.at) oldest = { slot: i, at: e.at };
  }
  return empty ?? oldest?.slot ?? hashSlot(producerId);
}

function hashSlot(producerId: string): number {
  let h = 2166136261;
  for (let i = 0; i < producerId.length; i++) h = Math.imul(h ^ producerId.charCodeAt(i), 16777619);
  return (h >>> 0) % PRODUCER_SLOTS;
}

/** What a push whose take was refused is: see {@link judgeRefusal}. */
export type RefusalVerdict =
  /** The same push again: answer from `entry` (its offsets start at `base`). */
  | { kind: 'retry'; entry: ProducerEntry; base: number }
  /** The producer has pushed a later sequence here: this one is stale, store nothing. */
  | { kind: 'stale'; last: number }
  /** The same stamp with a different number of messages: a client bug, store nothing. */
  | { kind: 'reused'; count: number }
  /** The refusing entry is gone again (evicted between the take and this read): take again. */
  | { kind: 'again' };

/**
 * Why a take for `stamp` (carrying `count` messages) was refused, from the sequencer item as
 * the refusal found it: the highest entry of this producer decides.
 *
 * @example
 * ```ts
 * judgeRefusal({ producerId: 'p1', sequence: 5 }, 100, item.attrs); // { kind: 'retry', entry, base }
 * ```
 */
export function judgeRefusal(
  stamp: ProducerStamp,
  count: number,
  attrs: Readonly<Record<string, unknown>> | undefined,
): RefusalVerdict {
  let best: { entry: ProducerEntry; base: number | undefined } | undefined;
  for (const s of readSlots(attrs)) {
    if (s.entry.producerId !== stamp.producerId) continue;
    if (!best || encodeEntry(s.entry) > encodeEntry(best.entry)) best = s;
  }
  if (!best || best.entry.sequence < stamp.sequence) return { kind: 'again' };
  if (best.entry.sequence > stamp.sequence) return { kind: 'stale', last: best.entry.sequence };
  if (best.entry.count !== count) return { kind: 'reused', count: best.entry.count };
  if (best.base === undefined) return { kind: 'again' };
  return { kind: 'retry', entry: best.entry, base: best.base };
}

/** What the segment at a retried push's base says about its first attempt: see {@link judgeFirstAttempt}. */
export type FirstAttempt =
  /** Stored: answer `queued` with the remembered offsets. */
  | 'committed'
  /** Its offsets were closed by a skip (it failed, or stalled past the gap budget): store now. */
  | 'closed'
  /** Nothing there yet and the first attempt may still write it: answer "in progress", retry later. */
  | 'in-flight'
  /** Nothing there and the first attempt is older than the gap budget: close its range, then store. */
  | 'abandoned';

/**
 * Decides a retry from the segment found at its remembered base (`undefined`: none yet).
 *
 * @example
 * ```ts
 * judgeFirstAttempt({ now, entry, segment: { count: 100 }, gapCloseMs: 60_000 }); // 'committed'
 * ```
 */
export function judgeFirstAttempt(a: {
  now: number;
  entry: ProducerEntry;
  segment: { count: number } | undefined;
  gapCloseMs: number;
}): FirstAttempt {
  if (a.segment) return a.segment.count > 0 ? 'committed' : 'closed';
  return a.now - a.entry.at >= a.gapCloseMs ? 'abandoned' : 'in-flight';
}
