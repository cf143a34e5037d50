import type { SweepReport } from './blob-sweep.js';
import type { DeletionReport } from './queue-deletion.js';
import type { RetentionReport } from './retention.js';
import type { Services } from '../runtime.js';

export interface MaintenanceReport {
  /** The orphan segment-blob sweep. */
  blobs: SweepReport;
  /** The orphan dead-letter payload blob sweep. */
  dlqBlobs?: SweepReport;
  expiredItems?: number;
  /** Removal of deleted queues' and retired partitions' data (their tombstones). */
  deletion?: DeletionReport;
  /** Partition-lease retention (segments by age / below the slowest cursor, idle partitions). */
  retention?: RetentionReport;
}

/**
 * One maintenance pass: the orphan-blob sweeps (segments, dead-letter payloads), a bounded share of the work deleted queues and
 * retired partitions left (their tombstones), retention (and, on the embedded backend,
 * collecting items whose TTL lapsed, which DynamoDB does by itself). Run by a timer in the
 * local server and by a schedule on AWS.
 */
export async function runMaintenance(svc: Services): Promise<MaintenanceReport> {
  const blobs = await svc.log.sweepOrphanBlobs();
  const report: MaintenanceReport = { blobs };
  report.dlqBlobs = await svc.dlq.sweepOrphanBlobs(svc.clock(), svc.config.sweepGraceMs);
  report.deletion = await svc.deletion.run();
  report.retention = await svc.retention.run();
  const gc = (svc.storage as { sweepExpired?: (nowSeconds: number) => number }).sweepExpired;
  if (typeof gc === 'function') report.expiredItems = gc.call(svc.storage, Math.floor(svc.clock() / 1000));
  return report;
}
