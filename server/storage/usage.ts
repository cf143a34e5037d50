/**
 * What an adapter was billed for, counted as it goes (the system reports its own cost:
 * docs/DEPLOYING.md, "Operations"). On AWS the counts are DynamoDB's and S3's own (an SDK
 * middleware, `aws/usage-meter.ts`); the embedded adapter counts the same requests as the AWS
 * adapter would make them, with DynamoDB-equivalent units from item sizes ({@link meterItems}), so
 * one workload reads alike on both backends.
 */
import type { BlobStore, Item, ItemKey, ItemStore, TableName, WriteOp } from './port.js';

/** Running totals since the adapter opened; callers take differences between two reads. */
export interface StorageUsage {
  /** DynamoDB requests (embedded: the requests the AWS adapter would make for the same calls). */
  dynamodbRequests: number;
  /** Write request units: DynamoDB's ConsumedCapacity where it reports it, else ⌈KB⌉ per item (×2 in a transaction). */
  writeUnits: number;
  /** Read request units (strongly consistent: ⌈4 KB⌉ per item read; a query's page as one sum). */
  readUnits: number;
  /** Conditional writes refused and transactions cancelled: billed all the same. */
  failedWrites: number;
  s3Puts: number;
  s3Gets: number;
  s3Lists: number;
  /** Free on S3; counted so a sweep shows. */
  s3Deletes: number;
}

/** Zeroed counters. */
export function newStorageUsage(): StorageUsage {
  return {
    dynamodbRequests: 0,
    writeUnits: 0,
    readUnits: 0,
    failedWrites: 0,
    s3Puts: 0,
    s3Gets: 0,
    s3Lists: 0,
    s3Deletes: 0,
  };
}

/** The request units DynamoDB bills an item write of `bytes` (1 KB each, at least one). */
export const writeUnitsFor = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));
/** The request units DynamoDB bills a strongly consistent read of `bytes` (4 KB each, at least one). */
export const readUnitsFor = (bytes: number): number => Math.max(1, Math.ceil(bytes / 4096));

/** An item's size as the AWS adapter stores it: key, attributes as JSON text, bytes, version and expiry (~8 each). */
export function portItemSize(item: Item | ItemKey): number {
  const full = item as Partial<Item>;
  let n = Buffer.byteLength(item.pk) + Buffer.byteLength(item.sk) + 16;
  if (full.attrs !== undefined) n += Buffer.byteLength(full.attrsJson ?? JSON.stringify(full.attrs));
  if (full.bin) n += full.bin.byteLength;
  if (full.expiresAt !== undefined) n += 8;
  return n;
}

const opUnits = (op: WriteOp): number => (op.op === 'put' ? writeUnitsFor(portItemSize(op.item)) : 1);
const failed = (e: unknown): boolean => (e as { name?: string }).name === 'ConditionFailedError';

/**
 * Counts an item store's calls into `usage` as DynamoDB would bill the AWS adapter's requests
 * for them: a single write or a `writeEach` op is a request of ⌈KB⌉ units; a transaction is one
 * request at twice its items' units; a take is an UpdateItem (1 unit) and then its writes.
 *
 * @example
 * ```ts
 * const usage = newStorageUsage();
 * const items = meterItems(new SqliteItemStore(db), usage);
 * ```
 */
export function meterItems(inner: ItemStore, usage: StorageUsage): ItemStore {
  const write = (units: number): void => {
    usage.dynamodbRequests++;
    usage.writeUnits += units;
  };
  const guarded = async <T>(p: Promise<T>): Promise<T> => {
    try {
      return await p;
    } catch (e) {
      if (failed(e)) usage.failedWrites++;
      throw e;
    }
  };
  const transact = (ops: WriteOp[]): void => {
    // The AWS adapter sends one put or delete alone, not as a transaction.
    if (ops.length === 1 && ops[0]?.op !== 'check') write(opUnits(ops[0]!));
    else if (ops.length > 0) write(ops.reduce((n, op) => n + 2 * opUnits(op), 0));
  };
  return {
    async get(t, k) {
      const item = await inner.get(t, k);
      usage.dynamodbRequests++;
      usage.readUnits += readUnitsFor(item ? portItemSize(item) : 0);
      return item;
    },
    async getMany(t: TableName, ks: ItemKey[]) {
      const items = await inner.getMany(t, ks);
      usage.dynamodbRequests += Math.ceil(ks.length / 100);
      for (const i of items) if (i) usage.readUnits += readUnitsFor(portItemSize(i));
      return items;
    },
    async query(t, pk, o) {
      const page = await inner.query(t, pk, o);
      usage.dynamodbRequests++;
      usage.readUnits += readUnitsFor(page.items.reduce((n, i) => n + portItemSize(i), 0));
      return page;
    },
    put: (t, i, c) => (write(writeUnitsFor(portItemSize(i))), guarded(inner.put(t, i, c))),
    delete: (t, k, c) => (write(1), guarded(inner.delete(t, k, c))),
    async writeEach(ops, o) {
      for (const op of ops) write(opUnits(op));
      const results = await inner.writeEach(ops, o);
      usage.failedWrites += results.filter((r) => !r.ok).length;
      return results;
    },
    transact: (ops) => (transact(ops), guarded(inner.transact(ops))),
    take: (t, k, n, then, o) => {
      write(1);
      const counted =
        then &&
        ((taken: Parameters<typeof then>[0]) => {
          const ops = then(taken);
          transact(ops);
          return ops;
        });
      return guarded(inner.take(t, k, n, counted, o));
    },
  };
}

/**
 * Counts a blob store's calls into `usage` as the S3 requests the AWS adapter makes for them.
 *
 * @example
 * ```ts
 * const blobs = meterBlobs(new FileBlobStore(dir, tmp, true), usage);
 * ```
 */
export function meterBlobs(inner: BlobStore, usage: StorageUsage): BlobStore {
  return {
    put: (k, b, o) => (usage.s3Puts++, inner.put(k, b, o)),
    get: (k) => (usage.s3Gets++, inner.get(k)),
    delete: (k) => (usage.s3Deletes++, inner.delete(k)),
    list: (p, o) => (usage.s3Lists++, inner.list(p, o)),
  };
}
