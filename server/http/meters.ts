/**
 * What each data-plane route served, read off its own results for `HttpResult.meter`: the
 * counting of pushes, pops, acks, dead letters and claim polls happens here, at the HTTP
 * boundary, never inside the services. Each meter walks its results once and allocates nothing
 * per message.
 *
 * @example
 * ```ts
 * return { statusCode: 201, body: pushResultsText(results), meter: pushMeter(results) };
 * ```
 */
import type { Meter } from '../service/admin/activity.js';
import type { AckResult } from '../service/leases/ack.js';
import type { PopResult } from '../service/leases/pop.js';
import type { PushItem, PushResult } from '../service/log/push.js';

/** A push: one request per queue it touched, its queued messages and duplicates per queue. */
export const pushMeter =
  (results: readonly PushResult[]) =>
  (m: Meter): void => {
    let queue: string | undefined;
    let queued = 0;
    let duplicates = 0;
    const flush = (): void => {
      if (queue === undefined) return;
      m.count(queue, 'pushMessages', queued);
      m.count(queue, 'duplicates', duplicates);
    };
    const seen = new Set<string>();
    for (const r of results) {
      if (r.queue !== queue) {
        flush();
        queue = r.queue;
        queued = 0;
        duplicates = 0;
        if (!seen.has(queue)) {
          seen.add(queue);
          m.count(queue, 'pushRequests');
        }
      }
      if (r.status === 'queued') queued++;
      else if (r.status === 'duplicate') duplicates++;
    }
    flush();
  };

/**
 * A pop: a request on the queue, the messages it leased and their age, or an empty pop; and the
 * messages it passed over because they outlived the queue's ttl.
 */
export const popMeter =
  (queue: string | undefined, pop: PopResult | null | undefined, now: number, expired?: ReadonlyMap<string, number>) =>
  (m: Meter): void => {
    for (const [q, n] of expired ?? []) m.count(q, 'ttlExpired', n);
    // A pop by namespace/task that found nothing names no queue; nor is a queue that does not exist metered.
    if (queue === undefined) return;
    m.count(queue, 'popRequests');
    if (!pop || pop.messages.length === 0) {
      m.count(queue, 'popEmpty');
      return;
    }
    m.count(queue, 'popMessages', pop.messages.length);
    // An autoAck pop (no lease id) finished them: acks, as Queen counts them.
    if (pop.leaseId === '') m.count(queue, 'ackSuccess', pop.messages.length);
    for (const msg of pop.messages) m.lag(queue, now - msg.createdAt);
  };

/** Acks: successes and failures per queue, and the dead letters they filed. */
export const ackMeter =
  (results: readonly AckResult[]) =>
  (m: Meter): void => {
    for (const r of results) {
      if (r.queueName === null) continue;
      m.count(r.queueName, 'ackRequests');
      m.count(r.queueName, r.success ? 'ackSuccess' : 'ackFailed');
      if (r.dlq) m.count(r.queueName, 'deadLetters');
    }
  };

/** A committed transaction: one per queue it pushed to, with the messages it pushed there. */
export const transactionMeter =
  (pushed: readonly PushItem[]) =>
  (m: Meter): void => {
    const seen = new Set<string>();
    for (const item of pushed) {
      if (!seen.has(item.queue)) {
        seen.add(item.queue);
        m.count(item.queue, 'transactions');
      }
      m.count(item.queue, 'pushMessages');
    }
  };

/** A record-claim poll: the records it claimed and their age, and whether its group was at its in-flight cap. */
export const claimPollMeter =
  (queue: string, r: { records: readonly { message: { createdAt: number } }[]; capped: boolean }, now: number) =>
  (m: Meter): void => {
    m.count(queue, 'claimPolls');
    if (r.capped) m.count(queue, 'claimPollsCapped');
    m.count(queue, 'claimMessages', r.records.length);
    for (const rec of r.records) m.lag(queue, now - rec.message.createdAt);
  };

/** A record-claim settle: acks (and dead letters) of one group on one queue. */
export const claimSettleMeter =
  (queue: string, counter: 'claimAcks' | 'deadLetters', n: number) =>
  (m: Meter): void =>
    m.count(queue, counter, n);
