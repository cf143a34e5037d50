/**
 * The services' view of metrics and logs: a narrow facade, so the queue semantics do not
 * depend on a logging library. The Lambda runtime plugs in AWS Powertools (EMF metrics,
 * structured JSON logs); tests and the local server can read the counters directly.
 *
 * @example
 * ```ts
 * svc.telemetry.count('MessagesPushed', 100, { queue: 'orders' });
 * ```
 */
import type { UsageMetric } from './usage.js';

export type MetricName =
  | 'MessagesPushed'
  | 'DuplicatesRejected'
  /** A stamped push took the slot of another producer, whose retries that partition no longer recognises. */
  | 'StampEvicted'
  | 'Pops'
  | 'EmptyPops'
  | 'MessagesDelivered'
  | 'Acks'
  | 'DeadLettered'
  | 'Redeliveries'
  | 'MessagesDropped'
  | 'MessagesExpired'
  | 'LeaseExtends'
  | 'ClaimPolls'
  | 'ClaimPollsCapped'
  | 'ClaimAcks'
  | 'ClaimDeadLettered'
  | 'WaitsCapped'
  | 'MaintenanceSkipped'
  | 'ConsumerLag'
  | 'OldestUnconsumedAgeSeconds'
  /** Idle consumers woken over the WebSocket channel (posts that reached a connection). */
  | 'WakeUps'
  /** Wake-ups owed and not delivered (`notifications/wake-fanout.ts`): those consumers sleep until a later push or their safety poll. */
  | 'WakeUpsDropped'
  | UsageMetric;

export interface Telemetry {
  /** Adds to a counter (unit Count). */
  count(name: MetricName, value?: number, dims?: Record<string, string>): void;
  /** Records a gauge-like value (lag, age). */
  gauge(name: MetricName, value: number, dims?: Record<string, string>): void;
  /** What only someone debugging wants (Powertools logs it at `POWERTOOLS_LOG_LEVEL=DEBUG`). */
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** Publishes what was recorded (EMF on Lambda); called after every request. */
  flush?(): void;
}

/** Keeps counters in memory (tests, the local server) and logs JSON lines to stderr. */
export class MemoryTelemetry implements Telemetry {
  readonly counters = new Map<MetricName, number>();
  readonly gauges = new Map<MetricName, number>();
  constructor(private readonly quiet = true) {}
  count(name: MetricName, value = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + value);
  }
  gauge(name: MetricName, value: number): void {
    this.gauges.set(name, value);
  }
  debug(): void {
    // Never printed: the local server's request log says what happened.
  }
  info(message: string, fields?: Record<string, unknown>): void {
    if (!this.quiet) console.error(JSON.stringify({ level: 'INFO', message, ...fields }));
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    console.warn(JSON.stringify({ level: 'WARN', message, ...fields }));
  }
  error(message: string, fields?: Record<string, unknown>): void {
    console.error(JSON.stringify({ level: 'ERROR', message, ...fields }));
  }
}
