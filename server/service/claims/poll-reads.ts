import * as core from '../../core/claims/index.js';
import type { SegmentReader, StoredMessage } from '../log/segments.js';

/** A poll reads owed records in at most this many separate log reads. */
const MAX_READ_RUNS = 8;
/** Owed offsets closer than this are read in one log read. */
const RUN_GAP = 64;

/**
 * Reads what a poll plan hands out: owed records in a few ranged reads, then new ones from
 * the frontier, within the poll's byte budget (`core.MAX_POLL_BYTES`). `seen` holds records
 * an earlier attempt of the same poll read already.
 *
 * @example
 * ```ts
 * const { reads, messages } = await readPollPlan(segments, partitionId, plan, new Map(), true);
 * const { changes, records } = core.completePoll(view, plan, reads, req, now);
 * ```
 */
export async function readPollPlan(
  segments: SegmentReader,
  pid: string,
  plan: core.PollPlan,
  seen: ReadonlyMap<number, StoredMessage>,
  indexCache: boolean,
): Promise<{ reads: core.PollReads; messages: Map<number, StoredMessage> }> {
  const messages = new Map<number, StoredMessage>();
  const delivered: number[] = [];
  const missing: number[] = [];
  let bytes = 0;
  let blocked = false;
  if (plan.candidates.length > 0) {
    const sorted = [...plan.candidates].sort((a, b) => a - b);
    const runs: number[][] = [];
    for (const o of sorted) {
      const run = runs.at(-1);
      if (run && o - (run.at(-1) as number) <= RUN_GAP && o - (run[0] as number) < core.MAX_POLL_RECORDS) run.push(o);
      else runs.push([o]);
    }
    const fetched = new Map<number, StoredMessage>();
    const gone = new Set<number>();
    for (const o of sorted) {
      const m = seen.get(o);
      if (m) fetched.set(o, m);
    }
    const unread = runs.filter((run) => run.some((o) => !fetched.has(o)));
    for (const run of unread.slice(0, MAX_READ_RUNS)) {
      const start = run[0] as number;
      const end = run.at(-1) as number;
      // Finished records between owed ones come along; the byte bound keeps that in check
      // (what a bounded read leaves out stays owed for the next poll).
      const got = await segments.read(pid, start, {
        maxCount: end - start + 1,
        maxBytes: core.MAX_POLL_BYTES,
        indexCache,
      });
      for (const m of got) if (m.offset <= end) fetched.set(m.offset, m);
      // The log is dense from its head: an offset below the first one returned was removed by retention.
      const firstAt = got[0]?.offset;
      for (const o of run) if (!fetched.has(o) && (firstAt === undefined || o < firstAt)) gone.add(o);
    }
    for (const o of plan.candidates) {
      if (gone.has(o)) {
        missing.push(o);
        continue;
      }
      const m = fetched.get(o);
      if (!m || (delivered.length > 0 && bytes + m.payload.byteLength > core.MAX_POLL_BYTES)) {
        blocked = true; // beyond the reads or the byte budget: stays owed for the next poll
        break;
      }
      delivered.push(o);
      messages.set(o, m);
      bytes += m.payload.byteLength;
    }
  }
  let newFirst = plan.frontier;
  let newCount = 0;
  if (!blocked && plan.newMax > 0 && bytes < core.MAX_POLL_BYTES) {
    const again: StoredMessage[] = [];
    for (let o = plan.frontier; again.length < plan.newMax && seen.has(o); o++)
      again.push(seen.get(o) as StoredMessage);
    const got =
      again.length === plan.newMax
        ? again
        : await segments.read(pid, plan.frontier, {
            maxCount: plan.newMax,
            maxBytes: core.MAX_POLL_BYTES - bytes,
            indexCache,
          });
    const first = got[0];
    if (first) newFirst = first.offset;
    for (const m of got) {
      // Contiguous, and within the byte budget (a record over it goes out only alone).
      if (m.offset !== newFirst + newCount) break;
      if (delivered.length + newCount > 0 && bytes + m.payload.byteLength > core.MAX_POLL_BYTES) break;
      messages.set(m.offset, m);
      bytes += m.payload.byteLength;
      newCount++;
    }
    if (newCount === 0) newFirst = plan.frontier;
  }
  return { reads: { delivered, missing, newFirst, newCount }, messages };
}
