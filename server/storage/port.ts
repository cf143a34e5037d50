/**
 * The storage port: the one narrow interface every queue semantic is written against.
 *
 * Two adapters implement it: `embedded` (SQLite + files, for `npm start`) and `aws`
 * (DynamoDB + S3). The shared conformance suite in `test/conformance` holds both to the
 * same contract, so the services above never branch on the backend.
 *
 * Items live in a handful of logical tables, addressed by a partition key (`pk`) and a sort
 * key (`sk`). Sort keys compare as UTF-8 bytes on both adapters (DynamoDB's order, SQLite's
 * BINARY collation); the services keep them ASCII where order matters (see `keys.ts`).
 *
 * Every item carries a version `ver` that the caller sets. A write is guarded by a
 * {@link Condition}: put-if-absent, replace-if-unchanged (`ver` matches) or must-exist. That
 * is the only concurrency control there is: never read-then-write without a guard.
 *
 * @example
 * ```ts
 * const head = await storage.items.get('meta', { pk: 'queue#orders', sk: 'config' });
 * await storage.items.put('meta', { ...next, ver: head.ver + 1 }, { kind: 'version', ver: head.ver });
 * ```
 */

import type { StorageUsage } from './usage.js';

/** Logical tables. On AWS each is its own DynamoDB table (so TTL, PITR and IAM are per table). */
export const TABLES = ['log', 'meta', 'dedup', 'leases', 'claims', 'dlq'] as const;
export type TableName = (typeof TABLES)[number];

/** JSON values storable in item attributes. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Attrs = { [key: string]: Json };

export interface ItemKey {
  pk: string;
  sk: string;
}

export interface Item extends ItemKey {
  /** Caller-managed version: conditional replaces compare it. */
  ver: number;
  /** JSON attributes. */
  attrs: Attrs;
  /** Optional opaque bytes (an inline segment, for instance). */
  bin?: Uint8Array | undefined;
  /**
   * Epoch seconds after which the backend MAY garbage-collect the item (DynamoDB TTL).
   * Never a correctness signal: expired items can stay readable for days, so readers
   * compare their own timestamps with `now`.
   */
  expiresAt?: number | undefined;
  /**
   * The JSON text of `attrs`, when the caller has built it already: the same value
   * `JSON.stringify(attrs)` writes. Both adapters store attributes as this text, so a hot path that
   * writes many small items (a push's dedup reservations) saves serialising each one. Write
   * only; items read back never carry it. Build a new item rather than spreading one that
   * has it and changing `attrs`.
   */
  attrsJson?: string | undefined;
}

/** Guards on a write. Omitted means unconditional. */
export type Condition =
  /** The key must not exist (put-if-absent). */
  | { kind: 'absent' }
  /** The key must exist with exactly this version (replace-if-unchanged). */
  | { kind: 'version'; ver: number }
  /** The key must exist, any version. */
  | { kind: 'exists' };

export type WriteOp =
  | { op: 'put'; table: TableName; item: Item; cond?: Condition | undefined }
  | { op: 'delete'; table: TableName; key: ItemKey; cond?: Condition | undefined }
  /** Asserts a condition on an item without writing it (transactions only). */
  | { op: 'check'; table: TableName; key: ItemKey; cond: Condition };

/** Most operations one {@link ItemStore.transact} call may hold (DynamoDB's limit). */
export const MAX_TRANSACT_OPS = 100;
/** Largest item (key + attributes + bin), in bytes, both adapters accept (DynamoDB: 400 KB). */
export const MAX_ITEM_BYTES = 400_000;
/** Most keys one {@link ItemStore.getMany} call may hold (DynamoDB BatchGetItem). */
export const MAX_GET_MANY = 100;

export interface QueryOptions {
  /** Inclusive lower bound on `sk`. */
  gte?: string | undefined;
  /** Inclusive upper bound on `sk`. */
  lte?: string | undefined;
  /** Only keys starting with this prefix (combined with the bounds). */
  prefix?: string | undefined;
  /** Descending `sk` order. */
  reverse?: boolean | undefined;
  /** Most items to return in this page. */
  limit?: number | undefined;
  /** Resume after this `sk` (exclusive), as returned in {@link QueryPage.next}. */
  after?: string | undefined;
}

export interface QueryPage {
  items: Item[];
  /** Set when more items may follow: pass it back as `after`. */
  next?: string | undefined;
}

/** Outcome of one write in {@link ItemStore.writeEach}. */
export type WriteResult = { ok: true } | { ok: false; current: Item | undefined };

/** A write whose condition did not hold. `failed` names which ops, with the item as found. */
export class ConditionFailedError extends Error {
  override readonly name = 'ConditionFailedError';
  constructor(readonly failed: { index: number; current: Item | undefined }[]) {
    super(`condition failed on op ${failed.map((f) => f.index).join(', ')}`);
  }
}

/**
 * A transaction collided with another one in flight on the same items (DynamoDB
 * `TransactionConflict`) after the adapter's own retries. Nothing was written; retrying is safe.
 */
export class ContentionError extends Error {
  override readonly name = 'ContentionError';
}

/** Why a store could not take a request (see {@link StoreUnavailableError}). */
export type UnavailableReason =
  /** The store refused the request for now (throttling, S3 `SlowDown`): it was not applied. */
  | 'throttled'
  /** No answer came (a timeout, a refused or reset connection): a write may have been applied. */
  | 'unreachable'
  /** The store answered with its own failure (a 5xx, a disk I/O error): a write may have been applied. */
  | 'failing';

/**
 * The store could not take the request now, after the adapter's own retries: throttled,
 * unreachable or failing (`reason`). A `throttled` write was not applied; after the other
 * reasons a write's outcome is unknown, as after a crash (its guard makes a repeat safe).
 * `retryAfterSeconds` is the adapter's suggestion for when to try again.
 *
 * @example
 * ```ts
 * throw new StoreUnavailableError('throttled', 2, 'DynamoDB throttled PutItem past 7 attempts', { cause: err });
 * ```
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(
    readonly reason: UnavailableReason,
    readonly retryAfterSeconds: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * The store has no room for the write (a full disk on the embedded adapter: `SQLITE_FULL`,
 * `ENOSPC`). The write was not applied; repeating it helps only once space is freed.
 *
 * @example
 * ```ts
 * throw new StoreFullError('the disk holding the data directory is full', { cause: err });
 * ```
 */
export class StoreFullError extends Error {
  override readonly name = 'StoreFullError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * Every operation of the stores below may also reject with {@link StoreUnavailableError} or
 * {@link StoreFullError} (writes only); anything else is a bug or a misconfiguration.
 */

/** What {@link ItemStore.take} answers. */
export interface Taken {
  /** The first number taken: the counter's value before the take (0 for an absent counter). */
  first: number;
  /** The counter item as it was before the take (`undefined`: it did not exist). */
  before: Item | undefined;
}

/**
 * The writes a {@link ItemStore.take} built failed (a guard did not hold, or the store failed).
 * `taken` says whether the numbers stayed taken (AWS: the take was its own request, and nothing
 * will write them unless the caller does) or were rolled back with the writes (embedded).
 */
export class TakeWriteError extends Error {
  override readonly name = 'TakeWriteError';
  constructor(
    readonly first: number,
    readonly count: number,
    readonly taken: boolean,
    override readonly cause: unknown,
  ) {
    super(`the writes after taking ${count} numbers from ${first} failed`, { cause });
  }
}

/** Options of {@link ItemStore.take}. */
export interface TakeOptions {
  /** The highest value the counter may have after the take (see {@link ItemStore.take}). */
  atMost?: number | undefined;
  /**
   * Attributes the take sets on the counter item, in the same atomic write that raises it: each
   * key given replaces that key's value, every other attribute stays. `before` reports the item
   * as it was, so a caller can tell which take flipped a flag (exactly one of several concurrent
   * takes setting `{ w: true }` sees it unset). Exception: when the AWS adapter recognised a take
   * as its own retried attempt, the earlier values of these keys are unknown, and `before.attrs`
   * lacks them (treat "absent" as the value that makes you do the safe extra work).
   */
  set?: Attrs | undefined;
  /**
   * Also sets this attribute to the first number taken (the counter's value before), in the same
   * write: a caller that must later learn which range an attribute it `set` goes with reads it here.
   */
  setFirst?: string | undefined;
  /**
   * Refuses the take, writing nothing, when any attribute named in `anyOf` holds a string `v`
   * with `after < v ≤ upTo` (byte order): the call throws {@link TakeRefusedError} with the item
   * as found. Bounds and compared strings are printable ASCII from `#` to `~` without `\` (the
   * AWS adapter compares their JSON text, which sorts as they do only then); other values never
   * refuse. It sees attributes as takes `set` them (on AWS a `put` of the counter item hides them).
   */
  refuseIf?: { anyOf: readonly string[]; after: string; upTo: string } | undefined;
}

/**
 * A take refused by its `refuseIf` ({@link TakeOptions}): nothing was taken or written.
 * `current` is the counter item as the refusal found it.
 *
 * @example
 * ```ts
 * try { await items.take(t, key, 1, then, { refuseIf }); } catch (e) { if (e instanceof TakeRefusedError) e.current; }
 * ```
 */
export class TakeRefusedError extends Error {
  override readonly name = 'TakeRefusedError';
  constructor(readonly current: Item | undefined) {
    super('the take was refused: an attribute it names holds a value in the refused range');
  }
}

const REFUSE_TEXT = /^[#-[\]-~]*$/;

/** Throws on {@link TakeOptions.refuseIf} bounds outside the characters both adapters compare alike. */
export function assertRefuseIf(r: NonNullable<TakeOptions['refuseIf']>): void {
  if (!REFUSE_TEXT.test(r.after) || !REFUSE_TEXT.test(r.upTo))
    throw new Error('take: refuseIf bounds must be printable ASCII from "#" to "~" without "\\"');
}

/** Options of {@link ItemStore.writeEach}. */
export interface WriteEachOptions {
  /**
   * The writes may become durable only with this process's next write that does not defer
   * (a crash before it may lose them; they never land after it). For writes whose loss is
   * harmless until a later write builds on them: a push's dedup reservations, made durable by its
   * commit, so a push waits for one disk flush and not two. An adapter whose every write is
   * durable when answered (AWS) ignores it.
   */
  deferDurability?: boolean;
}

export interface ItemStore {
  /** Strongly consistent read of one item. */
  get(table: TableName, key: ItemKey): Promise<Item | undefined>;
  /** Strongly consistent read of up to {@link MAX_GET_MANY} items, aligned with `keys`. */
  getMany(table: TableName, keys: ItemKey[]): Promise<(Item | undefined)[]>;
  /** One page of items under `pk`, ordered by `sk`. Strongly consistent. */
  query(table: TableName, pk: string, opts?: QueryOptions): Promise<QueryPage>;
  /** One guarded write. Throws {@link ConditionFailedError} (index 0) when the guard fails. */
  put(table: TableName, item: Item, cond?: Condition): Promise<void>;
  /** One guarded delete. Throws {@link ConditionFailedError} when the guard fails. */
  delete(table: TableName, key: ItemKey, cond?: Condition): Promise<void>;
  /**
   * Independent guarded writes, each succeeding or failing on its own (not atomic as a
   * set). Results align with `ops`. Used where per-item outcomes are wanted at one write unit
   * each rather than a transaction's two.
   */
  writeEach(ops: WriteOp[], opts?: WriteEachOptions): Promise<WriteResult[]>;
  /**
   * All-or-nothing: every op applies or none does. At most {@link MAX_TRANSACT_OPS} ops,
   * at most one op per key. Throws {@link ConditionFailedError} listing every failed guard.
   */
  transact(ops: WriteOp[]): Promise<void>;
  /**
   * Takes `count` (≥ 1) consecutive numbers from a counter: the `ver` of the item at `key`, which
   * an absent item starts at 0 (it is created with empty attributes). The counter rises by `count`
   * atomically and without a guard, so concurrent callers each get their own range and none ever
   * retries for contention; the item's attributes, bytes and expiry are left as they are.
   *
   * `then`, when given, builds writes from what was taken; they are applied right after the take:
   * in one atomic write with it on the embedded backend, as a second request on AWS (a
   * transaction when there are several ops). They must not touch `key`. When they fail, the call
   * throws {@link TakeWriteError}, which says whether the numbers stayed taken.
   *
   * `opts.set` sets attributes on the counter in the same atomic write, `opts.setFirst` records
   * the first number taken, and `opts.refuseIf` refuses the take on an attribute's value (see
   * {@link TakeOptions}).
   *
   * On AWS a take whose answer is lost is recognised when the SDK retries it at once; should
   * another take land in between, the lost attempt's range stays taken and unused. Callers that
   * hand out numbers this way must therefore cope with ranges nothing ever writes.
   *
   * @example
   * ```ts
   * const { first } = await items.take('log', { pk: 'SEQ#p1', sk: 'seq' }, 10, ({ first }) => [
   *   { op: 'put', table: 'log', item: segmentAt(first), cond: { kind: 'absent' } },
   * ]);
   * ```
   *
   * `opts.atMost` bounds the counter: the take applies only if the counter after it would be at
   * most that (checked atomically with the raise), else nothing is taken and it throws
   * {@link ConditionFailedError} (index 0, the counter as found). A bound does not make the take
   * contend: concurrent takes under the bound all apply, the ones that would pass it fail.
   */
  take(
    table: TableName,
    key: ItemKey,
    count: number,
    then?: (taken: Taken) => WriteOp[],
    opts?: TakeOptions,
  ): Promise<Taken>;
}

export interface BlobInfo {
  key: string;
  size: number;
  /** Epoch milliseconds of the last write. */
  modifiedAt: number;
}

export interface BlobStore {
  /** Writes bytes under `key`. With `ifAbsent`, throws {@link ConditionFailedError} if it exists. */
  put(key: string, bytes: Uint8Array, opts?: { ifAbsent?: boolean }): Promise<void>;
  get(key: string): Promise<Uint8Array | undefined>;
  /** Deleting a missing blob is not an error. */
  delete(key: string): Promise<void>;
  /** One page of blobs under `prefix`, in key order. */
  list(
    prefix: string,
    opts?: { after?: string | undefined; limit?: number | undefined },
  ): Promise<{ blobs: BlobInfo[]; next?: string | undefined }>;
}

export interface Storage {
  readonly kind: 'embedded' | 'aws';
  readonly items: ItemStore;
  readonly blobs: BlobStore;
  /**
   * What this adapter's requests were billed, running totals (`usage.ts`): DynamoDB and S3's
   * own counts on AWS, the same requests as the AWS adapter would make them on the embedded one.
   * Absent on wrappers that do not count (tests).
   */
  readonly usage?: StorageUsage;
  /** Releases connections and file handles; pending writes are durable when it resolves. */
  close(): Promise<void>;
}
