// Flag targets in TargetService (the local server's --target), on both backends: read and
// listed beside stored targets (hiding one stored on their group), never written, every change
// refused with 409; a failing delivery shows in the state without touching updatedAt (a new
// updatedAt would make the dispatcher restart the runner and close the module's invoker);
// checkFlagTargets refuses a stored target or a group of the other mode.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TargetSettings } from '../../contract/targets.js';
import { LocalKeyProvider } from '../../server/service/encryption.js';
import type { FlagTarget } from '../../server/service/targets/target-service.js';
import { testBackends } from '../support/backends.js';
import { testServices } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const module = (queue: string, group: string, mode: 'leases' | 'claims' = 'leases'): FlagTarget => ({
  queue,
  group,
  settings: TargetSettings.parse({ endpoint: { kind: 'module', path: '/work/h.ts' }, mode }),
});
const https = TargetSettings.parse({ endpoint: { kind: 'https', url: 'https://hooks.example.com/x' }, mode: 'leases' });

describe.each(backends)('flag targets on $name', (backend) => {
  let cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups = [];
  });

  async function services(flags: FlagTarget[]) {
    const { storage, cleanup } = await backend.newStorage();
    cleanups.push(cleanup);
    const build = { keyProvider: new LocalKeyProvider(randomBytes(32)), targets: { dispatcher: true, loopback: true } };
    // One without flags over the same storage: what an API caller (or a restart without them) stores.
    const plain = testServices(storage, { build });
    const flagged = testServices(storage, { build: { ...build, targets: { ...build.targets, flags } } });
    return { plain, flagged };
  }

  it('lists flag targets beside stored ones, by queue then group; a flag target hides one stored on its group', async () => {
    const { plain, flagged } = await services([module('b', 'g'), module('a', 'z')]);
    await plain.targets.set('a', 'm', https);
    await plain.targets.set('b', 'g', https); // another process's, on the flag's group
    const list = await flagged.targets.list();
    expect(list.map((t) => [t.queue, t.group, t.settings.endpoint.kind])).toEqual([
      ['a', 'm', 'https'],
      ['a', 'z', 'module'],
      ['b', 'g', 'module'],
    ]);
    expect((await flagged.targets.get('b', 'g'))?.settings.endpoint.kind).toBe('module');
    // Nothing of the flags was written.
    expect((await plain.targets.list()).map((t) => `${t.queue}/${t.group}`)).toEqual(['a/m', 'b/g']);
  });

  it('refuses every change to a flag target with 409, and a module endpoint through set with 400', async () => {
    const { flagged } = await services([module('q', 'g')]);
    for (const change of [
      () => flagged.targets.set('q', 'g', https),
      () => flagged.targets.delete('q', 'g'),
      () => flagged.targets.setPaused('q', 'g', true),
      () => flagged.targets.rotateSecret('q', 'g'),
    ])
      await expect(change()).rejects.toMatchObject({ code: 'conflict', message: /set by --target/ });
    await expect(flagged.targets.set('q', 'other', module('q', 'other').settings)).rejects.toMatchObject({
      code: 'invalid_request',
      message: /--target only/,
    });
    expect(await flagged.targets.get('q', 'other')).toBeUndefined();
  });

  it('notes a failing delivery in memory, updatedAt untouched, and clears it on the next success', async () => {
    const { flagged } = await services([module('q', 'g')]);
    const before = (await flagged.targets.require('q', 'g')).updatedAt;
    flagged.testClock.advance(5_000);
    await flagged.targets.noteOutcome('q', 'g', 'Error: boom');
    const failing = await flagged.targets.require('q', 'g');
    expect(failing.lastError).toEqual({ message: 'Error: boom', at: flagged.testClock.now() });
    expect(failing.updatedAt).toBe(before);
    await flagged.targets.noteOutcome('q', 'g', null);
    expect((await flagged.targets.require('q', 'g')).lastError).toBeNull();
  });

  it('checkFlagTargets refuses a target stored on the group, and a group that consumes by the other mode', async () => {
    const stored = await services([module('q', 'g')]);
    await stored.plain.targets.set('q', 'g', https);
    await expect(stored.flagged.targets.checkFlagTargets()).rejects.toThrow(
      /^--target q\/g: consumer group g on queue q already has a target set through the API/,
    );

    const mode = await services([module('m', 'leasers', 'claims')]);
    await mode.plain.groups.register('m', 'leasers', 'lease', { mode: 'all', from: null }); // as a lease pop does
    await expect(mode.flagged.targets.checkFlagTargets()).rejects.toThrow(
      /^--target m\/leasers: consumer group leasers on queue m consumes by partition leases/,
    );
    await expect(services([module('q', 'free')]).then((s) => s.flagged.targets.checkFlagTargets())).resolves.toBe(
      undefined,
    );
  });
});
