/**
 * The shapes the client hands back and takes. The wire's own shapes are the contract's,
 * generated into wire.ts (`npm run wire-types`): answers the client returns as they come are
 * aliases of those. The rest are the client's, defined from the wire types where they derive
 * from one: payloads typed by the caller (`T`), push results normalised from Queen's snake_case,
 * a group listing merged per group.
 *
 * @example
 * ```ts
 * import type { QueueInfo, Message } from '@sluice/client';
 * const leaseTime = (q: QueueInfo): number => q.options.leaseTime;
 * const ids = (msgs: Message<{ id: number }>[]) => msgs.map((m) => m.data.id);
 * ```
 */
import type {
  AckAnswer,
  ClaimDescribeAnswer,
  ClaimPollAnswer,
  ClaimSeekBody,
  ConfigureAnswer,
  DeleteGroupAnswer,
  DeleteMessageAnswer,
  DeleteQueueAnswer,
  DescribeGroupAnswer,
  ExtendLeaseAnswer,
  GetMessageAnswer,
  ListDlqAnswer,
  PatchQueueAnswer,
  PopAnswer,
  PushItemInput,
  PushResultAnswer,
  QueueOptionsInput,
  QueuesDescribeQueueAnswer,
  ReadMessagesAnswer,
  RedriveDlqAnswer,
  RetryMessageAnswer,
  SeekGroupAnswer,
  TransactionAnswer,
} from './wire.js';

/** A wire shape with the caller's payload type in place of `data: unknown`. */
export type WithData<W, T> = Omit<W, 'data'> & { data: T };

// ------------------------------------------------------------------ queues

/**
 * Queue options the client sets (client-side: the wire's {@link QueueOptionsInput} without the
 * `null` that puts an option back to its default, which only `update()` takes).
 */
export type QueueOptions = { [K in keyof QueueOptionsInput]?: NonNullable<QueueOptionsInput[K]> };

/** A queue as `GET /api/v1/queues/{queue}` answers it (`configured` is false for a queue a push created). */
export type QueueInfo = QueuesDescribeQueueAnswer;
/** What `POST /api/v1/configure` answers. */
export type ConfigureResult = ConfigureAnswer;
/** What `PATCH /api/v1/resources/queues/{queue}` answers. */
export type UpdateResult = PatchQueueAnswer;
/** What `DELETE /api/v1/resources/queues/{queue}` answers. */
export type DeleteQueueResult = DeleteQueueAnswer;

// -------------------------------------------------------------------- push

/**
 * One message to push (client-side: the wire's {@link PushItemInput} without `queue`, which the
 * builder names). Anything else pushed is sent whole as the payload (Queen's rule).
 */
export interface PushItem<T = unknown> extends Omit<PushItemInput, 'queue' | 'data' | 'payload'> {
  /** The payload (takes precedence over `payload`). */
  data?: T;
  payload?: T;
}

export type PushStatus = PushResultAnswer['status'];

/**
 * One push result (client-side: the wire's {@link PushResultAnswer} in camelCase, with `index`
 * its position in the array given to `push()`, and nulls where an answer lacked an id).
 */
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

// ------------------------------------------------------------------ leases

/** A message of a pop's answer, as the wire has it. */
export type PopMessage = PopAnswer['messages'][number];

/**
 * A message delivered under a partition lease: the wire's {@link PopMessage} with the caller's
 * payload type (`leaseId` is '' when the pop was auto-acked); the consume loop may add fields.
 */
export type Message<T = unknown> = WithData<PopMessage, T> & { [extra: string]: unknown };

/**
 * A message of a replay (`QueueRef.read()`): the wire's, with where it is from added by the
 * client (the answer says it once for all).
 */
export type ReadMessage<T = unknown> = WithData<ReadMessagesAnswer['messages'][number], T> & {
  queue: string;
  partition: string;
  partitionId: string;
};

/** One message by partition id and transactionId, with per-group progress. */
export type StoredMessage<T = unknown> = WithData<GetMessageAnswer, T>;

/**
 * Ack statuses a caller may send (client-side: the contract checks a status by refinement, so
 * its schema has no type to derive; `success` is Queen's alias of `completed`).
 */
export type AckStatus = 'completed' | 'success' | 'failed' | 'retry' | 'dlq';

/** One ack result, in the request's order. */
export type AckResult = AckAnswer;
/**
 * One lease id's renewal (client-side: the wire's {@link ExtendLeaseAnswer} without Queen's
 * duplicate expiry fields, `newExpiresAt` taken from either).
 */
export type RenewResult = Pick<ExtendLeaseAnswer, 'leaseId' | 'success' | 'renewed' | 'newExpiresAt'>;
/** What `POST /api/v1/transaction` answers. */
export type TransactionResult = TransactionAnswer;

// ------------------------------------------------------------ dead letters

/** A dead letter (partition leases), with the caller's payload type. */
export type DlqEntry<T = unknown> = WithData<ListDlqAnswer['messages'][number], T>;

/** One page of dead letters (`total` is the rows on this page: page until a short one comes back). */
export type DlqPage<T = unknown> = Omit<ListDlqAnswer, 'messages'> & { messages: DlqEntry<T>[] };

/** What replaying one dead letter answers. */
export type RetryMessageResult = RetryMessageAnswer;
/** `DELETE /api/v1/messages/{partitionId}/{transactionId}`: Queen's shape plus Sluice's row count. */
export type DeleteMessageResult = DeleteMessageAnswer;
/** One call of the bulk redrive (`POST /api/v1/dlq/retry`). */
export type RedriveResult = RedriveDlqAnswer;

// --------------------------------------------------------- consumer groups

/** One lease group on one queue, in detail. */
export type GroupQueueLag = DescribeGroupAnswer['queues'][number];
/** One lease group on one partition. */
export type PartitionLag = NonNullable<GroupQueueLag['detail']>[number];

/**
 * A group's lag on one queue as a listing merges it (client-side: `/lagging` rows carry only
 * the counts, so the wire's other fields may be absent).
 */
export type QueueLag = Pick<GroupQueueLag, 'queue' | 'partitions' | 'lagMessages' | 'lagSeconds'> &
  Partial<Omit<GroupQueueLag, 'queue' | 'partitions' | 'lagMessages' | 'lagSeconds'>>;

/**
 * A partition-lease group as `groups.list()` and `groups.lagging()` give it (client-side: the
 * listing's rows, one per group and queue, merged into one entry per group).
 */
export type ConsumerGroup = Pick<DescribeGroupAnswer, 'name' | 'lagMessages' | 'maxLagSeconds'> & {
  queues: QueueLag[];
};
/** One lease group as `GET /api/v1/consumer-groups/{group}` answers it. */
export type ConsumerGroupDetail = DescribeGroupAnswer;
/** What deleting a group answers (`queueName` when on one queue). */
export type DeleteGroupResult = DeleteGroupAnswer & { queueName?: string };
/** What seeking a group on a queue answers. */
export type SeekResult = SeekGroupAnswer;

// ------------------------------------------------------------------ claims

/** A record delivered under a claim, with the caller's payload type. */
export type ClaimRecord<T = unknown> = WithData<ClaimPollAnswer['records'][number], T>;

/** What a poll answers, with the caller's payload type. */
export type PollResult<T = unknown> = Omit<ClaimPollAnswer, 'records'> & { records: ClaimRecord<T>[] };

/**
 * Where a claim group starts or seeks to: the oldest retained record, the tail, an offset, or
 * the first record committed after an instant (ISO-8601 text or epoch ms).
 */
export type ClaimStart = ClaimSeekBody['start'];

/** Where a record-claim group stands. */
export type ClaimGroupState = ClaimDescribeAnswer;
