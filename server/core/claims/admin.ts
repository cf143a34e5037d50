import { SluiceError, invalid } from '../errors.js';
import { Draft } from './draft.js';
import { MAX_GARBAGE_PER_CALL, initialState } from './model.js';
import type { Changes, Garbage, GroupView, Randomness } from './model.js';

/**
 * Where a create or seek puts the group: the oldest retained record, the tail, an offset, or
 * the first record committed after an instant (epoch ms; `core/time-seek.ts`).
 */
export type Start = 'earliest' | 'latest' | { offset: number } | { at: number };

/**
 * Resolves a start against the partition's retained range [head, tail]. A start `at` an
 * instant is found by the time search first (I/O): `firstAfter` is its answer.
 */
export function resolveStart(start: Start, head: number, tail: number, firstAfter?: number): number {
  if (start === 'earliest') return head;
  if (start === 'latest') return tail;
  if ('at' in start) {
    if (firstAfter === undefined) throw new Error('resolveStart: a start at an instant needs the time search first');
    // Retention may have moved the head since the search read it.
    return Math.min(tail, Math.max(head, firstAfter));
  }
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
  random: Randomness,
): { changes: Changes | undefined; offset: number; moved: boolean } {
  if (view.state) return { changes: undefined, offset: view.state.committed, moved: false };
  const d = new Draft({ ...view, items: [] }, initialState(offset, now, random));
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
    throw new SluiceError('not_found', 'this group does not exist on this partition; create it with PUT first', {
      missing: 'group',
    });
  const d = new Draft({ ...view, items: view.items.filter((it) => it.kind !== 'B') });
  // A redriven record at or above the new position is handed out again as the group replays
  // from there: its own item would hand the offset out a second time, alongside the replay.
  // It goes, in this write (it stays owed: the replay owes it).
  const superseded = d.items.filter((it) => it.kind === 'R' && it.first >= offset);
  const maxSuperseded = 100 - 1 - MAX_GARBAGE_PER_CALL;
  if (superseded.length > maxSuperseded) {
    throw new SluiceError(
      'conflict',
      `${superseded.length} redriven records at or above offset ${offset} are still owed; a seek back ` +
        `over them replaces at most ${maxSuperseded} at once. Let the group finish some of them, or ` +
        `seek to a higher offset first`,
      { redriven: superseded.length, limit: maxSuperseded },
    );
  }
  for (const it of superseded) for (const r of [...it.records]) d.remove(it, r);
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
