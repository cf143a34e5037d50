import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import { checkingAttrsJson } from '../support/attrs-json-check.js';
import { runStorageConformance } from './storage.conformance.js';

// A fresh data dir per storage, removed afterwards; every write is checked for a stale attrsJson.
// `sync: 'normal'` keeps the suite fast; durability under `full` is covered in
// test/integration/embedded-durability.test.ts.
runStorageConformance('embedded', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-conformance-'));
  const storage = checkingAttrsJson(await openEmbeddedStorage({ dataDir, sync: 'normal' }));
  return {
    storage,
    cleanup: async () => {
      await storage.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
});
