/**
 * The embedded adapter (SQLite + files), as its callers use it.
 *
 * @example
 * ```ts
 * import { openEmbeddedStorage } from '../storage/embedded/index.js';
 * const storage = await openEmbeddedStorage({ dataDir: '.sluice-data' });
 * ```
 */
export { openEmbeddedStorage, type EmbeddedStorage, type EmbeddedStorageOptions } from './storage.js';
