import { SluiceError } from '../../core/errors.js';
import type { ClaimService } from '../claims/claim-service.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import type { LeaseGroupAdmin } from '../leases/lease-groups.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { SegmentReader } from '../log/segments.js';
import type { Telemetry } from '../telemetry.js';

/** What the lag report reads and where it publishes (the services bag has all of it). */
export interface LagDeps {
  queues: QueueDirectory;
  segments: SegmentReader;
  groups: GroupRegistry;
  leaseGroups: LeaseGroupAdmin;
  claims: ClaimService;
  telemetry: Telemetry;
  clock: () => number;
}

export interface LagReport {
  groups: number;
  maxLagMessages: number;
  maxOldestUnconsumedAgeSeconds: number;
}

/**
 * Publishes how far behind the consumer groups are, for the "oldest unconsumed message" alarm
 * and the dashboard: per group and queue, `ConsumerLag` (messages) and
 * `OldestUnconsumedAgeSeconds` (age of the oldest message the group has not finished). Lease
 * groups come from their cursors; record-claim groups from their positions on each partition
 * (lag summed over the queue's partitions, age of the oldest record past a position). Run by
 * the scheduled maintenance function.
 *
 * @example
 * ```ts
 * const lag = await reportLag(svc); // then svc.telemetry.flush()
 * ```
 */
export async function reportLag(svc: LagDeps): Promise<LagReport> {
  const views = await svc.leaseGroups.list();
  const report: LagReport = { groups: views.length, maxLagMessages: 0, maxOldestUnconsumedAgeSeconds: 0 };
  const publish = (group: string, queue: string, lagMessages: number, lagSeconds: number): void => {
    const dims = { group, queue };
    svc.telemetry.gauge('ConsumerLag', lagMessages, dims);
    svc.telemetry.gauge('OldestUnconsumedAgeSeconds', lagMessages > 0 ? lagSeconds : 0, dims);
    report.maxLagMessages = Math.max(report.maxLagMessages, lagMessages);
    if (lagMessages > 0)
      report.maxOldestUnconsumedAgeSeconds = Math.max(report.maxOldestUnconsumedAgeSeconds, lagSeconds);
  };
  for (const v of views) for (const q of v.queues) publish(v.name, q.queue, q.lagMessages, q.lagSeconds);

  const now = svc.clock();
  let after: string | undefined;
  do {
    const page = await svc.queues.queueNames(after, 100);
    for (const queue of page.names) {
      const claimGroups = (await svc.groups.list(queue)).groups.filter((g) => g.kind === 'claim');
      if (claimGroups.length === 0) continue;
      const parts = await svc.queues.listPartitions(queue);
      for (const g of claimGroups) {
        report.groups++;
        let lag = 0;
        let oldestAt: number | undefined;
        for (const p of parts) {
          // A partition the group has not polled yet: its first poll starts at the oldest record.
          const d = await svc.claims.describe(queue, p.name, g.group).catch(async (e: unknown) => {
            if (!(e instanceof SluiceError) || e.code !== 'not_found') throw e;
            const [head, tail] = await Promise.all([svc.segments.readHead(p.id), svc.segments.readTail(p.id)]);
            return { committed: head, lag: tail.next - head };
          });
          if (d.lag <= 0) continue;
          lag += d.lag;
          // The segment holding the position (or the oldest one, when retention removed it).
          const seg =
            (await svc.segments.segmentAt(p.id, d.committed)) ?? (await svc.segments.segmentPage(p.id, 0, 1)).segs[0];
          if (seg) oldestAt = Math.min(oldestAt ?? seg.at, seg.at);
        }
        publish(g.group, queue, lag, oldestAt === undefined ? 0 : Math.max(0, Math.floor((now - oldestAt) / 1000)));
      }
    }
    after = page.next;
  } while (after !== undefined);
  return report;
}
