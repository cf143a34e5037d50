import { startTimeSeek, stepTimeSeek } from '../../core/time-seek.js';
import type { SegmentReader } from './segments.js';

/**
 * The first offset a seek to instant `at` delivers on a partition: the first message committed
 * after `at`, by the rule and the search of `core/time-seek.ts` (docs/STORAGE.md, "Seeking by
 * time"). The tail and head segments first, then one index query per probe: O(log n) reads.
 * The partition's tail when nothing was committed after `at`; 0 when it holds no segment.
 *
 * @example
 * ```ts
 * const first = await firstCommittedAfter(segments, partitionId, Date.parse('2026-01-01T00:00:00Z'));
 * ```
 */
export async function firstCommittedAfter(segments: SegmentReader, pid: string, at: number): Promise<number> {
  const tail = await segments.segmentAt(pid, Number.MAX_SAFE_INTEGER);
  const head = tail ? (await segments.segmentPage(pid, 0, 1)).segs[0] : undefined;
  let step = startTimeSeek(at, head, tail);
  while (!('first' in step)) step = stepTimeSeek(step.search, await segments.segmentAt(pid, step.probe));
  return step.first;
}
