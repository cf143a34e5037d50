/**
 * Reading what a Sluice API holds without consuming it: queues with their counters, one queue's
 * partitions, and the newest messages of a queue (`GET /api/v1/resources/queues[/{q}]`,
 * `GET /api/v1/messages`; docs/QUEEN-COMPAT.md). Nothing here leases or moves anything.
 *
 * @example
 * ```ts
 * const browse = new Browse(sluice.http);
 * for (const q of await browse.queues()) console.log(q.name, q.messages.pending);
 * const { messages } = await browse.messages({ queue: 'orders', limit: 10, payload: true });
 * ```
 */
import type { Transport } from './http.js';
import { seg } from './http.js';

export interface MessageCounters {
  total: number;
  pending: number;
  processing: number;
  completed?: number;
  failed?: number;
  deadLetter?: number;
}

export interface QueueSummary {
  id: string;
  name: string;
  namespace: string;
  task: string;
  createdAt: string;
  partitions: number;
  messages: MessageCounters;
  [extra: string]: unknown;
}

export interface PartitionConsumer {
  group: string;
  kind: 'lease' | 'claim';
  /** The next offset the group wants (everything below is finished). */
  nextOffset: number;
  lag: number;
  inFlight: number;
  leaseExpiresAt: string | null;
}

export interface PartitionSummary {
  id: string;
  name: string;
  createdAt: string;
  stats: Required<MessageCounters>;
  firstOffset: number;
  nextOffset: number;
  oldestMessage: string | null;
  newestMessage: string | null;
  consumers: PartitionConsumer[];
  [extra: string]: unknown;
}

export interface QueueDetail {
  id: string;
  name: string;
  namespace: string;
  task: string;
  createdAt: string;
  partitions: PartitionSummary[];
  totals: Required<MessageCounters>;
  [extra: string]: unknown;
}

export type BrowseStatus = 'pending' | 'processing' | 'completed' | 'dead_letter';

export interface BrowsedMessage<T = unknown> {
  id: string;
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
  offset: number;
  status: BrowseStatus;
  busStatus: { consumedBy: number; totalGroups: number };
  createdAt: string;
  leaseExpiresAt: string | null;
  /** With `payload: true`. */
  data?: T;
  [extra: string]: unknown;
}

export interface BrowseQuery {
  queue?: string;
  partition?: string;
  status?: BrowseStatus;
  /** Window start (default: an hour ago) and end (default: now). */
  from?: Date | string;
  to?: Date | string;
  limit?: number;
  offset?: number;
  /** Include each message's payload (`data`). */
  payload?: boolean;
  signal?: AbortSignal;
}

const isoOf = (t: Date | string | undefined): string | undefined => (t instanceof Date ? t.toISOString() : t);

export class Browse {
  constructor(private readonly http: Transport) {}

  /** The queues the caller may consume, newest first. */
  async queues(
    opts: { namespace?: string; task?: string; limit?: number; offset?: number; signal?: AbortSignal } = {},
  ): Promise<QueueSummary[]> {
    const r = await this.http.json<{ queues?: QueueSummary[] }>({
      method: 'GET',
      path: '/api/v1/resources/queues',
      query: { namespace: opts.namespace, task: opts.task, limit: opts.limit, offset: opts.offset },
      retry: 'idempotent',
      signal: opts.signal,
    });
    return r?.queues ?? [];
  }

  /** One queue with its partitions (counters, offsets, each group's position). Throws `not_found`. */
  async queue(name: string, opts: { signal?: AbortSignal } = {}): Promise<QueueDetail> {
    return (await this.http.json<QueueDetail>({
      method: 'GET',
      path: `/api/v1/resources/queues/${seg(name)}`,
      retry: 'idempotent',
      signal: opts.signal,
    })) as QueueDetail;
  }

  /** The newest messages in a window, newest first, with their status; nothing is consumed. */
  async messages<T = unknown>(q: BrowseQuery = {}): Promise<{ messages: BrowsedMessage<T>[]; mode: unknown }> {
    const r = await this.http.json<{ messages?: BrowsedMessage<T>[]; mode?: unknown }>({
      method: 'GET',
      path: '/api/v1/messages',
      query: {
        queue: q.queue,
        partition: q.partition,
        status: q.status,
        from: isoOf(q.from),
        to: isoOf(q.to),
        limit: q.limit,
        offset: q.offset,
        payload: q.payload ? 'true' : undefined,
      },
      retry: 'idempotent',
      signal: q.signal,
    });
    return { messages: r?.messages ?? [], mode: r?.mode ?? null };
  }
}
