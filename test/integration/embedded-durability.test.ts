// Embedded-only guarantees the shared conformance suite cannot express: durability across
// restarts (clean and crashed), the TTL sweeper, temp-file hygiene and blob key mapping.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import { ConditionFailedError, MAX_ITEM_BYTES, type Item } from '../../server/storage/port.js';
import { ItemTooLargeError, itemSize } from '../../server/storage/size.js';

const run = promisify(execFile);
const embeddedModule = fileURLToPath(new URL('../../server/storage/embedded/index.ts', import.meta.url));

const dirs: string[] = [];
async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-embedded-'));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const item = (sk: string, extra: Partial<Item> = {}): Item => ({ pk: 'p', sk, ver: 1, attrs: { sk }, ...extra });

describe('embedded storage: durability', () => {
  it('keeps items and blobs across close and reopen', async () => {
    const dataDir = await freshDir();
    const first = await openEmbeddedStorage({ dataDir });
    const stored = item('a', { bin: new Uint8Array([1, 2, 3]), expiresAt: 2_000_000_000, attrs: { text: 'é 😀' } });
    await first.items.transact([
      { op: 'put', table: 'log', item: stored },
      { op: 'put', table: 'meta', item: item('b') },
    ]);
    await first.blobs.put('seg/q/0001', new Uint8Array([9, 8, 7]));
    await first.close();
    await first.close(); // idempotent

    const second = await openEmbeddedStorage({ dataDir });
    try {
      const got = await second.items.get('log', { pk: 'p', sk: 'a' });
      expect(got?.attrs).toEqual({ text: 'é 😀' });
      expect(got?.expiresAt).toBe(2_000_000_000);
      expect(got?.bin).toBeInstanceOf(Uint8Array);
      expect([...(got?.bin ?? [])]).toEqual([1, 2, 3]);
      expect((await second.items.get('meta', { pk: 'p', sk: 'b' }))?.ver).toBe(1);
      expect([...((await second.blobs.get('seg/q/0001')) ?? [])]).toEqual([9, 8, 7]);
    } finally {
      await second.close();
    }
  });

  it('keeps acknowledged writes when the process exits without closing', async () => {
    const dataDir = await freshDir();
    const script = join(dataDir, 'child.mts');
    // The child never calls close(): the WAL is left un-checkpointed, as after a crash.
    await writeFile(
      script,
      `import { openEmbeddedStorage } from ${JSON.stringify(embeddedModule)};
const s = await openEmbeddedStorage({ dataDir: ${JSON.stringify(join(dataDir, 'data'))} });
for (let i = 0; i < 20; i++) await s.items.put('log', { pk: 'p', sk: 'k' + String(i).padStart(2, '0'), ver: i, attrs: {} });
await s.blobs.put('crash/blob', new Uint8Array([42]), { ifAbsent: true });
process.exit(0);
`,
    );
    await run(process.execPath, ['--import', 'tsx', script], { timeout: 30_000 });

    const s = await openEmbeddedStorage({ dataDir: join(dataDir, 'data') });
    try {
      const page = await s.items.query('log', 'p');
      expect(page.items.map((i) => i.ver)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect([...((await s.blobs.get('crash/blob')) ?? [])]).toEqual([42]);
    } finally {
      await s.close();
    }
  });

  it('close waits for blob writes already in flight', async () => {
    const dataDir = await freshDir();
    const s = await openEmbeddedStorage({ dataDir });
    const pending = Array.from({ length: 10 }, (_, i) =>
      s.blobs.put(`inflight/${i}`, new Uint8Array(64 * 1024).fill(i)),
    );
    await s.close();
    await Promise.all(pending);
    const again = await openEmbeddedStorage({ dataDir });
    try {
      expect((await again.blobs.list('inflight/')).blobs).toHaveLength(10);
    } finally {
      await again.close();
    }
  });
});

it('close commits item writes still waiting for the next group commit', async () => {
  const dataDir = await freshDir();
  const s = await openEmbeddedStorage({ dataDir });
  // Not awaited: these sit in the group-commit queue when close() is called.
  const pending = [
    s.items.put('log', item('queued-put'), { kind: 'absent' }),
    s.items.transact([
      { op: 'put', table: 'meta', item: item('queued-tx') },
      { op: 'put', table: 'dedup', item: item('queued-tx') },
    ]),
    s.items.writeEach([{ op: 'put', table: 'dedup', item: item('queued-each'), cond: { kind: 'absent' } }]),
  ];
  await s.close();
  await Promise.all(pending);
  const again = await openEmbeddedStorage({ dataDir });
  try {
    expect(await again.items.get('log', { pk: 'p', sk: 'queued-put' })).toBeDefined();
    expect(await again.items.get('meta', { pk: 'p', sk: 'queued-tx' })).toBeDefined();
    expect(await again.items.get('dedup', { pk: 'p', sk: 'queued-tx' })).toBeDefined();
    expect(await again.items.get('dedup', { pk: 'p', sk: 'queued-each' })).toBeDefined();
  } finally {
    await again.close();
  }
});

it('deferred writes commit without the disk flush, and the next commit flushes with them', async () => {
  const dataDir = await freshDir();
  const s = await openEmbeddedStorage({ dataDir, sync: 'full' });
  // The SQLite item store below every wrapper (the usage meter's included), so a wrapper that
  // drops the option shows here.
  const db = (s as unknown as { sqlite: { db: { pragma(p: string, o: { simple: true }): unknown } } }).sqlite.db;
  const synchronous = () => db.pragma('synchronous', { simple: true });
  try {
    await s.items.writeEach([{ op: 'put', table: 'dedup', item: item('deferred') }], { deferDurability: true });
    expect(synchronous()).toBe(1); // NORMAL: committed to the WAL, not flushed
    // Deferred and plain writes in one group commit: flushed.
    await Promise.all([
      s.items.writeEach([{ op: 'put', table: 'dedup', item: item('deferred-2') }], { deferDurability: true }),
      s.items.put('log', item('plain')),
    ]);
    expect(synchronous()).toBe(2); // FULL
    expect(await s.items.get('dedup', { pk: 'p', sk: 'deferred-2' })).toBeDefined();
  } finally {
    await s.close();
  }
});

describe('embedded storage: schema versions', () => {
  // The version-1 layout exactly as earlier releases created it.
  const V1 =
    '\n    CREATE TABLE items (tbl TEXT NOT NULL, pk TEXT NOT NULL, sk TEXT NOT NULL, ver INTEGER NOT NULL,' +
    ' attrs TEXT NOT NULL, bin BLOB, expires_at INTEGER, PRIMARY KEY (tbl, pk, sk)) WITHOUT ROWID;' +
    '\n    CREATE INDEX items_expires_at ON items (expires_at) WHERE expires_at IS NOT NULL;' +
    '\n    PRAGMA user_version = 1;';
  const sqlite = async (file: string) => new (await import('better-sqlite3')).default(file);

  it('migrates a version-1 data directory to the rowid table, keeping every item', async () => {
    const dataDir = await freshDir();
    const old = await sqlite(join(dataDir, 'sluice.db'));
    old.pragma('journal_mode = WAL');
    old.exec(V1);
    const insert = old.prepare('INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)');
    insert.run('log', 'p', 's#1', 3, '{"x":"é"}', Buffer.from([1, 2, 3]), null);
    insert.run('dedup', 'p', 'tx-b', 1, '{}', null, 100);
    insert.run('dedup', 'p', 'tx-a', 1, '{}', null, 5_000_000_000);
    old.close();

    const s = await openEmbeddedStorage({ dataDir });
    try {
      expect(await s.items.get('log', { pk: 'p', sk: 's#1' })).toEqual({
        pk: 'p',
        sk: 's#1',
        ver: 3,
        attrs: { x: 'é' },
        bin: Buffer.from([1, 2, 3]),
      });
      expect((await s.items.query('dedup', 'p')).items.map((i) => [i.sk, i.expiresAt])).toEqual([
        ['tx-a', 5_000_000_000],
        ['tx-b', 100],
      ]);
      // Guards and the TTL index work on the migrated table.
      await expect(s.items.put('dedup', item('tx-a'), { kind: 'absent' })).rejects.toBeInstanceOf(ConditionFailedError);
      expect(s.sweepExpired(1_000)).toBe(1);
    } finally {
      await s.close();
    }
    const db = await sqlite(join(dataDir, 'sluice.db'));
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(2);
      const ddl = db
        .prepare("SELECT name, sql FROM sqlite_master WHERE tbl_name = 'items' AND sql IS NOT NULL ORDER BY name")
        .all() as { name: string; sql: string }[];
      expect(ddl.map((d) => d.name)).toEqual(['items', 'items_expires_at']);
      expect(ddl[0]?.sql).not.toMatch(/WITHOUT ROWID/i);
    } finally {
      db.close();
    }
    // Opening again is a no-op.
    const again = await openEmbeddedStorage({ dataDir });
    expect((await again.items.query('dedup', 'p')).items).toHaveLength(1);
    await again.close();
  });

  it('converts a version-1 table left unstamped (creation stopped between its two statements)', async () => {
    const dataDir = await freshDir();
    const old = await sqlite(join(dataDir, 'sluice.db'));
    old.exec(V1.replace('PRAGMA user_version = 1;', ''));
    old.prepare('INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)').run('meta', 'q', 'config', 1, '{}', null, null);
    old.close();
    const s = await openEmbeddedStorage({ dataDir });
    expect(await s.items.get('meta', { pk: 'q', sk: 'config' })).toMatchObject({ ver: 1 });
    await s.close();
    const db = await sqlite(join(dataDir, 'sluice.db'));
    try {
      expect(db.pragma('user_version', { simple: true })).toBe(2);
      expect(
        (db.prepare("SELECT sql FROM sqlite_master WHERE name = 'items'").get() as { sql: string }).sql,
      ).not.toMatch(/WITHOUT ROWID/i);
    } finally {
      db.close();
    }
  });

  it('refuses a data directory from a newer Sluice, naming the versions', async () => {
    const dataDir = await freshDir();
    const db = await sqlite(join(dataDir, 'sluice.db'));
    db.pragma('user_version = 9');
    db.close();
    await expect(openEmbeddedStorage({ dataDir })).rejects.toThrow(
      /unsupported schema version 9 \(this Sluice reads 2\)/,
    );
  });
});

describe('embedded storage: large items', () => {
  it('stores a near-limit item whose bulk is bin (rows spill to SQLite overflow pages)', async () => {
    const s = await openEmbeddedStorage({ dataDir: await freshDir(), sync: 'normal' });
    try {
      const base = item('big', { bin: new Uint8Array(0) });
      const bin = new Uint8Array(MAX_ITEM_BYTES - itemSize(base)).map((_, i) => i % 251);
      await s.items.put('log', { ...base, bin });
      await expect(
        s.items.put('log', { ...base, sk: 'bigger', bin: new Uint8Array(bin.byteLength + 10) }),
      ).rejects.toBeInstanceOf(ItemTooLargeError);
      const got = await s.items.get('log', { pk: 'p', sk: 'big' });
      expect(Buffer.from(got?.bin ?? []).equals(Buffer.from(bin))).toBe(true);
    } finally {
      await s.close();
    }
  });
});

describe('embedded storage: TTL sweep', () => {
  it('removes only items whose expiresAt is before now, in every table', async () => {
    const s = await openEmbeddedStorage({ dataDir: await freshDir(), sync: 'normal' });
    try {
      const now = 1_800_000_000;
      await s.items.transact([
        { op: 'put', table: 'dedup', item: item('lapsed', { expiresAt: now - 1 }) },
        { op: 'put', table: 'log', item: item('lapsed-too', { expiresAt: 1 }) },
        { op: 'put', table: 'dedup', item: item('boundary', { expiresAt: now }) },
        { op: 'put', table: 'dedup', item: item('future', { expiresAt: now + 60 }) },
        { op: 'put', table: 'dedup', item: item('forever') },
      ]);
      // Before the sweep, lapsed items are still readable.
      expect(await s.items.get('dedup', { pk: 'p', sk: 'lapsed' })).toBeDefined();
      expect(s.sweepExpired(now)).toBe(2);
      expect((await s.items.query('dedup', 'p')).items.map((i) => i.sk)).toEqual(['boundary', 'forever', 'future']);
      expect((await s.items.query('log', 'p')).items).toEqual([]);
      expect(s.sweepExpired(now)).toBe(0);
      expect(s.sweepExpired(now + 61)).toBe(2);
      expect((await s.items.query('dedup', 'p')).items.map((i) => i.sk)).toEqual(['forever']);
    } finally {
      await s.close();
    }
  });
});

describe('embedded storage: query paging', () => {
  it('omits next when the page ends exactly at the last item', async () => {
    const s = await openEmbeddedStorage({ dataDir: await freshDir(), sync: 'normal' });
    try {
      await s.items.writeEach(['a', 'b', 'c', 'd'].map((sk) => ({ op: 'put', table: 'log', item: item(sk) })));
      const p1 = await s.items.query('log', 'p', { limit: 2 });
      expect(p1.next).toBe('b');
      const p2 = await s.items.query('log', 'p', { limit: 2, after: p1.next });
      expect(p2.items.map((i) => i.sk)).toEqual(['c', 'd']);
      expect(p2.next).toBeUndefined();
      await expect(s.items.query('log', 'p', { limit: 0 })).rejects.toThrow(/limit/);
    } finally {
      await s.close();
    }
  });
});

describe('embedded storage: blob files', () => {
  it('never lists temp files, cleans stale ones at open and leaks none', async () => {
    const dataDir = await freshDir();
    const s = await openEmbeddedStorage({ dataDir, sync: 'normal' });
    const big = new Uint8Array(256 * 1024).fill(1);
    const writes = Array.from({ length: 20 }, (_, i) =>
      s.blobs.put(`t/${i % 5}`, big, { ifAbsent: i % 2 === 0 }).catch((e: unknown) => e),
    );
    // Lists racing the writes see only complete, published keys.
    const seen = (await Promise.all([s.blobs.list(''), s.blobs.list('t/'), s.blobs.list('')])).flatMap((l) => l.blobs);
    for (const b of seen) expect(b.key).toMatch(/^t\/[0-4]$/);
    const outcomes = await Promise.all(writes);
    for (const o of outcomes) expect(o === undefined || o instanceof ConditionFailedError).toBe(true);
    const listed = await s.blobs.list('');
    expect(listed.blobs.map((b) => [b.key, b.size])).toEqual(
      ['t/0', 't/1', 't/2', 't/3', 't/4'].map((k) => [k, big.byteLength]),
    );
    expect(await readdir(join(dataDir, 'tmp'))).toEqual([]);
    await s.close();

    // A crash leftover: old temp files are removed at open, fresh ones (another process
    // mid-write) are left alone.
    const stale = join(dataDir, 'tmp', 'stale.tmp');
    const fresh = join(dataDir, 'tmp', 'fresh.tmp');
    await writeFile(stale, 'x');
    await writeFile(fresh, 'y');
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(stale, old, old);
    const reopened = await openEmbeddedStorage({ dataDir, sync: 'normal' });
    try {
      expect(await readdir(join(dataDir, 'tmp'))).toEqual(['fresh.tmp']);
      expect((await reopened.blobs.list('')).blobs.map((b) => b.key)).toEqual(['t/0', 't/1', 't/2', 't/3', 't/4']);
    } finally {
      await reopened.close();
    }
  });

  it('rejects keys that could escape or alias the blob directory', async () => {
    const s = await openEmbeddedStorage({ dataDir: await freshDir(), sync: 'normal' });
    try {
      const bytes = new Uint8Array([1]);
      for (const key of ['', '/abs', 'a//b', 'a/', '../escape', 'a/../b', 'a/./b', '.', 'nul\u0000byte']) {
        await expect(s.blobs.put(key, bytes)).rejects.toThrow(/blob key/);
      }
      await expect(s.blobs.get('../x')).rejects.toThrow(/blob key/);
      expect(await s.blobs.list('../')).toEqual({ blobs: [] });
      expect(await s.blobs.list('a//')).toEqual({ blobs: [] });
    } finally {
      await s.close();
    }
  });

  it('reuses a directory left empty by deletes, and refuses a key that is both blob and prefix', async () => {
    const s = await openEmbeddedStorage({ dataDir: await freshDir(), sync: 'normal' });
    try {
      const one = new Uint8Array([1]);
      await s.blobs.put('d/child', one);
      await s.blobs.delete('d/child');
      expect(await s.blobs.get('d')).toBeUndefined();
      await s.blobs.delete('d'); // a leftover directory is not a blob
      await s.blobs.put('d', one, { ifAbsent: true });
      expect([...((await s.blobs.get('d')) ?? [])]).toEqual([1]);

      await expect(s.blobs.put('d/child', one)).rejects.toThrow(/cannot hold both/);
      await s.blobs.put('e/child', one);
      await expect(s.blobs.put('e', one)).rejects.toThrow(/cannot hold both/);
      await expect(s.blobs.put('e', one, { ifAbsent: true })).rejects.toThrow(/cannot hold both/);
      expect((await s.blobs.list('')).blobs.map((b) => b.key)).toEqual(['d', 'e/child']);
    } finally {
      await s.close();
    }
  });
});
