/**
 * Run service-level tests on both storage backends with one `describe.each`.
 *
 * Vitest collects every `describe` body before any hook runs, so the emulator endpoint cannot
 * be read while building the suite: `newStorage()` resolves it lazily (starting the emulator
 * on first use if `setup` has not), and `setup` merely starts it early so the first test does
 * not pay for it. One emulator per test file; fresh tables and bucket per `newStorage()`.
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
import { openEmbeddedStorage } from '../../lambdas/storage/embedded/index.js';
import type { Storage } from '../../lambdas/storage/port.js';
import { checkingAttrsJson } from './attrs-json-check.js';
import { newAwsTestStorage, startAwsEmulator, type AwsEmulator } from './moto.js';

export interface TestBackend {
  name: 'embedded' | 'aws';
  newStorage(): Promise<{ storage: Storage; cleanup(): Promise<void> }>;
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
export function testBackends(): { backends: TestBackend[]; setup(): Promise<void>; teardown(): Promise<void> } {
  const names = selectedBackends();
  let emulator: Promise<AwsEmulator> | undefined;
  const emulatorOnce = (): Promise<AwsEmulator> => (emulator ??= startAwsEmulator());

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
    async newStorage() {
      const { endpoint } = await emulatorOnce();
      return newAwsTestStorage(endpoint);
    },
  };

  const backends = [embedded, aws].filter((b) => names.includes(b.name));
  return {
    backends,
    async setup() {
      if (names.includes('aws')) await emulatorOnce();
    },
    async teardown() {
      const started = emulator;
      emulator = undefined;
      // A failed start has nothing to stop (and already failed the tests that needed it).
      if (started) await (await started.catch(() => undefined))?.stop();
    },
  };
}
