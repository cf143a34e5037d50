/**
 * Retention (seed 004) as pure decisions over segment metadata, cursor positions and `now`.
 *
 * Retention is opt-in per queue (`retentionEnabled` plus a positive window) and deletes whole
 * segments, oldest first:
 * - `retentionSeconds` deletes by age, consumed or not;
 * - `completedRetentionSeconds` deletes only what every lease group has passed: a segment
 *   goes only when it is old enough and ends below MIN(committed) + 1 across the partition's
 *   cursor rows; a partition without cursor rows keeps everything.
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
 * How many leading segments (ascending by base) may go. `isLast` says whether the final
 * element is the partition's newest segment (which always stays).
 */
export function deletableSegments(segs: readonly { base: number; end: number; at: number }[], w: RetentionWindows, floor: number | null, isLast: boolean): number {
  let n = 0;
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i] as { base: number; end: number; at: number };
    if (isLast && i === segs.length - 1) break;
    const byAge = w.retentionMs > 0 && s.at + w.retentionMs <= w.now;
    const byCompletion = w.completedRetentionMs > 0 && s.at + w.completedRetentionMs <= w.now && floor !== null && s.end < floor;
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
