/** The fields of the API's answers the console reads (docs/QUEEN-COMPAT.md, docs/openapi.json). */

export interface Counters {
  total: number;
  pending: number;
  processing: number;
  completed: number;
  failed?: number;
  deadLetter?: number;
}

/** A row of `GET /api/v1/resources/queues`. */
export interface QueueRow {
  name: string;
  namespace: string;
  task: string;
  partitionCount: number;
  messages: Counters;
  leaseTime: number;
  retryLimit: number;
}

/** A consumer group's position on one partition: a partition-lease or a record-claim group. */
export interface PartitionConsumer {
  group: string;
  kind: 'lease' | 'claim';
  nextOffset: number;
  lag: number;
  inFlight: number;
  leaseExpiresAt: string | null;
}

export interface PartitionDetail {
  id: string;
  name: string;
  messages: Counters;
  firstOffset: number;
  nextOffset: number;
  lastActivity: string | null;
  consumers: PartitionConsumer[];
}

/** `GET /api/v1/resources/queues/{queue}`. */
export interface QueueDetail {
  name: string;
  namespace: string;
  task: string;
  partitions: PartitionDetail[];
  totals: Counters;
}

export interface LogMessage {
  offset: number;
  transactionId: string;
  createdAt: string;
  traceId: string | null;
  data: unknown;
}

/** `GET /api/v1/queues/{queue}/partitions/{partition}/messages`. */
export interface LogPage {
  partitionId: string;
  messages: LogMessage[];
  next: number;
}

/** `GET /api/v1/dlq` rows. */
export interface DeadLetter {
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
  consumerGroup: string;
  errorMessage: string | null;
  retryCount: number;
  data: unknown;
  failedAt: string;
}

/** `POST /api/v1/dlq/retry`: one page of a bulk redrive. */
export interface RedrivePage {
  moved: number;
  failed: number;
  more: boolean;
  next?: string;
}

/** `GET .../groups/{group}` of a record-claim group. */
export interface ClaimGroup {
  committed: number;
  tail: number;
  lag: number;
  inFlight: number;
  owed: number;
  delayed: number;
  deadLetters: number;
}
