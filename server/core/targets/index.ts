/**
 * Targets (issue 26): a consumer group whose consumer is a Lambda function or an HTTPS
 * endpoint. Sluice is the pull consumer on its behalf, and `core/targets/` is every decision
 * that takes, pure: no I/O, no clocks, no randomness (`now` and `random` come in).
 *
 * One delivery, on one page:
 * 1. Take work: the group's partition leases (`mode: 'leases'`: one partition's records in
 *    offset order, at most one batch in flight per partition) or record claims
 *    (`mode: 'claims'`: records in any order), held for the target's timeout plus a margin.
 * 2. Cut (`batch.ts`): records older than `maximumRecordAgeInSeconds`, or too large for an
 *    event on their own, are filed as dead letters and never sent (for a lease only at the
 *    head, since a lease acks by prefix). The rest go out in events of at most `batchSize`
 *    records and `maxEventBytes`, counted exactly as `JSON.stringify` writes the event.
 * 3. Invoke: an `Invoker` reports an `InvokeResult` (`invoke-result.ts`): answered, function-error,
 *    throttled or unreachable. Only the first two mean the target ran.
 * 4. Read (`outcome.ts`): ok, partial (with `ReportBatchItemFailures`, the answer's
 *    `batchItemFailures`), failed, or not-run. Lambda's reading, under its names.
 * 5. Bisect (`bisect.ts`), with `bisectBatchOnFunctionError`, when a batch of two or more
 *    failed as a whole: the records are still held, so halves are invoked until the record
 *    that fails alone is found (leases: the first; claims: all of them).
 * 6. Settle (`outcome.ts`, or the bisect's result): a lease completes its good prefix and
 *    charges the rest (retried in order, one attempt against the partition's budget; past
 *    `maximumRetryAttempts` the head is dead-lettered, as `planAck` in core/leases.ts does) or
 *    releases it uncharged; claims ack each good record and nack each failed one, charged only
 *    when the target ran.
 * 7. Wait (`backoff.ts`): a target that did not run is backed off (`throttleDelayMs`,
 *    Retry-After honoured); charged failures wait `failureDelayMs` before going out again.
 *
 * @example
 * ```ts
 * import * as targets from '../core/targets/index.js';
 * const cut = targets.cutLeaseBatch(records, limits, now);
 * const outcome = targets.readOutcome(await invoker.invoke(json, { timeoutMs }), ids, reportBatchItemFailures);
 * const settle = targets.leaseSettlement(cut.send, outcome);
 * ```
 */
export * from './invoke-result.js';
export * from './batch.js';
export * from './outcome.js';
export * from './bisect.js';
export * from './backoff.js';
