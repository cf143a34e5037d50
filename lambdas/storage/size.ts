import { MAX_ITEM_BYTES, type Item } from './port.js';

// Adapters serialise attributes once for the size check and once to store them: remember the
// text per attributes object so a write pays for one JSON.stringify.
const jsonOf = new WeakMap<object, string>();

/** The attributes' JSON text, computed once per attributes object. */
export function attrsJson(item: Item): string {
  let s = jsonOf.get(item.attrs);
  if (s === undefined) {
    s = JSON.stringify(item.attrs);
    jsonOf.set(item.attrs, s);
  }
  return s;
}

/**
 * The size an item counts for, computed the same way by both adapters so that an item the
 * embedded backend accepts is never refused on AWS. It over-approximates DynamoDB's own
 * accounting (attribute names `pk`, `sk`, `v`, `a`, `b`, `ttl` plus values).
 */
export function itemSize(item: Item): number {
  return (
    Buffer.byteLength(item.pk) +
    Buffer.byteLength(item.sk) +
    Buffer.byteLength(attrsJson(item)) +
    (item.bin?.byteLength ?? 0) +
    64
  );
}

export class ItemTooLargeError extends Error {
  override readonly name = 'ItemTooLargeError';
  constructor(readonly size: number) {
    super(`item of ${size} bytes exceeds the ${MAX_ITEM_BYTES}-byte limit`);
  }
}

export function assertItemSize(item: Item): void {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most items are far enough below the limit
  // that the exact byte count (a scan of every string) is not needed.
  const json = attrsJson(item);
  const bound = 3 * (item.pk.length + item.sk.length + json.length) + (item.bin?.byteLength ?? 0) + 64;
  if (bound <= MAX_ITEM_BYTES) return;
  const size = itemSize(item);
  if (size > MAX_ITEM_BYTES) throw new ItemTooLargeError(size);
}
