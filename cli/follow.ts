/**
 * `tail` without a group: a follow that consumes nothing. It reads every partition of the queue
 * in offset order through the replay route (`GET /api/v1/queues/{q}/partitions/{p}/messages`,
 * what `tail --peek` always used), from the oldest retained message, then keeps asking each
 * partition for offsets past the last one it printed. No group, no lease, no ack: a person who
 * wants to look at a queue can never take messages from its consumers.
 */
import { Browse } from '../client/browse.js';
import type { Sluice } from '../client/sluice.js';
import type { ReadMessage } from '../client/types.js';

export interface FollowOptions {
  queue: string;
  /** Only this partition (it exists: the caller checked). */
  partition?: string;
  /** With `partition`: the first offset to read (default: the oldest retained). */
  from?: number;
  /** Messages per read at most. */
  batch: number;
  /** Stop after printing this many. */
  limit?: number;
  /** Stop after this long without a message. */
  idleMs?: number;
  signal: AbortSignal;
  /** Prints messages; answers how many were written (fewer: the output closed, stop). */
  print: (msgs: ReadMessage[]) => Promise<number>;
}

/** How often an idle follow asks each partition again, and looks for new partitions. */
const IDLE_POLL_MS = 500;
const RELIST_MS = 5000;

/**
 * Follows a queue (or one partition) until stopped; answers what was printed and where each
 * partition's next offset is.
 *
 * @example
 * ```ts
 * const r = await follow(sluice, { queue: 'orders', batch: 1000, signal, print: async (m) => writer.writeAll(m.map(line)) });
 * ```
 */
export async function follow(
  sluice: Sluice,
  o: FollowOptions,
): Promise<{ printed: number; next: Map<string, number> }> {
  const next = new Map<string, number>();
  const browse = new Browse(sluice.http);
  const relist = async (): Promise<void> => {
    const detail = await browse.queue(o.queue, { signal: o.signal });
    for (const p of detail.partitions) {
      if (next.has(p.name) || (o.partition !== undefined && p.name !== o.partition)) continue;
      const start = o.partition !== undefined && o.from !== undefined ? o.from : 0;
      next.set(p.name, Math.max(start, p.firstOffset ?? 0));
    }
  };
  let printed = 0;
  const left = (): number => (o.limit === undefined ? Infinity : o.limit - printed);
  let idleSince = Date.now();
  let listedAt = 0;
  try {
    while (!o.signal.aborted && left() > 0) {
      if (Date.now() - listedAt >= RELIST_MS) {
        await relist();
        listedAt = Date.now();
      }
      let round = 0;
      for (const [name, from] of next) {
        if (o.signal.aborted || left() <= 0) break;
        const r = await sluice
          .queue(o.queue)
          .partition(name)
          .read({ from, limit: Math.min(1000, o.batch, left()), signal: o.signal });
        const written = await o.print(r.messages);
        printed += written;
        round += written;
        if (written < r.messages.length) return { printed, next };
        next.set(name, r.next);
      }
      if (round > 0) idleSince = Date.now();
      else {
        if (o.idleMs !== undefined && Date.now() - idleSince >= o.idleMs) break;
        await pause(IDLE_POLL_MS, o.signal);
      }
    }
  } catch (e) {
    if (!o.signal.aborted) throw e; // a stop (Ctrl-C) abandons the read in flight
  }
  return { printed, next };
}

const pause = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
