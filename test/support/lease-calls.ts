/**
 * The partition-lease requests the black-box tests repeat, against one server: push payloads
 * (a 201 expected), pop (as answered, or a 200 expected), ack a batch, and the ack items of
 * popped messages. `target` is read at each call, so it can be the URL a `beforeAll` assigns.
 *
 * @example
 * ```ts
 * let url: string;
 * const { push, popped, ackBatch } = leaseCalls(() => url);
 * await push('q', [1, 2]);
 * const { messages } = await popped('q', 'batch=2');
 * await ackBatch(messages, 'completed');
 * ```
 */
import { expect } from 'vitest';
import { callTarget, type HttpReply, type HttpTarget } from './http.js';
import type { AckReply, PopReply, PoppedMessage } from './replies.js';

/** What an ack names of a popped message. */
export type AckedMessage = Pick<PoppedMessage, 'transactionId' | 'partitionId' | 'leaseId'>;

/** Ack items for `msgs`, all with one status (`/ack/batch`'s and ack-and-pop's `acknowledgments`). */
export const acksOf = (msgs: readonly AckedMessage[], status = 'completed') =>
  msgs.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId, status }));

/** See the module comment; `target` is a base URL or a target with headers (a bearer token). */
export function leaseCalls(target: () => string | HttpTarget) {
  const to = (): HttpTarget => {
    const t = target();
    return typeof t === 'string' ? { url: t } : t;
  };
  /** Pushes one message per payload (to `partition`, else Default); expects a 201. */
  const push = async (
    queue: string,
    payloads: unknown[],
    partition?: string,
  ): Promise<{ transaction_id: string; partition_id: string }[]> => {
    const r = await callTarget<{ transaction_id: string; partition_id: string }[]>(to(), 'POST', '/api/v1/push', {
      items: payloads.map((payload) => ({ queue, partition, payload })),
    });
    expect(r.status).toBe(201);
    return r.body;
  };
  /** A pop of the queue (or of one partition), `qs` its query string; the answer as it came. */
  const pop = async (queue: string, qs = '', partition?: string): Promise<HttpReply<PopReply>> => {
    const path = partition ? `/api/v1/pop/queue/${queue}/partition/${partition}` : `/api/v1/pop/queue/${queue}`;
    return callTarget<PopReply>(to(), 'GET', `${path}${qs ? `?${qs}` : ''}`);
  };
  /** A pop that must deliver (a 200). */
  const popped = async (queue: string, qs = '', partition?: string): Promise<PopReply> => {
    const r = await pop(queue, qs, partition);
    expect(r.status).toBe(200);
    return r.body;
  };
  /** `POST /api/v1/ack/batch` for `msgs`: one status for all, or one each; `extra` goes into every item. */
  const ackBatch = async (
    msgs: readonly AckedMessage[],
    status: string | string[],
    extra: Record<string, unknown> = {},
    group?: string,
  ): Promise<HttpReply<AckReply>> =>
    callTarget<AckReply>(to(), 'POST', '/api/v1/ack/batch', {
      consumerGroup: group ?? null,
      acknowledgments: msgs.map((m, i) => ({
        transactionId: m.transactionId,
        partitionId: m.partitionId,
        leaseId: m.leaseId,
        status: Array.isArray(status) ? status[i] : status,
        ...extra,
      })),
    });
  return { push, pop, popped, ackBatch };
}
