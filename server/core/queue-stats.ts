/**
 * What the admin views say about a partition, a queue and a consumer group, as pure functions of
 * the items Sluice keeps anyway (a partition's stored offsets, each group's position on it) and
 * an explicit `now`: message counters in Queen's six-counter shape, a group's state in Queen's
 * words, and the time buckets of Queen's series (docs/QUEEN-COMPAT.md).
 *
 * @example
 * ```ts
 * const lanes = [leaseLane(cursor, now), claimLane(state)];
 * partitionCounters({ head: 0, tail: 120, lanes, deadLetter: 2 }); // { total: 120, pending: 20, ... }
 * ```
 */
import { INSTANT_RANGE } from '../../contract/schemas.js';
import { isLive, type CursorState } from './leases.js';

/** Queen's six message counters (`failed` is always 0, as in Queen). */
export interface MessageCounters {
  total: number;
  pending: number;
  processing: number;
  completed: number;
  failed: number;
  deadLetter: number;
}

export const zeroCounters = (): MessageCounters => ({
  total: 0,
  pending: 0,
  processing: 0,
  completed: 0,
  failed: 0,
  deadLetter: 0,
});

/**
 * One consumer group's position on one partition, either design: every offset below
 * `doneBelow` is finished, and `[out.from, out.to)` (when set) is handed out and not finished
 * yet, until `out.until` (a lease's expiry; null for claims, whose records each have their own).
 */
export interface Lane {
  group: string;
  kind: 'lease' | 'claim';
  doneBelow: number;
  out: { from: number; to: number; until: number | null } | null;
}

/** A partition-lease cursor as a lane: a live lease is the span handed out. */
export function leaseLane(group: string, s: CursorState, now: number): Lane {
  const doneBelow = s.committed + 1;
  const out = isLive(s.lease, now)
    ? { from: Math.max(s.lease.start, doneBelow), to: s.lease.end + 1, until: s.lease.exp }
    : null;
  return { group, kind: 'lease', doneBelow, out };
}

/**
 * A record-claim position as a lane. Offsets between `committed` and `frontier` were handed out;
 * some of them may be finished already (acks out of order): reading which would take a query
 * of the group's claim items, so the span counts as processing, an upper bound.
 */
export function claimLane(group: string, s: { committed: number; frontier: number }): Lane {
  return {
    group,
    kind: 'claim',
    doneBelow: s.committed,
    out: s.frontier > s.committed ? { from: s.committed, to: s.frontier, until: null } : null,
  };
}

const clamp = (n: number, lo: number, hi: number): number => Math.max(lo, Math.min(hi, n));

/**
 * A partition's counters from its stored offsets `[head, tail)` and the groups' lanes on it.
 * As in Queen, each counter is the maximum over the groups (pending: the slowest group's
 * backlog; completed: the furthest group's progress); with no group, everything is pending.
 */
export function partitionCounters(p: {
  head: number;
  tail: number;
  lanes: readonly Lane[];
  deadLetter: number;
}): MessageCounters {
  const total = Math.max(0, p.tail - p.head);
  const out = { ...zeroCounters(), total, deadLetter: p.deadLetter };
  if (p.lanes.length === 0) {
    out.pending = total;
    return out;
  }
  for (const lane of p.lanes) {
    const completed = clamp(lane.doneBelow - p.head, 0, total);
    const processing = lane.out
      ? clamp(Math.min(lane.out.to, p.tail) - Math.max(lane.out.from, p.head, lane.doneBelow), 0, total - completed)
      : 0;
    out.completed = Math.max(out.completed, completed);
    out.processing = Math.max(out.processing, processing);
    out.pending = Math.max(out.pending, total - completed - processing);
  }
  return out;
}

/** Counter sums (a queue's totals over its partitions). */
export function sumCounters(all: readonly MessageCounters[]): MessageCounters {
  const out = zeroCounters();
  for (const c of all) {
    out.total += c.total;
    out.pending += c.pending;
    out.processing += c.processing;
    out.completed += c.completed;
    out.failed += c.failed;
    out.deadLetter += c.deadLetter;
  }
  return out;
}

/** Queen's status of one message for the groups reading its partition. */
export type MessageStatus = 'pending' | 'processing' | 'completed' | 'dead_letter';

/**
 * Queen's rule: `dead_letter` when it has a dead-letter row; else `completed` once every group
 * is past it; else `processing` while a group holds it out; else `pending` (also when no group
 * reads the partition). `consumedBy` counts the groups past it.
 */
export function messageStatus(
  offset: number,
  lanes: readonly Lane[],
  deadLettered: boolean,
): { status: MessageStatus; consumedBy: number } {
  const consumedBy = lanes.filter((l) => offset < l.doneBelow).length;
  if (deadLettered) return { status: 'dead_letter', consumedBy };
  if (lanes.length > 0 && consumedBy === lanes.length) return { status: 'completed', consumedBy };
  return { status: heldBy(lanes, offset) ? 'processing' : 'pending', consumedBy };
}

/** The lane that holds `offset` out (handed out, not finished), if any. */
export const heldBy = (lanes: readonly Lane[], offset: number): Lane | undefined =>
  lanes.find((l) => l.out !== null && offset >= l.out.from && offset < l.out.to && offset >= l.doneBelow);

/** Queen's consumption mode of a partition's readers: queue mode, bus (named groups), both, or none. */
export function consumptionMode(groups: readonly string[], queueModeGroup: string) {
  const hasQueueMode = groups.includes(queueModeGroup);
  const busGroupsCount = groups.filter((g) => g !== queueModeGroup).length;
  const type: 'queue' | 'bus' | 'hybrid' | 'none' =
    hasQueueMode && busGroupsCount > 0 ? 'hybrid' : hasQueueMode ? 'queue' : busGroupsCount > 0 ? 'bus' : 'none';
  return { hasQueueMode, busGroupsCount, type };
}

/** Seconds of lag past which Queen calls a group `Lagging`. */
export const LAGGING_AFTER_S = 300;

/** Queen's group state: `Lagging` past 300 s of lag, else `Stable` once it consumed, else `Dead`. */
export function groupState(maxTimeLagSeconds: number, everConsumed: boolean): 'Lagging' | 'Stable' | 'Dead' {
  if (maxTimeLagSeconds > LAGGING_AFTER_S) return 'Lagging';
  return everConsumed ? 'Stable' : 'Dead';
}

// ------------------------------------------------------------------ time windows

/** A time window of a series: epoch ms, `from` inclusive, `to` exclusive. */
export interface Window {
  from: number;
  to: number;
}

/** The default window of Queen's series: the last hour. */
export const DEFAULT_WINDOW_MS = 3_600_000;

/**
 * The longest window a series covers: counters live in memory for less than that, and a window
 * of years in one-minute buckets would be millions of rows (the route fuzz found it).
 */
export const MAX_WINDOW_MS = 7 * 24 * 3_600_000;

/**
 * The window of a series request: `from`/`to`, by default the hour up to now, at most
 * {@link MAX_WINDOW_MS} ending at `to`, never before the API's earliest instant (0000-01-01: a
 * bucket before it has no ISO-8601 form the answers could carry; the route fuzz found it).
 *
 * @example
 * ```ts
 * windowOf({}, now); // { from: now - 3_600_000, to: now }
 * windowOf({ from: 0, to: now }, now); // { from: now - MAX_WINDOW_MS, to: now }
 * ```
 */
export function windowOf(q: { from?: number | undefined; to?: number | undefined }, now: number): Window {
  const to = q.to ?? now;
  let from = q.from ?? to - DEFAULT_WINDOW_MS;
  if (!(from < to)) from = to - DEFAULT_WINDOW_MS;
  from = Math.max(from, to - MAX_WINDOW_MS, INSTANT_RANGE.min);
  // A window ending at the earliest instant would hold nothing: it is the hour after it instead.
  return from < to ? { from, to } : { from: INSTANT_RANGE.min, to: INSTANT_RANGE.min + DEFAULT_WINDOW_MS };
}

/** Queen's bucket width for a window: 1, 5, 15, 60 or 360 minutes. */
export function bucketMinutes(w: Window): number {
  const minutes = (w.to - w.from) / 60_000;
  if (minutes <= 60) return 1;
  if (minutes <= 360) return 5;
  if (minutes <= 1440) return 15;
  if (minutes <= 10_080) return 60;
  return 360;
}

/** The bucket starts (epoch ms, aligned to the bucket width) that cover a window, oldest first. */
export function bucketStarts(w: Window, minutes: number): number[] {
  const width = minutes * 60_000;
  const out: number[] = [];
  for (let t = Math.floor(w.from / width) * width; t < w.to; t += width) out.push(t);
  return out;
}

/**
 * A bucket's timestamp as Queen writes it: ISO-8601 without milliseconds (`2026-04-28T10:15:00Z`),
 * one fixed width, so the dashboard's string comparisons order them.
 */
export const bucketIso = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19)}Z`;
