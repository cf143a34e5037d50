/**
 * A target as reads show it (contract/routes/targets.ts, TargetView): its settings and state,
 * never a secret, with what this process's dispatcher counted.
 *
 * @example
 * ```ts
 * targetView(record, services.targetStats.snapshot(record.queue, record.group), now);
 * ```
 */
import type { TargetCounts } from '../../service/targets/target-stats.js';
import type { TargetRecord } from '../../service/targets/target-store.js';

const isoOf = (ms: number): string => new Date(ms).toISOString();

export function targetView(t: TargetRecord, c: TargetCounts, now: number): Record<string, unknown> {
  const current = t.secrets.find((s) => s.validUntil === null);
  return {
    queue: t.queue,
    group: t.group,
    settings: t.settings,
    state: t.paused ? 'paused' : t.lastError ? 'failing' : 'active',
    lastError: t.lastError ? { message: t.lastError.message, at: isoOf(t.lastError.at) } : null,
    createdAt: isoOf(t.createdAt),
    updatedAt: isoOf(t.updatedAt),
    signingSecretSetAt: current ? isoOf(current.createdAt) : null,
    stats: {
      invocations: c.invocations,
      errors: c.errors,
      throttles: c.throttles,
      retries: c.retries,
      deadLettered: c.deadLettered,
      inFlight: c.inFlight,
      oldestUndeliveredAgeSeconds:
        c.oldestUndeliveredAt === null ? null : Math.max(0, Math.floor((now - c.oldestUndeliveredAt) / 1000)),
    },
  };
}
