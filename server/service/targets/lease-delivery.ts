/**
 * One lease's batch to a target (docs/TARGETS.md, "Leases"): the records of one partition in
 * offset order, cut to fit one event; the target's outcome settled as one ack, exactly as a
 * pull consumer's would be. The lease is the fence: a dispatcher that dies here leaves a lease
 * that expires, and the records are delivered again (at least once, nothing lost).
 *
 *   filed head (too old, too large) → dead letters, one per ack, the next pop sees the rest
 *   ok                   → every sent record completed
 *   partial at k         → 0..k-1 completed, k charged (its partition's budget), k.. redelivered in order
 *   failed               → bisect when asked (halves at once, within the lease), else charged
 *   not run (throttled, unreachable) → released, budget untouched; the slot backs off
 *
 * @example
 * ```ts
 * const end = await deliverLease(deps, target, pop);
 * if (end.kind === 'not-run') await sleep(throttleDelayMs(n, end.retryAfterMs, Math.random));
 * ```
 */
import { Buffer } from 'node:buffer';
import { TARGET_LIMITS } from '../../../contract/targets.js';
import {
  bisectStep,
  cutLeaseBatch,
  leaseBisectResult,
  leaseSettlement,
  nextRange,
  startBisect,
  type Invoker,
  type LeaseSettlement,
  type Outcome,
} from '../../core/targets/index.js';
import type { AckRequestItem, AckService } from '../leases/ack.js';
import type { PopResult } from '../leases/pop.js';
import type { TargetCounts } from './target-stats.js';
import type { TargetRecord } from './target-store.js';
import { envelopeText, recordText, sendEvent } from './target-event.js';

/** Held past the target's timeout: the time to read the answer and write the ack. */
export const LEASE_MARGIN_S = 30;

export const leaseSecondsFor = (t: TargetRecord): number => t.settings.timeoutSeconds + LEASE_MARGIN_S;

const FILE_REASONS = {
  'record-age': (s: number) => `older than the target's maximumRecordAgeInSeconds (${s} s): dead-lettered unprocessed`,
  'too-large': () =>
    `too large for one event to the target (over ${TARGET_LIMITS.eventBytes.max} bytes): dead-lettered unprocessed`,
} as const;

export interface LeaseDeliveryDeps {
  leaseAcks: Pick<AckService, 'ack' | 'extend'>;
  clock: () => number;
}

/** How a delivery ended, for the slot: settled (whatever the target said), filed a head record, or not run. */
export type DeliveryEnd =
  | { kind: 'settled'; error: string | null }
  | { kind: 'filed' }
  | { kind: 'not-run'; error: string; retryAfterMs?: number | undefined };

export async function deliverLease(
  deps: LeaseDeliveryDeps,
  t: { record: TargetRecord; invoker: Invoker; stats: TargetCounts },
  pop: PopResult,
): Promise<DeliveryEnd> {
  const s = t.record.settings;
  const part = pop.partitions[0];
  if (!part || pop.messages.length === 0) return { kind: 'settled', error: null };
  const head = { queue: pop.queue, group: pop.group, mode: 'leases' as const, batchId: pop.leaseId };
  const recs = pop.messages.map((m) => recordText(m, part.attempt ?? 1, pop.queue));
  const cut = cutLeaseBatch(
    pop.messages.map((m, i) => ({ offset: m.offset, createdAt: m.createdAt, bytes: recs[i]!.bytes })),
    {
      batchSize: s.batchSize,
      maxEventBytes: TARGET_LIMITS.eventBytes.max,
      maxRecordAgeMs: s.maximumRecordAgeInSeconds < 0 ? -1 : s.maximumRecordAgeInSeconds * 1000,
      envelopeBytes: Buffer.byteLength(envelopeText(head)),
    },
    deps.clock(),
  );
  const item = (i: number, status: AckRequestItem['status'], error?: string): AckRequestItem => ({
    index: i,
    partitionId: part.id,
    transactionId: pop.messages[i]!.transactionId,
    status,
    error,
    leaseId: pop.leaseId,
  });

  const filed = cut.file[0];
  if (filed) {
    // A lease acks by prefix, so one head record leaves per ack; the next pop sees the rest.
    const why = FILE_REASONS[filed.reason](s.maximumRecordAgeInSeconds);
    const [r] = await deps.leaseAcks.ack([item(0, 'dlq', why)], pop.group);
    if (r?.dlq) t.stats.deadLettered++;
    return { kind: 'filed' };
  }

  const n = cut.send;
  const ids = pop.messages.slice(0, n).map((m) => m.transactionId);
  const invoke = (from: number, to: number): Promise<Outcome> =>
    sendEvent(
      t,
      head,
      recs.slice(from, to).map((r) => r.text),
      ids.slice(from, to),
    );

  const first = await invoke(0, n);
  let plan: LeaseSettlement;
  if (first.kind === 'failed' && s.bisectBatchOnFunctionError && n > 1) {
    let state = startBisect(n, 'first-failure', first.error);
    for (let r = nextRange(state); r; r = nextRange(state)) {
      // Each half may run for the whole timeout: the lease must outlast it.
      await deps.leaseAcks.extend(pop.leaseId, leaseSecondsFor(t.record));
      state = bisectStep(state, await invoke(r.from, r.to));
    }
    plan = leaseBisectResult(state);
  } else plan = leaseSettlement(n, first);

  const items: AckRequestItem[] = [];
  for (let i = 0; i < plan.completed; i++) items.push(item(i, 'completed'));
  const at = plan.completed;
  if (plan.rest === 'charge') items.push(item(at, 'failed', plan.error));
  else if (plan.rest === 'release') items.push(item(at, 'retry'));
  // What the cut left out goes back at once, uncharged, for the next event.
  else if (n < pop.messages.length) items.push(item(n, 'retry'));
  if (items.length > 0) {
    const results = await deps.leaseAcks.ack(items, pop.group);
    if (plan.rest === 'charge') {
      t.stats.retries++;
      if (results.some((r) => r.dlq)) t.stats.deadLettered++;
    }
  }
  if (first.kind === 'not-run' && plan.completed === 0)
    return { kind: 'not-run', error: first.error, retryAfterMs: first.retryAfterMs };
  if (plan.rest === 'release' && plan.error !== undefined) return { kind: 'not-run', error: plan.error };
  return { kind: 'settled', error: plan.rest === 'charge' ? (plan.error ?? 'failed') : null };
}
