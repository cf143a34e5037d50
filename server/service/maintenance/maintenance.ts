import type { SluiceConfig } from '../../config.js';
import type { Hold } from '../../core/holds.js';
import type { Storage } from '../../storage/port.js';
import type { Activity } from '../admin/activity.js';
import type { DlqService } from '../leases/dlq-service.js';
import type { Telemetry } from '../telemetry.js';
import type { ActivityRollup, RollupReport } from './activity-rollup.js';
import type { SweepReport } from './blob-sweep.js';
import { MaintenanceLease, type HeldLease } from './maintenance-lease.js';
import type { DeletionReport, QueueDeletion } from './queue-deletion.js';
import type { RetentionReport, RetentionService } from './retention.js';
import type { SegmentBlobSweep } from './segment-blob-sweep.js';
import type { WorkRepair, WorkRepairReport } from './work-repair.js';

export interface MaintenanceReport {
  skipped?: undefined;
  /** The orphan segment-blob sweep. */
  blobs: SweepReport;
  /** The work-index repair: partitions with the has-work flag set and no work item, marked. */
  workRepair?: WorkRepairReport;
  /** The activity roll-up: every process's minutes summed for the status and analytics series. */
  activity?: RollupReport;
  /** The orphan dead-letter payload blob sweep. */
  dlqBlobs?: SweepReport;
  expiredItems?: number;
  /** Removal of deleted queues' and retired partitions' data (their tombstones). */
  deletion?: DeletionReport;
  /** Partition-lease retention (segments by age / below the slowest cursor, idle partitions). */
  retention?: RetentionReport;
  /**
   * Set when the pass stopped early because it lost the maintenance lease (it ran past the
   * lease and another pass took it over): the steps missing here are that pass's to run.
   */
  leaseLost?: true;
}

/** A pass that did not run: another one holds the maintenance lease. */
export interface SkippedPass {
  skipped: { reason: 'lease held'; heldBy: Hold };
}

/** What a maintenance pass run: how it went, or that it was skipped. */
export type MaintenanceOutcome = MaintenanceReport | SkippedPass;

/** What a maintenance pass runs (the services bag has all of it). */
export interface MaintenanceDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'sweepGraceMs'>;
  clock: () => number;
  telemetry?: Telemetry | undefined;
  segmentBlobs: SegmentBlobSweep;
  workRepair: WorkRepair;
  /** This process's activity: its finished minutes are stored before the roll-up (the local server's). */
  activity: Pick<Activity, 'flushDue'>;
  activityRollup: ActivityRollup;
  dlq: DlqService;
  deletion: QueueDeletion;
  retention: RetentionService;
}

/**
 * One maintenance pass: the orphan-blob sweeps (segments, dead-letter payloads), the
 * work-index repair (partitions a push that died between its take and its commit hid from
 * wildcard pops, `work-repair.ts`), the activity roll-up (every process's minutes summed, so
 * series requests read one item per bucket, `activity-rollup.ts`), a bounded share of the work
 * deleted queues and retired partitions left (their tombstones), retention (and, on the
 * embedded backend, collecting items whose TTL lapsed, which DynamoDB does by itself). Run by a
 * timer in the local server and by a schedule on AWS.
 *
 * Single-flight across the deployment: the pass holds the maintenance lease
 * (`maintenance-lease.ts`) while it runs, renewing it between steps; a pass that finds it held
 * returns at once with `skipped`.
 *
 * @example
 * ```ts
 * const outcome = await runMaintenance(svc);
 * if (outcome.skipped) console.log('another pass runs until', outcome.skipped.heldBy.until);
 * ```
 */
export async function runMaintenance(deps: MaintenanceDeps): Promise<MaintenanceOutcome> {
  const leases = new MaintenanceLease(deps.storage, deps.clock);
  const taken = await leases.take();
  if (!taken.taken) {
    deps.telemetry?.count('MaintenanceSkipped');
    return { skipped: { reason: 'lease held', heldBy: taken.heldBy } };
  }
  let lease: HeldLease = taken.lease;
  /** Before each further step: renew when due; false when the lease was lost. */
  const keep = async (): Promise<boolean> => {
    const next = await leases.keep(lease);
    if (next) lease = next;
    return next !== undefined;
  };
  try {
    const report: MaintenanceReport = { blobs: await deps.segmentBlobs.sweepOrphanBlobs() };
    if (!(await keep())) return { ...report, leaseLost: true };
    // Early: a hidden partition holds consumers back, the later steps only reclaim space.
    report.workRepair = await deps.workRepair.run(deps.clock());
    if (!(await keep())) return { ...report, leaseLost: true };
    // The local server's own minutes first, so they go in as raw items rather than late ones.
    await deps.activity.flushDue().catch(() => undefined);
    report.activity = await deps.activityRollup.run();
    if (!(await keep())) return { ...report, leaseLost: true };
    report.dlqBlobs = await deps.dlq.sweepOrphanBlobs(deps.clock(), deps.config.sweepGraceMs);
    if (!(await keep())) return { ...report, leaseLost: true };
    report.deletion = await deps.deletion.run();
    if (!(await keep())) return { ...report, leaseLost: true };
    report.retention = await deps.retention.run();
    const gc = (deps.storage as { sweepExpired?: (nowSeconds: number) => number }).sweepExpired;
    if (typeof gc === 'function') report.expiredItems = gc.call(deps.storage, Math.floor(deps.clock() / 1000));
    return report;
  } finally {
    await leases.release(lease);
  }
}
