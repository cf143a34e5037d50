/**
 * A test guard on `Item.attrsJson`: the storage, except that every item written through it
 * must carry an `attrsJson` (when it has one) that holds exactly its `attrs`. A caller that
 * spreads an item with new attrs but keeps the old text then fails its test instead of
 * storing stale attributes. The conformance and integration harnesses wrap their storage
 * with it; production code never sees it.
 *
 * @example
 * ```ts
 * const storage = checkingAttrsJson(await openEmbeddedStorage({ dataDir }));
 * await storage.items.put('meta', { ...item, attrs: { n: 2 } }); // throws if item.attrsJson says n: 1
 * ```
 */
import { isDeepStrictEqual } from 'node:util';
import type { Item, ItemStore, Storage, WriteOp } from '../../server/storage/port.js';

/** Throws when `item.attrsJson` is set and does not parse to the same value as `item.attrs`. */
export function assertAttrsJsonHolds(item: Item): void {
  const text = item.attrsJson;
  if (text === undefined) return;
  // Both sides through JSON, so key order and `undefined` members compare as they would be stored.
  if (!isDeepStrictEqual(JSON.parse(text), JSON.parse(JSON.stringify(item.attrs)))) {
    throw new Error(
      `item ${item.pk} ${item.sk}: attrsJson ${text} does not hold its attrs ${JSON.stringify(item.attrs)}`,
    );
  }
}

const checkOps = (ops: WriteOp[]): void => {
  for (const op of ops) if (op.op === 'put') assertAttrsJsonHolds(op.item);
};

/**
 * `inner` with every written item checked by {@link assertAttrsJsonHolds} before it is passed
 * on; everything else (reads, blobs, `close`, adapter extras such as `sweepExpired`) is
 * `inner`'s own.
 */
export function checkingAttrsJson<S extends Storage>(inner: S): S {
  const i = inner.items;
  const items: ItemStore = {
    get: (t, k) => i.get(t, k),
    getMany: (t, k) => i.getMany(t, k),
    query: (t, pk, o) => i.query(t, pk, o),
    put: async (t, item, c) => (assertAttrsJsonHolds(item), i.put(t, item, c)),
    delete: (t, k, c) => i.delete(t, k, c),
    writeEach: async (ops, o) => (checkOps(ops), i.writeEach(ops, o)),
    transact: async (ops) => (checkOps(ops), i.transact(ops)),
    take: (t, k, n, then, o) =>
      i.take(
        t,
        k,
        n,
        then &&
          ((taken) => {
            const ops = then(taken);
            checkOps(ops);
            return ops;
          }),
        o,
      ),
  };
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'items') return items;
      const value: unknown = Reflect.get(target, prop, target);
      // Methods run on the adapter itself (its private state), not on the proxy.
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
