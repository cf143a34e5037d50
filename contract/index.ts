/**
 * `@sluice/contract`: Sluice's HTTP API in one place, as data. Every route (method, path, the
 * Lambda function group serving it, its access rule, summary, and zod schemas for its params,
 * query, body and answers), grouped by concept under `routes/`; the error codes with their
 * statuses (`errors.ts`); the shared schema pieces (`schemas.ts`, `names.ts`,
 * `queue-options.ts`, `limits.ts`). It depends on zod only (test/unit/contract.test.ts holds it
 * to that), so the server, the stack, the docs and the tests can all read it.
 *
 * Not published: a private workspace folder, like the console. The server implements it
 * (`server/http/handlers/`), `lib/` deploys its routes, `npm run openapi` writes it out as
 * docs/openapi.json, and the client's error codes are held to its table.
 *
 * Versioning the wire: within `/api/v1` a change is additive only (a new route, a new
 * optional request field, a new answer field, a new error code); clients ignore what they do
 * not know. Removing or renaming a field, tightening a request schema or changing a status is
 * breaking and gets a new path prefix (`/api/v2`), served next to v1 while clients move. The
 * client package's version follows: a minor release for additive changes it uses, a major one
 * when it moves to a new prefix. Queen's routes keep Queen's shapes (docs/QUEEN-COMPAT.md).
 *
 * @example
 * ```ts
 * import { CONTRACT, messages } from '../contract/index.js';
 * messages.push.response[201]; // the push answer's schema
 * CONTRACT.filter((r) => r.group === 'claims').length; // 12
 * ```
 */
import * as analytics from './routes/admin/analytics.js';
import * as resources from './routes/admin/resources.js';
import * as status from './routes/admin/status.js';
import * as system from './routes/admin/system.js';
import * as claims from './routes/claims.js';
import * as consumerGroups from './routes/consumer-groups.js';
import * as deadLetters from './routes/dead-letters.js';
import * as leases from './routes/leases.js';
import * as messages from './routes/messages.js';
import * as notifications from './routes/notifications.js';
import * as queues from './routes/queues.js';
import * as targets from './routes/targets.js';
import type { RouteContract } from './route.js';

export {
  analytics,
  claims,
  consumerGroups,
  deadLetters,
  leases,
  messages,
  notifications,
  queues,
  resources,
  targets,
  status,
  system,
};
export * from './errors.js';
export * from './route.js';

/** Every route Sluice deploys, in route-table order (the local server mounts them all; each Lambda its group). */
export const CONTRACT: readonly RouteContract[] = [
  queues.configure,
  queues.describeQueue,
  queues.patchQueue,
  queues.deleteQueue,
  messages.push,
  messages.getMessage,
  messages.readMessages,
  system.health,
  system.ready,
  claims.claimPoll,
  claims.claimAck,
  claims.claimNack,
  claims.claimExtend,
  claims.claimDeadLetter,
  claims.claimListDeadLetters,
  claims.claimRedrive,
  claims.claimDiscard,
  claims.claimCreate,
  claims.claimSeek,
  claims.claimDescribe,
  claims.claimDelete,
  leases.popPartition,
  leases.popQueue,
  leases.popMatching,
  leases.ack,
  leases.ackBatch,
  leases.extendLease,
  leases.transaction,
  leases.ackAndPop,
  deadLetters.listDlq,
  deadLetters.redriveDlq,
  deadLetters.retryMessage,
  deadLetters.deleteMessage,
  consumerGroups.listGroups,
  consumerGroups.laggingGroups,
  consumerGroups.describeGroup,
  consumerGroups.deleteGroup,
  consumerGroups.deleteGroupOnQueue,
  consumerGroups.setSubscription,
  consumerGroups.seekGroup,
  consumerGroups.seekPartition,
  notifications.notificationTicket,
  resources.listQueues,
  resources.describeQueue,
  resources.overview,
  resources.namespaces,
  resources.tasks,
  status.status,
  status.statusQueues,
  status.statusQueue,
  status.statusAnalytics,
  messages.browseMessages,
  analytics.queueOps,
  analytics.queueLag,
  analytics.parkedReplicas,
  analytics.retention,
  analytics.workerMetrics,
  analytics.systemMetrics,
  system.maintenanceStatus,
  system.popMaintenanceStatus,
  system.statsRefresh,
  system.tracesByName,
  system.traceNames,
  system.messageTraces,
  system.openApi,
];

/** Routes only the local server serves (on AWS, CloudWatch holds the metrics): never deployed. */
export const LOCAL_CONTRACT: readonly RouteContract[] = [
  system.metrics,
  system.metricsPrometheus,
  // Served by the local server only until the AWS dispatcher exists (docs/TARGETS.md).
  targets.putTarget,
  targets.getTarget,
  targets.listTargets,
  targets.deleteTarget,
  targets.pauseTarget,
  targets.resumeTarget,
  targets.rotateTargetSecret,
];
