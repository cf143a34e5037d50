// The work-index repair pass (server/service/maintenance/work-repair.ts) on both backends: it
// writes nothing on a healthy store, marks a partition left with its has-work flag set and no
// work item, pages across passes, and a push or a clear racing it leaves a state every pop
// reads right. The crash it repairs, with a killed process: work-repair-crash.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { popReq } from '../../bench/leases.js';
import { leaseKeys } from '../../server/service/leases/lease-store.js';
import { SelectorWork } from '../../server/service/leases/selector-work.js';
import { WORK_FLAG, WorkIndex } from '../../server/service/leases/work-index.js';
import { logKeys, type PartitionRef } from '../../server/service/log/log-store.js';
import { runMaintenance } from '../../server/service/maintenance/maintenance.js';
import { WorkRepair } from '../../server/service/maintenance/work-repair.js';
import type { Storage, TableName } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { json, testServices } from '../support/services.js';
import { withItems } from '../support/storage.js';
import { drain, drainedQueue, indexState } from '../support/wildcard.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

/**
 * The state a push killed between its take and its commit leaves (`w` set, no item), built by
 * hand: the embedded backend cannot reach it (its take and commit are one transaction).
 */
async function hide(storage: Storage, part: PartitionRef): Promise<void> {
  const seq = (await storage.items.get('log', logKeys.sequencer(part.id)))!;
  await storage.items.put(
    'log',
    { ...seq, attrs: { ...seq.attrs, [WORK_FLAG]: true } },
    { kind: 'version', ver: seq.ver },
  );
}

/** Storage whose writes to `leases` (other than the pass's own progress) are counted. */
function countingIndexWrites(inner: Storage): { storage: Storage; writes: () => number } {
  let n = 0;
  const counts = (table: TableName, pk: string): void => {
    if (table === 'leases' && pk !== leaseKeys.workRepair().pk) n++;
  };
  const storage = withItems(inner, {
    put: (t, it, c) => (counts(t, it.pk), inner.items.put(t, it, c)),
    delete: (t, k, c) => (counts(t, k.pk), inner.items.delete(t, k, c)),
    transact: (ops) => {
      for (const op of ops) counts(op.table, op.op === 'put' ? op.item.pk : op.key.pk);
      return inner.items.transact(ops);
    },
    writeEach: (ops, o) => {
      for (const op of ops) counts(op.table, op.op === 'put' ? op.item.pk : op.key.pk);
      return inner.items.writeEach(ops, o);
    },
  });
  return { storage, writes: () => n };
}

describe.each(backends)('integration: work-index repair on $name', (backend) => {
  let inner: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage: inner, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('finds nothing to do on a healthy store and writes no index item', async () => {
    const svc = testServices(inner);
    await drainedQueue(svc, 'healthy-idle');
    await svc.pushes.push([
      { queue: 'healthy-busy', partition: 'a', payload: json('a') },
      { queue: 'healthy-busy', partition: 'b', payload: json('b') },
    ]);
    const { storage, writes } = countingIndexWrites(inner);
    const pass = testServices(storage);
    const r = await runMaintenance(pass);
    if (r.skipped) throw new Error('maintenance lease held');
    expect(r.workRepair).toEqual({ partitions: 3, repaired: 0, complete: true });
    expect(writes()).toBe(0);
    expect((await drain(svc, 'healthy-busy')).sort()).toEqual(['"a"', '"b"']);
  });

  it('a push between the pass’s reads and its write: the push writes no item, the pass’s covers it', async () => {
    const svc = testServices(inner);
    const part = await drainedQueue(svc, 'repair-push');
    await hide(inner, part);
    await svc.pushes.push([{ queue: 'repair-push', payload: json('hidden') }]);
    expect(await drain(svc, 'repair-push')).toEqual([]);
    let fired = false;
    const racing = withItems(inner, {
      put: async (t, it, c) => {
        if (!fired && t === 'leases' && it.pk.startsWith('WORK#')) {
          fired = true;
          await svc.pushes.push([{ queue: 'repair-push', payload: json('during') }]);
        }
        return inner.items.put(t, it, c);
      },
    });
    const pass = testServices(racing);
    expect(await pass.workRepair.run(pass.clock())).toMatchObject({ repaired: 1, complete: true });
    expect(fired).toBe(true);
    expect(await drain(svc, 'repair-push')).toEqual(['"hidden"', '"during"']);
    // The empty pop at the end cleared it as any drained partition: healthy again.
    expect(await indexState(svc, 'repair-push', part)).toEqual({ flag: false, item: false });
    expect(await pass.workRepair.run(pass.clock())).toMatchObject({ repaired: 0 });
  });

  it('a clear between the pass’s two reads leaves a spare item, which the next drained pop clears', async () => {
    const svc = testServices(inner);
    await svc.pushes.push([{ queue: 'repair-clear', payload: json('m') }]);
    const part = (await svc.queues.getPartition('repair-clear', 'Default'))!;
    let during: { seen: string[]; state: unknown } | undefined;
    const racing = withItems(inner, {
      // After the pass read the sequencers (`w` set), before it reads the work items.
      getMany: async (t, keys) => {
        if (!during && t === 'leases' && keys.some((k) => k.pk.startsWith('WORK#')))
          during = { seen: await drain(svc, 'repair-clear'), state: await indexState(svc, 'repair-clear', part) };
        return inner.items.getMany(t, keys);
      },
    });
    const pass = testServices(racing);
    expect(await pass.workRepair.run(pass.clock())).toMatchObject({ repaired: 1 });
    // The clear landed between the reads: drained, flag unset, item gone.
    expect(during).toEqual({ seen: ['"m"'], state: { flag: false, item: false } });
    expect(await indexState(svc, 'repair-clear', part)).toEqual({ flag: false, item: true });
    expect(await svc.leasePops.pop(popReq('repair-clear'))).toBeNull(); // finds it drained: clears it
    expect(await indexState(svc, 'repair-clear', part)).toEqual({ flag: false, item: false });
    await svc.pushes.push([{ queue: 'repair-clear', payload: json('next') }]);
    expect(await drain(svc, 'repair-clear')).toEqual(['"next"']);
  });

  it('a sweep longer than one pass’s budget goes on where the last pass stopped', async () => {
    const svc = testServices(inner);
    for (const q of ['paged-a', 'paged-b', 'paged-c'])
      await svc.pushes.push([
        { queue: q, partition: 'x', payload: json(q) },
        { queue: q, partition: 'y', payload: json(q) },
      ]);
    const part = (await svc.queues.getPartition('paged-c', 'y'))!;
    const q = (await svc.queues.getQueue('paged-c'))!;
    await inner.items.delete('leases', leaseKeys.work(q.queueId, part.id)); // hidden, as after a crash
    const { storage, queues, segments, groups, clock } = svc;
    const selectors = new SelectorWork({ storage, queues, clock });
    const work = new WorkIndex({ storage, queues, segments, groups, clock, recheckMs: 0, selectors });
    const small = new WorkRepair({ storage, queues, work, requestsPerPass: 3 });
    let partitions = 0;
    let repaired = 0;
    for (let pass = 0; pass < 20; pass++) {
      const r = await small.run(svc.clock());
      partitions += r.partitions;
      repaired += r.repaired;
      if (r.complete) break;
      expect(r.partitions).toBeLessThan(6);
    }
    // Other tests' queues are swept too; these six once each, the hidden one marked.
    expect(partitions).toBeGreaterThanOrEqual(6);
    expect(repaired).toBe(1);
    expect((await drain(svc, 'paged-c')).sort()).toEqual(['"paged-c"', '"paged-c"']);
  });
});
