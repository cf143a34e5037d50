import { SluiceError } from '../../core/errors.js';
import { keys } from '../log/log-store.js';
import type { Services } from '../runtime.js';

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
export async function reportLag(svc: Services): Promise<LagReport> {
  const views = await svc.consumerGroups.list();
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
    const page = await svc.storage.items.query('meta', keys.queueIndex('').pk, { after, limit: 100 });
    for (const it of page.items) {
      const queue = it.sk;
      const claimGroups = (await svc.groups.list(queue)).groups.filter((g) => g.kind === 'claim');
      if (claimGroups.length === 0) continue;
      const parts = await svc.log.listPartitions(queue);
      for (const g of claimGroups) {
        report.groups++;
        let lag = 0;
        let oldestAt: number | undefined;
        for (const p of parts) {
          // A partition the group has not polled yet: its first poll starts at the oldest record.
          const d = await svc.claims.describe(queue, p.name, g.group).catch(async (e: unknown) => {
            if (!(e instanceof SluiceError) || e.code !== 'not_found') throw e;
            const [head, tail] = await Promise.all([svc.log.readHead(p.id), svc.log.readTail(p.id)]);
            return { committed: head, lag: tail.next - head };
          });
          if (d.lag <= 0) continue;
          lag += d.lag;
          // The segment holding the position (or the oldest one, when retention removed it).
          const seg = (await svc.log.segmentAt(p.id, d.committed)) ?? (await svc.log.segmentPage(p.id, 0, 1)).segs[0];
          if (seg) oldestAt = Math.min(oldestAt ?? seg.at, seg.at);
        }
        publish(g.group, queue, lag, oldestAt === undefined ? 0 : Math.max(0, Math.floor((now - oldestAt) / 1000)));
      }
    }
    after = page.next;
  } while (after !== undefined);
  return report;
}
