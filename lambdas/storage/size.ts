import { isDeepStrictEqual } from 'node:util';
import { MAX_ITEM_BYTES, type Item } from './port.js';

// The test suite sets this (vitest.config.ts), so a caller-built text that no longer holds
// the item's attrs (an item spread with new attrs, keeping the old text) fails a test
// instead of being stored.
const CHECK_ATTRS_JSON = process.env.SLUICE_CHECK_ATTRS_JSON === '1';

/** The attributes' JSON text: what the size check measures and both adapters store. */
export function attrsJson(item: Item): string {
  const text = item.attrsJson;
  if (text === undefined) return JSON.stringify(item.attrs);
  if (CHECK_ATTRS_JSON && !isDeepStrictEqual(JSON.parse(text), JSON.parse(JSON.stringify(item.attrs)))) {
    throw new Error(
      `item ${item.pk} ${item.sk}: attrsJson ${text} does not hold its attrs ${JSON.stringify(item.attrs)}`,
    );
  }
  return text;
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
