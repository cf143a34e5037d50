/**
 * The Sluice TypeScript client (`import { Sluice } from '@sluice/client'`). See docs/CLIENT.md.
 *
 * @example
 * ```ts
 * import { Sluice } from '@sluice/client';
 * const sluice = new Sluice({ endpoint: 'http://127.0.0.1:6632' });
 * await sluice.queue('orders').partition('eu').push([{ data: { id: 1 } }]);
 * const r = await sluice.queue('orders').partition('eu').send({ data: { id: 2 } }); // gathered with other sends
 * await sluice.queue('orders').group('billing').batch(10).consume(async (msgs) => bill(msgs), { signal });
 * ```
 */
export {
  Sluice,
  QueueRef,
  QUEUE_MODE,
  DEFAULT_PARTITION,
  type SluiceOptions,
  type QueueSpec,
  type PushOptions,
} from './sluice.js';
export { type SendOptions } from './producer.js';
export { ProducerStamps, type Stamp } from './producer-stamps.js';
export {
  ClaimGroup,
  type ClaimConsumeOptions,
  type ClaimConsumeStats,
  type ClaimContext,
  type ClaimHandler,
  type PollOptions,
} from './claims.js';
export { type LeaseConsumeOptions, type LeaseConsumeStats, type LeaseContext, type LeaseHandler } from './consume.js';
export { type ClaimBatchContext, type ClaimBatchHandler, type ClaimBatchOptions } from './claim-batches.js';
export { type BatchItemFailure, type BatchResponse } from './batch-outcome.js';
export {
  verifyTargetSignature,
  TARGET_SIGNATURE_HEADER,
  DEFAULT_SIGNATURE_TOLERANCE_S,
  type VerifyTargetSignatureOptions,
} from './target-signature.js';
export { Transaction, TransactionPush } from './transaction.js';
export {
  Browse,
  type BrowseQuery,
  type BrowseStatus,
  type BrowsedMessage,
  type MessageCounters,
  type PartitionConsumer,
  type PartitionSummary,
  type QueueDetail,
  type QueueSummary,
} from './browse.js';
export { DeadLetterQueue, GroupAdmin, type RedriveProgress } from './admin.js';
export { Targets } from './targets.js';
export { SluiceError, SluiceApiError, SluiceNetworkError, SluiceTimeoutError, type SluiceErrorCode } from './errors.js';
export {
  type Auth,
  type SigV4Auth,
  type AwsCredentials,
  authenticator,
  regionFromHost,
  isExecuteApiHost,
} from './auth.js';
export { DEFAULT_ENDPOINT, Transport, type RetryEvent, type TransportOptions } from './http.js';
export { DEFAULT_RETRY, backoffDelay, isRetryable, type RetryKind, type RetryPolicy } from './retry.js';
export { uuidv7 } from './uuid.js';
export { DEFAULT_TARGET_CONCURRENCY, processTargetEvent, type TargetRecordOf } from './target-handler.js';
export type * from './types.js';
export type * from './wire.js';
export { API_ERROR_CODES } from './wire.js';
