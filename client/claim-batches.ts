/**
 * Batch handlers for record claims (`claimGroup(g).consumeBatches(handler, { batch })`): the
 * claim consumer hands out records one by one (each with its claim kept alive, acked or nacked
 * on its own); this gathers the records dispatched together into one handler call and settles
 * each from that call's per-record outcome (`batch-outcome.ts`). Claims have no order to keep,
 * so every record of a call that throws is tried alone, and only those that fail alone are
 * nacked, each with its own error.
 */
import { runBatch, type CallResult } from './batch-outcome.js';
import type { ClaimConsumeOptions, ClaimContext, ClaimHandler } from './claims.js';
import type { ClaimRecord } from './types.js';

/** What a claim batch handler gets besides its records. */
export interface ClaimBatchContext<T> {
  records: ClaimRecord<T>[];
  /** Aborts when a claim of the call was lost (an extension was refused) or the consumer gave up on it. */
  signal: AbortSignal;
}

/**
 * A claim batch handler: return nothing when every record succeeded, or
 * `{ batchItemFailures: [{ itemIdentifier: record.transactionId }] }` to fail some; a throw
 * fails the call, whose records are then tried one at a time. Make it idempotent.
 *
 * @example
 * ```ts
 * const handler: ClaimBatchHandler<Job> = async (records) => {
 *   await Promise.all(records.map((r) => run(r.data)));
 * };
 * ```
 */
export type ClaimBatchHandler<T> = (records: ClaimRecord<T>[], ctx: ClaimBatchContext<T>) => unknown;

export interface ClaimBatchOptions extends Omit<ClaimConsumeOptions, 'autoAck' | 'concurrency'> {
  /** Records per handler call at most (default 10). */
  batch?: number;
  /** Handler calls running at once (default 1). */
  concurrency?: number;
}

type Pending<T> = { rec: ClaimRecord<T>; ctx: ClaimContext<T>; resolve: () => void; reject: (e: unknown) => void };

/**
 * The per-record handler and loop options that run `handler` over batches: the loop may run
 * `batch × concurrency` records at once and polls that many, and records dispatched in the same
 * turn of the event loop (a poll's records) go to one call, `batch` at most.
 *
 * @example
 * ```ts
 * const { handler: perRecord, options } = batchedClaims(handler, { batch: 10 });
 * await group.consume(perRecord, options); // what group.consumeBatches(handler, { batch: 10 }) does
 * ```
 */
export function batchedClaims<T>(
  handler: ClaimBatchHandler<T>,
  opts: ClaimBatchOptions,
): { handler: ClaimHandler<T>; options: ClaimConsumeOptions } {
  const batch = Math.max(1, opts.batch ?? 10);
  const slots = batch * Math.max(1, opts.concurrency ?? 1);
  let pending: Pending<T>[] = [];
  let scheduled = false;

  const call = async (items: Pending<T>[]): Promise<CallResult> => {
    try {
      const signal = AbortSignal.any(items.map((i) => i.ctx.signal));
      return {
        kind: 'done',
        value: await handler(
          items.map((i) => i.rec),
          { records: items.map((i) => i.rec), signal },
        ),
      };
    } catch (error) {
      return { kind: 'error', error };
    }
  };
  const flush = (): void => {
    scheduled = false;
    while (pending.length > 0) {
      const items = pending.slice(0, batch);
      pending = pending.slice(batch);
      void runBatch(items, (i) => i.rec.transactionId, call, { stopAtFailure: false }).then(
        (run) => {
          // The per-record loop races each record against its stop bound; an abandoned call leaves its records to lapse.
          run.outcomes.forEach((o, k) => (o.ok ? items[k]?.resolve() : items[k]?.reject(o.error)));
        },
        (e: unknown) => items.forEach((i) => i.reject(e)),
      );
    }
  };
  const perRecord: ClaimHandler<T> = (rec, ctx) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ rec, ctx, resolve, reject });
      if (pending.length >= batch) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
  const options: ClaimConsumeOptions = { ...opts, concurrency: slots, max: opts.max ?? slots };
  delete (options as ClaimBatchOptions).batch;
  return { handler: perRecord, options };
}
