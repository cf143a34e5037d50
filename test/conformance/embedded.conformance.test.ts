import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStorage } from '../../lambdas/storage/embedded/index.js';
import { runStorageConformance } from './storage.conformance.js';

// A fresh data dir per storage, removed afterwards. `sync: 'normal'` keeps the suite fast;
// durability under `full` is covered in test/integration/embedded-durability.test.ts.
runStorageConformance('embedded', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-conformance-'));
  const storage = await openEmbeddedStorage({ dataDir, sync: 'normal' });
  return {
    storage,
    cleanup: async () => {
      await storage.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
});
