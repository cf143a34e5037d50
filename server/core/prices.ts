/**
 * AWS list prices (us-east-1, late 2026; /work/shared/reference/aws-limits-and-prices.md) and
 * what SQS would charge for the same traffic: the one price table the cost bench
 * (`bench/cost-model.ts`) and `sluice cost` both read.
 *
 * @example
 * ```ts
 * PRICES.writeUnitPerMillion; // 0.625 dollars per million DynamoDB write request units
 * sqsPerMillion(100, 3);      // SNS + 3 SQS queues, per million messages
 * ```
 */
export const PRICES = {
  apiGatewayPerMillion: 1.0,
  lambdaPerMillion: 0.2,
  lambdaPerGbSecond: 0.0000133334,
  writeUnitPerMillion: 0.625,
  readUnitPerMillion: 0.125,
  s3PutPerMillion: 5,
  s3GetPerMillion: 0.4,
  /** LIST is billed as a PUT (S3's class A); DELETE is free. */
  s3ListPerMillion: 5,
  sqsPerMillion: 0.4,
  snsPerMillion: 0.5,
  /** API Gateway WebSocket: messages either way, per 32 KB. */
  webSocketMessagePerMillion: 1.0,
  webSocketConnectionMinutePerMillion: 0.25,
  /** CloudWatch GetMetricData, per 1,000 metrics requested. */
  getMetricDataPerThousandMetrics: 0.01,
  /** A CloudWatch custom metric, per month (the first 10,000 metrics' tier). */
  customMetricPerMonth: 0.3,
  /**
   * CloudWatch Logs ingestion per GB (Standard class; Lambda's logs are billed as vended logs,
   * whose first tier, up to 10 TB a month, is the same price). Storage, $0.03 per GB-month
   * compressed, is left out: a month's retention of a GB costs under a tenth of ingesting it.
   */
  logsIngestPerGb: 0.5,
  /** Data transfer out of AWS to the internet, per GB (first 10 TB a month; the first 100 GB are free). */
  dataTransferOutPerGb: 0.09,
} as const;

/**
 * SQS for one group (send in batches of up to 10, receive 10, delete 10), or SNS + one SQS queue
 * per group for fan-out (publish in batches of up to 10; delivery to SQS is free), in dollars per
 * million 1 KiB messages (each 64 KB of a request is billed as one request; 10 KiB fits in one).
 */
export function sqsPerMillion(batch: number, groups: number): number {
  const sends = 1e6 / Math.min(batch, 10);
  const consume = 2 * (1e6 / 10);
  if (groups <= 1) return ((sends + consume) * PRICES.sqsPerMillion) / 1e6;
  return (sends * PRICES.snsPerMillion + groups * consume * PRICES.sqsPerMillion) / 1e6;
}
