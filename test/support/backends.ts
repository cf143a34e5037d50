/**
 * Run service-level tests on both storage backends with one `describe.each`.
 *
 * The AWS backend runs on the test run's emulators (DynamoDB Local and moto_server, started
 * once by the global setup); every `newStorage()` gets fresh tables and bucket.
 *
 * `SLUICE_TEST_BACKENDS=embedded` (or `aws`) restricts the run to one backend.
 *
 * @example
 * ```ts
 * const { backends, setup, teardown } = testBackends();
 * beforeAll(setup);
 * afterAll(teardown);
 *
 * describe.each(backends)('queue on $name', (backend) => {
 *   let storage: Storage;
 *   let cleanup: () => Promise<void>;
 *   beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
 *   afterAll(() => cleanup());
 *   it('pushes and pops', async () => { ... });
 * });
 * ```
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { checkingAttrsJson } from './attrs-json-check.js';
import { newAwsTestStorage } from './aws-emulator.js';
import { awsEndpoints } from './aws-endpoints.js';
import { recordIam } from './iam/recorder.js';

export interface TestBackend {
  name: 'embedded' | 'aws';
  newStorage(): Promise<{ storage: Storage; cleanup: () => Promise<void> }>;
}

const ALL: TestBackend['name'][] = ['embedded', 'aws'];

function selectedBackends(): TestBackend['name'][] {
  const raw = process.env['SLUICE_TEST_BACKENDS'];
  if (!raw) return ALL;
  const names = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !ALL.includes(n as TestBackend['name']));
  if (unknown.length > 0)
    throw new Error(`SLUICE_TEST_BACKENDS: unknown backend(s) ${unknown.join(', ')} (use ${ALL.join(', ')})`);
  return ALL.filter((n) => names.includes(n));
}

/**
 * The backends to run on, plus hooks for `beforeAll`/`afterAll` at the top of the test file.
 *
 * @example
 * ```ts
 * const { backends, setup, teardown } = testBackends();
 * beforeAll(setup);
 * afterAll(teardown);
 * describe.each(backends)('$name', (backend) => { ... });
 * ```
 */
export function testBackends(): { backends: TestBackend[]; setup: () => void; teardown: () => void } {
  const names = selectedBackends();

  const embedded: TestBackend = {
    name: 'embedded',
    async newStorage() {
      const dataDir = await mkdtemp(join(tmpdir(), 'sluice-test-'));
      try {
        // 'normal' sync keeps service tests fast; durability under 'full' has its own tests.
        const storage = checkingAttrsJson(await openEmbeddedStorage({ dataDir, sync: 'normal' }));
        return {
          storage,
          async cleanup() {
            try {
              await storage.close();
            } finally {
              await rm(dataDir, { recursive: true, force: true });
            }
          },
        };
      } catch (err) {
        await rm(dataDir, { recursive: true, force: true });
        throw err;
      }
    },
  };

  const aws: TestBackend = {
    name: 'aws',
    // Requests made as a function are checked against its synthesized role (iam/recorder.ts).
    newStorage: () =>
      newAwsTestStorage(awsEndpoints(), { instrument: (c) => (recordIam(c.dynamodb), recordIam(c.s3)) }),
  };

  const backends = [embedded, aws].filter((b) => names.includes(b.name));
  return {
    backends,
    // The emulators outlive the file: setup only checks the run has them, teardown has nothing to do.
    setup: () => {
      if (names.includes('aws')) awsEndpoints();
    },
    teardown: () => {},
  };
}
