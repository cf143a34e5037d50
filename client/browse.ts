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
import type {
  BrowseMessagesAnswer,
  ConsumptionMode,
  Counters,
  ListQueuesAnswer,
  PartitionAnswer,
  QueueRow,
  ResourcesDescribeQueueAnswer,
} from './wire.js';

/** Message counters of a queue or partition. */
export type MessageCounters = Counters;
/** A queue as the listing shows it. */
export type QueueSummary = QueueRow;
/** A consumer group's position on one partition (a partition-lease or a record-claim group). */
export type PartitionConsumer = PartitionAnswer['consumers'][number];
/** A partition with its counters, offsets and each group's position. */
export type PartitionSummary = PartitionAnswer;
/** One queue with its partitions (`GET /api/v1/resources/queues/{queue}`). */
export type QueueDetail = ResourcesDescribeQueueAnswer;
/** A browsed message as the wire has it. */
type WireBrowsedMessage = BrowseMessagesAnswer['messages'][number];
export type BrowseStatus = WireBrowsedMessage['status'];
/** A browsed message, with the caller's payload type (`data` with `payload: true`). */
export type BrowsedMessage<T = unknown> = Omit<WireBrowsedMessage, 'data'> & { data?: T };

/** What to browse (client-side: instants may be `Date`s, and the query's `payload` is a boolean). */
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
    const r = await this.http.json<ListQueuesAnswer>({
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
  async messages<T = unknown>(
    q: BrowseQuery = {},
  ): Promise<{ messages: BrowsedMessage<T>[]; mode: ConsumptionMode | null }> {
    const r = await this.http.json<{ messages?: BrowsedMessage<T>[]; mode?: ConsumptionMode }>({
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
