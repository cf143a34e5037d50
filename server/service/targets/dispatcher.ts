/**
 * The dispatcher: runs every active target's deliveries in this process (the local server; on
 * AWS a function of its own, docs/TARGETS.md). A target gets `maximumConcurrency` slots. A
 * lease target's slot takes one partition's lease with a wildcard pop (the one-lease rule keeps
 * two slots, or two dispatchers, off the same partition), delivers it (lease-delivery.ts) and
 * loops. A claim target's slot goes round the queue's partitions, creating the group on each
 * at the target's starting position the first time, and delivers what one poll claims
 * (claim-delivery.ts); slots share partitions, the claims keep them apart.
 *
 * Waiting costs nothing: an idle slot sleeps on the notifier (woken by this process's pushes)
 * and looks again every {@link IDLE_LOOK_MS} for other processes' pushes. A target that does not
 * run (throttled, unreachable) holds its slot back with backoff; a failing record holds only its
 * partition (the lease's hold after a failed ack), so every other partition keeps flowing.
 *
 * @example
 * ```ts
 * const d = new TargetDispatcher({ targets, leasePops, leaseAcks, notifier, clock, telemetry, stats, invokerFor });
 * d.start();
 * await d.stop(); // lets batches in flight settle
 * ```
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { throttleDelayMs, type Invoker } from '../../core/targets/index.js';
import { randomUUID } from 'node:crypto';
import type { ClaimService } from '../claims/claim-service.js';
import type { Start } from '../../core/claims/admin.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { AckService } from '../leases/ack.js';
import { deliverClaims } from './claim-delivery.js';
import type { LaneOverrides, PopService } from '../leases/pop.js';
import type { Notifier } from '../notifier.js';
import type { Telemetry } from '../telemetry.js';
import { deliverLease, LEASE_MARGIN_S, leaseSecondsFor, type DeliveryEnd } from './lease-delivery.js';
import type { TargetService } from './target-service.js';
import type { TargetStats } from './target-stats.js';
import type { TargetRecord } from './target-store.js';

/** How often an idle slot looks for work written by other processes (this one's pushes wake it at once). */
export const IDLE_LOOK_MS = 1_000;
/** How often the target list is read again: a change made through another process shows within this. */
export const REFRESH_MS = 2_000;
/** A failed batch holds its partition this long at least (the queue's retryDelay when longer). */
export const FAILED_HOLD_MS = 1_000;
/** After an unexpected error in a slot (storage unavailable…), the pause before it tries again. */
const SLOT_ERROR_PAUSE_MS = 1_000;

export interface DispatcherDeps {
  targets: Pick<TargetService, 'list' | 'noteOutcome' | 'signingSecrets' | 'onChange'>;
  leasePops: Pick<PopService, 'popOnce'>;
  leaseAcks: Pick<AckService, 'ack' | 'extend'>;
  claims: Pick<ClaimService, 'poll' | 'ack' | 'nack' | 'deadLetter' | 'create'>;
  queues: Pick<QueueDirectory, 'listPartitions'>;
  notifier: Notifier;
  clock: () => number;
  telemetry: Telemetry;
  stats: TargetStats;
  /** Makes the invoker for a target's endpoint (one per target, reused by its slots). */
  invokerFor: (t: TargetRecord, secrets: () => readonly string[]) => Invoker;
  random?: () => number;
}

/** A target's running slots, keyed by what makes them stale (its last update). */
interface Running {
  version: number;
  stop: AbortController;
  done: Promise<void>;
  invoker: Invoker;
}

const subscriptionOf = (t: TargetRecord): { subscriptionMode?: string; subscriptionFrom?: string } => {
  const s = t.settings;
  if (s.startingPosition === 'LATEST') return { subscriptionMode: 'new' };
  if (s.startingPosition === 'AT_TIMESTAMP')
    return { subscriptionFrom: new Date(s.startingPositionTimestamp ?? 0).toISOString() };
  return { subscriptionMode: 'all' };
};

/** Where a claim target creates its group on a partition it has not seen. */
const claimStartOf = (t: TargetRecord): Start => {
  const s = t.settings;
  if (s.startingPosition === 'LATEST') return 'latest';
  if (s.startingPosition === 'AT_TIMESTAMP') return { at: s.startingPositionTimestamp ?? 0 };
  return 'earliest';
};

/** The member name a claim target's polls carry (claims are per member; one name for the dispatcher). */
export const TARGET_MEMBER = 'sluice-target';

export class TargetDispatcher {
  private readonly running = new Map<string, Running>();
  private readonly stopAll = new AbortController();
  private loop: Promise<void> | undefined;
  /** Refreshes run one after another: two at once could start a target's runner twice. */
  private refreshing: Promise<void> = Promise.resolve();
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly deps: DispatcherDeps) {}

  start(): void {
    // A change made in this process (a pause, new settings) acts now, not at the next read.
    this.unsubscribe ??= this.deps.targets.onChange(() => {
      this.refresh().catch((e: unknown) =>
        this.deps.telemetry.warn('targets: reading the target list failed', { error: String(e) }),
      );
    });
    this.loop ??= this.refreshLoop();
  }

  /** Stops every slot; batches in flight settle first. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.stopAll.abort();
    await this.loop;
    await Promise.all([...this.running.keys()].map((k) => this.halt(k)));
  }

  /** Reads the target list once and starts, restarts or stops runners to match. */
  refresh(): Promise<void> {
    const next = this.refreshing.then(() => this.refreshOnce());
    // A failed refresh must not stop the next one.
    this.refreshing = next.catch(() => undefined);
    return next;
  }

  private async refreshOnce(): Promise<void> {
    if (this.stopAll.signal.aborted) return;
    const wanted = new Map<string, TargetRecord>();
    for (const t of await this.deps.targets.list()) if (!t.paused) wanted.set(`${t.queue}/${t.group}`, t);
    for (const [key, r] of this.running) {
      const t = wanted.get(key);
      if (!t || t.updatedAt !== r.version) await this.halt(key);
    }
    for (const [key, t] of wanted) if (!this.running.has(key)) await this.launch(key, t);
  }

  private async refreshLoop(): Promise<void> {
    while (!this.stopAll.signal.aborted) {
      try {
        await this.refresh();
      } catch (e) {
        this.deps.telemetry.warn('targets: reading the target list failed', { error: String(e) });
      }
      await sleep(REFRESH_MS, undefined, { signal: this.stopAll.signal }).catch(() => undefined);
    }
  }

  private async launch(key: string, t: TargetRecord): Promise<void> {
    // Read once per runner: a rotation changes the target's updatedAt, which restarts it.
    const secrets = await this.deps.targets.signingSecrets(t, this.deps.clock());
    const invoker = this.deps.invokerFor(t, () => secrets);
    const stop = new AbortController();
    const slot = t.settings.mode === 'leases' ? this.leaseSlot.bind(this) : this.claimSlot.bind(this);
    const slots = Array.from({ length: t.settings.maximumConcurrency }, () => slot(t, invoker, stop.signal));
    this.running.set(key, { version: t.updatedAt, stop, invoker, done: Promise.all(slots).then(() => undefined) });
  }

  private async halt(key: string): Promise<void> {
    const r = this.running.get(key);
    if (!r) return;
    this.running.delete(key);
    r.stop.abort();
    await r.done;
    await r.invoker.close?.();
  }

  /** One slot of a lease target: pop one partition, deliver, repeat. */
  private async leaseSlot(t: TargetRecord, invoker: Invoker, signal: AbortSignal): Promise<void> {
    const stats = this.deps.stats.of(t.queue, t.group);
    const overrides: LaneOverrides = {
      deadLetter: true,
      retryDelayMs: FAILED_HOLD_MS,
      ...(t.settings.maximumRetryAttempts === undefined ? {} : { retryLimit: t.settings.maximumRetryAttempts }),
    };
    const window = t.settings.maximumBatchingWindowInSeconds * 1000;
    let notRun = 0;
    while (!signal.aborted) {
      try {
        const pop = await this.deps.leasePops.popOnce({
          queue: t.queue,
          group: t.group,
          batch: t.settings.batchSize,
          partitions: 1,
          autoAck: false,
          leaseSeconds: leaseSecondsFor(t),
          wait: false,
          timeoutMs: 0,
          overrides,
          ...subscriptionOf(t),
        });
        if (!pop) {
          stats.oldestUndeliveredAt = null;
          await this.deps.notifier.wait(t.queue, IDLE_LOOK_MS, signal);
          // The batching window: once work shows up after a quiet spell, gather for this long first.
          if (window > 0) await sleep(window, undefined, { signal }).catch(() => undefined);
          continue;
        }
        stats.oldestUndeliveredAt = Math.min(...pop.messages.map((m) => m.createdAt));
        stats.inFlight++;
        const end = await deliverLease(
          { leaseAcks: this.deps.leaseAcks, clock: this.deps.clock },
          { record: t, invoker, stats },
          pop,
        ).finally(() => stats.inFlight--);
        notRun = await this.afterDelivery(t, end, notRun, signal);
      } catch (e) {
        await this.slotFailed(t, e, signal);
      }
    }
  }

  /** One slot of a claim target: poll the next partition with work, deliver, repeat. */
  private async claimSlot(t: TargetRecord, invoker: Invoker, signal: AbortSignal): Promise<void> {
    const stats = this.deps.stats.of(t.queue, t.group);
    const random = this.deps.random ?? Math.random;
    const created = new Set<string>();
    const s = t.settings;
    // Bisect re-invokes within the claims: they must outlast every half (≤ 2·⌈log2 n⌉ + 1 calls).
    const calls = s.bisectBatchOnFunctionError ? 2 * Math.ceil(Math.log2(Math.max(2, s.batchSize))) + 2 : 1;
    const visibilityMs = (s.timeoutSeconds * calls + LEASE_MARGIN_S) * 1000;
    let next = Math.floor(random() * 1000);
    let notRun = 0;
    while (!signal.aborted) {
      try {
        const parts = await this.deps.queues.listPartitions(t.queue);
        let delivered = false;
        for (let k = 0; k < parts.length && !delivered && !signal.aborted; k++) {
          const p = parts[next++ % parts.length]!;
          if (!created.has(p.id)) {
            await this.deps.claims.create(t.queue, p.name, t.group, claimStartOf(t));
            created.add(p.id);
          }
          const polled = await this.deps.claims.poll(t.queue, p.name, t.group, {
            max: Math.min(s.batchSize, 1000),
            visibilityMs,
            consumer: TARGET_MEMBER,
            principal: TARGET_MEMBER,
          });
          if (polled.records.length === 0) continue;
          delivered = true;
          stats.oldestUndeliveredAt = Math.min(...polled.records.map((r) => r.message.createdAt));
          stats.inFlight++;
          const end = await deliverClaims(
            { claims: this.deps.claims, clock: this.deps.clock, batchId: randomUUID },
            { record: t, invoker, stats },
            { id: p.id, name: p.name },
            polled.records,
          ).finally(() => stats.inFlight--);
          notRun = await this.afterDelivery(t, end, notRun, signal);
        }
        if (!delivered) {
          stats.oldestUndeliveredAt = null;
          await this.deps.notifier.wait(t.queue, IDLE_LOOK_MS, signal);
          if (s.maximumBatchingWindowInSeconds > 0)
            await sleep(s.maximumBatchingWindowInSeconds * 1000, undefined, { signal }).catch(() => undefined);
        }
      } catch (e) {
        await this.slotFailed(t, e, signal);
      }
    }
  }

  /**
   * Notes how a delivery went and, when the target did not run, backs the slot off. Returns the
   * count of deliveries in a row that did not run (the backoff's exponent).
   */
  private async afterDelivery(t: TargetRecord, end: DeliveryEnd, notRun: number, signal: AbortSignal): Promise<number> {
    if (end.kind === 'filed') return 0;
    await this.deps.targets.noteOutcome(t.queue, t.group, end.error);
    if (end.kind !== 'not-run') return 0;
    const delay = throttleDelayMs(notRun + 1, end.retryAfterMs, this.deps.random ?? Math.random);
    await sleep(delay, undefined, { signal }).catch(() => undefined);
    return notRun + 1;
  }

  /** An unexpected failure in a slot (storage unavailable…): logged, and the slot pauses before it goes on. */
  private async slotFailed(t: TargetRecord, e: unknown, signal: AbortSignal): Promise<void> {
    this.deps.telemetry.error('targets: a delivery failed unexpectedly', {
      queue: t.queue,
      group: t.group,
      error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
    });
    await sleep(SLOT_ERROR_PAUSE_MS, undefined, { signal }).catch(() => undefined);
  }
}
