import { MAX_ITEM_BYTES, type Item } from './port.js';

/**
 * The attributes' JSON text: what the size check measures and both adapters store. A
 * caller-built `attrsJson` is trusted as it is (the tests check it holds the attrs, see
 * test/support/attrs-json-check.ts).
 *
 * @example
 * ```ts
 * attrsJson({ pk: 'p', sk: 's', ver: 1, attrs: { a: 1 } }); // '{"a":1}'
 * ```
 */
export function attrsJson(item: Item): string {
  return item.attrsJson ?? JSON.stringify(item.attrs);
}

/**
 * The size an item counts for, computed the same way by both adapters so that an item the
 * embedded backend accepts is never refused on AWS. It over-approximates DynamoDB's own
 * accounting (attribute names `pk`, `sk`, `v`, `a`, `b`, `ttl` plus values).
 */
export function itemSize(item: Item, json: string = attrsJson(item)): number {
  return (
    Buffer.byteLength(item.pk) + Buffer.byteLength(item.sk) + Buffer.byteLength(json) + (item.bin?.byteLength ?? 0) + 64
  );
}

export class ItemTooLargeError extends Error {
  override readonly name = 'ItemTooLargeError';
  constructor(readonly size: number) {
    super(`item of ${size} bytes exceeds the ${MAX_ITEM_BYTES}-byte limit`);
  }
}

/**
 * Throws {@link ItemTooLargeError} for an item over DynamoDB's limit. Pass the attributes'
 * JSON when the caller has it already (the embedded adapter stores that same text), so a write
 * serialises its attributes once.
 */
export function assertItemSize(item: Item, json: string = attrsJson(item)): void {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most items are far enough below the limit
  // that the exact byte count (a scan of every string) is not needed.
  const bound = 3 * (item.pk.length + item.sk.length + json.length) + (item.bin?.byteLength ?? 0) + 64;
  if (bound <= MAX_ITEM_BYTES) return;
  const size = itemSize(item, json);
  if (size > MAX_ITEM_BYTES) throw new ItemTooLargeError(size);
}
