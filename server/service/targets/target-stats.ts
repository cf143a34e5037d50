/**
 * What this process saw of each target since it started: invocations, errors, throttles,
 * retries, dead letters, batches in flight, and the oldest record waiting. The dispatcher
 * counts; target reads and `/metrics` show them. In memory only: a count is telemetry, not
 * state, and a write per invocation would cost more than the invocation (docs/TARGETS.md).
 *
 * @example
 * ```ts
 * const stats = new TargetStats();
 * stats.of('orders', 'billing').invocations++;
 * stats.snapshot('orders', 'billing').invocations; // 1
 * ```
 */
export interface TargetCounts {
  invocations: number;
  errors: number;
  throttles: number;
  retries: number;
  deadLettered: number;
  inFlight: number;
  /** Epoch ms of the oldest record the last look found undelivered; null when none waits. */
  oldestUndeliveredAt: number | null;
}

const zero = (): TargetCounts => ({
  invocations: 0,
  errors: 0,
  throttles: 0,
  retries: 0,
  deadLettered: 0,
  inFlight: 0,
  oldestUndeliveredAt: null,
});

export class TargetStats {
  private readonly byTarget = new Map<string, TargetCounts>();

  /** The live counters of a target (made on first use). */
  of(queue: string, group: string): TargetCounts {
    const key = `${queue}/${group}`;
    let c = this.byTarget.get(key);
    if (!c) this.byTarget.set(key, (c = zero()));
    return c;
  }

  /** A copy, for answers. */
  snapshot(queue: string, group: string): TargetCounts {
    return { ...(this.byTarget.get(`${queue}/${group}`) ?? zero()) };
  }

  forget(queue: string, group: string): void {
    this.byTarget.delete(`${queue}/${group}`);
  }
}
