/**
 * The embedded blob store: one file per blob under `blobs/`, keys' `/` as directories, written
 * through a temp file and an atomic rename (or link, for put-if-absent).
 */
import { randomUUID } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { link, lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConditionFailedError, type BlobInfo, type BlobStore } from '../port.js';
import { storeError } from './errors.js';

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

/**
 * Removes temp files a crashed writer left behind (older than {@link STALE_TEMP_MS}); called
 * once when a store opens.
 *
 * @example
 * ```ts
 * await removeStaleTemps(join(dataDir, 'tmp'));
 * ```
 */
export async function removeStaleTemps(tmpDir: string): Promise<void> {
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

/**
 * The port's {@link BlobStore} over a directory. `tmpDir` must be on the same filesystem (the
 * publishing rename is atomic only there); `syncDirs` fsyncs directories so a put survives
 * power loss. `drain` waits for writes in flight (for `close`).
 *
 * @example
 * ```ts
 * const blobs = new FileBlobStore(join(dataDir, 'blobs'), join(dataDir, 'tmp'), true);
 * await blobs.put('seg/q/0001', bytes, { ifAbsent: true });
 * ```
 */
export class FileBlobStore implements BlobStore {
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
    return this.track(
      this.doPut(key, bytes, opts?.ifAbsent === true).catch((e: unknown) => {
        throw storeError(e);
      }),
    );
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
      try {
        await fh.writeFile(bytes);
        await fh.sync();
      } finally {
        await fh.close();
      }
    } catch (err) {
      // A full disk fails here: a partial temp file would only hold on to the space.
      await unlink(tmp).catch(() => undefined);
      throw err;
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
