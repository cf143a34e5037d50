import { createHash } from 'node:crypto';
import type { Item, ItemKey, Storage, TableName, WriteOp } from '../../server/storage/port.js';
import { withItems } from './storage.js';

/** What a write touched, as `table pk sk` or `blob key`. */
export type TouchedKey = string;

/**
 * A storage that notes, for every item and blob a write touches, what it held before the first
 * such write since {@link WriteJournal.begin}. {@link WriteJournal.changes} then compares those
 * with what they hold now: an empty answer means nothing stored changed since `begin`,
 * whatever was written in between (a write undone, a reservation taken back). Unlike
 * `storeFingerprint` it covers every table, and costs nothing for a request that writes nothing.
 *
 * @example
 * ```ts
 * const journal = journaled(storage);
 * const svc = testServices(journal.storage);
 * journal.begin();
 * await badRequest();
 * expect(await journal.changes()).toEqual([]);
 * ```
 */
export interface WriteJournal {
  storage: Storage;
  /** Starts a new window: forgets what earlier writes touched. */
  begin(): void;
  /** The keys whose stored value differs from before the window's first write to them. */
  changes(): Promise<TouchedKey[]>;
  /** Writes issued in the window (a write that changed nothing counts too). */
  writes(): number;
}

const show = (it: Item | undefined): string =>
  it === undefined
    ? 'absent'
    : JSON.stringify([
        it.ver,
        it.attrs,
        it.expiresAt ?? null,
        it.bin ? createHash('sha256').update(it.bin).digest('hex') : null,
      ]);
const showBlob = (b: Uint8Array | undefined): string =>
  b === undefined ? 'absent' : createHash('sha256').update(b).digest('hex');

export function journaled(inner: Storage): WriteJournal {
  const before = new Map<TouchedKey, { read: () => Promise<string>; was: Promise<string> }>();
  let writes = 0;
  const noteItem = (table: TableName, key: ItemKey): void => {
    const id = `${table} ${key.pk} ${key.sk}`;
    if (before.has(id)) return;
    const read = async (): Promise<string> => show(await inner.items.get(table, { pk: key.pk, sk: key.sk }));
    before.set(id, { read, was: read() });
  };
  const noteOps = async (ops: WriteOp[]): Promise<void> => {
    writes++;
    for (const o of ops) if (o.op !== 'check') noteItem(o.table, o.op === 'put' ? o.item : o.key);
    await Promise.all([...before.values()].map((b) => b.was));
  };
  const noteBlob = async (key: string): Promise<void> => {
    writes++;
    const id = `blob ${key}`;
    if (!before.has(id)) {
      const read = async (): Promise<string> => showBlob(await inner.blobs.get(key));
      before.set(id, { read, was: read() });
    }
    await before.get(id)?.was;
  };
  const i = inner.items;
  const wrapped = withItems(inner, {
    put: async (t, item, c) => (await noteOps([{ op: 'put', table: t, item }]), i.put(t, item, c)),
    delete: async (t, key, c) => (await noteOps([{ op: 'delete', table: t, key }]), i.delete(t, key, c)),
    writeEach: async (ops, o) => (await noteOps(ops), i.writeEach(ops, o)),
    transact: async (ops) => (await noteOps(ops), i.transact(ops)),
  });
  const b = inner.blobs;
  const storage: Storage = {
    ...wrapped,
    blobs: {
      put: async (key, bytes, opts) => (await noteBlob(key), b.put(key, bytes, opts)),
      get: (key) => b.get(key),
      delete: async (key) => (await noteBlob(key), b.delete(key)),
      list: (prefix, opts) => b.list(prefix, opts),
    },
  };
  return {
    storage,
    begin() {
      before.clear();
      writes = 0;
    },
    async changes() {
      const out: TouchedKey[] = [];
      for (const [id, b] of before) if ((await b.was) !== (await b.read())) out.push(id);
      return out;
    },
    writes: () => writes,
  };
}
