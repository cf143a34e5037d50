/**
 * The API's JSON replies as the black-box tests read them: only the fields a test reads
 * directly (the rest is checked with `toMatchObject`). Written from the outside on purpose,
 * not imported from the server: a reply that drifts fails an assertion at run time.
 *
 * @example
 * ```ts
 * const r = await call<PushReply>(url, 'POST', '/api/v1/push', { items: [{ queue: 'q', payload: 1 }] });
 * r.body[0]?.partition_id;
 * ```
 */

/** Every 4xx/5xx: a message and a stable code. */
export interface ErrorReply {
  error: string;
  code: string;
}

/** One item's result of `POST /api/v1/push` (Queen's snake_case). */
export interface PushResultReply {
  index: number;
  status: 'queued' | 'duplicate' | 'failed';
  message_id: string;
  partition_id: string;
  transaction_id: string;
}
export type PushReply = PushResultReply[];

/** `POST /api/v1/configure`. */
export interface ConfigureReply {
  configured: boolean;
  queueId: string;
  partitionId: string;
  options: Record<string, unknown>;
}

/** A message as pop delivers it. */
export interface PoppedMessage<D = unknown> {
  id: string;
  transactionId: string;
  partitionId: string;
  partition: string;
  leaseId: string;
  consumerGroup: string;
  data: D;
  createdAt: string;
}

/** `GET /api/v1/pop/...`. */
export interface PopReply<D = unknown> {
  leaseId: string;
  partitionsClaimed: number;
  consumerGroup: string;
  messages: PoppedMessage<D>[];
}

/** One acknowledgement's result (`/api/v1/ack` and `/api/v1/ack/batch` answer an array of them). */
export interface AckResultReply {
  success: boolean;
  leaseReleased: boolean;
  dlq?: boolean;
  error?: string;
}
export type AckReply = AckResultReply[];

/** `POST /api/v1/lease/:leaseId/extend`. */
export interface ExtendReply {
  success: boolean;
  renewed: number;
  newExpiresAt: string;
  expiresAt: string;
  lease_expires_at: string;
}

/** `GET /api/v1/queues/:queue/partitions/:partition/messages`. */
export interface LogPageReply<D = unknown> {
  messages: { offset: number; data: D }[];
  next: number;
}

/** One dead letter of `GET /api/v1/dlq`. */
export interface DlqEntryReply {
  errorMessage: string;
  data: unknown;
  createdAt: string;
  failedAt: string;
}

/** `GET /api/v1/dlq`. */
export interface DlqPageReply {
  messages: DlqEntryReply[];
  total: number;
  pagination: { limit: number; offset: number };
}

/** `POST /api/v1/dlq/retry` (one page of a bulk redrive). */
export interface RedriveReply {
  moved: number;
  failed: number;
  more: boolean;
  next?: string;
}

/** A lease consumer group with its per-queue lag (`GET /api/v1/consumer-groups[/:group]`). */
export interface ConsumerGroupReply {
  name: string;
  queues: {
    queue: string;
    subscription: { mode: string; from: string | null };
    detail: { partition: string; committed: number; next: number; lagMessages: number }[];
  }[];
}

/** A row of `GET /api/v1/consumer-groups` (a bare array): Queen's fields for one (group, queue). */
export interface ConsumerGroupRowReply {
  name: string;
  kind: 'lease' | 'claim';
  queueName: string;
  topics: string[];
  members: number;
  partitionsWithLag: number;
  totalLag: number;
  maxTimeLag: number;
  state: 'Stable' | 'Lagging' | 'Dead';
  queues: { queue: string; lagMessages: number; lagSeconds: number }[];
}

/** A row of `GET /api/v1/consumer-groups/lagging` (a bare array, snake_case). */
export interface LaggingRowReply {
  consumer_group: string;
  queue_name: string;
  partition_name: string;
  offset_lag: number;
  time_lag_seconds: number;
}

/** `GET /api/v1/messages/:partitionId/:transactionId`. */
export interface MessageReply {
  status: string;
  consumerGroups: unknown;
  data: unknown;
  createdAt: string;
}

/** `POST /api/v1/transaction`. */
export interface TransactionReply {
  success: boolean;
  results: Record<string, unknown>[];
}

/** A record of a claim group's poll. */
export interface ClaimedRecord<D = unknown> {
  offset: number;
  attempts: number;
  data: D;
}

/** `POST .../claim-groups/:group/poll`. */
export interface PollReply<D = unknown> {
  records: ClaimedRecord<D>[];
}
