import type { Transport } from './http.js';
import { seg } from './http.js';
import { sleep } from './retry.js';
import type {
  ConsumerGroup,
  ConsumerGroupDetail,
  DeleteGroupResult,
  DlqEntry,
  DlqPage,
  RedriveResult,
  RetryMessageResult,
  SeekResult,
} from './types.js';
import type { SetSubscriptionAnswer } from './wire.js';

export interface RedriveProgress {
  /** Moved so far by this run. */
  moved: number;
  failed: number;
  /** Calls made so far. */
  calls: number;
  more: boolean;
}

/**
 * A queue's dead-letter queue (partition-lease groups).
 *
 * @example
 * ```ts
 * const page = await sluice.dlq('orders').group('billing').list({ limit: 50 });
 * for await (const entry of sluice.dlq('orders').all()) console.log(entry.errorMessage);
 * ```
 */
export class DeadLetterQueue {
  constructor(
    private readonly http: Transport,
    readonly queue: string,
    private readonly consumerGroup?: string,
  ) {}

  /** Only this group's dead letters. */
  group(consumerGroup: string): DeadLetterQueue {
    return new DeadLetterQueue(this.http, this.queue, consumerGroup);
  }

  /** One page (`total` is the rows on this page; page until a short one comes back). */
  async list<T = unknown>(opts: { limit?: number; offset?: number; signal?: AbortSignal } = {}): Promise<DlqPage<T>> {
    const limit = opts.limit ?? 100;
    const offset = opts.offset ?? 0;
    const r = await this.http.json<DlqPage<T>>({
      method: 'GET',
      path: '/api/v1/dlq',
      query: { queue: this.queue, consumerGroup: this.consumerGroup, limit, offset },
      retry: 'idempotent',
      signal: opts.signal,
    });
    return r ?? { messages: [], total: 0, pagination: { limit, offset } };
  }

  /** Every dead letter, page by page. */
  async *all<T = unknown>(opts: { pageSize?: number; signal?: AbortSignal } = {}): AsyncGenerator<DlqEntry<T>> {
    const limit = opts.pageSize ?? 500;
    for (let offset = 0; ; offset += limit) {
      const page = await this.list<T>({ limit, offset, ...(opts.signal ? { signal: opts.signal } : {}) });
      yield* page.messages;
      if (page.messages.length < limit) return;
    }
  }

  /** Counts the dead letters by paging through them (stops counting at `max`). */
  async count(opts: { max?: number; signal?: AbortSignal } = {}): Promise<number> {
    const max = opts.max ?? 1_000_000;
    const limit = 1000;
    let n = 0;
    for (let offset = 0; n < max; offset += limit) {
      const page = await this.list({ limit, offset, ...(opts.signal ? { signal: opts.signal } : {}) });
      n += page.messages.length;
      if (page.messages.length < limit) break;
    }
    return Math.min(n, max);
  }

  /**
   * One bulk-redrive call (`POST /api/v1/dlq/retry`): replays up to `limit` dead letters,
   * oldest first, with fresh transaction ids. Not retried on 5xx (at least once: a repeat
   * could replay rows twice).
   */
  async redrive(opts: { limit?: number; after?: string; signal?: AbortSignal } = {}): Promise<RedriveResult> {
    const r = await this.http.json<RedriveResult>({
      method: 'POST',
      path: '/api/v1/dlq/retry',
      body: {
        queue: this.queue,
        ...(this.consumerGroup ? { consumerGroup: this.consumerGroup } : {}),
        ...(opts.limit ? { limit: opts.limit } : {}),
        ...(opts.after ? { after: opts.after } : {}),
      },
      retry: 'unsafe',
      signal: opts.signal,
    });
    return (
      r ?? {
        queue: this.queue,
        consumerGroup: this.consumerGroup ?? null,
        moved: 0,
        failed: 0,
        more: false,
        next: null,
        errors: [],
      }
    );
  }

  /**
   * Redrives everything, call after call, until none remain. `rate` caps messages per second;
   * `onProgress` sees each step; `signal` stops between calls (resume by calling again).
   */
  async redriveAll(
    opts: {
      batch?: number;
      rate?: number;
      signal?: AbortSignal;
      onProgress?: (p: RedriveProgress) => void;
      sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
      now?: () => number;
    } = {},
  ): Promise<RedriveProgress> {
    const wait = opts.sleep ?? sleep;
    const now = opts.now ?? Date.now;
    let batch = opts.batch ?? 100;
    if (opts.rate !== undefined && opts.rate > 0) batch = Math.max(1, Math.min(batch, Math.floor(opts.rate)));
    const p: RedriveProgress = { moved: 0, failed: 0, calls: 0, more: true };
    const started = now();
    let after: string | undefined;
    while (p.more && !opts.signal?.aborted) {
      const r = await this.redrive({
        limit: batch,
        ...(after ? { after } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      p.calls++;
      p.moved += r.moved;
      p.failed += r.failed;
      // Continue past rows that failed (they stay listed); without a cursor, only while rows move.
      if (typeof r.next === 'string') after = r.next;
      p.more = r.more && (typeof r.next === 'string' || r.moved > 0);
      opts.onProgress?.({ ...p });
      if (p.more && opts.rate !== undefined && opts.rate > 0) {
        const due = started + ((p.moved + p.failed) / opts.rate) * 1000;
        const ahead = due - now();
        if (ahead > 0) await wait(ahead, opts.signal).catch(() => undefined);
      }
    }
    return p;
  }
}

/**
 * Consumer groups of the partition-lease (Queen) design: lag, describe, delete, seek.
 *
 * @example
 * ```ts
 * for (const g of await sluice.groups.list()) console.log(g.name, g.lagMessages);
 * await sluice.groups.seek('billing', 'orders', { toEnd: true });
 * ```
 */
export class GroupAdmin {
  constructor(private readonly http: Transport) {}

  /** Every partition-lease group with its per-queue lag (record-claim groups: `sluice.claims`). */
  async list(opts: { signal?: AbortSignal } = {}): Promise<ConsumerGroup[]> {
    const r = await this.http.json<unknown>({
      method: 'GET',
      path: '/api/v1/consumer-groups',
      retry: 'idempotent',
      signal: opts.signal,
    });
    return groupsOf(r);
  }

  /** One group, with per-partition detail. Throws `not_found` for a group never used. */
  async describe(group: string, opts: { signal?: AbortSignal } = {}): Promise<ConsumerGroupDetail> {
    const r = await this.http.json<ConsumerGroupDetail>({
      method: 'GET',
      path: `/api/v1/consumer-groups/${seg(group)}`,
      retry: 'idempotent',
      signal: opts.signal,
    });
    // Older servers wrapped the group (`{group}` or `{consumerGroup}`).
    const g = r as { group?: ConsumerGroupDetail; consumerGroup?: unknown };
    return (g.group ??
      (typeof g.consumerGroup === 'object' && g.consumerGroup ? g.consumerGroup : r)) as ConsumerGroupDetail;
  }

  /** Groups whose oldest unconsumed message is older than `minLagSeconds` (default 3600). */
  async lagging(minLagSeconds = 3600, opts: { signal?: AbortSignal } = {}): Promise<ConsumerGroup[]> {
    const r = await this.http.json<unknown>({
      method: 'GET',
      path: '/api/v1/consumer-groups/lagging',
      query: { minLagSeconds },
      retry: 'idempotent',
      signal: opts.signal,
    });
    return groupsOf(r);
  }

  /** Deletes a group's cursors, leases and watermarks (on one queue with `queue`); the name can start over. */
  async delete(
    group: string,
    opts: { queue?: string; deleteMetadata?: boolean; signal?: AbortSignal } = {},
  ): Promise<DeleteGroupResult> {
    const path = opts.queue
      ? `/api/v1/consumer-groups/${seg(group)}/queues/${seg(opts.queue)}`
      : `/api/v1/consumer-groups/${seg(group)}`;
    return (await this.http.json<DeleteGroupResult>({
      method: 'DELETE',
      path,
      query: { deleteMetadata: opts.deleteMetadata ?? true },
      retry: 'idempotent',
      signal: opts.signal,
    })) as DeleteGroupResult;
  }

  /** Moves a group on a queue to the end, or so that the next delivery is the first message after `timestamp`. */
  async seek(
    group: string,
    queue: string,
    to: { toEnd: true } | { timestamp: string | Date },
    opts: { signal?: AbortSignal } = {},
  ): Promise<SeekResult> {
    const body =
      'toEnd' in to
        ? { toEnd: true }
        : { timestamp: to.timestamp instanceof Date ? to.timestamp.toISOString() : to.timestamp };
    return (await this.http.json<SeekResult>({
      method: 'POST',
      path: `/api/v1/consumer-groups/${seg(group)}/queues/${seg(queue)}/seek`,
      body,
      retry: 'idempotent',
      signal: opts.signal,
    })) as SeekResult;
  }

  /** Changes the stored start time used for partitions the group has not read yet. */
  async subscription(
    group: string,
    timestamp: string | Date,
    opts: { signal?: AbortSignal } = {},
  ): Promise<SetSubscriptionAnswer> {
    const ts = timestamp instanceof Date ? timestamp.toISOString() : timestamp;
    return (await this.http.json<SetSubscriptionAnswer>({
      method: 'POST',
      path: `/api/v1/consumer-groups/${seg(group)}/subscription`,
      body: { subscriptionTimestamp: ts },
      retry: 'idempotent',
      signal: opts.signal,
    })) as SetSubscriptionAnswer;
  }
}

/**
 * The partition-lease groups of a listing, one entry per group. The server answers Queen's
 * shapes (a bare array of rows per group and queue, or per group and partition in snake_case for
 * `/lagging`, record-claim groups included: `kind: "claim"`); older servers answered
 * `{consumerGroups: [...]}` with one entry per group. Rows of one group are merged.
 */
function groupsOf(r: unknown): ConsumerGroup[] {
  const o = (r ?? {}) as { groups?: unknown; consumerGroups?: unknown };
  const rows = (
    Array.isArray(r) ? r : Array.isArray(o.groups) ? o.groups : Array.isArray(o.consumerGroups) ? o.consumerGroups : []
  ) as Record<string, unknown>[];
  const byName = new Map<string, ConsumerGroup>();
  for (const row of rows) {
    if (row.kind === 'claim') continue; // record-claim groups have their own API (sluice.claims)
    const g = typeof row.consumer_group === 'string' ? fromLaggingRow(row) : (row as unknown as ConsumerGroup);
    const seen = byName.get(g.name);
    if (!seen) {
      byName.set(g.name, { ...g, queues: [...(g.queues ?? [])] });
      continue;
    }
    for (const q of g.queues ?? []) {
      const same = seen.queues.find((x) => x.queue === q.queue);
      if (same && typeof row.consumer_group === 'string') {
        same.lagMessages += q.lagMessages;
        same.lagSeconds = Math.max(same.lagSeconds, q.lagSeconds);
        same.partitions += q.partitions;
      } else if (!same) seen.queues.push(q);
    }
    seen.lagMessages += g.lagMessages;
    seen.maxLagSeconds = Math.max(seen.maxLagSeconds, g.maxLagSeconds);
  }
  return [...byName.values()];
}

/** A `/lagging` row (one group on one partition) as a group entry. */
function fromLaggingRow(row: Record<string, unknown>): ConsumerGroup {
  const lagMessages = Number(row.offset_lag ?? 0);
  const lagSeconds = Number(row.time_lag_seconds ?? 0);
  return {
    name: String(row.consumer_group),
    queues: [{ queue: String(row.queue_name), partitions: 1, lagMessages, lagSeconds }],
    lagMessages,
    maxLagSeconds: lagSeconds,
  };
}

/** Replays one dead letter (fresh transaction id) and removes its row. */
export async function retryMessage(
  http: Transport,
  partitionId: string,
  transactionId: string,
  opts: { consumerGroup?: string; signal?: AbortSignal } = {},
): Promise<RetryMessageResult> {
  return (await http.json<RetryMessageResult>({
    method: 'POST',
    path: `/api/v1/messages/${seg(partitionId)}/${seg(transactionId)}/retry`,
    query: { consumerGroup: opts.consumerGroup },
    retry: 'unsafe',
    signal: opts.signal,
  })) as RetryMessageResult;
}
