/**
 * Producer batching behind `queue(q).send(item)`: sends to one (queue, partition) are gathered
 * for up to `lingerMs` or `maxBatch` messages (or `maxBytes` of JSON) into one
 * `POST /api/v1/push`, as a Kafka producer's record accumulator does. On AWS every request
 * costs an API Gateway request and a Lambda invocation, and every push a segment write, so
 * one push of 1,000 messages is far cheaper than 1,000 pushes of one (docs/CLIENT.md).
 *
 * Each send gets its own answer: the result of its own item, or the error of the request
 * that carried it. Sends to one partition are stored in the order they were made: a
 * partition has at most one push in flight, and sends made meanwhile wait for the next one.
 */
import { SluiceApiError } from './errors.js';
import type { Transport } from './http.js';
import type { ProducerStamps } from './producer-stamps.js';
import type { PushItem, PushResult, PushStatus } from './types.js';
import { uuidv7 } from './uuid.js';

export const DEFAULT_PARTITION = 'Default';

/** A push item as the API takes it, and its JSON size in bytes (plus a comma). */
export interface WireItem {
  item: { queue: string; partition: string; payload: unknown; transactionId?: string; traceId?: string };
  bytes: number;
}

/**
 * Builds the wire item for `it` by Queen's payload rule: `data` (else `payload`) of an object
 * that has one, else the whole value. A transactionId goes only when the item has one, or with
 * `mintIds` (for servers without producer stamps: a UUIDv7, so a retried push is deduplicated
 * by it); by default retries are made safe by the push's producer stamp instead.
 *
 * @example
 * ```ts
 * wireItem({ data: { id: 1 }, transactionId: 'order-1' }, 'orders', 'eu').item;
 * // { queue: 'orders', partition: 'eu', payload: { id: 1 }, transactionId: 'order-1' }
 * ```
 */
export function wireItem(it: unknown, queue: string, partition: string | undefined, mintIds = false): WireItem {
  const o = it && typeof it === 'object' && !Array.isArray(it) ? (it as PushItem) : undefined;
  const payload = o && 'data' in o ? o.data : o && 'payload' in o ? o.payload : it;
  const item: WireItem['item'] = {
    queue,
    partition:
      (o && typeof o.partition === 'string' && ('data' in o || 'payload' in o) ? o.partition : undefined) ??
      partition ??
      DEFAULT_PARTITION,
    payload: payload === undefined ? null : payload,
  };
  const txid = o && typeof o.transactionId === 'string' ? o.transactionId : mintIds ? uuidv7() : undefined;
  if (txid !== undefined) item.transactionId = txid;
  if (o && typeof o.traceId === 'string') item.traceId = o.traceId;
  // UTF-8 bytes, not string length: non-ASCII text takes up to 3 bytes a character, and the
  // byte count is what keeps a request under the server's body limit.
  return { item, bytes: Buffer.byteLength(JSON.stringify(item), 'utf8') + 1 };
}

/** A push answer row (Queen's snake_case or camelCase) as a {@link PushResult}. */
export function pushResult(r: Record<string, unknown>, index: number, queue: string): PushResult {
  const out: PushResult = {
    index,
    status: (r['status'] as PushStatus) ?? 'failed',
    transactionId: (r['transaction_id'] ?? r['transactionId']) as string,
    messageId: ((r['message_id'] ?? r['messageId']) as string | undefined) ?? null,
    partitionId: ((r['partition_id'] ?? r['partitionId']) as string | undefined) ?? null,
    queue: (r['queueName'] as string | undefined) ?? queue,
    partition: (r['partition'] as string | undefined) ?? null,
  };
  if (typeof r['offset'] === 'number') out.offset = r['offset'];
  if (typeof r['error'] === 'string') out.error = r['error'];
  return out;
}

/**
 * One `POST /api/v1/push` of prepared items, retried with the same body: with `stamps`, under a
 * producer stamp taken for this push and released when it settles (a retry repeats the stamp,
 * so the server answers it as the first attempt); without, every item carries a transactionId.
 */
export async function postPush(
  http: Transport,
  items: readonly WireItem[],
  signal?: AbortSignal,
  stamps?: ProducerStamps,
): Promise<Record<string, unknown>[]> {
  const stamp = stamps?.acquire();
  try {
    const body = await http.json<Record<string, unknown>[]>({
      method: 'POST',
      path: '/api/v1/push',
      body: stamp
        ? { items: items.map((w) => w.item), producerId: stamp.producerId, sequence: stamp.sequence }
        : { items: items.map((w) => w.item) },
      retry: 'idempotent',
      signal,
    });
    return body ?? [];
  } finally {
    stamp?.release();
  }
}

export interface SendOptions {
  /** Reject when the item `failed` (default true); false resolves with the failed result. */
  throwOnFailure?: boolean;
}

export interface ProducerOptions {
  /** How long a send waits for others to the same partition; 0 sends each one at once. */
  lingerMs: number;
  /** Most messages per push. */
  maxBatch: number;
  /** Most JSON bytes per push. */
  maxBytes: number;
  /** Stamps for each push (absent: items carry minted transactionIds instead). */
  stamps?: ProducerStamps | undefined;
}

interface PendingSend {
  wire: WireItem;
  throwOnFailure: boolean;
  resolve: (r: PushResult) => void;
  reject: (e: unknown) => void;
}

/** The sends of one (queue, partition): the open batch, sealed batches, the push in flight. */
interface Lane {
  key: string;
  open: PendingSend[];
  openBytes: number;
  timer: NodeJS.Timeout | undefined;
  sealed: PendingSend[][];
  inFlight: Promise<void> | undefined;
}

// What the server refuses in a transactionId or traceId fails the whole push, so one bad send
// would take its batch-mates down with it: such a send is refused before it joins a batch.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkIds(item: WireItem['item']): void {
  const t = item.transactionId;
  if (t !== undefined && (t.length === 0 || t.length > 256 || LONE_SURROGATE.test(t)))
    throw new TypeError(`send: transactionId must be 1 to 256 characters of valid Unicode text (got ${t.length})`);
  if (item.traceId !== undefined && item.traceId.length > 256)
    throw new TypeError(`send: traceId must be at most 256 characters (got ${item.traceId.length})`);
}

/**
 * Gathers single-message sends into pushes, one batch per (queue, partition). Made by
 * {@link Sluice}; used through `queue(q).send(item)`, `sluice.flush()` and `sluice.close()`.
 *
 * @example
 * ```ts
 * const producer = new Producer(transport, { lingerMs: 5, maxBatch: 1000, maxBytes: 4 << 20 });
 * const r = await producer.send(wireItem({ data: 1 }, 'orders', 'eu'));
 * await producer.close();
 * ```
 */
export class Producer {
  private readonly lanes = new Map<string, Lane>();
  /** Pushes of unbatched sends (`lingerMs: 0`), so flush() can wait for them too. */
  private readonly direct = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly http: Transport,
    readonly opts: ProducerOptions,
  ) {}

  /** Queues one message; resolves with its own push result. */
  async send(wire: WireItem, opts: SendOptions = {}): Promise<PushResult> {
    if (this.closed) throw new Error('send: this client was closed (close() flushes and refuses later sends)');
    checkIds(wire.item);
    return new Promise<PushResult>((resolve, reject) => {
      const p: PendingSend = { wire, throwOnFailure: opts.throwOnFailure !== false, resolve, reject };
      if (this.opts.lingerMs <= 0) {
        const run = this.run([p]).finally(() => this.direct.delete(run));
        this.direct.add(run);
        return;
      }
      const key = `${wire.item.queue}\u0000${wire.item.partition}`;
      let lane = this.lanes.get(key);
      if (!lane) {
        lane = { key, open: [], openBytes: 0, timer: undefined, sealed: [], inFlight: undefined };
        this.lanes.set(key, lane);
      }
      if (lane.open.length > 0 && lane.openBytes + wire.bytes > this.opts.maxBytes) this.seal(lane);
      lane.open.push(p);
      lane.openBytes += wire.bytes;
      if (lane.open.length >= this.opts.maxBatch || lane.openBytes >= this.opts.maxBytes) this.seal(lane);
      else lane.timer ??= setTimeout(() => this.seal(lane), this.opts.lingerMs);
    });
  }

  /** Sends every gathered message now; resolves when each send made before it has its answer. */
  async flush(): Promise<void> {
    for (const lane of this.lanes.values()) this.seal(lane);
    for (;;) {
      const busy = [...this.direct, ...[...this.lanes.values()].flatMap((l) => (l.inFlight ? [l.inFlight] : []))];
      if (busy.length === 0) return;
      await Promise.all(busy); // run() never rejects: each send carries its own outcome
    }
  }

  /** Flushes, and refuses sends from now on. Safe to call more than once. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  /** Messages gathered and not yet answered (open, sealed or in flight). */
  get pending(): number {
    let n = 0;
    for (const l of this.lanes.values()) n += l.open.length + l.sealed.reduce((s, b) => s + b.length, 0);
    return n;
  }

  private seal(lane: Lane): void {
    if (lane.timer) clearTimeout(lane.timer);
    lane.timer = undefined;
    if (lane.open.length > 0) {
      lane.sealed.push(lane.open);
      lane.open = [];
      lane.openBytes = 0;
    }
    this.pump(lane);
  }

  /** Sends the lane's sealed batches one after another: one push in flight keeps their order. */
  private pump(lane: Lane): void {
    if (lane.inFlight || lane.sealed.length === 0) return;
    lane.inFlight = (async () => {
      for (let batch = lane.sealed.shift(); batch; batch = lane.sealed.shift()) await this.run(batch);
    })().finally(() => {
      lane.inFlight = undefined;
      if (lane.sealed.length > 0) this.pump(lane);
      else if (lane.open.length === 0 && this.lanes.get(lane.key) === lane) this.lanes.delete(lane.key);
    });
  }

  /** One push for `batch`; settles every send in it. Never rejects. */
  private async run(batch: PendingSend[]): Promise<void> {
    let rows: Record<string, unknown>[];
    try {
      rows = await postPush(
        this.http,
        batch.map((p) => p.wire),
        undefined,
        this.opts.stamps,
      );
    } catch (e) {
      // A refusal that names one item (a payload over the server's message limit) stored
      // nothing: that send alone fails, and the others go again in the same turn.
      const bad = refusedItem(e, batch.length);
      if (bad === undefined) {
        for (const p of batch) p.reject(e);
        return;
      }
      batch[bad]?.reject(e);
      const rest = batch.filter((_, i) => i !== bad);
      if (rest.length > 0) await this.run(rest);
      return;
    }
    try {
      this.settle(batch, rows);
    } catch (e) {
      for (const p of batch) p.reject(e); // an answer of an unexpected shape; settled sends stay as they are
    }
  }

  private settle(batch: PendingSend[], rows: Record<string, unknown>[]): void {
    batch.forEach((p, i) => {
      const row = rows[i];
      if (!row) {
        p.reject(
          new SluiceApiError(
            201,
            'operation_failed',
            `the push answered ${rows.length} results for ${batch.length} messages; this one has none`,
            rows,
            'POST /api/v1/push',
          ),
        );
        return;
      }
      const r = pushResult(row, 0, p.wire.item.queue);
      if (r.status === 'failed' && p.throwOnFailure)
        p.reject(
          new SluiceApiError(
            201,
            'operation_failed',
            `send failed: ${r.error ?? 'unknown error'} (it was most likely not stored; a transactionId makes sending it again safe either way)`,
            r,
            'POST /api/v1/push',
          ),
        );
      else p.resolve(r);
    });
  }
}

/** The index of the one item a 4xx push refusal names (`{index}` in its body), if any. */
function refusedItem(e: unknown, size: number): number | undefined {
  if (!(e instanceof SluiceApiError) || e.status < 400 || e.status >= 500 || size < 2) return undefined;
  const index = (e.body as { index?: unknown } | null | undefined)?.index;
  return typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < size ? index : undefined;
}
