// The two-backend helper itself: describe.each over both backends, with the AWS emulator
// started in the file's beforeAll and resolved lazily by each newStorage().
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

describe.each(backends)('backend $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
  });
  afterAll(async () => {
    await cleanup();
  });

  it('is the backend it says it is, with working items and blobs', async () => {
    expect(storage.kind).toBe(backend.name);
    await storage.items.put('meta', { pk: 'p', sk: 's', ver: 1, attrs: { ok: true } }, { kind: 'absent' });
    expect((await storage.items.get('meta', { pk: 'p', sk: 's' }))?.attrs).toEqual({ ok: true });
    await storage.blobs.put('b/1', new Uint8Array([1, 2]));
    expect((await storage.blobs.list('b/')).blobs.map((b) => b.key)).toEqual(['b/1']);
  });

  it('gives every newStorage() its own empty namespace', async () => {
    const other = await backend.newStorage();
    try {
      expect(await other.storage.items.get('meta', { pk: 'p', sk: 's' })).toBeUndefined();
      expect((await other.storage.blobs.list('')).blobs).toEqual([]);
    } finally {
      await other.cleanup();
    }
  });
});
