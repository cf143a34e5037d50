/**
 * Carries out a wake plan (`core/wake-plan.ts`): each branch claims its first member with a
 * guarded delete, posts `work` to it (with its relay token) and is done; a member already taken
 * (another wake, or registered again) or gone (API Gateway's 410) gives its place to the next.
 * The wait goes before the message: a woken client registers again only after its pop, and
 * that new wait must not be the one deleted.
 *
 * Every AWS request here is bounded: at most {@link WAKE_CONCURRENCY} in flight, at most
 * {@link MAX_ATTEMPTS_PER_BRANCH} members tried per branch, at most {@link MAX_STALE_REMOVALS}
 * stale waits removed per call. A wake-up owed and not delivered (a failed post, a branch out
 * of attempts, a branch left out at the budget) is counted as `WakeUpsDropped`: that consumer
 * sleeps until the next push or its safety poll.
 *
 * @example
 * ```ts
 * const fanout = new WakeFanout({ storage, telemetry, poster, forget: (c) => svc.disconnect(c) });
 * await fanout.run([{ queue: 'orders', branch }], { at: now }); // { woken: 1, dropped: 0 }
 * ```
 */
import { relayTokenOf, type Branch } from '../../core/wake-plan.js';
import { ConditionFailedError, type Storage } from '../../storage/port.js';
import type { Telemetry } from '../telemetry.js';
import type { ConnectionPoster } from './connection-poster.js';
import type { StoredWait } from './notification-store.js';

/**
 * Calls (deletes and posts) one invocation keeps in flight. Eight at ~40 ms a wake-up (a
 * delete, then a post) make the 100 wake-ups a push may owe take about half a second of the
 * function's 10 s, stay far below the SDK's 50 sockets (no call queues inside the client),
 * and keep a 256 MB function's memory flat whatever the number of waiters.
 */
export const WAKE_CONCURRENCY = 8;

/**
 * Branches (wake-ups) one notifier invocation starts: 50 groups' worth at 2 each. At 8 in
 * flight that is ~0.5 s, and still inside the 10 s timeout if every call took ten times as long.
 */
export const MAX_WAKES_PER_CALL = 100;

/** Members a branch tries before it gives up: a taken or gone member is rare, four of them in a row rarer. */
export const MAX_ATTEMPTS_PER_BRANCH = 4;

/** Stale waits removed per call: the rest wait for a later push (a stale wait is only read, never woken) or TTL. */
export const MAX_STALE_REMOVALS = 50;

/** One branch of one queue's plan (a branch of group `''` gets no relay token: its clients cannot relay). */
export interface WakeJob {
  queue: string;
  branch: Branch<StoredWait>;
}

export interface WakeOutcome {
  /** Posts that reached a connection. */
  woken: number;
  /** Wake-ups owed and not delivered (see the module doc). */
  dropped: number;
}

export interface WakeFanoutDeps {
  storage: Storage;
  telemetry: Telemetry;
  poster: () => Promise<ConnectionPoster>;
  /** Forgets a connection API Gateway says is gone. */
  forget: (connectionId: string) => Promise<void>;
}

export class WakeFanout {
  private posterInstance: Promise<ConnectionPoster> | undefined;

  constructor(private readonly deps: WakeFanoutDeps) {}

  /**
   * Runs `jobs` (and removes `stale`), `at` being the time of the push that began them (their
   * relay tokens carry it); `skipped` adds wake-ups the plan left out to the dropped count.
   */
  async run(
    jobs: readonly WakeJob[],
    opts: { at: number; stale?: readonly StoredWait[]; skipped?: number },
  ): Promise<WakeOutcome> {
    const stale = (opts.stale ?? []).slice(0, MAX_STALE_REMOVALS);
    const out: WakeOutcome = { woken: 0, dropped: opts.skipped ?? 0 };
    if (jobs.length > 0 || stale.length > 0) {
      const poster = jobs.length > 0 ? await (this.posterInstance ??= this.deps.poster()) : undefined;
      const tasks: (() => Promise<void>)[] = [
        ...jobs.map((j) => async () => {
          const r = await this.wake(poster as ConnectionPoster, j, opts.at);
          out.woken += r.woken;
          out.dropped += r.dropped;
        }),
        ...stale.map((w) => async () => void (await this.claim(w))),
      ];
      await pool(tasks, (t) => t());
    }
    if (out.woken > 0) this.deps.telemetry.count('WakeUps', out.woken);
    if (out.dropped > 0) this.deps.telemetry.count('WakeUpsDropped', out.dropped);
    return out;
  }

  private async wake(poster: ConnectionPoster, { queue, branch }: WakeJob, at: number): Promise<WakeOutcome> {
    const r: WakeOutcome = { woken: 0, dropped: 0 };
    const members = branch.members;
    for (let i = 0; i < members.length; i++) {
      if (i >= MAX_ATTEMPTS_PER_BRANCH) {
        r.dropped++;
        return r;
      }
      const w = members[i] as StoredWait;
      if (!(await this.claim(w))) continue;
      // A wait without a group comes from a client that cannot relay.
      const relay = branch.group === '' ? undefined : relayTokenOf(members, i, at);
      const sent = await poster
        .post(w.connectionId, relay === undefined ? { type: 'work', queue } : { type: 'work', queue, relay })
        .catch(() => 'failed' as const);
      if (sent === 'sent') {
        r.woken++;
        return r;
      }
      if (sent === 'failed') r.dropped++;
      else await this.deps.forget(w.connectionId);
    }
    return r;
  }

  /** Deletes exactly the registration read; false when it is gone or was registered again since. */
  private async claim(w: StoredWait): Promise<boolean> {
    try {
      await this.deps.storage.items.delete('meta', w.key, { kind: 'version', ver: w.ver });
      return true;
    } catch (e) {
      if (e instanceof ConditionFailedError) return false;
      throw e;
    }
  }
}

/** `fn` over `xs` with at most {@link WAKE_CONCURRENCY} calls unfinished at once, results in order. */
export async function pool<T, R>(xs: readonly T[], fn: (x: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(xs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < xs.length) {
      const i = next++;
      out[i] = await fn(xs[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(WAKE_CONCURRENCY, xs.length) }, worker));
  return out;
}
