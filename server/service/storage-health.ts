/**
 * What this process has seen of storage writes lately, for `/health` and `/ready`: failed writes
 * (a full disk, an unavailable store) within a time window. On Lambda every instance keeps its
 * own record, so `/health` reports what the instance that answers has seen.
 *
 * The record is fed by {@link watchWrites}, a wrapper `buildServices` puts around the storage:
 * the port and its adapters know nothing of it.
 */
import {
  TakeWriteError,
  StoreFullError,
  StoreUnavailableError,
  type BlobStore,
  type ItemStore,
  type Storage,
} from '../storage/port.js';

/** How long a failed write keeps `/health` at `degraded`. */
export const WRITE_FAILURE_WINDOW_MS = 60_000;
/** Failures remembered at most (a burst of thousands says no more than this many). */
const MAX_REMEMBERED = 1_000;

/** A failed write, as the record keeps it. */
export interface WriteFailure {
  /** Epoch ms. */
  at: number;
  /** `full`: no room left; `unavailable`: throttled, unreachable or failing. */
  kind: 'full' | 'unavailable';
  /** The error's message (the adapter's, naming the operation). */
  message: string;
}

/** The record's view at one moment: see {@link WriteHealth.recent}. */
export interface WriteHealthView {
  /** Failed writes within the window. */
  failures: number;
  /** The latest of them. */
  last?: WriteFailure | undefined;
  /** Whether one of them found no room left. */
  full: boolean;
}

/**
 * The per-process record of failed storage writes within {@link WRITE_FAILURE_WINDOW_MS}.
 *
 * @example
 * ```ts
 * const health = new WriteHealth(Date.now);
 * health.failed(new StoreFullError('disk full'));
 * health.recent(); // { failures: 1, full: true, last: { kind: 'full', ... } }
 * ```
 */
export class WriteHealth {
  private failures: WriteFailure[] = [];

  constructor(
    private readonly clock: () => number,
    readonly windowMs: number = WRITE_FAILURE_WINDOW_MS,
  ) {}

  /** Records a failed write if `err` is a storage failure (a failed guard or a bug is not). */
  failed(err: unknown): void {
    let kind: WriteFailure['kind'];
    if (err instanceof StoreFullError) kind = 'full';
    else if (err instanceof StoreUnavailableError) kind = 'unavailable';
    else return;
    this.failures.push({ at: this.clock(), kind, message: err.message });
    if (this.failures.length > MAX_REMEMBERED) this.failures.splice(0, this.failures.length - MAX_REMEMBERED);
  }

  /** The failures within the window, as of now. */
  recent(): WriteHealthView {
    const since = this.clock() - this.windowMs;
    this.failures = this.failures.filter((f) => f.at > since);
    return {
      failures: this.failures.length,
      last: this.failures.at(-1),
      full: this.failures.some((f) => f.kind === 'full'),
    };
  }
}

/**
 * The storage with every write reporting its storage failures to `health`; reads, results and
 * errors pass through unchanged. The embedded adapter's TTL sweeper stays reachable.
 *
 * @example
 * ```ts
 * const health = new WriteHealth(Date.now);
 * const storage = watchWrites(await openEmbeddedStorage({ dataDir }), health);
 * ```
 */
export function watchWrites(inner: Storage, health: WriteHealth): Storage {
  const watch = <T>(p: Promise<T>): Promise<T> =>
    p.catch((e: unknown) => {
      health.failed(e);
      throw e;
    });
  const i = inner.items;
  const items: ItemStore = {
    get: (t, k) => i.get(t, k),
    getMany: (t, k) => i.getMany(t, k),
    query: (t, pk, o) => i.query(t, pk, o),
    put: (t, item, c) => watch(i.put(t, item, c)),
    delete: (t, k, c) => watch(i.delete(t, k, c)),
    writeEach: (ops, o) => watch(i.writeEach(ops, o)),
    transact: (ops) => watch(i.transact(ops)),
    // A take's writes fail inside a TakeWriteError: what the store did is its cause.
    take: (t, k, n, then, o) =>
      i.take(t, k, n, then, o).catch((e: unknown) => {
        health.failed(e instanceof TakeWriteError ? e.cause : e);
        throw e;
      }),
  };
  const b = inner.blobs;
  const blobs: BlobStore = {
    put: (key, bytes, opts) => watch(b.put(key, bytes, opts)),
    get: (key) => b.get(key),
    delete: (key) => watch(b.delete(key)),
    list: (prefix, opts) => b.list(prefix, opts),
  };
  return {
    kind: inner.kind,
    items,
    blobs,
    close: () => inner.close(),
    ...(inner.usage ? { usage: inner.usage } : {}),
    // The embedded adapter's TTL sweeper (maintenance calls it when present) acts on the adapter.
    ...('sweepExpired' in inner
      ? { sweepExpired: (inner as unknown as { sweepExpired: (n: number) => number }).sweepExpired.bind(inner) }
      : {}),
  };
}
