/**
 * The local server over a fresh embedded store in a temp directory, on the real clock and the
 * configuration `npm start` reads (from `env`), the queue cache off: the setup of the client's
 * black-box tests. `start` and `stop` go in the file's `beforeAll` and `afterAll`.
 *
 * @example
 * ```ts
 * const local = embeddedServer('sluice-client-send-', { SLUICE_MAX_MESSAGE_BYTES: '10000' });
 * beforeAll(local.start);
 * afterAll(local.stop);
 * it('pushes', () => new Sluice({ endpoint: local.url }).queue('q').push([1]));
 * ```
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../server/config.js';
import type { LocalServer } from '../../server/local/server.js';
import { buildServices } from '../../server/service/runtime.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { startTestServer } from './http.js';

export interface EmbeddedServer {
  /** The server's base URL (after `start`). */
  readonly url: string;
  readonly start: () => Promise<void>;
  /** Closes the server and the store, and removes the directory. */
  readonly stop: () => Promise<void>;
}

/** See the module comment. `prefix` names the temp directory. */
export function embeddedServer(prefix: string, env: Record<string, string | undefined> = {}): EmbeddedServer {
  let dir: string | undefined;
  let storage: Storage | undefined;
  let server: LocalServer | undefined;
  return {
    get url(): string {
      if (!server) throw new Error('embeddedServer: not started (call start in beforeAll)');
      return server.url;
    },
    start: async (): Promise<void> => {
      dir = await mkdtemp(join(tmpdir(), prefix));
      storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
      server = await startTestServer(buildServices(storage, { ...loadConfig(env), queueCacheMs: 0 }));
    },
    stop: async (): Promise<void> => {
      await server?.close();
      await storage?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}
