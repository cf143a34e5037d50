/**
 * A target's handler in a few lines: `processTargetEvent` runs your function once per record of
 * an event (docs/TARGETS.md) and answers with the partial batch response, as Powertools'
 * `processPartialResponse` does for SQS. Enable `ReportBatchItemFailures` on the target.
 *
 * - `leases` events hold one partition's records in order: they run one at a time, in order,
 *   and the first failure stops the run (it and every record after it come back, in order).
 * - `claims` events hold records in any order: they run up to `concurrency` at once, and only
 *   the failed ones come back.
 *
 * @example
 * ```ts
 * import { processTargetEvent, type TargetEvent } from '@sluice/client';
 * export const handler = (event: TargetEvent) =>
 *   processTargetEvent<{ orderId: string }>(event, async (record) => {
 *     await bill(record.payload.orderId);
 *   });
 * ```
 */
import type { BatchResponse } from './batch-outcome.js';
import type { TargetEvent, TargetRecord } from './wire.js';

/** A record as your function sees it: its payload typed as you say. */
export type TargetRecordOf<T> = Omit<TargetRecord, 'payload'> & { payload: T };

/** At most this many records of a claims event run at once, unless you say otherwise. */
export const DEFAULT_TARGET_CONCURRENCY = 10;

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e)).slice(0, 2000);

/**
 * Runs `handle` for each record of a target's event; resolves to the answer to return.
 *
 * @example
 * ```ts
 * const answer = await processTargetEvent(event, (r) => save(r.payload), { concurrency: 4 });
 * ```
 */
export async function processTargetEvent<T = unknown>(
  event: TargetEvent,
  handle: (record: TargetRecordOf<T>) => unknown,
  opts: { concurrency?: number } = {},
): Promise<BatchResponse> {
  const records = event.records as TargetRecordOf<T>[];
  const failures: BatchResponse['batchItemFailures'] = [];
  if (event.mode === 'leases') {
    for (let i = 0; i < records.length; i++) {
      try {
        await handle(records[i]!);
      } catch (e) {
        // The first failure and everything after it come back, in order: name them all.
        const error = errorText(e);
        for (const r of records.slice(i)) failures.push({ itemIdentifier: r.transactionId, error });
        break;
      }
    }
    return { batchItemFailures: failures };
  }
  const failed = new Map<number, string>();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < records.length; i = next++) {
      try {
        await handle(records[i]!);
      } catch (e) {
        failed.set(i, errorText(e));
      }
    }
  };
  const n = Math.max(1, Math.min(opts.concurrency ?? DEFAULT_TARGET_CONCURRENCY, records.length));
  await Promise.all(Array.from({ length: n }, worker));
  for (const [i, error] of [...failed].sort((a, b) => a[0] - b[0]))
    failures.push({ itemIdentifier: records[i]!.transactionId, error });
  return { batchItemFailures: failures };
}
