/**
 * The handle state of `consume.ts`'s model: one pop worked through by the handler, `batch`
 * messages a call (or one with `each`), while its lease is renewed and, with `autoAck`, its
 * finished part acked as it goes. It answers the pop's final acks for the next pop to carry.
 */
import { errorText, runBatch, type CallResult } from './batch-outcome.js';
import type { LeaseContext } from './consume.js';
import type { LeaseRun } from './consume-run.js';
import type { Message } from './types.js';

/** How far the handler got through a pop. */
interface Progress<T> {
  /** Messages whose handler call resolved. */
  done: number;
  /** Of those, how many a progress ack already committed. */
  acked: number;
  /** The first message that failed: the pop's handling ends there. */
  failure?: { error: unknown; message: Message<T> } | undefined;
  /** A handler call was given up at the stop bound. */
  gaveUp: boolean;
}

/**
 * Works `msgs` (one pop) through the handler; answers the final acks, each message marked with
 * its `_status` (none without `autoAck`: what the handler got is the handler's to ack).
 *
 * @example
 * ```ts
 * const finalAcks = await handlePop(run, msgs); // sent with the next pop
 * ```
 */
export async function handlePop<T>(run: LeaseRun<T>, msgs: Message<T>[]): Promise<Message<T>[]> {
  const lease = new HeldLease(run, msgs);
  try {
    const progress = run.settings.autoAck
      ? await handleAutoAcked(run, lease, msgs)
      : await handleManually(run, lease, msgs);
    if (progress.gaveUp) run.stats.abandoned++;
    return run.settings.autoAck ? finalAcks(run, msgs, progress) : [];
  } finally {
    lease.close();
  }
}

/** Manual mode: the handler acks; a throw only ends this pop's handling. */
async function handleManually<T>(run: LeaseRun<T>, lease: HeldLease<T>, msgs: Message<T>[]): Promise<Progress<T>> {
  const p: Progress<T> = { done: 0, acked: 0, gaveUp: false };
  while (p.done < msgs.length && !run.stopped && !lease.released) {
    const part = msgs.slice(p.done, p.done + run.settings.perCall);
    const out = await lease.call(part);
    if (out.kind === 'abandoned') p.gaveUp = true;
    if (out.kind === 'error') run.report(out.error, 'handler', part);
    if (out.kind !== 'done') break;
    p.done += part.length;
  }
  return p;
}

/**
 * Auto-ack mode: each call's outcomes read per message (`batch-outcome.ts`), up to the first
 * failure; the finished part is acked every `ackIntervalMs` (a partial ack keeps the lease).
 */
async function handleAutoAcked<T>(run: LeaseRun<T>, lease: HeldLease<T>, msgs: Message<T>[]): Promise<Progress<T>> {
  const p: Progress<T> = { done: 0, acked: 0, gaveUp: false };
  let lastAck = Date.now();
  const ackFinished = async (): Promise<void> => {
    await run.ack(msgs.slice(p.acked, p.done), 'completed');
    p.acked = p.done;
    lastAck = Date.now();
  };
  while (p.done < msgs.length && !run.stopped && !lease.released) {
    const part = msgs.slice(p.done, p.done + run.settings.perCall);
    const out = await runBatch(
      part,
      (m) => m.transactionId,
      (x) => lease.call(x),
      {
        stopAtFailure: true, // a lease group's partition is in order: what follows a failure comes back
        // Before the one-at-a-time pass: commit what came before (a partial ack keeps the lease).
        beforeSolo: ackFinished,
      },
    );
    if (out.threw !== undefined) run.report(out.threw, 'handler', part);
    const ok = out.outcomes.findIndex((o) => !o.ok);
    p.done += ok === -1 ? out.outcomes.length : ok;
    const bad = ok === -1 ? undefined : out.outcomes[ok];
    if (bad && !bad.ok) {
      p.failure = { error: bad.error, message: part[ok] as Message<T> };
      if (part.length > 1 || out.threw === undefined) run.report(bad.error, 'handler', [p.failure.message]);
      break;
    }
    if (out.abandoned) {
      p.gaveUp = true;
      break;
    }
    if (run.settings.ackEvery > 0 && p.done < msgs.length && Date.now() - lastAck >= run.settings.ackEvery)
      await ackFinished();
  }
  return p;
}

/** The pop's final acks: completed what was handled, failed the message that failed, retry the rest. */
function finalAcks<T>(run: LeaseRun<T>, msgs: Message<T>[], p: Progress<T>): Message<T>[] {
  const marked: Message<T>[] = msgs.slice(p.acked, p.done).map((m) => ({ ...m, _status: 'completed' }));
  if (p.failure) {
    marked.push({ ...p.failure.message, _status: 'failed', _error: errorText(p.failure.error) });
    // On the failed message's partition `failed` decides (the lowest signal wins) and what
    // follows it comes back; a pop over several partitions (`partitions(n)`) releases the
    // others' spans at once too.
    marked.push(...msgs.slice(p.done + 1).map((m) => ({ ...m, _status: 'retry' })));
  } else if (!p.gaveUp && p.done < msgs.length) {
    // Stopping: what the handler never saw goes back now, without charging the budget.
    marked.push(...msgs.slice(p.done).map((m) => ({ ...m, _status: 'retry' })));
  }
  run.stats.completed += p.done;
  if (p.failure) run.stats.failed++;
  else if (!p.gaveUp) run.stats.handedBack += msgs.length - p.done;
  return marked;
}

/** A pop's lease while it is handled: the handlers' signal, the renewal timer, and a manual release. */
class HeldLease<T> {
  private readonly ctl = new AbortController();
  private readonly timer: NodeJS.Timeout | undefined;
  /**
   * An ack with another status than completed (`ctx.ack`) released the lease: the rest of the
   * pop would only be refused.
   */
  released = false;

  constructor(
    private readonly run: LeaseRun<T>,
    private readonly msgs: Message<T>[],
  ) {
    run.running.add(this.ctl);
    // One timer for the whole pop, not per handler call: it covers 1,000 messages handled
    // one at a time as well as one long batch call.
    this.timer =
      run.settings.renewEvery > 0
        ? setInterval(
            () => void this.renew().catch((e: unknown) => run.report(e, 'renew', msgs)),
            run.settings.renewEvery,
          )
        : undefined;
  }

  /** Extends the whole pop's lease (the timer's tick, and `ctx.renew`). */
  readonly renew = async (seconds = this.run.settings.renewSeconds): Promise<void> => {
    const rs = await this.run.q.client.renew(this.msgs, seconds);
    const lost = rs.filter((r) => !r.success);
    if (lost.length > 0)
      throw new Error(
        `lease ${lost[0]?.leaseId} could not be renewed (it expired); its messages will be delivered again`,
      );
  };

  /** One handler call over `part`, bounded by the stop. */
  call(part: Message<T>[]): Promise<CallResult> {
    const { run } = this;
    return run.bounded(() =>
      run.settings.each
        ? (run.handler as (m: Message<T>, c: LeaseContext<T>) => unknown)(part[0] as Message<T>, this.context(part))
        : (run.handler as (m: Message<T>[], c: LeaseContext<T>) => unknown)(part, this.context(part)),
    );
  }

  private context(part: Message<T>[]): LeaseContext<T> {
    return {
      signal: this.ctl.signal,
      messages: part,
      ack: (m = part, status = 'completed', o = {}) => {
        if (status !== 'completed' && status !== 'success' && status !== true) this.released = true;
        return this.run.q.client.ack(m, status, o);
      },
      renew: this.renew,
    };
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.run.running.delete(this.ctl);
  }
}
