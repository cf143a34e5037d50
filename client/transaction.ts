import { SluiceApiError } from './errors.js';
import type { Transport } from './http.js';
import type { AckStatus, Message, TransactionResult } from './types.js';

type Op =
  | { type: 'push'; items: { queue: string; partition?: string; payload: unknown; traceId?: string | null }[] }
  | { type: 'ack'; transactionId: string; partitionId: string; status: string; consumerGroup?: string };

/**
 * Pushes and acks applied atomically: all or nothing (`POST /api/v1/transaction`).
 * Never retried except when the server certainly did nothing (429, connection refused): a
 * repeat would push again under fresh transaction ids.
 *
 * @example
 * ```ts
 * await sluice.transaction()
 *   .queue('invoices').partition('eu').push([{ data: { order: 7 } }])
 *   .ack(messages, 'completed')
 *   .commit();
 * ```
 */
export class Transaction {
  private readonly ops: Op[] = [];
  private readonly leases = new Set<string>();

  constructor(private readonly http: Transport) {}

  /** Starts a push operation on `queue`; finish it with `.push(items)` (optionally `.partition(p)` first). */
  queue(queue: string): TransactionPush {
    return new TransactionPush(this, queue);
  }

  /** @internal */
  addPush(queue: string, partition: string | undefined, items: unknown[]): this {
    this.ops.push({
      type: 'push',
      items: items.map((it) => {
        const o = (it && typeof it === 'object' ? it : {}) as {
          data?: unknown;
          payload?: unknown;
          traceId?: string | null;
          partition?: string;
        };
        const payload =
          it && typeof it === 'object' && 'data' in o
            ? o.data
            : it && typeof it === 'object' && 'payload' in o
              ? o.payload
              : it;
        const p = o.partition ?? partition;
        return {
          queue,
          payload,
          ...(p !== undefined ? { partition: p } : {}),
          ...(o.traceId ? { traceId: o.traceId } : {}),
        };
      }),
    });
    return this;
  }

  /**
   * Acks messages as part of the transaction. The group is each message's own unless
   * `consumerGroup` is given; their leases become the transaction's `requiredLeases`.
   */
  ack(
    messages: Message | Message[],
    status: AckStatus | boolean = 'completed',
    opts: { consumerGroup?: string } = {},
  ): this {
    const st = status === true ? 'completed' : status === false ? 'failed' : status;
    for (const m of Array.isArray(messages) ? messages : [messages]) {
      const group = opts.consumerGroup ?? m.consumerGroup;
      this.ops.push({
        type: 'ack',
        transactionId: m.transactionId,
        partitionId: m.partitionId,
        status: st,
        ...(group ? { consumerGroup: group } : {}),
      });
      if (m.leaseId) this.leases.add(m.leaseId);
    }
    return this;
  }

  /** Sends the transaction. Throws SluiceApiError (`operation_failed`) when it was not applied. */
  async commit(opts: { signal?: AbortSignal } = {}): Promise<TransactionResult> {
    if (this.ops.length === 0) throw new TypeError('transaction has no operations to commit');
    const r = await this.http.json<TransactionResult>({
      method: 'POST',
      path: '/api/v1/transaction',
      body: { operations: this.ops, requiredLeases: [...this.leases] },
      retry: 'unsafe',
      signal: opts.signal,
    });
    if (!r || !r.success) {
      throw new SluiceApiError(
        200,
        'operation_failed',
        r?.error ?? 'transaction was not applied',
        r,
        'POST /api/v1/transaction',
      );
    }
    return r;
  }
}

export class TransactionPush {
  private part: string | undefined;
  constructor(
    private readonly tx: Transaction,
    private readonly q: string,
  ) {}
  partition(p: string): this {
    this.part = p;
    return this;
  }
  /** Adds the push and returns the transaction. Items follow push()'s payload rule. */
  push(items: unknown[]): Transaction {
    return this.tx.addPush(this.q, this.part, items);
  }
}
