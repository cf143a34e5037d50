import type { QueueOptionsInput } from '../../contract/queue-options.js';

/**
 * Queue options: Queen's set (so `/configure` from a Queen client round-trips) plus Sluice's
 * own (dedup window, record-claim settings). `/configure` replaces the whole set: an option
 * left out goes back to its default.
 */
export interface QueueOptions {
  /** Namespace/task pops lease from the highest-priority matching queue with work. */
  priority: number;
  /** Lease seconds for partition-lease pops. Null on a queue created implicitly by a push: pops then use 60 s. */
  leaseTime: number | null;
  /** Failed acks a (partition, group) lane may spend before the head message is dead-lettered. */
  retryLimit: number;
  /**
   * Milliseconds a lane waits after an expired lease or a failed ack before it is redelivered.
   * Applied only when the client set it (see {@link appliedTimers}).
   */
  retryDelay: number;
  /** Most unconsumed messages a partition may hold; 0 = unlimited. */
  maxSize: number;
  /**
   * Seconds after its push an unconsumed message is no longer delivered by pops (0 = never).
   * Applied only when the client set it (see {@link appliedTimers}).
   */
  ttl: number;
  deadLetterQueue: boolean;
  dlqAfterMaxRetries: boolean;
  /** Seconds a message stays invisible after it was pushed. */
  delayedProcessing: number;
  /** Seconds a partition is held back after its newest message. */
  windowBuffer: number;
  retentionSeconds: number;
  completedRetentionSeconds: number;
  retentionEnabled: boolean;
  encryptionEnabled: boolean;
  /** Pending messages older than this many seconds are discarded; 0 = never. */
  maxWaitTimeSeconds: number;
  /** Seconds a committed transactionId blocks a repeat in the same partition; 0 = no dedup. */
  dedupWindowSeconds: number;
  /** Record claims: how long a claim stands by default (ms). */
  visibilityTimeoutMs: number;
  /** Record claims: deliveries before a record is dead-lettered. */
  maxAttempts: number;
  /** Record claims: most records handed out and unsettled per (partition, group). */
  maxInFlight: number;
  /** Record claims: cap on a poll's visibility, an extension and a nack delay (ms). */
  maxVisibilityMs: number;
}

export const QUEUE_OPTION_DEFAULTS: Readonly<QueueOptions> = Object.freeze({
  priority: 0,
  leaseTime: 300,
  retryLimit: 3,
  retryDelay: 1000,
  maxSize: 0,
  ttl: 3600,
  // Dead-lettering is on unless both flags are turned off (docs/LEASES.md, "Queue options").
  deadLetterQueue: true,
  dlqAfterMaxRetries: true,
  delayedProcessing: 0,
  windowBuffer: 0,
  retentionSeconds: 0,
  completedRetentionSeconds: 0,
  retentionEnabled: false,
  encryptionEnabled: false,
  maxWaitTimeSeconds: 0,
  dedupWindowSeconds: 3600,
  visibilityTimeoutMs: 30_000,
  maxAttempts: 5,
  maxInFlight: 10_000,
  maxVisibilityMs: 43_200_000,
});

/** Options of a queue that a push created without `/configure`: no stored lease time. */
export const IMPLICIT_QUEUE_OPTIONS: Readonly<QueueOptions> = Object.freeze({
  ...QUEUE_OPTION_DEFAULTS,
  leaseTime: null,
});

// What `/configure` and PATCH take is the wire's: the contract holds it.
export { QueueOptionsInput } from '../../contract/queue-options.js';

/**
 * The full option set a `/configure` call stores: given values over the defaults.
 *
 * @example
 * ```ts
 * resolveQueueOptions({ leaseTime: 30 }).retryLimit; // 3
 * resolveQueueOptions({}, { visibilityTimeoutMs: 60_000 }).visibilityTimeoutMs; // 60000 (a service-wide default)
 * ```
 */
export function resolveQueueOptions(
  input: QueueOptionsInput | undefined,
  defaults: Partial<QueueOptions> = {},
): QueueOptions {
  const out: QueueOptions = { ...QUEUE_OPTION_DEFAULTS, ...defaults };
  for (const [k, v] of Object.entries(input ?? {})) {
    if (v !== null && v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  }
  return out;
}

/** Cross-field rules that a schema per field cannot say. Returns a problem or undefined. */
export function queueOptionsProblem(o: QueueOptions): string | undefined {
  if (o.maxVisibilityMs < o.visibilityTimeoutMs) {
    return `options.maxVisibilityMs (${o.maxVisibilityMs}) must not be below options.visibilityTimeoutMs (${o.visibilityTimeoutMs})`;
  }
  return undefined;
}

/**
 * Effective lease seconds for a pop: `?leaseSeconds` > 0, else stored, else 60 (docs/LEASES.md,
 * "A lane, its cursor and its lease").
 */
export function effectiveLeaseSeconds(requested: number | undefined, stored: number | null | undefined): number {
  if (requested !== undefined && requested > 0) return requested;
  if (stored !== null && stored !== undefined && stored > 0) return stored;
  return 60;
}

/** The names of the options a `/configure` or PATCH body set (a value that is not null). */
export function explicitOptionNames(input: QueueOptionsInput | null | undefined): (keyof QueueOptions)[] {
  return Object.entries(input ?? {})
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k]) => k as keyof QueueOptions)
    .sort();
}

/**
 * What `ttl` and `retryDelay` do on a queue, in milliseconds (0 = nothing). Queen stores and
 * echoes both, and its server defaults (3600 s, 1000 ms) fill every `/configure` that leaves them
 * out; applied silently they would drop unconsumed messages after an hour and slow every failed
 * redelivery. So each applies only when the client set it explicitly (`explicit` names it).
 *
 * @example
 * ```ts
 * appliedTimers(QUEUE_OPTION_DEFAULTS, []); // { ttlMs: 0, retryDelayMs: 0 }
 * appliedTimers({ ...QUEUE_OPTION_DEFAULTS, ttl: 60 }, ['ttl']); // { ttlMs: 60000, retryDelayMs: 0 }
 * ```
 */
export function appliedTimers(
  o: Pick<QueueOptions, 'ttl' | 'retryDelay'>,
  explicit: readonly string[] | undefined,
): { ttlMs: number; retryDelayMs: number } {
  const set = new Set(explicit ?? []);
  return {
    ttlMs: set.has('ttl') ? o.ttl * 1000 : 0,
    retryDelayMs: set.has('retryDelay') ? o.retryDelay : 0,
  };
}

/**
 * A PATCH: the given options over the current ones, the rest kept. A value of null puts that
 * option back to its default and forgets that the client set it.
 *
 * @example
 * ```ts
 * const cur = { options: QUEUE_OPTION_DEFAULTS, explicit: ['ttl'] };
 * mergeQueueOptions(cur, { retryDelay: 5000 }).explicit; // ['retryDelay', 'ttl']
 * ```
 */
export function mergeQueueOptions(
  cur: { options: QueueOptions; explicit?: readonly string[] | undefined },
  patch: QueueOptionsInput,
  defaults: Partial<QueueOptions> = {},
): { options: QueueOptions; explicit: string[] } {
  const base: QueueOptions = { ...QUEUE_OPTION_DEFAULTS, ...defaults };
  const options: QueueOptions = { ...cur.options };
  const explicit = new Set(cur.explicit ?? []);
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    const key = k as keyof QueueOptions;
    (options as unknown as Record<string, unknown>)[key] = v === null ? base[key] : v;
    if (v === null) explicit.delete(key);
    else explicit.add(key);
  }
  return { options, explicit: [...explicit].sort() };
}
