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

/** What the JSON-lines telemetry prints beyond WARN and ERROR. */
export interface MemoryTelemetryOptions {
  /** INFO lines too (stdout), as the local server prints its own; tests leave them off. */
  info?: boolean;
}

/**
 * Keeps counters in memory (tests, the local server) and logs JSON lines: WARN and ERROR on
 * stderr, INFO on stdout when asked. The one place a server module writes a log line itself.
 *
 * @example
 * ```ts
 * new MemoryTelemetry({ info: true }).info('shutting down', { signal: 'SIGTERM' });
 * // {"level":"INFO","message":"shutting down","signal":"SIGTERM","timestamp":"2025-01-01T00:00:00.000Z"}
 * ```
 */
export class MemoryTelemetry implements Telemetry {
  readonly counters = new Map<MetricName, number>();
  readonly gauges = new Map<MetricName, number>();
  constructor(private readonly options: MemoryTelemetryOptions = {}) {}
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
    if (this.options.info) console.log(jsonLine('INFO', message, fields));
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    // Through console.error, as ERROR is: one sink for what needs a look.
    console.error(jsonLine('WARN', message, fields));
  }
  error(message: string, fields?: Record<string, unknown>): void {
    console.error(jsonLine('ERROR', message, fields));
  }
}

/** One log line, shaped as the local server's request lines are (level and message first, timestamp last). */
const jsonLine = (level: string, message: string, fields: Record<string, unknown> | undefined): string =>
  JSON.stringify({ level, message, ...fields, timestamp: new Date().toISOString() });
