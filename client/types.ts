/**
 * The shapes the client hands back. Field names follow the API (camelCase), with push
 * results normalised from the Queen wire's snake_case.
 */

/** Queue options of `POST /api/v1/configure` (omitted ones take the server's defaults). */
export interface QueueOptions {
  leaseTime?: number;
  retryLimit?: number;
  priority?: number;
  retryDelay?: number;
  maxSize?: number;
  ttl?: number;
  deadLetterQueue?: boolean;
  dlqAfterMaxRetries?: boolean;
  delayedProcessing?: number;
  windowBuffer?: number;
  retentionSeconds?: number;
  completedRetentionSeconds?: number;
  retentionEnabled?: boolean;
  encryptionEnabled?: boolean;
  maxWaitTimeSeconds?: number;
  dedupWindowSeconds?: number;
  /** Record claims: default claim duration (ms). */
  visibilityTimeoutMs?: number;
  /** Record claims: deliveries before a record is dead-lettered. */
  maxAttempts?: number;
  /** Record claims: most records handed out and unsettled per (partition, group). */
  maxInFlight?: number;
  /** Record claims: cap on visibility, extensions and nack delays (ms). */
  maxVisibilityMs?: number;
}

/** A queue as `GET /api/v1/queues/{queue}` answers it. */
export interface QueueInfo {
  queue: string;
  queueId: string;
  namespace: string | null;
  task: string | null;
  createdAt: string;
  /** False for a queue a push created (it has the default options). */
  configured: boolean;
  options: QueueOptions;
  /** The options the client set (the rest are defaults); `ttl` and `retryDelay` act only when named here. */
  explicitOptions: string[];
}

export interface ConfigureResult {
  configured: boolean;
  queueId: string;
  partitionId: string;
  queue: string;
  namespace: string | null;
  task: string | null;
  options: Required<QueueOptions>;
}

/** One message to push. Anything else pushed is sent whole as the payload (Queen's rule). */
export interface PushItem<T = unknown> {
  /** The payload (takes precedence over `payload`). */
  data?: T;
  payload?: T;
  /** Dedup key; a UUIDv7 is made when absent, so a retried push cannot duplicate. */
  transactionId?: string;
  traceId?: string | null;
  /** Overrides the builder's partition for this item. */
  partition?: string;
}

export type PushStatus = 'queued' | 'duplicate' | 'failed';

export interface PushResult {
  /** Position in the array given to `push()`. */
  index: number;
  status: PushStatus;
  transactionId: string;
  messageId: string | null;
  partitionId: string | null;
  queue: string;
  partition: string | null;
  offset?: number;
  error?: string;
}

/** A message delivered under a partition lease. */
export interface Message<T = unknown> {
  id: string;
  transactionId: string;
  partitionId: string;
  partition: string;
  queue: string;
  /** '' when the pop was auto-acked. */
  leaseId: string;
  consumerGroup: string;
  data: T;
  createdAt: string;
  traceId: string | null;
  offset?: number;
  [extra: string]: unknown;
}

export type AckStatus = 'completed' | 'success' | 'failed' | 'retry' | 'dlq';

export interface AckResult {
  index: number;
  transactionId: string;
  success: boolean;
  error: string | null;
  queueName?: string | null;
  partitionName?: string | null;
  leaseReleased?: boolean;
  dlq?: boolean;
}

export interface RenewResult {
  leaseId: string;
  success: boolean;
  renewed: number;
  newExpiresAt: string | null;
}

export interface TransactionResult {
  transactionId: string;
  success: boolean;
  results: {
    index: number;
    type: 'push' | 'ack';
    success: boolean;
    transactionId?: string;
    messageId?: string;
    partitionId?: string;
    queueName?: string;
    error?: string | null;
    dlq?: boolean;
  }[];
  error?: string;
}

export interface DlqEntry<T = unknown> {
  id: string;
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
  consumerGroup: string;
  errorMessage: string;
  retryCount: number;
  data: T;
  createdAt: string;
  failedAt: string;
  [extra: string]: unknown;
}

export interface DlqPage<T = unknown> {
  messages: DlqEntry<T>[];
  /** Rows on this page (page until a short one comes back). */
  total: number;
  pagination?: { limit: number; offset: number };
}

export interface RetryMessageResult {
  replayed: boolean;
  dlqRowRemoved: boolean;
  /** The replay's new transactionId. */
  transactionId?: string;
  [extra: string]: unknown;
}

/** `DELETE /api/v1/messages/{partitionId}/{transactionId}`: Queen's shape plus Sluice's row count. */
export interface DeleteMessageResult {
  /** False when there was no dead-letter row to delete (the answer is still 200, as in Queen). */
  success: boolean;
  partitionId: string;
  transactionId: string;
  /** What happened, in words. */
  message: string;
  rowsRemoved: number;
  [extra: string]: unknown;
}

/** One call of the bulk redrive (`POST /api/v1/dlq/retry`). */
export interface RedriveResult {
  moved: number;
  failed: number;
  /** Whether dead letters remain after this call's rows (call again with `after: next`). */
  more: boolean;
  /** Where this call stopped: pass it as `after` to continue past rows that failed. */
  next?: string | null;
  errors?: string[];
  [extra: string]: unknown;
}

export interface PartitionLag {
  partition: string;
  partitionId: string;
  committed: number | null;
  next: number;
  lagMessages: number;
  lagSeconds: number;
  leaseExpiresAt: string | number | null;
  retryCount?: number;
  redeliveries?: number;
  [extra: string]: unknown;
}

export interface QueueLag {
  queue: string;
  partitions: number;
  lagMessages: number;
  lagSeconds: number;
  /** Partitions with a live lease for this group. */
  leasedPartitions?: number;
  subscription?: { mode: string; from: string | null };
  detail?: PartitionLag[];
  [extra: string]: unknown;
}

export interface ConsumerGroup {
  name: string;
  queues: QueueLag[];
  lagMessages: number;
  maxLagSeconds: number;
  [extra: string]: unknown;
}

/** A record delivered under a claim. */
export interface ClaimRecord<T = unknown> {
  offset: number;
  transactionId: string;
  data: T;
  /** Deliveries of this record, this one included (1 = first attempt). */
  attempts: number;
  /** Offsets directly below this one settled without delivery. */
  skippedBefore?: number;
  createdAt: string;
}

export interface PollResult<T = unknown> {
  records: ClaimRecord<T>[];
  /** True when the group was at its in-flight cap. */
  capped: boolean;
}

/**
 * Where a claim group starts or seeks to: the oldest retained record, the tail, an offset, or
 * the first record committed after an instant (ISO-8601 text or epoch ms).
 */
export type ClaimStart = 'earliest' | 'latest' | { offset: number } | { at: string | number };

export interface ClaimGroupState {
  committed: number;
  tail: number;
  lag: number;
  inFlight: number;
  owed: number;
  delayed?: number;
  deadLetters: number;
  [extra: string]: unknown;
}
