/**
 * Single-flight maintenance (`service/maintenance/maintenance-lease.ts`) on both backends: a
 * pass holds the lease item while it runs, a concurrent pass returns at once reporting that
 * it skipped, a lease left by a killed pass is taken over once its `until` has passed, a long
 * pass renews it between steps, and a pass that lost it stops without touching the new
 * holder's lease. The lag-only task takes no lease.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '../../server/entry/maintenance.js';
import { runMaintenance, type MaintenanceDeps } from '../../server/service/maintenance/maintenance.js';
import {
  MAINTENANCE_LEASE_MS,
  MaintenanceLease,
  maintenanceLeaseKeys,
} from '../../server/service/maintenance/maintenance-lease.js';
import type { SegmentBlobSweep } from '../../server/service/maintenance/segment-blob-sweep.js';
import { useServices, type Services } from '../../server/service/runtime.js';
import type { MemoryTelemetry } from '../../server/service/telemetry.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { TestClock, testServices } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

/** A clock a day after the last one, never in the past (DynamoDB Local collects by the real clock). */
let day = 0;
const freshClock = (): TestClock => new TestClock(Date.now() + ++day * 86_400_000);

/** The services with their first step (the segment-blob sweep) replaced by `step`. */
function withFirstStep(svc: Services, step: () => Promise<void>): MaintenanceDeps {
  const real = svc.segmentBlobs;
  const segmentBlobs = {
    sweepOrphanBlobs: async () => {
      await step();
      return real.sweepOrphanBlobs();
    },
  } as unknown as SegmentBlobSweep;
  return { ...svc, segmentBlobs };
}

describe.each(backends)('integration: single-flight maintenance on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  const leaseItem = () => storage.items.get('meta', maintenanceLeaseKeys.lease());

  // Each test starts and ends with the lease free; a clock a day on keeps a test that failed
  // half-way from holding it for the next.
  it('takes the lease for a pass and releases it at the end; passes one after another both run', async () => {
    const svc = testServices(storage, { clock: freshClock() });
    const first = await runMaintenance(svc);
    expect(first.skipped).toBeUndefined();
    expect(await leaseItem()).toBeUndefined();
    expect((await runMaintenance(svc)).skipped).toBeUndefined();
  });

  it('a second pass while one runs returns at once, reporting who holds the lease', async () => {
    const clock = freshClock();
    const a = testServices(storage, { clock });
    const b = testServices(storage, { clock });
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    let finish!: () => void;
    const gate = new Promise<void>((r) => (finish = r));
    const running = runMaintenance(
      withFirstStep(a, async () => {
        inside();
        await gate;
      }),
    );
    await entered;
    const held = await leaseItem();
    expect(held?.attrs).toMatchObject({ until: clock.t + MAINTENANCE_LEASE_MS });

    const skipped = await runMaintenance(b);
    expect(skipped).toEqual({
      skipped: {
        reason: 'lease held',
        heldBy: { holder: held?.attrs['holder'], until: clock.t + MAINTENANCE_LEASE_MS },
      },
    });
    expect((b.telemetry as MemoryTelemetry).counters.get('MaintenanceSkipped')).toBe(1);

    finish();
    const done = await running;
    expect(done.skipped).toBeUndefined();
    expect(done).toHaveProperty('retention');
    expect(await leaseItem()).toBeUndefined();
  });

  it("a killed pass's lease is taken over once its until has passed, and not before", async () => {
    const clock = freshClock();
    const svc = testServices(storage, { clock });
    // What a pass that died mid-way leaves: its lease, with a version from its own clock.
    await storage.items.put('meta', {
      ...maintenanceLeaseKeys.lease(),
      ver: clock.t - 1000,
      attrs: { holder: 'dead', until: clock.t + 1000 },
    });
    expect(await runMaintenance(svc)).toEqual({
      skipped: { reason: 'lease held', heldBy: { holder: 'dead', until: clock.t + 1000 } },
    });
    clock.advance(1000);
    const r = await runMaintenance(svc);
    expect(r.skipped).toBeUndefined();
    expect(await leaseItem()).toBeUndefined();
  });

  it('a long pass renews the lease between steps', async () => {
    const clock = freshClock();
    const svc = testServices(storage, { clock });
    const started = clock.t;
    const seen: number[] = [];
    const deps: MaintenanceDeps = withFirstStep(svc, async () => {
      seen.push((await leaseItem())?.attrs['until'] as number);
      // The first step takes more than half the lease.
      clock.advance(MAINTENANCE_LEASE_MS / 2 + 1);
    });
    const dlq = deps.dlq;
    deps.dlq = {
      sweepOrphanBlobs: async (now: number, grace: number) => {
        seen.push((await leaseItem())?.attrs['until'] as number);
        return dlq.sweepOrphanBlobs(now, grace);
      },
    } as unknown as typeof dlq;
    const r = await runMaintenance(deps);
    expect(r.skipped).toBeUndefined();
    expect(seen).toEqual([
      started + MAINTENANCE_LEASE_MS,
      started + MAINTENANCE_LEASE_MS / 2 + 1 + MAINTENANCE_LEASE_MS,
    ]);
    expect(await leaseItem()).toBeUndefined();
  });

  it("a pass that lost its lease stops, and leaves the new holder's lease alone", async () => {
    const clock = freshClock();
    const svc = testServices(storage, { clock });
    let takerHolder: string | undefined;
    const r = await runMaintenance(
      withFirstStep(svc, async () => {
        // The step outlives the lease, and another pass takes it over meanwhile.
        clock.advance(MAINTENANCE_LEASE_MS);
        const t = await new MaintenanceLease(storage, clock.now).take();
        if (!t.taken) throw new Error('the expired lease was not taken over');
        takerHolder = t.lease.holder;
      }),
    );
    expect(r).toMatchObject({ leaseLost: true });
    expect(r).not.toHaveProperty('dlqBlobs');
    const kept = await leaseItem();
    expect(kept?.attrs['until']).toBe(clock.t + MAINTENANCE_LEASE_MS);
    expect(kept?.attrs['holder']).toBe(takerHolder);
    await storage.items.delete('meta', maintenanceLeaseKeys.lease());
  });

  it('the Lambda entry reports a skipped pass; the lag-only task runs while a pass holds the lease', async () => {
    const clock = freshClock();
    const svc = testServices(storage, { clock });
    useServices(svc);
    await storage.items.put('meta', {
      ...maintenanceLeaseKeys.lease(),
      ver: clock.t,
      attrs: { holder: 'running', until: clock.t + 60_000 },
    });
    expect(await handler({})).toMatchObject({ skipped: { heldBy: { holder: 'running' } } });
    expect(await handler({ task: 'lag' })).toHaveProperty('lag');
    expect((await leaseItem())?.attrs['holder']).toBe('running');
    await storage.items.delete('meta', maintenanceLeaseKeys.lease());
  });
});
