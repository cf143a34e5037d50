/**
 * The embedded adapter's failures as the port's typed errors: a full disk (`SQLITE_FULL`,
 * `ENOSPC`, `EDQUOT`) is a `StoreFullError`, a disk that fails I/O (`SQLITE_IOERR_*`, `EIO`)
 * a `StoreUnavailableError`; anything else stays as it is.
 */
import { StoreFullError, StoreUnavailableError } from '../port.js';

/** Suggested wait after a disk I/O error: a transient one (a remount, a network disk) passes in seconds. */
const IO_RETRY_AFTER_S = 5;

/**
 * The port's typed error for an SQLite or file-system failure, or `err` itself when it is
 * neither a full disk nor an I/O error.
 *
 * @example
 * ```ts
 * try { db.exec('COMMIT'); } catch (e) { throw storeError(e); } // SQLITE_FULL -> StoreFullError
 * ```
 */
export function storeError(err: unknown): unknown {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return err;
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') {
    return new StoreFullError(`the disk holding the data directory is full (${code})`, { cause: err });
  }
  if (code.startsWith('SQLITE_IOERR') || code === 'EIO') {
    return new StoreUnavailableError(
      'failing',
      IO_RETRY_AFTER_S,
      `the data directory's disk failed a write (${code})`,
      {
        cause: err,
      },
    );
  }
  return err;
}
