/**
 * What each invocation cost, counted (the system reports its own cost: docs/DEPLOYING.md,
 * "Operations", cost counters): the API request, the Lambda time, and the storage requests and
 * units the adapter counted (`storage/usage.ts`). Added to the metrics line every invocation
 * already writes (EMF on Lambda, so free of API calls) and kept as running totals for the local
 * server's `/metrics`. `sluice cost` reads them back and prices them (`core/prices.ts`).
 */
import type { StorageUsage } from '../storage/usage.js';
import type { Telemetry } from './telemetry.js';

/**
 * The cost counters, one CloudWatch metric each (no per-queue dimension: a cost report sums the
 * deployment, and every dimension value would be another billed metric).
 */
export const USAGE_METRICS = [
  'ApiRequests',
  'LambdaGbSeconds',
  'DynamoDBRequests',
  'DynamoDBWriteUnits',
  'DynamoDBReadUnits',
  'S3Puts',
  'S3Gets',
  'S3Lists',
  'S3Deletes',
] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];
export type UsageTotals = Record<UsageMetric, number>;

/** Each counter's name on the local server's `/metrics` (a Prometheus counter), and its help. */
export const USAGE_PROMETHEUS: Record<UsageMetric, [name: string, help: string]> = {
  ApiRequests: ['sluice_api_requests_total', 'API requests answered.'],
  LambdaGbSeconds: ['sluice_lambda_gb_seconds_total', 'Lambda GB-seconds of handler time (0 off Lambda).'],
  DynamoDBRequests: [
    'sluice_dynamodb_requests_total',
    'DynamoDB requests (embedded: as the AWS adapter would make them).',
  ],
  DynamoDBWriteUnits: [
    'sluice_dynamodb_write_units_total',
    'DynamoDB write request units (embedded: estimated from item sizes).',
  ],
  DynamoDBReadUnits: [
    'sluice_dynamodb_read_units_total',
    'DynamoDB read request units (embedded: estimated from item sizes).',
  ],
  S3Puts: ['sluice_s3_puts_total', 'S3 PUT requests (embedded: blob writes).'],
  S3Gets: ['sluice_s3_gets_total', 'S3 GET requests (embedded: blob reads).'],
  S3Lists: ['sluice_s3_lists_total', 'S3 LIST requests (embedded: blob listings).'],
  S3Deletes: ['sluice_s3_deletes_total', 'S3 DELETE requests, free on S3 (embedded: blob deletes).'],
};

const FROM_STORAGE: readonly [UsageMetric, keyof StorageUsage][] = [
  ['DynamoDBRequests', 'dynamodbRequests'],
  ['DynamoDBWriteUnits', 'writeUnits'],
  ['DynamoDBReadUnits', 'readUnits'],
  ['S3Puts', 's3Puts'],
  ['S3Gets', 's3Gets'],
  ['S3Lists', 's3Lists'],
  ['S3Deletes', 's3Deletes'],
];

/** The memory of this Lambda function in GB, from the runtime's environment; undefined off Lambda. */
export function lambdaMemoryGb(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const mb = Number(env['AWS_LAMBDA_FUNCTION_MEMORY_SIZE']);
  return Number.isFinite(mb) && mb > 0 ? mb / 1024 : undefined;
}

/**
 * The process's cost counters. One invocation at a time on Lambda, so the storage counted
 * between two {@link record} calls is that invocation's.
 *
 * @example
 * ```ts
 * svc.usage.record(svc.telemetry, { apiRequest: true, ms: 42 });
 * svc.telemetry.flush?.(); // the EMF line now carries ApiRequests, DynamoDBWriteUnits, ...
 * ```
 */
export class UsageLedger {
  private apiRequests = 0;
  private gbSeconds = 0;
  private reported: StorageUsage | undefined;

  /**
   * @param storage the adapter's running counts (absent for a storage that does not count)
   * @param memoryGb the function's memory, to price its time; undefined off Lambda (no Lambda bill)
   */
  constructor(
    private readonly storage: StorageUsage | undefined,
    private readonly memoryGb: number | undefined,
  ) {
    this.reported = storage && { ...storage };
  }

  /** Counts one invocation (an API request, or a scheduled one) and adds its cost counters to `telemetry`. */
  record(telemetry: Telemetry, invocation: { apiRequest: boolean; ms: number }): void {
    if (invocation.apiRequest) {
      this.apiRequests++;
      telemetry.count('ApiRequests', 1);
    }
    if (this.memoryGb !== undefined) {
      // Lambda bills whole milliseconds; the handler's time is a floor of the billed duration.
      const gbs = (Math.max(1, Math.ceil(invocation.ms)) / 1000) * this.memoryGb;
      this.gbSeconds += gbs;
      telemetry.count('LambdaGbSeconds', gbs);
    }
    if (!this.storage || !this.reported) return;
    for (const [metric, key] of FROM_STORAGE) {
      const delta = this.storage[key] - this.reported[key];
      if (delta > 0) telemetry.count(metric, delta);
    }
    this.reported = { ...this.storage };
  }

  /** Everything counted since the process started (the storage's counts as of now). */
  totals(): UsageTotals {
    const t = Object.fromEntries(USAGE_METRICS.map((m) => [m, 0])) as UsageTotals;
    t.ApiRequests = this.apiRequests;
    t.LambdaGbSeconds = this.gbSeconds;
    if (this.storage) for (const [metric, key] of FROM_STORAGE) t[metric] = this.storage[key];
    return t;
  }
}
