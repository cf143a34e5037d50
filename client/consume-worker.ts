/**
 * One worker of a partition-lease consumer: the state machine of `consume.ts`'s model (pop →
 * handle → pop, idle on the channel, backoff after a failed pop, stop), a method per state, each
 * answering the next state.
 */
import { ackAndPop } from './ack-and-pop.js';
import { handlePop } from './consume-handle.js';
import type { LeaseRun } from './consume-run.js';
import { SluiceApiError } from './errors.js';
import { sleep } from './retry.js';
import type { QueueRef } from './sluice.js';
import type { Message } from './types.js';

/** One look for work: a pop as the worker's builder makes it. */
type Look<T> = () => Promise<Message<T>[]>;

/** Where a worker is: see the model in `consume.ts`. */
type State<T> =
  | { at: 'pop' }
  | { at: 'idle'; look: Look<T>; longPoll: Look<T> }
  | { at: 'handle'; messages: Message<T>[] }
  | { at: 'backoff'; ms: number }
  | { at: 'stop' };

const POP = { at: 'pop' } as const;
const STOP = { at: 'stop' } as const;
/** How long a worker waits after a failed pop, and an idle one that does not long-poll. */
const BACKOFF_MS = 1000;
const NO_WAIT_PAUSE_MS = 100;

/**
 * Runs one worker until it stops; then sends the acks it still carries.
 *
 * @example
 * ```ts
 * await Promise.all(Array.from({ length: run.settings.concurrency }, () => runWorker(run)));
 * ```
 */
export async function runWorker<T>(run: LeaseRun<T>): Promise<void> {
  const worker = new Worker(run);
  let state: State<T> = POP;
  try {
    while (state.at !== 'stop') state = await worker.step(state);
  } finally {
    await run.ack(worker.carried, 'completed');
  }
}

class Worker<T> {
  /** The last pop's final acks, which the next pop carries. */
  carried: Message<T>[] = [];
  /**
   * After a failure the failed message heads its partition again: pop it alone until a pop goes
   * through cleanly, rather than re-reading a whole pop behind it at each redelivery.
   */
  private recovering = false;
  /** This worker's last sleep on the channel ended with a wake-up. */
  private woken = false;

  constructor(private readonly run: LeaseRun<T>) {}

  step(s: Exclude<State<T>, { at: 'stop' }>): Promise<State<T>> {
    switch (s.at) {
      case 'pop':
        return this.pop();
      case 'idle':
        return this.idle(s.look, s.longPoll);
      case 'handle':
        return this.handle(s.messages);
      case 'backoff':
        return this.backoff(s.ms);
    }
  }

  /** Asks for work, carrying the last pop's final acks. */
  private async pop(): Promise<State<T>> {
    const { run } = this;
    if (run.stopped) return STOP;
    if (run.settings.limit !== undefined && run.stats.messages >= run.settings.limit) return STOP;
    const ref = this.nextRef();
    if (ref === undefined) return STOP; // idle for idleMs
    let msgs = await this.sendCarried(ref);
    // With a channel the pop never waits on the server: waiting happens on the channel.
    const onChannel = run.channel !== undefined && run.channel.state !== 'unavailable';
    const look: Look<T> = lookWith(onChannel ? ref.wait(false) : ref, run);
    try {
      if (msgs.length === 0) msgs = await look();
      // Woken and found work: the server wakes the group's next consumers, which may find more.
      if (this.woken && msgs.length > 0) run.channel?.relay();
      this.woken = false;
    } catch (e) {
      return this.failed(e);
    }
    if (msgs.length > 0) return { at: 'handle', messages: msgs };
    if (onChannel) return { at: 'idle', look, longPoll: lookWith(ref, run) };
    if (!run.q.spec.wait) await sleep(NO_WAIT_PAUSE_MS, run.stopping.signal).catch(() => undefined);
    return POP;
  }

  /** The next pop's builder, or `undefined` when the consumer has been idle for `idleMs`. */
  private nextRef(): QueueRef | undefined {
    const { q, settings: set, stats } = this.run;
    const size = this.recovering ? 1 : set.popBatch;
    // A limit caps the pop too, so `limit: 5` does not lease 1,000 messages to use 5.
    let ref = q.batch(set.limit !== undefined ? Math.max(1, Math.min(size, set.limit - stats.messages)) : size);
    if (set.idleMs !== undefined) {
      const left = set.idleMs - (Date.now() - this.run.lastMessageAt);
      if (left <= 0) return undefined;
      if (q.spec.wait && left < q.spec.timeoutMs) ref = ref.timeout(Math.max(1, left));
    }
    return ref;
  }

  /**
   * Sends the carried acks with the next pop in one request (`ack-and-pop`, without waiting, so
   * a stop never cuts it short); answers what that pop found.
   */
  private async sendCarried(ref: QueueRef): Promise<Message<T>[]> {
    const { run } = this;
    const acks = this.carried.splice(0);
    let msgs: Message<T>[] = [];
    if (acks.length > 0 && !run.combinedMissing) {
      try {
        const r = await ackAndPop<T>(ref.wait(false), acks);
        run.reportAcks(r.acks, 'completed', acks);
        msgs = r.messages;
      } catch (e) {
        // A server from before the route: ack on its own from now on.
        if (e instanceof SluiceApiError && (e.status === 404 || e.status === 405)) run.combinedMissing = true;
        else run.report(e, 'ack', acks);
      }
    }
    if (run.combinedMissing) await run.ack(acks, 'completed');
    return msgs;
  }

  /**
   * Nothing found, on a channel: register a wait, look once more (a push may have landed before
   * the wait was stored), then sleep until woken or the safety poll is due. While the channel
   * fails, one long poll stands in for the sleep, so work is still found promptly and nothing
   * spins.
   */
  private async idle(look: Look<T>, longPoll: Look<T>): Promise<State<T>> {
    const { run } = this;
    const channel = run.channel;
    if (!channel || channel.state === 'unavailable') return POP; // the server has none: long-poll from now on
    try {
      let armed: 'armed' | 'unavailable';
      try {
        armed = await channel.arm(run.stopping.signal);
      } catch (e) {
        if (run.stopped) return STOP;
        run.report(e, 'pop');
        const found = await longPoll();
        return found.length > 0 ? { at: 'handle', messages: found } : POP;
      }
      if (armed === 'unavailable') return POP;
      const again = await look();
      if (again.length > 0) return { at: 'handle', messages: again };
      let left = run.settings.safetyPollMs;
      if (run.settings.idleMs !== undefined)
        left = Math.min(left, Math.max(0, run.settings.idleMs - (Date.now() - run.lastMessageAt)));
      // The next pop tells whether to relay a wake-up.
      if ((await channel.sleep(left, run.stopping.signal)) === 'work') this.woken = true;
      return POP;
    } catch (e) {
      return this.failed(e);
    }
  }

  /** Works the pop through (`consume-handle.ts`) and carries its final acks to the next pop. */
  private async handle(msgs: Message<T>[]): Promise<State<T>> {
    const { run } = this;
    run.lastMessageAt = Date.now();
    run.stats.messages += msgs.length;
    run.stats.batches++;
    const finalAcks = await handlePop(run, msgs);
    this.recovering = finalAcks.some((m) => m._status === 'failed');
    this.carried = finalAcks;
    // Limit reached: stop the other workers' long polls too (running handlers still finish).
    if (run.settings.limit !== undefined && run.stats.messages >= run.settings.limit) run.stop();
    return POP;
  }

  private async backoff(ms: number): Promise<State<T>> {
    await sleep(ms, this.run.stopping.signal).catch(() => undefined);
    return POP;
  }

  /** A pop (or an idle look) threw: a refusal stops everyone; anything else is retried after a pause. */
  private failed(e: unknown): State<T> {
    const { run } = this;
    if (run.stopped) return STOP;
    if (e instanceof SluiceApiError && e.status >= 400 && e.status < 500 && e.status !== 429) {
      run.fatal ??= e; // a configuration problem (forbidden, invalid)
      run.stop();
      return STOP;
    }
    run.report(e, 'pop');
    return { at: 'backoff', ms: BACKOFF_MS };
  }
}

/** A pop with `ref`, abandoned at the stop. */
function lookWith<T>(ref: QueueRef, run: LeaseRun<T>): Look<T> {
  return () => ref.pop<T>({ signal: run.stopping.signal });
}
