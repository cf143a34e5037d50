import type { Notifier } from '../notifier.js';
import type { WaitAdmission } from '../wait-slots.js';

/** Long-poll re-read interval: what another process's push waits at most to be seen. */
export const REPOLL_MS = 1000;
/**
 * How long a request that would wait holds when the wait cap is reached, before its last look
 * and an empty answer. An immediate empty answer would make Queen's consume loop ask again at
 * once (it re-polls at once after a 204 to `wait=true`): held, such a client asks about once a
 * second at most.
 */
export const CAPPED_HOLD_MS = 1500;
/**
 * The `Retry-After` (seconds) of an empty answer to a request the wait cap turned away. The hold
 * paces clients that ignore it (Queen's); a client that honours it (ours) sleeps instead of
 * asking again at once, and holds no Lambda execution while it sleeps.
 */
export const CAPPED_RETRY_AFTER_S = 1;

/** Admits waits against the deployment-wide cap (`WaitSlots`); without one every wait is admitted. */
export interface WaitGate {
  take(budgetMs: number): Promise<WaitAdmission>;
}

/** How a long poll ended: what it found (null: nothing), and whether the wait cap turned it away. */
export interface WaitOutcome<T> {
  value: T | null;
  /** No wait slot was free: the request only held {@link CAPPED_HOLD_MS} instead of waiting. */
  capped: boolean;
}

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
 * With a {@link WaitGate}, a request whose first look finds nothing takes a wait slot before
 * it waits and releases it at the end; when the cap is reached it holds
 * {@link CAPPED_HOLD_MS} instead (docs/DEPLOYING.md, "Quotas"), looks once more and answers.
 *
 * @example
 * ```ts
 * const { value } = await longPoll.wait({ queue: 'orders', budgetMs: 20_000, signal, look: () => popOnce(req) });
 * ```
 */
export class LongPoll {
  /** Baton keys with a woken waiter reading storage right now. */
  private readonly probing = new Set<string>();
  /** Baton keys where a woken waiter was turned away while another was probing. */
  private readonly denied = new Set<string>();

  constructor(
    private readonly notifier: Notifier,
    private readonly gate?: WaitGate | undefined,
  ) {}

  /**
   * Looks until `look` finds something or the budget runs out (then null, or the last look
   * with `lookAtEnd`). With the wait cap reached: a short hold, one more look, then that,
   * marked `capped`.
   */
  async wait<T>(req: WaitRequest<T>): Promise<WaitOutcome<T>> {
    let admission: WaitAdmission | undefined;
    try {
      const value = await this.poll(req, async () => (admission = await this.gate?.take(req.budgetMs)));
      return { value, capped: admission?.admitted === false };
    } finally {
      if (admission?.admitted) await admission.release();
    }
  }

  /** The wait itself; `admit` runs once, when the first look found nothing and there is time to wait. */
  private async poll<T>(req: WaitRequest<T>, admit: () => Promise<WaitAdmission | undefined>): Promise<T | null> {
    const { queue, signal, baton: key } = req;
    const started = performance.now();
    const deadline = started + Math.max(0, req.budgetMs);
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
      if (first && (await admit())?.admitted === false) {
        // Cap reached: hold (a push here still wakes it), look once more, answer.
        const holdEnd = Math.min(deadline, started + CAPPED_HOLD_MS);
        let woken = await woke;
        while (!woken && !signal?.aborted && performance.now() < holdEnd)
          woken = await this.notifier.wait(queue, holdEnd - performance.now(), signal);
        return signal?.aborted && !req.lookAtEnd ? null : req.look();
      }
      await woke;
      if (signal?.aborted || performance.now() >= deadline) return req.lookAtEnd ? req.look() : null;
    }
    return null;
  }
}
