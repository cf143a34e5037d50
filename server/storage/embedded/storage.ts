/**
 * The embedded adapter: the storage port over SQLite (items, `item-store.ts`) and files
 * (blobs, `blob-store.ts`) in one data directory. It is the backend `npm start` runs on.
 */
// Types only: the native module is loaded when a store opens, so Lambda bundles (where it is
// external and absent) can contain this file without failing to load.
import type Database from 'better-sqlite3';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { BlobStore, ItemStore, Storage } from '../port.js';
import { meterBlobs, meterItems, newStorageUsage, type StorageUsage } from '../usage.js';
import { FileBlobStore, removeStaleTemps } from './blob-store.js';
import { SqliteItemStore } from './item-store.js';
import { openDatabase } from './schema.js';

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
  /** What the same calls would have cost on AWS, counted by the same rules (`../usage.ts`). */
  readonly usage: StorageUsage = newStorageUsage();
  readonly items: ItemStore;
  readonly blobs: BlobStore;
  private closed = false;

  constructor(
    private readonly db: Database.Database,
    private readonly sqlite: SqliteItemStore,
    private readonly files: FileBlobStore,
  ) {
    this.items = meterItems(sqlite, this.usage);
    this.blobs = meterBlobs(files, this.usage);
  }

  sweepExpired(nowSeconds: number): number {
    return this.sqlite.sweepExpired(nowSeconds);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The port promises pending writes are durable once close resolves: commit the writes
    // waiting for the next group commit now (their callers then resolve as usual).
    this.sqlite.flush();
    await this.files.drain();
    this.sqlite.flush();
    // Folding the WAL back keeps the data dir a single self-contained file at rest.
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.close();
  }
}
