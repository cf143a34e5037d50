/**
 * The partition-lease routes' answers in Queen's wire shape: a pop (as a value and, for the
 * hot path, as text), an ack result, and `ack-and-pop`'s `{acks, popped, pop}`.
 */
import { jsonNumber, jsonString, jsonStringOrNull, rawPayload } from '../../codec/json-writer.js';
import type { AckResult } from '../../service/leases/ack.js';
import type { AckAndPopResult } from '../../service/leases/ack-and-pop.js';
import type { PopResult } from '../../service/leases/pop.js';

/**
 * A pop answer as a value (Queen's shape), payloads spliced in verbatim: the reference that
 * {@link popResultText} writes as text, kept equal by test/unit/pop-result-text.test.ts.
 *
 * @example
 * ```ts
 * toJson(popResultJson(pop)); // the same text as popResultText(pop)
 * ```
 */
export function popResultJson(pop: PopResult): Record<string, unknown> {
  const first = pop.partitions[0];
  const names = new Map(pop.partitions.map((p) => [p.id, p.name]));
  return {
    success: true,
    queue: pop.queue,
    partition: first?.name ?? null,
    partitionId: first?.id ?? null,
    leaseId: pop.leaseId,
    consumerGroup: pop.group,
    partitionsClaimed: pop.partitions.length,
    messages: pop.messages.map((m) => ({
      id: m.id,
      transactionId: m.transactionId,
      traceId: m.traceId,
      data: rawPayload(m.payload),
      producerSub: null,
      createdAt: new Date(m.createdAt).toISOString(),
      partitionId: m.partitionId,
      partition: names.get(m.partitionId) ?? m.partition,
      leaseId: pop.leaseId,
      consumerGroup: pop.group,
      queue: pop.queue,
      offset: m.offset,
    })),
  };
}

/**
 * `toJson(popResultJson(r))`, built as text: every message repeats the lease, group, queue
 * and partition, so those are escaped once per answer.
 *
 * @example
 * ```ts
 * popResultText(await services.leasePops.pop(request)); // '{"success":true,"queue":"orders",...}'
 * ```
 */
export function popResultText(pop: PopResult): string {
  const first = pop.partitions[0];
  const tail = `,"leaseId":${jsonString(pop.leaseId)},"consumerGroup":${jsonString(pop.group)},"queue":${jsonString(pop.queue)},"offset":`;
  const names = new Map(
    pop.partitions.map((p) => [p.id, `,"partitionId":${jsonString(p.id)},"partition":${jsonString(p.name)}`]),
  );
  let lastAt = Number.NaN;
  let lastIso = '';
  const parts = new Array<string>(pop.messages.length);
  for (let i = 0; i < pop.messages.length; i++) {
    const message = pop.messages[i] as PopResult['messages'][number];
    // Messages of one push share a timestamp: format it once.
    if (message.createdAt !== lastAt) {
      lastAt = message.createdAt;
      lastIso = new Date(message.createdAt).toISOString();
    }
    const { payload } = message;
    const data = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8');
    const where =
      names.get(message.partitionId) ??
      `,"partitionId":${jsonString(message.partitionId)},"partition":${jsonString(message.partition)}`;
    parts[i] =
      `{"id":${jsonString(message.id)},"transactionId":${jsonString(message.transactionId)}` +
      `,"traceId":${jsonStringOrNull(message.traceId)},"data":${data},"producerSub":null` +
      `,"createdAt":"${lastIso}"${where}${tail}${jsonNumber(message.offset)}}`;
  }
  return (
    `{"success":true,"queue":${jsonString(pop.queue)},"partition":${jsonStringOrNull(first?.name ?? null)}` +
    `,"partitionId":${jsonStringOrNull(first?.id ?? null)},"leaseId":${jsonString(pop.leaseId)}` +
    `,"consumerGroup":${jsonString(pop.group)},"partitionsClaimed":${jsonNumber(pop.partitions.length)}` +
    `,"messages":[${parts.join(',')}]}`
  );
}

/** An ack result as `/ack` answers it. */
export const ackJson = (result: AckResult) => ({
  index: result.index,
  transactionId: result.transactionId,
  success: result.success,
  error: result.error,
  queueName: result.queueName,
  partitionName: result.partitionName,
  leaseReleased: result.leaseReleased,
  dlq: result.dlq,
});

/**
 * The route's answer as text: the acks, whether it popped, and Queen's pop answer or null
 * (nothing to deliver, or not asked: `popped: false`, an ack failed).
 *
 * @example
 * ```ts
 * ackAndPopText(await services.ackAndPop.run(items, pop)); // '{"acks":[…],"popped":true,"pop":{"success":true,…}}'
 * ```
 */
export function ackAndPopText(r: AckAndPopResult): string {
  const popped = r.pop?.result ?? null;
  return `{"acks":${JSON.stringify(r.acks.map(ackJson))},"popped":${r.pop !== undefined},"pop":${popped ? popResultText(popped) : 'null'}}`;
}
