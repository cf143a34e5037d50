/**
 * The embedded backend's SQLite schema: one `items` table for every logical table, its
 * version in `user_version`, and the migrations from older data directories.
 */
// Types only: the native module is loaded when a store opens, so Lambda bundles (where it is
// external and absent) can contain this file without failing to load.
import type Database from 'better-sqlite3';

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

/**
 * Opens (creating or migrating as needed) the items database in WAL mode. `full` fsyncs every
 * commit; `normal` only at checkpoints.
 *
 * @example
 * ```ts
 * const { default: Sqlite } = await import('better-sqlite3');
 * const db = openDatabase(Sqlite, join(dataDir, 'sluice.db'), 'full');
 * ```
 */
export function openDatabase(Sqlite: typeof Database, file: string, sync: 'full' | 'normal'): Database.Database {
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
