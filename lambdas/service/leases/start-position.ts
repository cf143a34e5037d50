import { emptyCursor, narrowSeek, seedRule, type CursorState } from '../../core/leases.js';
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import type { GroupRecord } from '../groups/group-store.js';
import type { PartitionRef } from '../log/log-store.js';
import type { SegmentReader } from '../log/segments.js';

/**
 * The starting row of a lane the group has never read (docs/LEASES.md, "Consumer groups and
 * subscriptions"): `all` and queue mode start before the oldest retained message; `new` and
 * `from` after the last message pushed before the recorded instant.
 *
 * @example
 * ```ts
 * const state = row ? decodeCursor(row) : await startCursor(segments, { part, group, reg });
 * ```
 */
export async function startCursor(
  segments: SegmentReader,
  lane: { part: PartitionRef; group: string; reg: GroupRecord },
): Promise<CursorState> {
  const rule = seedRule(lane.reg.subscription, lane.group === QUEUE_MODE_GROUP, lane.part.createdAt);
  if (rule.kind === 'head') return emptyCursor(-1, null);
  const c = await lastBefore(segments, lane.part.id, rule.at, false);
  return emptyCursor(c, null);
}

/**
 * The last offset whose push time is before `at` (or at it, when `inclusive`), -1 when
 * none. O(log n) queries: the head and tail first (which settle "all before" and "none
 * before" in two), then a binary search over offsets.
 *
 * @example
 * ```ts
 * const committed = await lastBefore(segments, partitionId, Date.parse('2026-01-01'), true);
 * ```
 */
export async function lastBefore(
  segments: SegmentReader,
  pid: string,
  at: number,
  inclusive: boolean,
): Promise<number> {
  const before = (t: number): boolean => (inclusive ? t <= at : t < at);
  const tail = await segments.segmentAt(pid, Number.MAX_SAFE_INTEGER);
  if (!tail) return -1;
  if (before(tail.at)) return tail.end;
  const head = (await segments.segmentPage(pid, 0, 1)).segs[0];
  if (!head || !before(head.at)) return (head?.base ?? tail.base) - 1;
  let range = { lo: head.end + 1, hi: tail.base - 1, best: head.end };
  for (let steps = 0; range.lo <= range.hi && steps < 64; steps++) {
    const mid = Math.floor((range.lo + range.hi) / 2);
    const seg = await segments.segmentAt(pid, mid);
    if (!seg) break;
    range = narrowSeek(range, seg, at, inclusive);
  }
  return range.best;
}
