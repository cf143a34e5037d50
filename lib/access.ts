/**
 * Least privilege, declared once: which tables and which bucket operations each Lambda
 * function may use. The stack turns this map into IAM statements (and nothing else). The IAM
 * proof checks it as AWS would: every AWS request the code sends while it runs as a function
 * (SDK commands and signed fetches, recorded wherever the AWS-backend suites run) is evaluated
 * against that function's role *as synthesized*, and a denied one fails its test
 * (test/support/iam/recorder.ts, test/cdk/function-iam.test.ts).
 *
 * Read the services to change it: a group needs a table when any of its routes (including
 * commit hooks that run inside them) reads or writes it.
 */
import type { FunctionGroup } from '../contract/route.js';
import { SEGMENT_BLOB_PREFIX } from '../server/storage/blob-prefixes.js';
import { DLQ_BLOB_PREFIX } from '../server/storage/blob-prefixes.js';
import type { TableName } from '../server/storage/port.js';
import { SEQUENCER_PK_PREFIX } from '../server/core/notifications.js';

/** Every Lambda function Sluice deploys: one per route group plus scheduled maintenance. */
export type FunctionName = FunctionGroup | 'maintenance';
export const FUNCTIONS: readonly FunctionName[] = ['log', 'leases', 'claims', 'admin', 'maintenance'];

/**
 * The notifications function's memory (lib/notifications.ts; outside FUNCTIONS, with its own
 * role): it reads a few small items and posts a few bytes. The cost model prices it.
 */
export const NOTIFIER_MEMORY_MB = 256;

export type TableAccess = 'read' | 'readwrite';
export type BucketOp = 'read' | 'write' | 'delete' | 'list';

export interface FunctionAccess {
  tables: Partial<Record<TableName, TableAccess>>;
  bucket: BucketOp[];
  /**
   * Takes offsets: `UpdateItem` on the `log` table's partition sequencers (keys
   * {@link SEQUENCER_PK_PREFIX}`*` only), which every push, transaction push and dead-letter
   * retry sends before its commit (`storage/aws/item-store.ts`, `take`).
   */
  takesOffsets?: true;
}

/**
 * The map. `read` covers GetItem/BatchGetItem/Query and the ConditionCheckItem of a
 * transaction's `check` op; `readwrite` adds PutItem and DeleteItem. The adapter's one
 * UpdateItem is the offset take, granted apart and only on sequencer keys (`takesOffsets`);
 * it never uses Scan.
 *
 * Why each entry (services built in `server/service/runtime.ts`; every function builds all of
 * them, so commit hooks registered by one service run inside another's routes):
 * - Every push (log routes, transactions, DLQ retries) commits segments and markers (`log`),
 *   reserves transactionIds (`dedup`), creates queues and partitions (`meta`), writes large
 *   segments to the bucket, and marks the partition READY for each lease group in `leases`
 *   (the ReadyIndex commit hook of the lease service).
 * - Lease routes (pop, ack, renew, transaction) keep cursors and leases in `leases`, register
 *   groups in `meta`, file dead letters in `dlq` (large payloads as `dlq/` blobs), read
 *   segments (and their blobs), and push (transactions).
 * - Claim routes keep positions, claims and dead letters in `claims`, register groups in
 *   `meta` and read the log (and its blobs); they never push.
 * - Reading one message (log routes) tells whether it is a dead letter (`dlq`, read).
 * - Every HTTP function stores its activity buckets once a minute (`meta`, `ACT#…`), for the
 *   status and analytics series.
 * - Admin routes configure and delete queues (`meta`: the queue, its partitions' names, the
 *   tombstones; the lease groups' scan state in `leases`), list, retry (a push) and delete
 *   dead letters (`dlq` and its blobs) and manage lease groups (`leases`, `meta`); the admin
 *   reads (resources, status, consumer groups, message browsing) read every table's positions
 *   and the log, and a partition seek moves record-claim groups too (`claims`).
 * - Maintenance sweeps orphan segment and dead-letter blobs (list, delete; abort markers in
 *   `log` and `dlq`, cursors in `meta`), applies retention (segments and their blobs, idle partitions retired in `meta`;
 *   claim positions read in `claims`), and removes what deleted queues and retired partitions
 *   left (tombstones in `meta`): segments, markers and blobs (`log`, the bucket), reservations
 *   (`dedup`), cursors and READY marks (`leases`), claim state (`claims`), DLQ rows and their
 *   blobs (`dlq`).
 */
export const FUNCTION_ACCESS: Record<FunctionName, FunctionAccess> = {
  log: {
    tables: { meta: 'readwrite', log: 'readwrite', dedup: 'readwrite', leases: 'readwrite', dlq: 'read' },
    bucket: ['read', 'write'],
    takesOffsets: true,
  },
  leases: {
    tables: { meta: 'readwrite', log: 'readwrite', dedup: 'readwrite', leases: 'readwrite', dlq: 'readwrite' },
    bucket: ['read', 'write'],
    takesOffsets: true,
  },
  claims: {
    tables: { meta: 'readwrite', log: 'read', claims: 'readwrite' },
    bucket: ['read'],
  },
  admin: {
    tables: {
      meta: 'readwrite',
      log: 'readwrite',
      dedup: 'readwrite',
      leases: 'readwrite',
      claims: 'readwrite',
      dlq: 'readwrite',
    },
    bucket: ['read', 'write', 'delete'],
    takesOffsets: true,
  },
  maintenance: {
    tables: {
      meta: 'readwrite',
      log: 'readwrite',
      dedup: 'readwrite',
      leases: 'readwrite',
      claims: 'readwrite',
      dlq: 'readwrite',
    },
    bucket: ['read', 'delete', 'list'],
  },
};

/**
 * The functions whose routes long-poll (waiting pops; claim polls with `waitMs`): they take
 * wait slots in `meta` (granted above) and, with the default cap (`SLUICE_MAX_WAITERS=auto`),
 * read the account's Lambda concurrency once per process (`lambda:GetAccountSettings`).
 */
export const WAITING_FUNCTIONS: readonly FunctionName[] = ['leases', 'claims'];

/**
 * What AWS itself does with a function's role, besides the function's code: Lambda writes the
 * function's logs with it (always); for the notifier the event-source mapping reads the `log`
 * table's stream with it and sends the batches it gives up on to its on-failure queue
 * (`sqs:SendMessage`); and with tracing on (`tracing`, lib/context.ts) Lambda sends each
 * function's X-Ray segments with it ({@link platformUsesOf}). The IAM proof
 * (test/cdk/function-iam.test.ts) checks each use against the synthesized role as it checks
 * the code's requests.
 */
export type PlatformUse = 'logs' | 'logStreamReads' | 'failureDestination' | 'traces';
export type PlatformRole = FunctionName | 'notifications' | 'authorizer';
export const PLATFORM_USES: Record<PlatformRole, readonly PlatformUse[]> = {
  log: ['logs'],
  leases: ['logs'],
  claims: ['logs'],
  admin: ['logs'],
  maintenance: ['logs'],
  notifications: ['logs', 'logStreamReads', 'failureDestination'],
  authorizer: ['logs'],
};

/**
 * What the platform does with `role`'s role in a deployment with or without tracing: with it,
 * every function's also sends traces.
 *
 * @example
 * ```ts
 * platformUsesOf('log', { tracing: true }); // ['logs', 'traces']
 * ```
 */
export function platformUsesOf(role: PlatformRole, opts: { tracing?: boolean | undefined }): readonly PlatformUse[] {
  return opts.tracing ? [...PLATFORM_USES[role], 'traces'] : PLATFORM_USES[role];
}

/**
 * What Lambda's X-Ray integration sends with a traced function's role (the segments of each
 * sampled invocation, and the X-Ray daemon's telemetry). Both act on no resource: IAM accepts
 * only "*". CDK grants them when a function has `tracing: ACTIVE`.
 */
export const TRACING_ACTIONS: readonly string[] = ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'];

/** What a function does with payloads of queues with `encryptionEnabled`. */
export type PayloadKeyUse = 'seal' | 'open';

/**
 * Which functions seal payloads (KMS GenerateDataKey: a data key per process, for pushes) and
 * which open them (KMS Decrypt: unwrapping the stored data keys, for reads). Only these get
 * `SLUICE_KMS_KEY_ID` and a grant on the key, when the deployment has one.
 *
 * - `log`: pushes seal; reading messages (by offset, by transactionId) opens.
 * - `leases`: pops open; transactions push (seal).
 * - `claims`: polls read the log (open); claim routes never push.
 * - `admin`: `/configure` refuses `encryptionEnabled` without a key; listing dead letters
 *   opens them, retrying re-pushes them (seal).
 * - `maintenance`: retention, sweeps and lag never read a payload.
 */
export const PAYLOAD_KEY_ACCESS: Record<FunctionName, readonly PayloadKeyUse[]> = {
  log: ['seal', 'open'],
  leases: ['seal', 'open'],
  claims: ['open'],
  admin: ['seal', 'open'],
  maintenance: [],
};

/** The KMS action each use needs. */
export const PAYLOAD_KEY_ACTIONS: Record<PayloadKeyUse, string> = {
  seal: 'kms:GenerateDataKey',
  open: 'kms:Decrypt',
};

/** The offset take's action and the sequencer keys it is limited to (`dynamodb:LeadingKeys`). */
export const TAKE_ACTION = 'dynamodb:UpdateItem';
export const TAKE_KEY_PATTERN = `${SEQUENCER_PK_PREFIX}*`;

export const TABLE_ACTIONS: Record<TableAccess, string[]> = {
  read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'],
  readwrite: [
    'dynamodb:GetItem',
    'dynamodb:BatchGetItem',
    'dynamodb:Query',
    'dynamodb:ConditionCheckItem',
    'dynamodb:PutItem',
    'dynamodb:DeleteItem',
  ],
};

/** Object actions (on the {@link BLOB_PREFIXES}); `list` is ListBucket, limited to {@link LIST_PREFIXES}. */
export const BUCKET_ACTIONS: Record<BucketOp, string> = {
  read: 's3:GetObject',
  write: 's3:PutObject',
  delete: 's3:DeleteObject',
  list: 's3:ListBucket',
};

/** Every key prefix Sluice writes blobs under (segments, large dead letters): object permissions are scoped to them. */
export const BLOB_PREFIXES: readonly string[] = [SEGMENT_BLOB_PREFIX, DLQ_BLOB_PREFIX];
/** What maintenance lists (the orphan sweeps walk the segments and the dead-letter payloads). */
export const LIST_PREFIXES: readonly string[] = [SEGMENT_BLOB_PREFIX, DLQ_BLOB_PREFIX];
