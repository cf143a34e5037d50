/**
 * Retention (docs/LEASES.md, "Retention") as pure decisions over segment metadata, cursor positions and `now`.
 *
 * Retention is opt-in per queue (`retentionEnabled` plus a positive window) and deletes whole
 * segments, oldest first:
 * - `retentionSeconds` deletes by age, consumed or not;
 * - `completedRetentionSeconds` deletes only what every group has finished: a segment goes
 *   only when it is old enough and ends below the floor — MIN(committed) + 1 across the
 *   partition's lease cursor rows, and each record-claim group's position (or a redriven
 *   record below it); a partition no group has a position on keeps everything, and a group
 *   registered on the queue that has no position on the partition yet keeps what it is owed
 *   (everything for `all` and claim groups, what was pushed from its instant on for `new` /
 *   `from`).
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

/**
 * Whether retention may delete segments of a queue with these options: then a process must not
 * trust segment index entries it remembers (another process may have deleted the segments).
 */
export const retentionOn = (o: {
  retentionEnabled: boolean;
  retentionSeconds: number;
  completedRetentionSeconds: number;
}): boolean => o.retentionEnabled && (o.retentionSeconds > 0 || o.completedRetentionSeconds > 0);

/** Days an empty partition must be idle before it is removed (Queen's PARTITION_CLEANUP_DAYS). */
export const PARTITION_CLEANUP_DAYS = 30;

/** The windows in force for a queue's options (zeros when retention is off). */
export function retentionWindows(
  o: { retentionEnabled: boolean; retentionSeconds: number; completedRetentionSeconds: number },
  now: number,
): RetentionWindows {
  if (!o.retentionEnabled) return { now, retentionMs: 0, completedRetentionMs: 0 };
  return {
    now,
    retentionMs: Math.max(0, o.retentionSeconds) * 1000,
    completedRetentionMs: Math.max(0, o.completedRetentionSeconds) * 1000,
  };
}

/**
 * The slowest group's next wanted offset, or null when no group has a position on the
 * partition: MIN(committed) + 1 over the lease groups' cursor rows, and over the record-claim
 * groups' positions (`claimNeeds`: each claim group's lowest offset it may still hand out —
 * its `committed`, or a redriven record below it).
 *
 * @example
 * ```ts
 * consumedFloor([25, 14], [12]); // 12: the claim group has not finished offset 12
 * ```
 */
export function consumedFloor(committedByGroup: readonly number[], claimNeeds: readonly number[] = []): number | null {
  if (committedByGroup.length === 0 && claimNeeds.length === 0) return null;
  return Math.min(...committedByGroup.map((c) => c + 1), ...claimNeeds);
}

/**
 * Where the lease groups registered on the queue that have no cursor row on a partition yet
 * would start reading it: they have passed nothing there, so completedRetentionSeconds must
 * keep what they are owed. A group subscribed to `all` (and queue mode) is owed everything:
 * -Infinity. A `new` / `from` group is owed the messages pushed at or after its instant (its
 * cursor will start after the last one pushed before it). Null when there is no such group.
 *
 * @example
 * ```ts
 * unreadKeepFrom([{ mode: 'from', from: T0 }, { mode: 'new', from: T0 + 5 }]); // T0
 * unreadKeepFrom([{ mode: 'all', from: null }]); // -Infinity
 * ```
 */
export function unreadKeepFrom(
  unread: readonly { mode: 'all' | 'new' | 'from'; from: number | null }[],
): number | null {
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
export function deletableSegments(
  segs: readonly { base: number; end: number; at: number }[],
  w: RetentionWindows,
  floor: number | null,
  isLast: boolean,
  keepFrom: number | null = null,
): number {
  let n = 0;
  for (let i = 0; i < segs.length; i++) {
    const s = segs[i] as { base: number; end: number; at: number };
    if (isLast && i === segs.length - 1) break;
    const byAge = w.retentionMs > 0 && s.at + w.retentionMs <= w.now;
    const byCompletion =
      w.completedRetentionMs > 0 &&
      s.at + w.completedRetentionMs <= w.now &&
      floor !== null &&
      s.end < floor &&
      (keepFrom === null || s.at < keepFrom);
    if (!byAge && !byCompletion) break;
    n++;
  }
  return n;
}

/** Whether a message read from storage counts as deleted by age (reads filter it out). */
export const expiredByRetention = (createdAt: number, w: RetentionWindows): boolean =>
  w.retentionMs > 0 && createdAt + w.retentionMs <= w.now;

/**
 * A partition is removed (with its cursors and index entries) once it holds nothing
 * deliverable and nothing has been pushed to it for {@link PARTITION_CLEANUP_DAYS}.
 */
export function partitionRemovable(
  p: { lastActivityAt: number; liveMessages: boolean },
  now: number,
  days = PARTITION_CLEANUP_DAYS,
): boolean {
  return !p.liveMessages && now - p.lastActivityAt >= days * 86_400_000;
}

/** What idle-partition retention does with a partition on this pass (see {@link idleStep}). */
export type IdleStep = 'keep' | 'mark' | 'wait' | 'unmark' | 'retire';

/**
 * Idle-partition retention in two steps, so it never retires a partition a push may still be
 * committing to. A partition found removable is first **marked** (its last offset recorded);
 * a push that reads the partition meanwhile clears the mark. Only once `graceMs` has passed
 * since the mark, and only if the partition is still removable, still marked and has not grown,
 * is it **retired**. Any push that could still commit then read the partition before the mark
 * and has been running for longer than the grace period (see `service/maintenance/retention.ts`).
 *
 * @example
 * ```ts
 * idleStep({ removable: true, mark: undefined, end: 4 }, now, 900_000);              // 'mark'
 * idleStep({ removable: true, mark: { at: now - 900_000, end: 4 }, end: 4 }, now, 900_000); // 'retire'
 * ```
 */
export function idleStep(
  p: { removable: boolean; mark: { at: number; end: number } | undefined; end: number },
  now: number,
  graceMs: number,
): IdleStep {
  if (!p.mark) return p.removable ? 'mark' : 'keep';
  if (!p.removable) return 'unmark';
  // It grew since the mark (a push that found it before): the grace period starts over.
  if (p.end !== p.mark.end) return 'mark';
  return now - p.mark.at >= graceMs ? 'retire' : 'wait';
}
