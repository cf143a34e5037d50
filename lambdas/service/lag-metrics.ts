import type { Services } from './runtime.js';

export interface LagReport {
  groups: number;
  maxLagMessages: number;
  maxOldestUnconsumedAgeSeconds: number;
}

/**
 * Publishes how far behind the lease consumer groups are, for the "oldest unconsumed message"
 * alarm and the dashboard: per group and queue, `ConsumerLag` (messages) and
 * `OldestUnconsumedAgeSeconds` (age of the oldest message the group has not finished). Run by
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
  for (const v of views) {
    for (const q of v.queues) {
      const dims = { group: v.name, queue: q.queue };
      svc.telemetry.gauge('ConsumerLag', q.lagMessages, dims);
      svc.telemetry.gauge('OldestUnconsumedAgeSeconds', q.lagMessages > 0 ? q.lagSeconds : 0, dims);
      report.maxLagMessages = Math.max(report.maxLagMessages, q.lagMessages);
      if (q.lagMessages > 0) report.maxOldestUnconsumedAgeSeconds = Math.max(report.maxOldestUnconsumedAgeSeconds, q.lagSeconds);
    }
  }
  return report;
}
