import type { BlobStore, ItemStore, Storage } from '../server/storage/port.js';

/** Storage requests by port method. `writeEach` counts one per op: on AWS each is its own request. */
export interface PortCounts {
  [method: string]: number;
}

/**
 * Wraps a Storage and counts the storage requests made through it, as the AWS adapter would
 * issue them (a `writeEach` of N ops is N requests; `getMany` of up to 100 keys is one).
 *
 * @example
 * ```ts
 * const { storage, counts, reset, total } = countingStorage(inner);
 * await svc.pushes.push(items); // built over `storage`
 * total(); // requests made
 * ```
 */
export function countingStorage(inner: Storage): {
  storage: Storage;
  counts: PortCounts;
  reset: () => void;
  total: () => number;
} {
  const counts: PortCounts = {};
  const bump = (k: string, n = 1): void => {
    counts[k] = (counts[k] ?? 0) + n;
  };
  const items: ItemStore = {
    get: (t, k) => (bump('get'), inner.items.get(t, k)),
    getMany: (t, ks) => (bump('getMany', Math.ceil(ks.length / 100) || 0), inner.items.getMany(t, ks)),
    query: (t, pk, o) => (bump('query'), inner.items.query(t, pk, o)),
    put: (t, i, c) => (bump('put'), inner.items.put(t, i, c)),
    delete: (t, k, c) => (bump('delete'), inner.items.delete(t, k, c)),
    writeEach: (ops, o) => (bump('writeEach', ops.length), inner.items.writeEach(ops, o)),
    transact: (ops) => (
      bump(ops.length === 1 && ops[0]?.op !== 'check' ? 'put' : 'transact'),
      inner.items.transact(ops)
    ),
    // An UpdateItem, then (AWS) the writes it built as one more request.
    take: (t, k, n, then, o) =>
      inner.items
        .take(
          t,
          k,
          n,
          then &&
            ((taken) => {
              const ops = then(taken);
              if (ops.length > 0) bump(ops.length === 1 && ops[0]?.op !== 'check' ? 'put' : 'transact');
              return ops;
            }),
          o,
        )
        .finally(() => bump('take')),
  };
  const blobs: BlobStore = {
    put: (k, b, o) => (bump('blobPut'), inner.blobs.put(k, b, o)),
    get: (k) => (bump('blobGet'), inner.blobs.get(k)),
    delete: (k) => (bump('blobDelete'), inner.blobs.delete(k)),
    list: (p, o) => (bump('blobList'), inner.blobs.list(p, o)),
  };
  const storage: Storage = {
    kind: inner.kind,
    items,
    blobs,
    close: () => inner.close(),
  };
  // Keep adapter extras (sweepExpired) reachable.
  Object.setPrototypeOf(storage, inner);
  return {
    storage,
    counts,
    reset: () => {
      for (const k of Object.keys(counts)) delete counts[k];
    },
    total: () => Object.values(counts).reduce((a, b) => a + b, 0),
  };
}
