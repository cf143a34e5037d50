/**
 * An ack and the next pop in one request (`POST /api/v1/queues/{queue}/ack-and-pop`, our route):
 * the consume loop's step, so a steady consumer makes one request per batch.
 */
import { LONG_POLL_MARGIN_MS, seg } from './http.js';
import { ackItem, QUEUE_MODE, type QueueRef } from './sluice.js';
import type { AckResult, Message } from './types.js';

export interface AckAndPopReply<T> {
  /** One per acked message, in order. */
  acks: AckResult[];
  /** False when an ack failed, so no pop was made. */
  popped: boolean;
  /** What the pop delivered (empty: nothing, or not popped). */
  messages: Message<T>[];
}

/**
 * Acks `acks` (each with its `_status`, else `completed`) and pops the next batch as `ref.pop()`
 * would, in one request. Retried like a pop: an answer lost after the pop leaves that span leased
 * until its lease lapses (delayed, not lost).
 *
 * @example
 * ```ts
 * const { messages } = await ackAndPop(sluice.queue('orders').group('billing').batch(1000), done);
 * ```
 */
export async function ackAndPop<T = unknown>(
  ref: QueueRef,
  acks: readonly Message[],
  opts: { signal?: AbortSignal } = {},
): Promise<AckAndPopReply<T>> {
  const s = ref.spec;
  const r = await ref.client.http.json<{
    acks?: AckResult[];
    popped?: boolean;
    pop?: { queue?: string; consumerGroup?: string; leaseId?: string; messages?: Message<T>[] } | null;
  }>({
    method: 'POST',
    path: `/api/v1/queues/${seg(s.queue)}/ack-and-pop`,
    body: {
      consumerGroup: s.group ?? null,
      ...(s.partition !== undefined ? { partition: s.partition } : {}),
      acknowledgments: acks.map((m) => ackItem(m, 'completed')),
      batch: s.batch,
      wait: s.wait,
      timeout: s.timeoutMs,
      ...(s.partitions > 1 ? { partitions: s.partitions } : {}),
      ...(s.leaseSeconds !== undefined ? { leaseSeconds: s.leaseSeconds } : {}),
      ...(s.subscriptionMode !== undefined ? { subscriptionMode: s.subscriptionMode } : {}),
      ...(s.subscriptionFrom !== undefined ? { subscriptionFrom: s.subscriptionFrom } : {}),
    },
    retry: 'idempotent',
    timeoutMs: s.wait ? s.timeoutMs + LONG_POLL_MARGIN_MS : undefined,
    signal: opts.signal,
    paced: true,
  });
  const pop = r?.pop;
  return {
    acks: r?.acks ?? [],
    popped: r?.popped ?? false,
    messages: (pop?.messages ?? []).map((m) => ({
      ...m,
      queue: (m.queue as string | undefined) ?? pop?.queue ?? s.queue,
      consumerGroup: m.consumerGroup ?? pop?.consumerGroup ?? s.group ?? QUEUE_MODE,
      leaseId: m.leaseId ?? pop?.leaseId ?? '',
    })),
  };
}
