import { emptyCursor, startRule, type CursorState } from '../../core/leases.js';
import { QUEUE_MODE_GROUP } from '../../core/names.js';
import type { GroupRecord } from '../groups/group-store.js';
import type { PartitionRef } from '../log/log-store.js';
import { firstCommittedAfter } from '../log/seek-by-time.js';
import type { SegmentReader } from '../log/segments.js';

/**
 * The starting row of a lane the group has never read (docs/LEASES.md, "Consumer groups and
 * subscriptions"): `all` and queue mode start before the oldest retained message; `new` and
 * `from` at the first message committed at or after the recorded instant.
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
  const rule = startRule(lane.reg.subscription, lane.group === QUEUE_MODE_GROUP, lane.part.createdAt);
  if (rule.kind === 'head') return emptyCursor(-1, null);
  // "At or after T" is the seek rule ("after") applied to T - 1 ms: instants are whole milliseconds.
  const first = await firstCommittedAfter(segments, lane.part.id, rule.at - 1);
  return emptyCursor(first - 1, null);
}
