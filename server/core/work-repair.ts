/**
 * The work-index repair sweep's decisions, pure and with an explicit `now` (the pass itself is
 * `service/maintenance/work-repair.ts`). A partition hides from wildcard pops when its
 * sequencer's has-work flag is set and no work item names it: on AWS a push's take (which sets
 * the flag) and its commit (which writes the item) are two requests, and a process that dies
 * between them leaves exactly that. The sweep walks every partition, queue by queue, and marks
 * the hidden ones; its position is stored between passes so a sweep longer than one pass's
 * budget goes on where the last one stopped.
 *
 * @example
 * ```ts
 * hiddenWork(seq?.attrs.w, work !== undefined);          // true: flag set, no item
 * afterPass(state, now, null);                            // { sweptAt: now, cursor: null }
 * afterPass(state, now, { queue: 'orders', after: 'P#eu' }); // resumes there next pass
 * ```
 */

/** Where the last pass stopped, inside a sweep that spans several passes. */
export interface SweepCursor {
  /** When this sweep's first pass started (epoch ms). */
  startedAt: number;
  /** The queue being swept when the pass stopped. */
  queue: string;
  /** The last partition name item of `queue` examined (null: none of it yet). */
  after: string | null;
}

/** The sweep's stored progress. */
export interface SweepState {
  /** When the last complete sweep finished (epoch ms; null: none has). */
  sweptAt: number | null;
  /** Set while a sweep is under way across passes. */
  cursor: SweepCursor | null;
}

/** No sweep ever ran. */
export const NO_SWEEP: SweepState = { sweptAt: null, cursor: null };

/**
 * Whether a partition hides work: its sequencer's flag says "drained-to-work, the item is
 * owed", and the item is not there.
 *
 * @example
 * ```ts
 * hiddenWork(true, false); // true
 * hiddenWork(true, true);  // false: the index names it
 * hiddenWork(undefined, false); // false: never pushed to, or cleared
 * ```
 */
export const hiddenWork = (flag: unknown, hasItem: boolean): boolean => flag === true && !hasItem;

/**
 * The progress to store after a pass: `stoppedAt` null when the pass reached the last queue
 * (the sweep is complete as of `now`), else where the next pass resumes.
 *
 * @example
 * ```ts
 * afterPass(NO_SWEEP, 1_000, { queue: 'q', after: null }); // cursor started at 1,000
 * ```
 */
export function afterPass(
  prev: SweepState,
  now: number,
  stoppedAt: { queue: string; after: string | null } | null,
): SweepState {
  if (stoppedAt === null) return { sweptAt: now, cursor: null };
  return { sweptAt: prev.sweptAt, cursor: { startedAt: prev.cursor?.startedAt ?? now, ...stoppedAt } };
}
