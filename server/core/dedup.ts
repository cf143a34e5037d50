/**
 * Deduplication by transactionId, as a pure decision over stored state and `now`.
 *
 * A push first *reserves* each client-supplied transactionId of a partition with a
 * put-if-absent (one write unit each, no transaction), naming its push id. The reservation
 * only counts once that push's *marker* says `committed`; the marker is written in the same
 * atomic write that commits the segment. A push that stalls can be *aborted* by writing its
 * marker as `aborted` first (put-if-absent), after which it can never commit, so its
 * reservations may be taken over. This keeps dedup atomic with the commit without putting
 * one item per message into a DynamoDB transaction (which would cost 2 write units each and
 * cap a batch at 100 messages).
 */
import { jsonNumber, jsonString } from '../codec/json-writer.js';

export interface Reservation {
  /** Push id that holds it. */
  push: string;
  /** Message id the push gave this transactionId. */
  mid: string;
  /** Epoch ms when it was reserved. */
  at: number;
}

export type MarkerState = 'committed' | 'aborted' | 'absent';

export type DedupDecision =
  /** The original is committed and inside the window: report `duplicate`. */
  | { kind: 'duplicate'; messageId: string }
  /** The reservation is void: replace it (version-guarded). */
  | { kind: 'take-over' }
  /** Need the holder's marker to decide. */
  | { kind: 'check-marker'; push: string }
  /** The holder is still pushing: look again at `retryAt`. */
  | { kind: 'wait'; retryAt: number }
  /** The holder stalled past `stallMs`: abort it, then decide again. */
  | { kind: 'abort-holder'; push: string };

/**
 * Decides what a push does about a transactionId someone already reserved.
 *
 * @example
 * ```ts
 * judgeReservation({ now, windowMs: 3_600_000, stallMs: 30_000, reservation, marker: 'committed' });
 * // → { kind: 'duplicate', messageId: reservation.mid }
 * ```
 */
export function judgeReservation(args: {
  now: number;
  windowMs: number;
  stallMs: number;
  reservation: Reservation;
  marker?: MarkerState | undefined;
}): DedupDecision {
  const { now, windowMs, stallMs, reservation: r, marker } = args;
  if (marker === undefined) return { kind: 'check-marker', push: r.push };
  if (marker === 'aborted') return { kind: 'take-over' };
  if (marker === 'committed') {
    return now - r.at < windowMs ? { kind: 'duplicate', messageId: r.mid } : { kind: 'take-over' };
  }
  // No marker: the holder has neither committed nor been aborted, so it may still commit.
  if (now - r.at >= stallMs) return { kind: 'abort-holder', push: r.push };
  return { kind: 'wait', retryAt: Math.min(r.at + stallMs, now + 50) };
}

/**
 * Splits a batch's transactionIds into first occurrences and repeats of an earlier item in
 * the same batch (reported `duplicate` of that item).
 */
export function firstOccurrences(txids: readonly string[]): { firstIndex: number[] } {
  const seen = new Map<string, number>();
  const firstIndex = txids.map((t, i) => {
    const prev = seen.get(t);
    if (prev !== undefined) return prev;
    seen.set(t, i);
    return i;
  });
  return { firstIndex };
}

/**
 * The JSON text of the reservations one push writes (`JSON.stringify({ push, mid, at })`),
 * built by concatenation: it runs once per message on the push path (docs/BENCHMARKS.md,
 * "Service layer").
 *
 * @example
 * ```ts
 * const json = reservationJson(pushId, now);
 * json(mid); // '{"push":"<pushId>","mid":"<mid>","at":<now>}'
 * ```
 */
export function reservationJson(push: string, at: number): (mid: string) => string {
  const head = `{"push":${jsonString(push)},"mid":`;
  const tail = `,"at":${jsonNumber(at)}}`;
  return (mid) => head + jsonString(mid) + tail;
}
