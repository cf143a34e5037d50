// Test doubles over a real storage: every item call passes through unless replaced, so a test
// can count requests, fail a chosen write (a simulated crash) or interleave another writer.
import { SluiceError } from '../../server/core/errors.js';
import type { ItemStore, Storage, WriteOp } from '../../server/storage/port.js';

/**
 * The storage with some item calls replaced.
 *
 * @example
 * ```ts
 * const queries: string[] = [];
 * const spy = withItems(storage, { query: (t, pk, o) => (queries.push(t), storage.items.query(t, pk, o)) });
 * ```
 */
export function withItems(inner: Storage, over: Partial<ItemStore>): Storage {
  const i = inner.items;
  const items: ItemStore = {
    get: (t, k) => i.get(t, k),
    getMany: (t, k) => i.getMany(t, k),
    query: (t, pk, o) => i.query(t, pk, o),
    put: (t, item, c) => i.put(t, item, c),
    delete: (t, k, c) => i.delete(t, k, c),
    writeEach: (ops, o) => i.writeEach(ops, o),
    transact: (ops) => i.transact(ops),
    take: (t, k, n, then, o) => i.take(t, k, n, then, o),
    ...over,
  };
  return { kind: inner.kind, blobs: inner.blobs, close: () => inner.close(), items };
}

/** The storage, except that writes `fail` picks throw before they reach it: a crash at that point. */
export function crashing(inner: Storage, fail: (ops: WriteOp[]) => boolean): Storage {
  const i = inner.items;
  const check = (ops: WriteOp[]): void => {
    if (fail(ops)) throw new Error('simulated crash');
  };
  return withItems(inner, {
    put: async (t, item, c) => (check([{ op: 'put', table: t, item, cond: c }]), i.put(t, item, c)),
    delete: async (t, key, c) => (check([{ op: 'delete', table: t, key, cond: c }]), i.delete(t, key, c)),
    writeEach: async (ops, o) => (check(ops), i.writeEach(ops, o)),
    transact: async (ops) => (check(ops), i.transact(ops)),
    // The writes a take builds crash when they are built (the take itself went through).
    take: (t, k, n, then, o) =>
      i.take(
        t,
        k,
        n,
        then &&
          ((taken) => {
            const ops = then(taken);
            check(ops);
            return ops;
          }),
        o,
      ),
  });
}

/** The code of the SluiceError `p` rejects with (fails the test if it resolves or throws something else). */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof SluiceError) return e.code;
    throw e;
  }
  throw new Error('expected a SluiceError');
}
