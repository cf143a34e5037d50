/**
 * `sluice cost`'s arithmetic: the deployment's own counters (`server/service/usage.ts`) priced
 * at list prices (`server/core/prices.ts`), per million messages, next to what SQS (or SNS + SQS
 * for fan-out) would have charged for the same messages. Pure, so a test can pin every figure.
 */
import { PRICES, sqsPerMillion, USAGE_METRICS, type UsageTotals } from '../server/public/usage.js';

/** The message counters a report reads beside the cost counters (the metrics the services already write). */
export const MESSAGE_METRICS = ['MessagesPushed', 'MessagesDelivered', 'Acks'] as const;
export type MessageMetric = (typeof MESSAGE_METRICS)[number];

/** Every metric a report asks CloudWatch for: what one report costs is this many metrics. */
export const REPORT_METRICS = [...USAGE_METRICS, ...MESSAGE_METRICS] as const;
export type Counters = UsageTotals & Record<MessageMetric, number>;

export interface CostLine {
  /** What is billed, e.g. `DynamoDB write units`. */
  what: string;
  count: number;
  usd: number;
}

export interface CostReport {
  lines: CostLine[];
  totalUsd: number;
  messages: { pushed: number; delivered: number; acked: number };
  /** Consumer groups reading each message, as the traffic shows it (delivered / pushed, at least 1). */
  groups: number;
  /** Dollars per million messages pushed; undefined when none were. */
  usdPerMillion: number | undefined;
  /** SQS (one group) or SNS + one SQS queue per group, batching 10 on every call, for the messages pushed. */
  sqsUsd: number;
  sqsUsdPerMillion: number | undefined;
  /** `SQS` or `SNS + SQS`. */
  sqsKind: string;
}

const per = (count: number, perMillion: number): number => (count * perMillion) / 1e6;

/**
 * Prices counters for a time range.
 *
 * @example
 * ```ts
 * const r = priceCounters({ ...zeroes, ApiRequests: 2_000, MessagesPushed: 100_000 });
 * r.lines[0]; // { what: 'API Gateway requests', count: 2000, usd: 0.002 }
 * ```
 */
export function priceCounters(c: Counters): CostReport {
  const lines: CostLine[] = [
    { what: 'API Gateway requests', count: c.ApiRequests, usd: per(c.ApiRequests, PRICES.apiGatewayPerMillion) },
    { what: 'Lambda requests', count: c.ApiRequests, usd: per(c.ApiRequests, PRICES.lambdaPerMillion) },
    { what: 'Lambda GB-seconds', count: c.LambdaGbSeconds, usd: c.LambdaGbSeconds * PRICES.lambdaPerGbSecond },
    {
      what: 'DynamoDB write units',
      count: c.DynamoDBWriteUnits,
      usd: per(c.DynamoDBWriteUnits, PRICES.writeUnitPerMillion),
    },
    {
      what: 'DynamoDB read units',
      count: c.DynamoDBReadUnits,
      usd: per(c.DynamoDBReadUnits, PRICES.readUnitPerMillion),
    },
    { what: 'S3 PUT', count: c.S3Puts, usd: per(c.S3Puts, PRICES.s3PutPerMillion) },
    { what: 'S3 LIST', count: c.S3Lists, usd: per(c.S3Lists, PRICES.s3ListPerMillion) },
    { what: 'S3 GET', count: c.S3Gets, usd: per(c.S3Gets, PRICES.s3GetPerMillion) },
    { what: 'S3 DELETE (free)', count: c.S3Deletes, usd: 0 },
  ];
  const totalUsd = lines.reduce((n, l) => n + l.usd, 0);
  const pushed = c.MessagesPushed;
  const groups = pushed > 0 ? Math.max(1, Math.round(c.MessagesDelivered / pushed)) : 1;
  const sqsUsd = (sqsPerMillion(10, groups) * pushed) / 1e6;
  return {
    lines,
    totalUsd,
    messages: { pushed, delivered: c.MessagesDelivered, acked: c.Acks },
    groups,
    usdPerMillion: pushed > 0 ? (totalUsd * 1e6) / pushed : undefined,
    sqsUsd,
    sqsUsdPerMillion: pushed > 0 ? sqsPerMillion(10, groups) : undefined,
    sqsKind: groups > 1 ? 'SNS + SQS' : 'SQS',
  };
}

/** What one CloudWatch report costs: GetMetricData bills each metric requested. */
export const REPORT_USD = (REPORT_METRICS.length * PRICES.getMetricDataPerThousandMetrics) / 1000;

/** Zeroed counters. */
export function zeroCounters(): Counters {
  return Object.fromEntries(REPORT_METRICS.map((m) => [m, 0])) as Counters;
}
