/**
 * Single-flight maintenance: a pass first takes the lease item (`meta`, `MAINT` / `lease`),
 * renews it between steps when it runs long, and deletes it at the end. A second pass that
 * finds the lease held returns at once. A pass that dies leaves the lease behind; it frees
 * itself when its `until` passes (expiry is a comparison with `now`, the item's TTL only
 * collects it). This replaces a reserved concurrency of 1, which accounts with a small Lambda
 * quota refuse (docs/DEPLOYING.md, "Quotas").
 *
 * Writes: taking is one put-if-absent (or, over an expired lease, one put guarded by its
 * version), renewing one guarded put, releasing one guarded delete.
 *
 * @example
 * ```ts
 * const lease = new MaintenanceLease(storage, Date.now);
 * const t = await lease.take();
 * if (t.taken) try { await work(() => lease.keep(t.lease)); } finally { await lease.release(t.lease); }
 * ```
 */
import { randomUUID } from 'node:crypto';
import { renewDue, takePlan, type Hold } from '../../core/holds.js';
import { ConditionFailedError, type Item, type ItemKey, type Storage } from '../../storage/port.js';

// ------------------------------------------------------------------ store

export const maintenanceLeaseKeys = {
  /** meta: the maintenance lease, `{ holder, until }` while a pass runs. */
  lease: (): ItemKey => ({ pk: 'MAINT', sk: 'lease' }),
};

function decodeLease(item: Item): Hold {
  const a = item.attrs as { holder?: unknown; until?: unknown };
  return { holder: typeof a.holder === 'string' ? a.holder : '', until: typeof a.until === 'number' ? a.until : 0 };
}

/**
 * The lease item. Its version is the writer's clock (at least one above the version it
 * replaces), so a lease released and taken again never returns to an earlier holder's version:
 * a late release or renewal by a pass that lost it can never touch the new holder's lease.
 */
function leaseItem(hold: Hold, now: number, prevVer = 0): Item {
  return {
    ...maintenanceLeaseKeys.lease(),
    ver: Math.max(prevVer + 1, now),
    attrs: { holder: hold.holder, until: hold.until },
    expiresAt: Math.ceil(hold.until / 1000),
  };
}

// ------------------------------------------------------------------ service

/**
 * How long a lease lasts without renewal: the maintenance function's 5-minute timeout, so a
 * killed pass blocks the next one at most that long (the schedule runs every 15 minutes).
 */
export const MAINTENANCE_LEASE_MS = 5 * 60_000;

/** A lease this process holds: what a renewal or a release is guarded by. */
export interface HeldLease extends Hold {
  ver: number;
}

export type TakeResult = { taken: true; lease: HeldLease } | { taken: false; heldBy: Hold };

export class MaintenanceLease {
  constructor(
    private readonly storage: Storage,
    private readonly clock: () => number,
    private readonly leaseMs: number = MAINTENANCE_LEASE_MS,
  ) {}

  /** Takes the lease, unless another pass holds it (then: who, and until when). */
  async take(): Promise<TakeResult> {
    const holder = randomUUID();
    // Absent is the usual case: try put-if-absent first; a failed guard returns what is there.
    let current: Item | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.clock();
      const plan = takePlan(current ? decodeLease(current) : undefined, current?.ver ?? 0, now);
      if (plan.kind === 'held') return { taken: false, heldBy: plan.hold };
      const hold = { holder, until: now + this.leaseMs };
      const item = leaseItem(hold, now, plan.kind === 'replace' ? plan.ver : 0);
      try {
        await this.storage.items.put(
          'meta',
          item,
          plan.kind === 'replace' ? { kind: 'version', ver: plan.ver } : { kind: 'absent' },
        );
        return { taken: true, lease: { ...hold, ver: item.ver } };
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
        current = e.failed[0]?.current;
      }
    }
    // Three lost races in a row: another pass is taking it right now.
    return {
      taken: false,
      heldBy: current ? decodeLease(current) : { holder: 'unknown', until: this.clock() + this.leaseMs },
    };
  }

  /**
   * Renews the lease when less than half of it is left; the lease to go on with, or undefined
   * when it was lost (it expired and another pass took it: this one must stop).
   */
  async keep(lease: HeldLease): Promise<HeldLease | undefined> {
    const now = this.clock();
    if (!renewDue(lease.until, this.leaseMs, now)) return lease;
    // Even past `until`, the version guard says whether another pass took it meanwhile.
    const hold = { holder: lease.holder, until: now + this.leaseMs };
    const item = leaseItem(hold, now, lease.ver);
    try {
      await this.storage.items.put('meta', item, { kind: 'version', ver: lease.ver });
      return { ...hold, ver: item.ver };
    } catch (e) {
      if (e instanceof ConditionFailedError) return undefined;
      throw e;
    }
  }

  /** Deletes the lease if this pass still holds it. */
  async release(lease: HeldLease): Promise<void> {
    try {
      await this.storage.items.delete('meta', maintenanceLeaseKeys.lease(), { kind: 'version', ver: lease.ver });
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
    }
  }
}
