/**
 * Per-message outcomes of a batch handler, shared by the lease consumer (`consume.ts`) and the
 * claim batch consumer (`claim-batches.ts`).
 *
 * A handler reports failures the way AWS Lambda's partial batch responses do: it returns
 * `{ batchItemFailures: [{ itemIdentifier }] }`, naming each failed message by its
 * **transactionId**. A handler that throws says only that something in the call failed, so the
 * call's messages are tried again one at a time, and only those that fail alone are failures,
 * each with its own error. One bad message no longer fails its healthy neighbours.
 */

/** One message a batch handler reports as failed. */
export interface BatchItemFailure {
  /** The failed message's (or record's) `transactionId`. */
  itemIdentifier: string;
  /** Sluice's addition: the error text the dead letter keeps (Lambda's shape has none and ignores it). */
  error?: string;
}

/**
 * What a batch handler may return to fail some of its messages: AWS Lambda's partial batch
 * response. Anything else returned (`undefined` included) means every message succeeded.
 *
 * @example
 * ```ts
 * const handler = async (messages: Message<Order>[]): Promise<BatchResponse> => {
 *   const failed = [];
 *   for (const m of messages) if (!(await bill(m.data))) failed.push({ itemIdentifier: m.transactionId });
 *   return { batchItemFailures: failed };
 * };
 * ```
 */
export interface BatchResponse {
  batchItemFailures: BatchItemFailure[];
}

/** How one handler call ended, as the consumers' bounded runner reports it. */
export type CallResult = { kind: 'done'; value: unknown } | { kind: 'error'; error: unknown } | { kind: 'abandoned' };

/** Each attempted item's outcome, in order; items after a stop have none. */
export interface BatchRun {
  /** A failure's `error` is what the call threw, or an Error with the text the handler reported. */
  outcomes: ({ ok: true } | { ok: false; error: unknown })[];
  /** The consumer gave up on a call (stop bound): later items were not attempted. */
  abandoned: boolean;
  /** What the whole call threw, when it threw (reported once, as a handler error). */
  threw?: unknown;
}

/** The error text kept for a failed message (dead letter, nack report). */
export const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e)).slice(0, 2000);

const REPORTED = 'reported failed by the handler (batchItemFailures)';

/**
 * Reads a handler's return value against the ids of its call: index → error text of each failed
 * item. A `batchItemFailures` that is not an array, or names an id not in the call, is invalid,
 * and (as Lambda does) the whole call counts as failed: `undefined` is returned.
 */
export function failuresOf(value: unknown, ids: readonly string[]): Map<number, string> | undefined {
  const failed = new Map<number, string>();
  if (value === null || typeof value !== 'object' || !('batchItemFailures' in value)) return failed;
  const list = value.batchItemFailures;
  if (list === null || list === undefined) return failed;
  if (!Array.isArray(list)) return undefined;
  for (const f of list as unknown[]) {
    const id = (f as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    const hits = ids.flatMap((x, i) => (x === id ? [i] : []));
    if (hits.length === 0) return undefined;
    const e = (f as { error?: unknown }).error;
    for (const i of hits) failed.set(i, typeof e === 'string' && e.length > 0 ? e.slice(0, 2000) : REPORTED);
  }
  return failed;
}

/** The error for a response that names ids the call does not hold. */
const invalidResponse = (ids: readonly string[]): string =>
  `the handler's batchItemFailures is not an array of { itemIdentifier } naming transactionIds of this call (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''})`;

/**
 * Runs one batch: the whole call first; when it throws (or answers an invalid response), each
 * item alone, in order. `stopAtFailure` (partition leases, which are in order) stops at the first
 * item that fails, since everything after it comes back anyway; `beforeSolo` runs once before the
 * one-at-a-time pass (the lease consumer acks the finished prefix there).
 *
 * @example
 * ```ts
 * const run = await runBatch(msgs, (m) => m.transactionId, (part) => bounded(() => handler(part)), {
 *   stopAtFailure: true,
 * });
 * const ok = run.outcomes.findIndex((o) => !o.ok); // -1: all succeeded
 * ```
 */
export async function runBatch<I>(
  items: readonly I[],
  idOf: (item: I) => string,
  call: (part: I[]) => Promise<CallResult>,
  opts: { stopAtFailure: boolean; beforeSolo?: () => Promise<void> },
): Promise<BatchRun> {
  const ids = items.map(idOf);
  const whole = await call([...items]);
  if (whole.kind === 'abandoned') return { outcomes: [], abandoned: true };
  if (whole.kind === 'done') {
    const failed = failuresOf(whole.value, ids);
    if (failed) return { outcomes: settle(items.length, failed, opts.stopAtFailure), abandoned: false };
  }
  const threw = whole.kind === 'error' ? whole.error : new Error(invalidResponse(ids));
  if (items.length === 1) return { outcomes: [{ ok: false, error: threw }], abandoned: false, threw };
  await opts.beforeSolo?.();
  const outcomes: BatchRun['outcomes'] = [];
  for (const item of items) {
    const alone = await call([item]);
    if (alone.kind === 'abandoned') return { outcomes, abandoned: true, threw };
    const outcome = soloOutcome(alone, idOf(item));
    outcomes.push(outcome);
    if (!outcome.ok && opts.stopAtFailure) break;
  }
  return { outcomes, abandoned: false, threw };
}

function settle(n: number, failed: Map<number, string>, stopAtFailure: boolean): BatchRun['outcomes'] {
  const out: BatchRun['outcomes'] = [];
  for (let i = 0; i < n; i++) {
    const error = failed.get(i);
    out.push(error === undefined ? { ok: true } : { ok: false, error: new Error(error) });
    if (error !== undefined && stopAtFailure) break;
  }
  return out;
}

function soloOutcome(
  r: { kind: 'done'; value: unknown } | { kind: 'error'; error: unknown },
  id: string,
): BatchRun['outcomes'][number] {
  if (r.kind === 'error') return { ok: false, error: r.error };
  const failed = failuresOf(r.value, [id]);
  if (!failed) return { ok: false, error: new Error(invalidResponse([id])) };
  const error = failed.get(0);
  return error === undefined ? { ok: true } : { ok: false, error: new Error(error) };
}
