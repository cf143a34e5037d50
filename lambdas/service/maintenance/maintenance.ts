import type { SluiceConfig } from '../../config.js';
import type { Storage } from '../../storage/port.js';
import type { DlqService } from '../leases/dlq-service.js';
import type { SweepReport } from './blob-sweep.js';
import type { DeletionReport, QueueDeletion } from './queue-deletion.js';
import type { RetentionReport, RetentionService } from './retention.js';
import type { SegmentBlobSweep } from './segment-blob-sweep.js';

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

/** What a maintenance pass runs (the services bag has all of it). */
export interface MaintenanceDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'sweepGraceMs'>;
  clock: () => number;
  segmentBlobs: SegmentBlobSweep;
  dlq: DlqService;
  deletion: QueueDeletion;
  retention: RetentionService;
}

/**
 * One maintenance pass: the orphan-blob sweeps (segments, dead-letter payloads), a bounded share of the work deleted queues and
 * retired partitions left (their tombstones), retention (and, on the embedded backend,
 * collecting items whose TTL lapsed, which DynamoDB does by itself). Run by a timer in the
 * local server and by a schedule on AWS.
 *
 * @example
 * ```ts
 * const report = await runMaintenance(svc);
 * ```
 */
export async function runMaintenance(deps: MaintenanceDeps): Promise<MaintenanceReport> {
  const blobs = await deps.segmentBlobs.sweepOrphanBlobs();
  const report: MaintenanceReport = { blobs };
  report.dlqBlobs = await deps.dlq.sweepOrphanBlobs(deps.clock(), deps.config.sweepGraceMs);
  report.deletion = await deps.deletion.run();
  report.retention = await deps.retention.run();
  const gc = (deps.storage as { sweepExpired?: (nowSeconds: number) => number }).sweepExpired;
  if (typeof gc === 'function') report.expiredItems = gc.call(deps.storage, Math.floor(deps.clock() / 1000));
  return report;
}
