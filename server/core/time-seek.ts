/**
 * Seeking by time (docs/STORAGE.md, "Seeking by time"): the one rule every "start at an instant" uses — the
 * partition-lease seek (`timestamp`), a lease group's subscription start (`from`), and the
 * record-claim create and seek (`{"at": …}`) — and the search that applies it.
 *
 * The rule: a seek to instant T puts the position at the first message committed after T
 * (commit time > T). Commit times are kept per segment (every message of a push shares its
 * segment's time), so the answer is always a segment boundary.
 *
 * The search is a binary search over segment commit times, written here as a pure state
 * machine: the service reads the head and tail segments, then the segment holding each
 * `probe` this module asks for, until it answers `first`. O(log n) reads.
 *
 * When commit times are not in offset order (instances pushing to one partition disagree about
 * the time, or a push that lost a race for an offset commits after a later one with its earlier
 * time), the answer is still a crossing: the segment just before `first` was committed at or
 * before T and the segment at `first` after it (or `first` is the head or the tail). It lies
 * between the first offset committed after T and the offset after the last one committed at or
 * before T, which coincide when times are in order. Seeking to T − d, for d at least the largest
 * disorder, replays everything committed after T.
 *
 * @example
 * ```ts
 * let step = startTimeSeek(target, headSegment, tailSegment);
 * while (!('first' in step)) step = stepTimeSeek(step.search, await segmentAt(step.probe));
 * step.first; // the first offset to deliver
 * ```
 */

/** What the search needs of a segment: its offsets and its commit time (epoch ms). */
export interface SegmentTime {
  base: number;
  /** Inclusive last offset. */
  end: number;
  at: number;
}

/** A search in progress: the answer lies in [lo, hi + 1]; `first` is the answer if nothing probed moves it. */
export interface TimeSearch {
  readonly target: number;
  readonly lo: number;
  readonly hi: number;
  readonly first: number;
  readonly steps: number;
}

/** Either the answer, or the offset whose segment to read next. */
export type TimeSeekStep = { readonly first: number } | { readonly probe: number; readonly search: TimeSearch };

/** More probes than any log has offsets to halve (2^53): a safety stop, never reached in practice. */
const MAX_STEPS = 64;

/** The boundary rule: a seek to `target` delivers a message committed at `at` when this holds. */
export const committedAfter = (at: number, target: number): boolean => at > target;

/**
 * Starts a seek to `target` from the partition's oldest (`head`) and newest (`tail`) segments,
 * undefined when it holds none. The two settle "everything is before" and "nothing is" at once.
 */
export function startTimeSeek(
  target: number,
  head: SegmentTime | undefined,
  tail: SegmentTime | undefined,
): TimeSeekStep {
  if (!head || !tail) return { first: tail ? tail.end + 1 : 0 };
  if (!committedAfter(tail.at, target)) return { first: tail.end + 1 };
  if (committedAfter(head.at, target)) return { first: head.base };
  return next({ target, lo: head.end + 1, hi: tail.base - 1, first: tail.base, steps: 0 });
}

/**
 * One step: `seg` is the segment holding the last `probe` (undefined when it has gone, e.g.
 * retention removed it meanwhile: the search then answers what it has).
 */
export function stepTimeSeek(search: TimeSearch, seg: SegmentTime | undefined): TimeSeekStep {
  if (!seg) return { first: search.first };
  const s = committedAfter(seg.at, search.target)
    ? { ...search, hi: seg.base - 1, first: seg.base }
    : { ...search, lo: seg.end + 1 };
  return next({ ...s, steps: search.steps + 1 });
}

function next(search: TimeSearch): TimeSeekStep {
  if (search.lo > search.hi || search.steps >= MAX_STEPS) return { first: search.first };
  return { probe: Math.floor((search.lo + search.hi) / 2), search };
}
