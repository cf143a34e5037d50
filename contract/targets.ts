/**
 * Targets (docs/TARGETS.md): a consumer group whose consumer is a Lambda function, an HTTPS
 * endpoint or (the local server's --target) a handler module. Sluice takes the group's leases
 * (or claims), sends the records as one event, and settles them from the answer, as a pull
 * consumer would. The knobs are Lambda's event source mapping's, under their names and with
 * their meaning; where a range differs it says why.
 *
 * The event and its answer are declared here once: the server writes and reads them, the
 * client's types come from them (`npm run wire-types`), the docs describe them.
 *
 * @example
 * ```ts
 * TargetSettings.parse({ endpoint: { kind: 'https', url: 'https://example.com/hook' }, mode: 'leases' });
 * // { batchSize: 100, maximumBatchingWindowInSeconds: 0, maximumConcurrency: 5, … }
 * ```
 */
import { z } from 'zod';

/** Lambda's ranges, and ours where they differ (each says why). */
export const TARGET_LIMITS = {
  /** Lambda's ESM for Kinesis/DynamoDB/SQS standard: 1–10,000. */
  batchSize: { min: 1, max: 10_000, default: 100 },
  /** Lambda's `MaximumBatchingWindowInSeconds`: 0–300. */
  batchingWindowSeconds: { min: 0, max: 300, default: 0 },
  /**
   * Lambda's `ScalingConfig.MaximumConcurrency` is 2–1000 (SQS); 1 is allowed here because a
   * new account has 10 concurrent executions in all, and the dispatcher counts against them.
   */
  concurrency: { min: 1, max: 1000, default: 5 },
  /**
   * Lambda's `MaximumRetryAttempts` is -1 (forever) to 10,000. Forever is refused: a record
   * that always fails would hold its partition back for good (the poison pill Kinesis users
   * know); absent means the group's own limit (the queue's retryLimit, a claim group's maxAttempts).
   */
  retryAttempts: { min: 0, max: 10_000 },
  /** Lambda's `MaximumRecordAgeInSeconds`: -1 (no limit) or 60–604,800. */
  recordAgeSeconds: { min: 60, max: 604_800 },
  /** Lambda's function timeout: 1–900 s. The lease or claim is held this long plus a margin. */
  timeoutSeconds: { min: 1, max: 900, default: 60 },
  /** Lambda's synchronous invoke payload limit (6 MB), and what the event may use of it after its envelope. */
  eventBytes: { invokeLimit: 6_291_456, max: 6_000_000 },
  /** Targets one stack holds: each is a loop the dispatcher runs. */
  perStack: 100,
} as const;

/** A Lambda function ARN (a version or alias qualifier allowed), in any partition. */
export const LAMBDA_ARN =
  /^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]{1,128})?$/;

/** Where a target's events go: a Lambda function, an HTTPS endpoint, or a handler module (the local server's --target). */
export const TargetEndpoint = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('lambda'),
      functionArn: z.string().regex(LAMBDA_ARN, 'functionArn must be a Lambda function ARN'),
    })
    .strict(),
  z
    .object({
      kind: z.literal('https'),
      url: z
        .url({ protocol: /^https?$/, error: 'url must be an http(s) URL' })
        .max(2048)
        .describe('An https URL (http only for loopback, on the local server).'),
    })
    .strict(),
  z
    .object({
      kind: z
        .literal('module')
        .describe('A handler module the local server runs: set by its --target flag only; PUT refuses it.'),
      path: z.string().min(1).max(4096).describe('The handler module, as the server resolved it (an absolute path).'),
    })
    .strict(),
]);

const L = TARGET_LIMITS;
const intIn = (r: { min: number; max: number }) => z.number().int().min(r.min).max(r.max);

/** What a caller sets (PUT): the endpoint, the group's mode and the knobs, each with its default. */
export const TargetSettings = z
  .object({
    endpoint: TargetEndpoint,
    mode: z
      .enum(['leases', 'claims'])
      .describe('The consumer group is a partition-lease group, or a record-claim group.'),
    batchSize: intIn(L.batchSize).default(L.batchSize.default),
    maximumBatchingWindowInSeconds: intIn(L.batchingWindowSeconds).default(L.batchingWindowSeconds.default),
    maximumConcurrency: intIn(L.concurrency).default(L.concurrency.default),
    functionResponseTypes: z
      .array(z.literal('ReportBatchItemFailures'))
      .max(1)
      .default([])
      .describe('["ReportBatchItemFailures"]: the answer may fail single records (batchItemFailures).'),
    bisectBatchOnFunctionError: z.boolean().default(false),
    maximumRetryAttempts: intIn(L.retryAttempts).optional(),
    maximumRecordAgeInSeconds: z
      .number()
      .int()
      .refine((v) => v === -1 || (v >= L.recordAgeSeconds.min && v <= L.recordAgeSeconds.max), {
        message: `maximumRecordAgeInSeconds is -1 (no limit) or ${L.recordAgeSeconds.min} to ${L.recordAgeSeconds.max}`,
      })
      .default(-1)
      .describe('-1: no limit.'),
    timeoutSeconds: intIn(L.timeoutSeconds).default(L.timeoutSeconds.default),
    startingPosition: z.enum(['TRIM_HORIZON', 'LATEST', 'AT_TIMESTAMP']).default('TRIM_HORIZON'),
    startingPositionTimestamp: z.number().int().min(0).optional().describe('Epoch ms, for AT_TIMESTAMP.'),
  })
  .strict()
  .refine((s) => (s.startingPosition === 'AT_TIMESTAMP') === (s.startingPositionTimestamp !== undefined), {
    message: 'startingPositionTimestamp goes with startingPosition AT_TIMESTAMP, and only with it',
  });
export type TargetSettings = z.output<typeof TargetSettings>;
export type TargetSettingsInput = z.input<typeof TargetSettings>;

/** One record of an event. `itemIdentifier` in an answer is a record's transactionId. */
export const TargetRecord = z
  .object({
    queue: z.string(),
    partition: z.string(),
    partitionId: z.string(),
    offset: z.number().int().min(0),
    id: z.string(),
    transactionId: z.string(),
    payload: z.unknown(),
    createdAt: z.iso.datetime(),
    attempt: z.number().int().min(1).describe('1 on the first delivery.'),
  })
  .strict();

/** What a target receives: one partition's records in order (leases), or claimed records in any order (claims). */
export const TargetEvent = z
  .object({
    version: z.literal('sluice.target.v1'),
    queue: z.string(),
    group: z.string(),
    mode: z.enum(['leases', 'claims']),
    batchId: z.string(),
    records: z.array(TargetRecord),
  })
  .strict();

/** A target's answer: Lambda's partial batch response; any other answer of a run that succeeded means all succeeded. */
export const TargetAnswer = z.object({
  batchItemFailures: z.array(z.object({ itemIdentifier: z.string(), error: z.string().optional() })).optional(),
});

/** The event's version: a breaking change to the event gets a new one, and targets say which they take. */
export const TARGET_EVENT_VERSION = 'sluice.target.v1';
