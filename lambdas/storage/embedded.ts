// Types only: the native module is loaded when a store opens, so Lambda bundles (where it is
// external and absent) can contain this file without failing to load.
import type Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { link, lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  ConditionFailedError,
  MAX_GET_MANY,
  MAX_TRANSACT_OPS,
  TABLES,
  type BlobInfo,
  type BlobStore,
  type Condition,
  type Item,
  type ItemKey,
  type ItemStore,
  type QueryOptions,
  type QueryPage,
  type Storage,
  type TableName,
  type WriteOp,
  type WriteResult,
} from './port.js';
import { assertItemSize, attrsJson } from './size.js';

/** The embedded backend: the port plus the TTL sweeper DynamoDB runs for free on AWS. */
export interface EmbeddedStorage extends Storage {
  readonly kind: 'embedded';
  /**
   * Deletes items whose `expiresAt` is before `nowSeconds` and returns how many. This only
   * emulates DynamoDB's TTL garbage collection: reads never filter on `expiresAt`.
   */
  sweepExpired(nowSeconds: number): number;
}

export interface EmbeddedStorageOptions {
  /** Directory holding `sluice.db`, `blobs/` and `tmp/`; created when missing. */
  dataDir: string;
  /**
   * `full` (default): every commit is fsynced, so an acknowledged write survives power loss.
   * `normal`: WAL commits are fsynced only at checkpoints; survives a process crash but may
   * lose the last commits on power loss. Several times faster on slow disks.
   */
  sync?: 'full' | 'normal';
}

/**
 * Opens (creating if needed) the embedded storage under `dataDir`: items in SQLite
 * (`sluice.db`, WAL mode), blobs as files under `blobs/`. It is the backend `npm start`
 * runs on, held to the same conformance suite as the AWS adapter.
 *
 * @example
 * ```ts
 * const storage = await openEmbeddedStorage({ dataDir: '.sluice-data' });
 * await storage.items.put('meta', { pk: 'queue#orders', sk: 'config', ver: 1, attrs: {} }, { kind: 'absent' });
 * setInterval(() => storage.sweepExpired(Math.floor(Date.now() / 1000)), 60_000).unref();
 * await storage.close();
 * ```
 */
export async function openEmbeddedStorage(opts: EmbeddedStorageOptions): Promise<EmbeddedStorage> {
  const dataDir = resolve(opts.dataDir);
  const blobDir = join(dataDir, 'blobs');
  // Temp files live outside `blobs/` so a listing can never see a half-written blob, and on
  // the same filesystem so the final rename/link is atomic.
  const tmpDir = join(dataDir, 'tmp');
  await mkdir(blobDir, { recursive: true });
  await mkdir(tmpDir, { recursive: true });
  await removeStaleTemps(tmpDir);
  const sync = opts.sync ?? 'full';
  const { default: Sqlite } = await import('better-sqlite3');
  const db = openDatabase(Sqlite, join(dataDir, 'sluice.db'), sync);
  return new Embedded(db, new SqliteItemStore(db), new FileBlobStore(blobDir, tmpDir, sync === 'full'));
}

class Embedded implements EmbeddedStorage {
  readonly kind = 'embedded' as const;
  private closed = false;

  constructor(
    private readonly db: Database.Database,
    readonly items: SqliteItemStore,
    readonly blobs: FileBlobStore,
  ) {}

  sweepExpired(nowSeconds: number): number {
    return this.items.sweepExpired(nowSeconds);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The port promises pending writes are durable once close resolves: commit the writes
    // waiting for the next group commit now (their callers then resolve as usual).
    this.items.flush();
    await this.blobs.drain();
    this.items.flush();
    // Folding the WAL back keeps the data dir a single self-contained file at rest.
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.close();
  }
}

// ---------------------------------------------------------------------------------------
// Items: SQLite
// ---------------------------------------------------------------------------------------

/**
 * 2: `items` is a rowid table (1 was WITHOUT ROWID; {@link migrateToV2} converts it). Rows
 * are appended in insertion order and the primary key is a separate index of keys only, so
 * a push's 100 dedup reservations, whose transactionIds land anywhere in key order, dirty
 * index pages of short keys instead of pages of whole rows (docs/STORAGE.md has the numbers).
 */
const SCHEMA_VERSION = 2;

/** The items table. TEXT keys use BINARY collation = UTF-8 byte order, DynamoDB's sort-key order. */
const itemsTable = (name: string): string => `
  CREATE TABLE IF NOT EXISTS ${name} (
    tbl        TEXT    NOT NULL,
    pk         TEXT    NOT NULL,
    sk         TEXT    NOT NULL,
    ver        INTEGER NOT NULL,
    attrs      TEXT    NOT NULL,
    bin        BLOB,
    expires_at INTEGER,
    PRIMARY KEY (tbl, pk, sk)
  );`;
// Partial: only items with a TTL pay for it, and the sweep never scans the whole table.
const EXPIRES_INDEX = 'CREATE INDEX IF NOT EXISTS items_expires_at ON items (expires_at) WHERE expires_at IS NOT NULL;';

function openDatabase(Sqlite: typeof Database, file: string, sync: 'full' | 'normal'): Database.Database {
  const db = new Sqlite(file);
  try {
    // Another process (or a checkpoint) holding the lock waits instead of failing at once.
    db.pragma('busy_timeout = 5000');
    // WAL: readers never block the writer, and a commit is one sequential append.
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${sync === 'full' ? 'FULL' : 'NORMAL'}`);
    // Keep a large hot set in memory (negative = KiB) and stop the WAL file growing unbounded.
    db.pragma('cache_size = -8192'); // 8 MiB: the OS page cache holds the rest (16 MiB cost RSS, no speed)
    db.pragma('journal_size_limit = 67108864');
    db.pragma('temp_store = MEMORY');
    // The common case (current schema) only reads; creating or migrating takes the write lock
    // and looks again, so two processes opening one directory at once do it once.
    if (db.pragma('user_version', { simple: true }) !== SCHEMA_VERSION) {
      db.transaction(() => {
        const version = db.pragma('user_version', { simple: true }) as number;
        if (version === SCHEMA_VERSION) return;
        // Version 0 with a table: a version-1 directory whose creation stopped before it was
        // stamped (those were two statements then).
        const hasItems =
          db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'items'").get() !== undefined;
        if (version === 1 || (version === 0 && hasItems)) return migrateToV2(db);
        if (version !== 0)
          throw new Error(`${file}: unsupported schema version ${version} (this Sluice reads ${SCHEMA_VERSION})`);
        db.exec(itemsTable('items') + EXPIRES_INDEX);
        db.pragma(`user_version = ${SCHEMA_VERSION}`);
      }).immediate();
    }
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Copies a version-1 data directory's items into the rowid table, in the caller's transaction. */
function migrateToV2(db: Database.Database): void {
  db.exec(`
    ${itemsTable('items_v2')}
    INSERT INTO items_v2 (tbl, pk, sk, ver, attrs, bin, expires_at) SELECT tbl, pk, sk, ver, attrs, bin, expires_at FROM items ORDER BY tbl, pk, sk;
    DROP TABLE items;
    ALTER TABLE items_v2 RENAME TO items;
    ${EXPIRES_INDEX}
  `);
  db.pragma(`user_version = ${SCHEMA_VERSION}`);
}

interface Row {
  pk: string;
  sk: string;
  ver: number;
  attrs: string;
  bin: Buffer | null;
  expires_at: number | null;
}

const COLS = 'pk, sk, ver, attrs, bin, expires_at';
const KEY = 'tbl = ? AND pk = ? AND sk = ?';
const TABLE_SET: ReadonlySet<string> = new Set(TABLES);
/** DynamoDB's key size limits, in UTF-8 bytes. */
const MAX_PK_BYTES = 2048;
const MAX_SK_BYTES = 1024;

function toItem(row: Row): Item {
  const item: Item = { pk: row.pk, sk: row.sk, ver: row.ver, attrs: JSON.parse(row.attrs) as Item['attrs'] };
  if (row.bin !== null) item.bin = row.bin;
  if (row.expires_at !== null) item.expiresAt = row.expires_at;
  return item;
}

const OK: WriteResult = Object.freeze({ ok: true }) as WriteResult;

/** Thrown inside a savepoint to roll back a multi-row insert that met an existing row. */
const SOME_EXIST = new Error('some rows exist');

/** A write call waiting for the next group commit. */
interface WriteJob {
  kind: 'all' | 'each';
  ops: WriteOp[];
  /** Each put's attributes as JSON, serialised once by {@link checkOp} (null for other ops). */
  jsons: (string | null)[];
  resolve(v: WriteResult[] | undefined): void;
  reject(e: unknown): void;
  value?: WriteResult[] | undefined;
  error?: unknown;
}

/** The write parameters shared by every put statement: ver, attrs, bin, expires_at. */
function values(item: Item, json: string): [number, string, Uint8Array | null, number | null] {
  return [item.ver, json, item.bin ?? null, item.expiresAt ?? null];
}

function checkTable(table: TableName): void {
  // Types already forbid it; a runtime check mirrors DynamoDB's ResourceNotFound.
  if (!TABLE_SET.has(table)) throw new Error(`unknown table ${String(table)}`);
}

/** DynamoDB's ValidationException for keys: non-empty strings within the size limits. */
function checkKey(key: ItemKey): void {
  if (typeof key.pk !== 'string' || key.pk.length === 0) throw new Error('partition key must be a non-empty string');
  if (typeof key.sk !== 'string' || key.sk.length === 0) throw new Error('sort key must be a non-empty string');
  // A UTF-16 unit is at most 3 UTF-8 bytes, so only long keys need measuring.
  if (key.pk.length * 3 > MAX_PK_BYTES && Buffer.byteLength(key.pk) > MAX_PK_BYTES)
    throw new Error(`partition key over ${MAX_PK_BYTES} bytes`);
  if (key.sk.length * 3 > MAX_SK_BYTES && Buffer.byteLength(key.sk) > MAX_SK_BYTES)
    throw new Error(`sort key over ${MAX_SK_BYTES} bytes`);
}

/** Validates one op as DynamoDB would; returns a put's attributes as JSON (null for other ops). */
function checkOp(op: WriteOp): string | null {
  checkTable(op.table);
  if (op.op === 'put') {
    checkKey(op.item);
    const json = attrsJson(op.item);
    assertItemSize(op.item, json);
    return json;
  } else if (op.op === 'delete' || op.op === 'check') {
    checkKey(op.key);
    return null;
  } else {
    throw new Error(`unknown write op ${(op as { op: unknown }).op as string}`);
  }
}

const opKey = (op: WriteOp): ItemKey => (op.op === 'put' ? op.item : op.key);

/** Whether `current` satisfies `cond` (evaluated in JS for check ops and delete-if-absent). */
function holds(cond: Condition, current: Item | undefined): boolean {
  switch (cond.kind) {
    case 'absent':
      return current === undefined;
    case 'exists':
      return current !== undefined;
    case 'version':
      return current !== undefined && current.ver === cond.ver;
  }
}

class SqliteItemStore implements ItemStore {
  // Prepared once: statement compilation would otherwise dominate small writes.
  private readonly sGet: Database.Statement<[string, string, string], Row>;
  private readonly sUpsert: Database.Statement<unknown[]>;
  private readonly sInsertNew: Database.Statement<unknown[]>;
  private readonly sUpdateIfVer: Database.Statement<unknown[]>;
  private readonly sUpdateIfExists: Database.Statement<unknown[]>;
  private readonly sDelete: Database.Statement<[string, string, string]>;
  private readonly sDeleteIfVer: Database.Statement<[string, string, string, number]>;
  private readonly sSweep: Database.Statement<[number]>;
  private readonly queries = new Map<string, Database.Statement<unknown[], Row>>();
  private readonly txGetMany: (table: TableName, keys: ItemKey[]) => (Item | undefined)[];
  private readonly txGroup: Database.Transaction<(jobs: WriteJob[]) => void>;
  private pending: WriteJob[] = [];
  private readonly insertManyStmts = new Map<number, Database.Statement<unknown[]>>();

  /** `INSERT … VALUES (…) × n ON CONFLICT DO NOTHING`, prepared once per row count. */
  private insertMany(n: number): Database.Statement<unknown[]> {
    let st = this.insertManyStmts.get(n);
    if (!st) {
      const rows = Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ');
      st = this.db.prepare(
        `INSERT INTO items (tbl, pk, sk, ver, attrs, bin, expires_at) VALUES ${rows} ON CONFLICT (tbl, pk, sk) DO NOTHING`,
      );
      this.insertManyStmts.set(n, st);
    }
    return st;
  }

  constructor(private readonly db: Database.Database) {
    this.sGet = db.prepare(`SELECT ${COLS} FROM items WHERE ${KEY}`);
    const insert = 'INSERT INTO items (tbl, pk, sk, ver, attrs, bin, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)';
    // Guards are folded into the write itself (ON CONFLICT / WHERE ver = ?), so a write that
    // succeeds costs one statement; the current item is only read back when a guard fails.
    this.sUpsert = db.prepare(
      `${insert} ON CONFLICT (tbl, pk, sk) DO UPDATE SET ver = excluded.ver, attrs = excluded.attrs, bin = excluded.bin, expires_at = excluded.expires_at`,
    );
    this.sInsertNew = db.prepare(`${insert} ON CONFLICT (tbl, pk, sk) DO NOTHING`);
    this.sUpdateIfVer = db.prepare(
      `UPDATE items SET ver = ?, attrs = ?, bin = ?, expires_at = ? WHERE ${KEY} AND ver = ?`,
    );
    this.sUpdateIfExists = db.prepare(`UPDATE items SET ver = ?, attrs = ?, bin = ?, expires_at = ? WHERE ${KEY}`);
    this.sDelete = db.prepare(`DELETE FROM items WHERE ${KEY}`);
    this.sDeleteIfVer = db.prepare(`DELETE FROM items WHERE ${KEY} AND ver = ?`);
    this.sSweep = db.prepare('DELETE FROM items WHERE expires_at < ?');

    // IMMEDIATE takes the write lock up front: a deferred transaction that reads first can
    // fail with SQLITE_BUSY on lock upgrade when another process writes, without waiting.
    const applyAll = db.transaction((ops: WriteOp[], jsons: (string | null)[]) => {
      let failed: { index: number; current: Item | undefined }[] | undefined;
      for (let i = 0; i < ops.length; i++) {
        const r = this.apply(ops[i] as WriteOp, jsons[i] ?? null);
        // Keys are distinct, so a failed op's `current` is the pre-transaction item and later
        // guards are unaffected by earlier writes: evaluating in order is equivalent to
        // DynamoDB checking all guards up front.
        if (!r.ok) (failed ??= []).push({ index: i, current: r.current });
      }
      // Throwing inside db.transaction rolls everything back.
      if (failed) throw new ConditionFailedError(failed);
    });
    const applyEach = db.transaction((ops: WriteOp[], jsons: (string | null)[]) =>
      ops.map((op, i) => this.apply(op, jsons[i] ?? null)),
    );
    // The common writeEach (many put-if-absent into one table, e.g. dedup reservations) as one
    // multi-row INSERT: half the cost of one statement per row. If any row already exists the
    // savepoint rolls back and the ops run one by one for their individual outcomes.
    const insertAllNew = db.transaction((ops: WriteOp[], jsons: (string | null)[]) => {
      const params: unknown[] = [];
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i] as Extract<WriteOp, { op: 'put' }>;
        const { item } = op;
        params.push(op.table, item.pk, item.sk, item.ver, jsons[i], item.bin ?? null, item.expiresAt ?? null);
      }
      if (this.insertMany(ops.length).run(...params).changes !== ops.length) throw SOME_EXIST;
      return ops.map(() => OK);
    });
    const writeEachFast = (ops: WriteOp[], jsons: (string | null)[]): WriteResult[] => {
      if (ops.length < 2 || ops.length > 100 || !ops.every((o) => o.op === 'put' && o.cond?.kind === 'absent'))
        return applyEach(ops, jsons);
      try {
        return insertAllNew(ops, jsons);
      } catch (e) {
        if (e !== SOME_EXIST) throw e;
        return applyEach(ops, jsons);
      }
    };
    // Group commit: every write call waiting when the event loop comes round is applied in one
    // SQLite transaction (one fsync), each inside its own savepoint (better-sqlite3 nests a
    // transaction function as a SAVEPOINT), so one call's failed guard rolls back only itself.
    this.txGroup = db.transaction((jobs: WriteJob[]) => {
      for (const job of jobs) {
        try {
          job.value =
            job.kind === 'all' ? (applyAll(job.ops, job.jsons), undefined) : writeEachFast(job.ops, job.jsons);
        } catch (e) {
          job.error = e;
        }
      }
    });
    // A read transaction gives getMany one snapshot across keys (cheap in WAL mode).
    this.txGetMany = db.transaction((table: TableName, keys: ItemKey[]) => keys.map((k) => this.read(table, k)));
  }

  async get(table: TableName, key: ItemKey): Promise<Item | undefined> {
    checkTable(table);
    checkKey(key);
    return this.read(table, key);
  }

  async getMany(table: TableName, keys: ItemKey[]): Promise<(Item | undefined)[]> {
    checkTable(table);
    if (keys.length > MAX_GET_MANY) throw new Error(`getMany takes at most ${MAX_GET_MANY} keys, got ${keys.length}`);
    for (const k of keys) checkKey(k);
    if (keys.length === 0) return [];
    return this.txGetMany(table, keys);
  }

  async query(table: TableName, pk: string, opts: QueryOptions = {}): Promise<QueryPage> {
    checkTable(table);
    if (typeof pk !== 'string' || pk.length === 0) throw new Error('partition key must be a non-empty string');
    const { gte, lte, prefix, reverse = false, limit, after } = opts;
    if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
      throw new Error(`query limit must be a positive integer, got ${limit}`);

    // Every bound goes to SQLite as a range term on the primary key; the planner turns them
    // into one index range scan, so a page costs O(limit) whatever the partition size.
    const terms: string[] = [];
    const params: unknown[] = [table, pk];
    if (gte !== undefined) {
      terms.push('sk >= ?');
      params.push(gte);
    }
    if (lte !== undefined) {
      terms.push('sk <= ?');
      params.push(lte);
    }
    if (prefix !== undefined && prefix !== '') {
      // Keys starting with P are exactly [P, P || 0xFF) in byte order (0xFF never occurs in
      // UTF-8). Cast to TEXT so SQLite compares bytes instead of ranking BLOB above TEXT.
      terms.push('sk >= ?', 'sk < CAST(? AS TEXT)');
      params.push(prefix, Buffer.concat([Buffer.from(prefix), Buffer.from([0xff])]));
    }
    if (after !== undefined) {
      terms.push(reverse ? 'sk < ?' : 'sk > ?');
      params.push(after);
    }
    const hasLimit = limit !== undefined;
    if (hasLimit) params.push(limit + 1); // one extra row tells whether `next` is needed

    const shape = `${terms.join(' AND ')}|${reverse ? 'D' : 'A'}|${hasLimit ? 'L' : ''}`;
    let stmt = this.queries.get(shape);
    if (stmt === undefined) {
      const where = ['tbl = ? AND pk = ?', ...terms].join(' AND ');
      stmt = this.db.prepare(
        `SELECT ${COLS} FROM items WHERE ${where} ORDER BY sk ${reverse ? 'DESC' : 'ASC'}${hasLimit ? ' LIMIT ?' : ''}`,
      );
      this.queries.set(shape, stmt);
    }
    const rows = stmt.all(...params);
    if (hasLimit && rows.length > limit) {
      rows.length = limit;
      return { items: rows.map(toItem), next: (rows[limit - 1] as Row).sk };
    }
    return { items: rows.map(toItem) };
  }

  async put(table: TableName, item: Item, cond?: Condition): Promise<void> {
    const op: WriteOp = { op: 'put', table, item, cond };
    await this.enqueue('all', [op], [checkOp(op)]);
  }

  async delete(table: TableName, key: ItemKey, cond?: Condition): Promise<void> {
    const op: WriteOp = { op: 'delete', table, key, cond };
    await this.enqueue('all', [op], [checkOp(op)]);
  }

  /** Queues a write for the next group commit; resolves once it is committed (durable). */
  private enqueue(kind: 'all', ops: WriteOp[], jsons: (string | null)[]): Promise<undefined>;
  private enqueue(kind: 'each', ops: WriteOp[], jsons: (string | null)[]): Promise<WriteResult[]>;
  private enqueue(kind: 'all' | 'each', ops: WriteOp[], jsons: (string | null)[]): Promise<WriteResult[] | undefined> {
    return new Promise((resolve, reject) => {
      this.pending.push({ kind, ops, jsons, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Commits every write waiting for the next group commit (the event loop's turn, or close). */
  flush(): void {
    const jobs = this.pending;
    this.pending = [];
    if (jobs.length === 0) return;
    try {
      this.txGroup.immediate(jobs);
    } catch (e) {
      // The commit itself failed (disk full, I/O error): nothing of the group is durable.
      for (const j of jobs) j.reject(e);
      return;
    }
    for (const j of jobs) {
      if (j.error !== undefined) j.reject(j.error);
      else j.resolve(j.value);
    }
  }

  async writeEach(ops: WriteOp[]): Promise<WriteResult[]> {
    const jsons = ops.map((op) => {
      if (op.op === 'check') throw new Error('check ops are only valid in transact');
      return checkOp(op);
    });
    if (ops.length === 0) return [];
    // One savepoint in the next group commit; outcomes are still per op.
    return this.enqueue('each', ops, jsons);
  }

  async transact(ops: WriteOp[]): Promise<void> {
    if (ops.length > MAX_TRANSACT_OPS)
      throw new Error(`transact takes at most ${MAX_TRANSACT_OPS} ops, got ${ops.length}`);
    const seen = new Set<string>();
    const jsons = ops.map((op) => {
      const json = checkOp(op);
      const k = opKey(op);
      // Length-prefixed, so no pk/sk content can make two different keys collide.
      const id = `${op.table}\u0000${k.pk.length}\u0000${k.pk}\u0000${k.sk}`;
      if (seen.has(id)) throw new Error(`transact has more than one op on ${op.table} ${k.pk} ${k.sk}`);
      seen.add(id);
      return json;
    });
    if (ops.length === 0) return;
    await this.enqueue('all', ops, jsons);
  }

  sweepExpired(nowSeconds: number): number {
    return this.sSweep.run(nowSeconds).changes;
  }

  private read(table: TableName, key: ItemKey): Item | undefined {
    const row = this.sGet.get(table, key.pk, key.sk);
    return row === undefined ? undefined : toItem(row);
  }

  /** Applies one validated op inside the caller's transaction. */
  private apply(op: WriteOp, json: string | null): WriteResult {
    const { table } = op;
    if (op.op === 'put') {
      const { item, cond } = op;
      const [ver, attrs, bin, exp] = values(item, json ?? attrsJson(item));
      if (cond === undefined) {
        this.sUpsert.run(table, item.pk, item.sk, ver, attrs, bin, exp);
        return OK;
      }
      switch (cond.kind) {
        case 'absent':
          if (this.sInsertNew.run(table, item.pk, item.sk, ver, attrs, bin, exp).changes === 1) return OK;
          return { ok: false, current: this.read(table, item) };
        case 'version':
          if (this.sUpdateIfVer.run(ver, attrs, bin, exp, table, item.pk, item.sk, cond.ver).changes === 1) return OK;
          return { ok: false, current: this.read(table, item) };
        case 'exists':
          if (this.sUpdateIfExists.run(ver, attrs, bin, exp, table, item.pk, item.sk).changes === 1) return OK;
          return { ok: false, current: undefined };
      }
    }
    const { key, cond } = op;
    if (op.op === 'check') {
      const current = this.read(table, key);
      return holds(op.cond, current) ? OK : { ok: false, current };
    }
    if (cond === undefined) {
      this.sDelete.run(table, key.pk, key.sk);
      return OK;
    }
    switch (cond.kind) {
      case 'version':
        if (this.sDeleteIfVer.run(table, key.pk, key.sk, cond.ver).changes === 1) return OK;
        return { ok: false, current: this.read(table, key) };
      case 'exists':
        if (this.sDelete.run(table, key.pk, key.sk).changes === 1) return OK;
        return { ok: false, current: undefined };
      case 'absent': {
        // Deleting what must not exist is a no-op when the guard holds.
        const current = this.read(table, key);
        return current === undefined ? OK : { ok: false, current };
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Blobs: files
// ---------------------------------------------------------------------------------------

/** S3's page cap: larger `limit`s are clamped so callers page the same way on both adapters. */
const MAX_LIST = 1000;
/** S3's key length limit, in UTF-8 bytes. */
const MAX_BLOB_KEY_BYTES = 1024;
/** Temp files older than this at open are leftovers of a crash, not another process's write. */
const STALE_TEMP_MS = 60 * 60 * 1000;

const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;
const byteCompare = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

function badSegment(seg: string): boolean {
  return seg === '' || seg === '.' || seg === '..';
}

/**
 * Maps a blob key to its file. Keys use `/` as directory separators; anything that could
 * escape `blobs/` or alias another key (`..`, `.`, empty segments, a leading `/`) is refused.
 */
function checkBlobKey(key: string): string[] {
  if (typeof key !== 'string' || key.length === 0) throw new Error('blob key must be a non-empty string');
  if (key.includes('\u0000')) throw new Error('blob key must not contain NUL');
  if (Buffer.byteLength(key) > MAX_BLOB_KEY_BYTES) throw new Error(`blob key over ${MAX_BLOB_KEY_BYTES} bytes`);
  const segs = key.split('/');
  if (segs.some(badSegment))
    throw new Error(`invalid blob key ${JSON.stringify(key)}: empty, '.', '..' or leading/trailing '/' segment`);
  return segs;
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function removeStaleTemps(tmpDir: string): Promise<void> {
  const cutoff = Date.now() - STALE_TEMP_MS;
  for (const name of await readdir(tmpDir)) {
    const file = join(tmpDir, name);
    try {
      if ((await stat(file)).mtimeMs < cutoff) await rm(file, { force: true });
    } catch {
      // Best effort: a temp file another process just renamed away is fine.
    }
  }
}

class FileBlobStore implements BlobStore {
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    private readonly root: string,
    private readonly tmpDir: string,
    private readonly syncDirs: boolean,
  ) {}

  /** Waits for writes and deletes in flight (used by close). */
  async drain(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  put(key: string, bytes: Uint8Array, opts?: { ifAbsent?: boolean }): Promise<void> {
    return this.track(this.doPut(key, bytes, opts?.ifAbsent === true));
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    const file = join(this.root, ...checkBlobKey(key));
    try {
      return await readFile(file);
    } catch (err) {
      // ENOTDIR/EISDIR: a path component is a blob, or the key names a directory. Either
      // way there is no blob under this key.
      const code = codeOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return undefined;
      throw err;
    }
  }

  delete(key: string): Promise<void> {
    return this.track(this.doDelete(key));
  }

  async list(
    prefix: string,
    opts?: { after?: string | undefined; limit?: number | undefined },
  ): Promise<{ blobs: BlobInfo[]; next?: string | undefined }> {
    const limit = Math.min(opts?.limit ?? MAX_LIST, MAX_LIST);
    if (!(Number.isInteger(limit) && limit > 0))
      throw new Error(`list limit must be a positive integer, got ${opts?.limit}`);
    const after = opts?.after;
    // Start at the deepest directory the prefix names completely; its partial last segment
    // filters names. A prefix naming an impossible directory matches nothing.
    const dirKey = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    const dirSegs = dirKey === '' ? [] : dirKey.slice(0, -1).split('/');
    if (dirSegs.some(badSegment)) return { blobs: [] };

    const keys: string[] = [];
    for await (const key of this.walk(join(this.root, ...dirSegs), dirKey, prefix, after)) {
      keys.push(key);
      if (keys.length > limit) break;
    }
    const more = keys.length > limit;
    if (more) keys.length = limit;

    const blobs: BlobInfo[] = [];
    for (const key of keys) {
      try {
        const st = await stat(join(this.root, ...key.split('/')));
        blobs.push({ key, size: st.size, modifiedAt: Math.floor(st.mtimeMs) });
      } catch (err) {
        if (codeOf(err) !== 'ENOENT') throw err; // deleted since the readdir
      }
    }
    const last = keys.at(-1);
    return more && last !== undefined ? { blobs, next: last } : { blobs };
  }

  /**
   * Yields keys under `dirKey` matching `prefix` and after `after`, in full-key byte order.
   * Siblings are sorted by name, with directories as `name/`: every key inside a directory
   * starts with `name/`, so this order is exactly the order of the full keys (`a-b` before
   * `a/x`, `a/x` before `ab`). Directories entirely before `after` are skipped unread.
   */
  private async *walk(
    dirAbs: string,
    dirKey: string,
    prefix: string,
    after: string | undefined,
  ): AsyncGenerator<string> {
    let entries: Dirent[];
    try {
      entries = await readdir(dirAbs, { withFileTypes: true });
    } catch (err) {
      const code = codeOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw err;
    }
    const cands = entries
      .filter((e) => e.isFile() || e.isDirectory())
      .map((e) => ({
        name: e.name,
        key: e.isDirectory() ? `${dirKey}${e.name}/` : `${dirKey}${e.name}`,
        dir: e.isDirectory(),
      }))
      .sort((a, b) => byteCompare(a.key, b.key));
    for (const c of cands) {
      if (c.dir) {
        if (!(c.key.startsWith(prefix) || prefix.startsWith(c.key))) continue;
        // `after` past this directory without being inside it: all its keys come before.
        if (after !== undefined && !after.startsWith(c.key) && byteCompare(after, c.key) > 0) continue;
        yield* this.walk(join(dirAbs, c.name), c.key, prefix, after);
      } else {
        if (!c.key.startsWith(prefix)) continue;
        if (after !== undefined && byteCompare(c.key, after) <= 0) continue;
        yield c.key;
      }
    }
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    const done = (): void => void this.inflight.delete(p);
    p.then(done, done);
    return p;
  }

  private async doPut(key: string, bytes: Uint8Array, ifAbsent: boolean): Promise<void> {
    const file = join(this.root, ...checkBlobKey(key));
    const dir = dirname(file);
    await this.makeDir(dir, key);

    // Write and fsync a temp file first, then publish it with one atomic rename/link: a
    // reader sees the old bytes or the new ones, never a torn file, even across a crash.
    const tmp = join(this.tmpDir, `${randomUUID()}.tmp`);
    const fh = await open(tmp, 'wx');
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }

    let tmpLeft = true;
    try {
      if (ifAbsent) {
        // link() fails with EEXIST if the name exists, atomically: the put-if-absent guard.
        await this.publish(() => link(tmp, file), key, file, true);
      } else {
        await this.publish(() => rename(tmp, file), key, file, false);
        tmpLeft = false;
      }
    } finally {
      if (tmpLeft) await unlink(tmp).catch(() => undefined);
    }
    if (this.syncDirs) await fsyncDir(dir);
  }

  /** Runs the rename/link, clearing an empty leftover directory in the way once. */
  private async publish(op: () => Promise<void>, key: string, file: string, ifAbsent: boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await op();
        return;
      } catch (err) {
        const code = codeOf(err);
        if (code !== 'EEXIST' && code !== 'EISDIR' && code !== 'ENOTEMPTY') throw err;
        const isDir = await lstat(file).then(
          (st) => st.isDirectory(),
          () => false,
        );
        if (!isDir) {
          if (ifAbsent && code === 'EEXIST') throw new ConditionFailedError([{ index: 0, current: undefined }]);
          throw err;
        }
        // The key's path is a directory: empty ones are leftovers of deleted `key/…` blobs.
        const removed = await rmdir(file).then(
          () => true,
          () => false,
        );
        if (!removed || attempt > 0) {
          throw new Error(
            `blob key ${JSON.stringify(key)} is also a prefix of other blobs (${key}/…); the embedded store cannot hold both`,
          );
        }
      }
    }
  }

  private async makeDir(dir: string, key: string): Promise<void> {
    let made: string | undefined;
    try {
      made = await mkdir(dir, { recursive: true });
    } catch (err) {
      const code = codeOf(err);
      if (code === 'ENOTDIR' || code === 'EEXIST') {
        throw new Error(
          `blob key ${JSON.stringify(key)} extends another blob's key as a directory; the embedded store cannot hold both`,
        );
      }
      throw err;
    }
    if (made !== undefined && this.syncDirs) {
      // New directories are durable only once their parents' entries are.
      for (let d = dir; d.length >= made.length; d = dirname(d)) await fsyncDir(dirname(d));
    }
  }

  private async doDelete(key: string): Promise<void> {
    const file = join(this.root, ...checkBlobKey(key));
    try {
      await unlink(file);
    } catch (err) {
      const code = codeOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      // The key names a directory (EISDIR on Linux, EPERM on macOS): there is no such blob.
      // EPERM on a real file is a permission problem and must surface.
      if (
        (code === 'EISDIR' || code === 'EPERM') &&
        (await lstat(file).then(
          (st) => st.isDirectory(),
          () => false,
        ))
      )
        return;
      throw err;
    }
    if (this.syncDirs) await fsyncDir(dirname(file));
  }
}
