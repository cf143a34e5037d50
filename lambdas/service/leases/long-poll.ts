import type { Notifier } from '../notifier.js';

/** Long-poll re-read interval: what another process's push waits at most to be seen. */
export const REPOLL_MS = 1000;

/** One long poll: see {@link LongPoll.wait}. */
export interface WaitRequest<T> {
  /** Pushes to this queue (and work released on it) in this process wake the wait. */
  queue: string;
  /** How long to wait for a result; 0 looks once. */
  budgetMs: number;
  /** Ends the wait early (shutdown, Lambda deadline, a client gone). */
  signal?: AbortSignal | undefined;
  /** One look at storage: a result, or null when there is nothing yet. */
  look(): Promise<T | null>;
  /**
   * Waiters that share this key take turns after a wake-up: only one reads storage at a time
   * (the others would find the same freed work taken), and one that finds something wakes
   * the next. Partition-lease pops pass their (queue, group); without a key every waiter looks.
   */
  baton?: string | undefined;
  /** Look once more when the wait runs out or is aborted (a claim poll answers with what it finds then). */
  lookAtEnd?: boolean | undefined;
}

/**
 * The long-poll wait shared by partition-lease pops and record-claim polls (docs/LEASES.md,
 * "Long polls"): listen before reading, so a push landing during the read is not missed;
 * wake on pushes in this process; re-read storage every {@link REPOLL_MS} for other
 * processes' pushes (another Lambda instance's push wakes nobody here).
 *
 * @example
 * ```ts
 * const r = await longPoll.wait({ queue: 'orders', budgetMs: 20_000, signal, look: () => popOnce(req) });
 * ```
 */
export class LongPoll {
  /** Baton keys with a woken waiter reading storage right now. */
  private readonly probing = new Set<string>();
  /** Baton keys where a woken waiter was turned away while another was probing. */
  private readonly denied = new Set<string>();

  constructor(private readonly notifier: Notifier) {}

  /** Looks until `look` finds something or the budget runs out (then null, or the last look with `lookAtEnd`). */
  async wait<T>(req: WaitRequest<T>): Promise<T | null> {
    const { queue, signal, baton: key } = req;
    const deadline = performance.now() + Math.max(0, req.budgetMs);
    for (let first = true; ; first = false) {
      // Listen before reading, so a push landing during the read is not missed.
      const remaining = deadline - performance.now();
      const woke =
        remaining > 0 && !signal?.aborted
          ? this.notifier.wait(queue, Math.min(remaining, REPOLL_MS), signal)
          : undefined;
      // After a wake-up only one waiter per baton key reads storage at a time; a fresh
      // request always looks once.
      const baton = !first && key !== undefined && !this.probing.has(key);
      const looks = first || key === undefined || baton;
      if (!looks) this.denied.add(key);
      if (looks) {
        if (baton) this.probing.add(key);
        let r: T | null = null;
        try {
          // A wake-up that arrived while this one was reading turned a waiter away: read
          // again rather than leave that work to the next re-poll.
          if (key !== undefined) this.denied.delete(key);
          for (let again = 0; r === null && again < 3; again++) {
            r = await req.look();
            if (!baton || !this.denied.delete(key)) break;
          }
        } finally {
          if (baton) this.probing.delete(key);
        }
        // More may be free: pass the baton to the next waiter.
        if (baton && r !== null) this.notifier.notify(queue, '');
        if (r !== null) return r;
      }
      if (!woke) break;
      await woke;
      if (signal?.aborted || performance.now() >= deadline) return req.lookAtEnd ? req.look() : null;
    }
    return null;
  }
}
