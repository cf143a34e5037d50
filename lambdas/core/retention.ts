/**
 * Retention (seed 004) as pure decisions over segment metadata, cursor positions and `now`.
 *
 * Retention is opt-in per queue (`retentionEnabled` plus a positive window) and deletes whole
 * segments, oldest first:
 * - `retentionSeconds` deletes by age, consumed or not;
 * - `completedRetentionSeconds` deletes only what every lease group has passed: a segment
 *   goes only when it is old enough and ends below MIN(committed) + 1 across the partition's
 *   cursor rows; a partition without cursor rows keeps everything, and a lease group
 *   registered on the queue that has not read the partition yet keeps what it is owed
 *   (everything for `all`, what was pushed from its instant on for `new` / `from`).
 * The newest segment of a partition is never deleted: it anchors the partition's next offset
 * (offsets are never reused). Reads filter expired messages themselves, so a lagging sweep
 * never delivers one.
 *
 * @example
 * ```ts
 * deletableSegments(segs, { now, retentionMs: 10_000, completedRetentionMs: 0 }, null); // 2
 * ```
 */

export interface RetentionWindows {
  now: number;
  /** retentionSeconds × 1000 when retention is enabled, else 0. */
  retentionMs: number;
  /** completedRetentionSeconds × 1000 when retention is enabled, else 0. */
  completedRetentionMs: number;
}

/** Days an empty partition must be idle before it is removed (Queen's PARTITION_CLEANUP_DAYS). */
export const PARTITION_CLEANUP_DAYS = 30;

/** The windows in force for a queue's options (zeros when retention is off). */
export function retentionWindows(o: { retentionEnabled: boolean; retentionSeconds: number; completedRetentionSeconds: number }, now: number): RetentionWindows {
  if (!o.retentionEnabled) return { now, retentionMs: 0, completedRetentionMs: 0 };
  return { now, retentionMs: Math.max(0, o.retentionSeconds) * 1000, completedRetentionMs: Math.max(0, o.completedRetentionSeconds) * 1000 };
}

/** The slowest group's next wanted offset: MIN(committed) + 1, or null when no cursor rows exist. */
export function consumedFloor(committedByGroup: readonly number[]): number | null {
  if (committedByGroup.length === 0) return null;
  return Math.min(...committedByGroup) + 1;
}

/**
 * Where the lease groups registered on the queue that have no cursor row on a partition yet
 * would start reading it: they have passed nothing there, so completedRetentionSeconds must
 * keep what they are owed. A group subscribed to `all` (and queue mode) is owed everything:
 * -Infinity. A `new` / `from` group is owed the messages pushed at or after its instant (its
 * cursor will seed after the last one pushed before it). Null when there is no such group.
 *
 * @example
 * ```ts
 * unreadKeepFrom([{ mode: 'from', from: T0 }, { mode: 'new', from: T0 + 5 }]); // T0
 * unreadKeepFrom([{ mode: 'all', from: null }]); // -Infinity
 * ```
 */
export function unreadKeepFrom(unread: readonly { mode: 'all' | 'new' | 'from'; from: number | null }[]): number | null {
  let keep: number | null = null;
  for (const u of unread) {
    const at = u.mode === 'all' || u.from === null ? Number.NEGATIVE_INFINITY : u.from;
    keep = keep === null ? at : Math.min(keep, at);
  }
  return keep;
}

/**
 * How many leading segments (ascending by base) may go. `isLast` says whether the final
 * element is the partition's newest segment (which always stays). `keepFrom` (see
 * {@link unreadKeepFrom}) keeps, from completedRetentionSeconds, every segment pushed at or
 * after it: registered groups that have not read the partition yet are owed those.
 */
export function deletableSegments(segs: readonly { base: number; end: number; at: number }[], w: RetentionWindows, floor: number | null, isLast: boolean, keepFrom: number | null = null): number {
  let n = 0;
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i] as { base: number; end: number; at: number };
    if (isLast && i === segs.length - 1) break;
    const byAge = w.retentionMs > 0 && s.at + w.retentionMs <= w.now;
    const byCompletion = w.completedRetentionMs > 0 && s.at + w.completedRetentionMs <= w.now && floor !== null && s.end < floor && (keepFrom === null || s.at < keepFrom);
    if (!byAge && !byCompletion) break;
    n++;
  }
  return n;
}

/** Whether a message read from storage counts as deleted by age (reads filter it out). */
export const expiredByRetention = (createdAt: number, w: RetentionWindows): boolean => w.retentionMs > 0 && createdAt + w.retentionMs <= w.now;

/**
 * A partition is removed (with its cursors and index entries) once it holds nothing
 * deliverable and nothing has been pushed to it for {@link PARTITION_CLEANUP_DAYS}.
 */
export function partitionRemovable(p: { lastActivityAt: number; liveMessages: boolean }, now: number, days = PARTITION_CLEANUP_DAYS): boolean {
  return !p.liveMessages && now - p.lastActivityAt >= days * 86_400_000;
}
