/**
 * What a push answers, in Queen's wire shape (snake_case ids): one result per message, in the
 * order they were sent.
 */
import { jsonNumber, jsonString, jsonStringOrNull } from '../../codec/json-writer.js';
import type { PushResult } from '../../service/log/push.js';

/**
 * A push result in Queen's wire shape (snake_case ids): the reference that
 * {@link pushResultsText} writes as text, kept equal by test/unit/push-results-text.test.ts.
 *
 * @example
 * ```ts
 * toJson(results.map(pushResultJson)); // the same text as pushResultsText(results)
 * ```
 */
export function pushResultJson(result: PushResult): Record<string, unknown> {
  const out: Record<string, unknown> = {
    index: result.index,
    status: result.status,
    transaction_id: result.transactionId,
    message_id: result.messageId,
    partition_id: result.partitionId,
    trace_id: result.traceId,
    queueName: result.queue,
    partition: result.partition,
  };
  if (result.offset !== undefined) out.offset = result.offset;
  if (result.error !== undefined) out.error = result.error;
  return out;
}

/**
 * `JSON.stringify(results.map(pushResultJson))`, built as text because a push answers one
 * result per message (docs/BENCHMARKS.md); results in a row with the same queue and partition
 * reuse their escaped text. The push route's one call to it can be swapped for
 * `toJson(results.map(pushResultJson))` to compare with the generic writer.
 *
 * @example
 * ```ts
 * pushResultsText(await services.pushes.push(items)); // '[{"index":0,"status":"queued",...}]'
 * ```
 */
export function pushResultsText(results: readonly PushResult[]): string {
  let out = '[';
  let queue: string | undefined;
  let queueText = '';
  let partition: string | undefined;
  let partitionText = '';
  let partitionId: string | undefined;
  let partitionIdText = '';
  for (let i = 0; i < results.length; i++) {
    const result = results[i] as PushResult;
    if (result.queue !== queue) queueText = jsonString((queue = result.queue));
    if (result.partition !== partition) partitionText = jsonString((partition = result.partition));
    if (result.partitionId !== partitionId) partitionIdText = jsonString((partitionId = result.partitionId));
    out +=
      `${i === 0 ? '' : ','}{"index":${jsonNumber(result.index)},"status":${jsonString(result.status)},"transaction_id":${jsonString(result.transactionId)}` +
      `,"message_id":${jsonString(result.messageId)},"partition_id":${partitionIdText},"trace_id":${jsonStringOrNull(result.traceId)}` +
      `,"queueName":${queueText},"partition":${partitionText}` +
      `${result.offset === undefined ? '' : `,"offset":${jsonNumber(result.offset)}`}` +
      `${result.error === undefined ? '' : `,"error":${jsonString(result.error)}`}}`;
  }
  return `${out}]`;
}
