import { describe, expect, it } from 'vitest';
import type { Item, ItemStore, Storage, WriteOp } from '../../server/storage/port.js';
import { attrsJson } from '../../server/storage/size.js';
import { assertAttrsJsonHolds, checkingAttrsJson } from '../support/attrs-json-check.js';

/** A storage whose item writes only record what reached them. */
function recording(): { storage: Storage & { extra(): string }; written: Item[] } {
  const written: Item[] = [];
  const puts = (ops: WriteOp[]): void => ops.forEach((o) => o.op === 'put' && written.push(o.item));
  const items = {
    put: async (_t, item) => void written.push(item),
    writeEach: async (ops) => (puts(ops), ops.map(() => ({ ok: true as const }))),
    transact: async (ops) => puts(ops),
  } as Partial<ItemStore> as ItemStore;
  const storage = {
    kind: 'embedded' as const,
    items,
    blobs: {} as Storage['blobs'],
    close: async () => {},
    extra(this: { kind: string }) {
      return `extra on ${this.kind}`;
    },
  };
  return { storage, written };
}

describe('unit: caller-built attrsJson', () => {
  it('is used as the attributes text when it holds the same value (any key order)', () => {
    expect(attrsJson({ pk: 'p', sk: 's', ver: 1, attrs: { a: 1, b: 'x' }, attrsJson: '{"b":"x","a":1}' })).toBe(
      '{"b":"x","a":1}',
    );
    expect(attrsJson({ pk: 'p', sk: 's', ver: 1, attrs: { a: 1 } })).toBe('{"a":1}');
  });
  it('fails under the test harness when it no longer holds the attrs (a stale text is never stored)', async () => {
    expect(() => assertAttrsJsonHolds({ pk: 'p', sk: 's', ver: 1, attrs: { a: 1 }, attrsJson: '{"a":2}' })).toThrow(
      /does not hold its attrs/,
    );
    const { storage, written } = recording();
    const checked = checkingAttrsJson(storage);
    const stale: Item = { pk: 'p', sk: 's', ver: 1, attrs: { a: 1 }, attrsJson: '{"a":2}' };
    const good: Item = { pk: 'p', sk: 't', ver: 1, attrs: { a: 1, b: 'x' }, attrsJson: '{"b":"x","a":1}' };
    await expect(checked.items.put('meta', stale)).rejects.toThrow(/does not hold its attrs/);
    await expect(checked.items.writeEach([{ op: 'put', table: 'meta', item: stale }])).rejects.toThrow(
      /does not hold its attrs/,
    );
    await expect(
      checked.items.transact([
        { op: 'put', table: 'meta', item: good },
        { op: 'put', table: 'meta', item: stale },
      ]),
    ).rejects.toThrow(/does not hold its attrs/);
    expect(written).toEqual([]);
    await checked.items.put('meta', good);
    expect(written).toEqual([good]);
    // Everything but the items is the adapter's own, its extras included.
    expect(checked.kind).toBe('embedded');
    expect(checked.extra()).toBe('extra on embedded');
  });
});
