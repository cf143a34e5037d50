/**
 * One poll's claimed records to a target (docs/TARGETS.md, "Claims"): records of one partition
 * in any order, in parallel with other slots' batches; each record settles on its own.
 *
 *   filed (too old, too large) → dead letters, each on its own
 *   ok                         → acked
 *   partial                    → the others acked, the failed ones handed back (charged)
 *   failed                     → bisect when asked (halves at once, within the claims), else every record handed back (charged)
 *   not run (throttled, unreachable) → handed back with the attempt refunded; the slot backs off
 *
 * A charged record past the target's `maximumRetryAttempts` is dead-lettered at once; without
 * that setting the group's `maxAttempts` decides at its next poll. A dispatcher that dies here
 * leaves claims that lapse and are polled again (at least once, nothing lost).
 *
 * @example
 * ```ts
 * const end = await deliverClaims(deps, target, { id, name }, polled.records);
 * ```
 */
import { Buffer } from 'node:buffer';
import { TARGET_LIMITS } from '../../../contract/targets.js';
import {
  bisectStep,
  claimBisectResult,
  claimSettlement,
  cutClaimBatches,
  nextRange,
  startBisect,
  type ClaimSettlement,
  type Invoker,
  type Outcome,
} from '../../core/targets/index.js';
import type { ClaimedRecord, ClaimService } from '../claims/claim-service.js';
import type { DeliveryEnd } from './lease-delivery.js';
import { envelopeText, recordText, sendEvent } from './target-event.js';
import type { TargetCounts } from './target-stats.js';
import type { TargetRecord } from './target-store.js';

export interface ClaimDeliveryDeps {
  claims: Pick<ClaimService, 'ack' | 'nack' | 'deadLetter'>;
  clock: () => number;
  batchId: () => string;
}

export async function deliverClaims(
  deps: ClaimDeliveryDeps,
  t: { record: TargetRecord; invoker: Invoker; stats: TargetCounts },
  part: { id: string; name: string },
  records: readonly ClaimedRecord[],
): Promise<DeliveryEnd> {
  const { queue, group, settings: s } = t.record;
  const head = { queue, group, mode: 'claims' as const, batchId: deps.batchId() };
  const recs = records.map((r) =>
    recordText({ ...r.message, partitionId: part.id, partition: part.name }, r.attempts, queue),
  );
  const cut = cutClaimBatches(
    records.map((r, i) => ({ offset: r.offset, createdAt: r.message.createdAt, bytes: recs[i]!.bytes })),
    {
      batchSize: s.batchSize,
      maxEventBytes: TARGET_LIMITS.eventBytes.max,
      maxRecordAgeMs: s.maximumRecordAgeInSeconds < 0 ? -1 : s.maximumRecordAgeInSeconds * 1000,
      envelopeBytes: Buffer.byteLength(envelopeText(head)),
    },
    deps.clock(),
  );
  for (const f of cut.file) {
    const r = records[f.index]!;
    await deps.claims.deadLetter(queue, part.name, group, { offset: r.offset, attempts: r.attempts });
    t.stats.deadLettered++;
  }
  let end: DeliveryEnd = cut.file.length > 0 ? { kind: 'filed' } : { kind: 'settled', error: null };
  for (const batch of cut.batches) {
    const ids = batch.map((i) => records[i]!.message.transactionId);
    const invoke = (from: number, to: number): Promise<Outcome> =>
      sendEvent(
        t,
        head,
        batch.slice(from, to).map((i) => recs[i]!.text),
        ids.slice(from, to),
      );
    const first = await invoke(0, batch.length);
    let plan: ClaimSettlement;
    if (first.kind === 'failed' && s.bisectBatchOnFunctionError && batch.length > 1) {
      let state = startBisect(batch.length, 'all-failures', first.error);
      for (let r = nextRange(state); r; r = nextRange(state)) state = bisectStep(state, await invoke(r.from, r.to));
      plan = claimBisectResult(state);
    } else plan = claimSettlement(batch.length, first);
    await settle(
      deps,
      t,
      part,
      plan,
      batch.map((i) => records[i]!),
    );
    if (first.kind === 'not-run' && plan.ack.length === 0) {
      end = { kind: 'not-run', error: first.error, retryAfterMs: first.retryAfterMs };
      continue;
    }
    const failed = plan.nack.find((n) => n.charge);
    if (end.kind !== 'not-run') end = { kind: 'settled', error: failed ? failed.error : null };
  }
  return end;
}

async function settle(
  deps: ClaimDeliveryDeps,
  t: { record: TargetRecord; stats: TargetCounts },
  part: { name: string },
  plan: ClaimSettlement,
  records: readonly ClaimedRecord[],
): Promise<void> {
  const { queue, group, settings } = t.record;
  if (plan.ack.length > 0)
    await deps.claims.ack(
      queue,
      part.name,
      group,
      plan.ack.map((i) => records[i]!.offset),
    );
  for (const n of plan.nack) {
    const r = records[n.index]!;
    if (!n.charge) {
      await deps.claims.nack(queue, part.name, group, { offset: r.offset, attempts: r.attempts, refund: true });
      continue;
    }
    t.stats.retries++;
    // attempts counts deliveries, so the retries spent are attempts - 1.
    const limit = settings.maximumRetryAttempts;
    if (limit !== undefined && r.attempts - 1 >= limit) {
      await deps.claims.deadLetter(queue, part.name, group, { offset: r.offset, attempts: r.attempts });
      t.stats.deadLettered++;
    } else await deps.claims.nack(queue, part.name, group, { offset: r.offset, attempts: r.attempts });
  }
}
