import { createHash } from 'node:crypto';
import type { Item, Storage, TableName } from '../../server/storage/port.js';

/**
 * Everything the log has stored, as one string: the queue directory, each queue's items (its
 * configuration and partitions), each partition's log items (segments, markers) and dedup
 * reservations, and every blob. Two equal fingerprints mean a request wrote nothing the log
 * keeps. Read through the port only, so it works on both backends.
 *
 * @example
 * ```ts
 * const before = await storeFingerprint(storage);
 * await badRequest();
 * expect(await storeFingerprint(storage)).toBe(before);
 * ```
 */
export async function storeFingerprint(storage: Storage): Promise<string> {
  const lines: string[] = [];
  const all = async (table: TableName, pk: string): Promise<Item[]> => {
    const out: Item[] = [];
    let after: string | undefined;
    do {
      const page = await storage.items.query(table, pk, { after, limit: 500 });
      out.push(...page.items);
      after = page.next;
    } while (after);
    return out;
  };
  const show = (table: string, it: Item): string =>
    JSON.stringify([
      table,
      it.pk,
      it.sk,
      it.ver,
      it.attrs,
      it.expiresAt ?? null,
      it.bin ? createHash('sha256').update(it.bin).digest('hex') : null,
    ]);
  for (const q of await all('meta', 'QUEUES')) {
    lines.push(show('meta', q));
    for (const it of await all('meta', `Q#${q.sk}`)) {
      lines.push(show('meta', it));
      const partitionId = (it.attrs as { id?: unknown }).id;
      if (!it.sk.startsWith('P#') || typeof partitionId !== 'string') continue;
      for (const table of ['log', 'dedup'] as const)
        for (const x of await all(table, partitionId)) lines.push(show(table, x));
    }
  }
  let after: string | undefined;
  do {
    const page = await storage.blobs.list('', { after, limit: 1000 });
    for (const b of page.blobs) lines.push(JSON.stringify(['blob', b.key, b.size]));
    after = page.next;
  } while (after);
  return lines.join('\n');
}
