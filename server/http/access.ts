/**
 * What a caller may see of queues it did not name: the rules for routes that show or touch
 * things on several queues at once (consumer groups; metrics to come). A caller learns nothing
 * of a queue outside them, not even that something exists there: a group only on such queues
 * is answered as one that does not exist, and an admin call leaves them alone.
 *
 * On the open local server every grant holds, so everything is visible; with grants, each
 * rule names the grant it needs. Requests that name queues only by partition id (acks) have
 * them checked by {@link authorizePartitions}.
 */
import type { Services } from '../service/runtime.js';
import type { Action } from './route.js';

/** `RouteInput.allowed`: whether the caller may do an action on a queue. */
export type Allowed = (queue: string, action?: Action) => boolean;

/**
 * Whether the caller may see the consumer groups on `queue`: it may consume or manage it.
 *
 * @example
 * ```ts
 * const r = await services.leaseGroups.delete(group, { deleteMetadata: true, among: seesGroupsOn(allowed) });
 * ```
 */
export const seesGroupsOn =
  (allowed: Allowed) =>
  (queue: string): boolean =>
    allowed(queue, 'consume') || allowed(queue, 'manage');

/**
 * Whether the caller may see metrics labelled by `queue` (or by a group on it): `manage` on
 * it. Unlabelled metrics are public; labelled ones are public only on the open server.
 *
 * @example
 * ```ts
 * const series = all.filter((s) => s.queue === undefined || seesMetricsOf(allowed)(s.queue));
 * ```
 */
export const seesMetricsOf =
  (allowed: Allowed) =>
  (queue: string): boolean =>
    allowed(queue, 'manage');

/**
 * Resolves the queues of acked partitions and checks the caller may consume them: for routes
 * that learn their queues from partition ids (acks, lease extension, transactions).
 *
 * @example
 * ```ts
 * await authorizePartitions(services, body.acknowledgments.map((a) => a.partitionId), authorize);
 * ```
 */
export async function authorizePartitions(
  services: Pick<Services, 'queues'>,
  partitionIds: Iterable<string>,
  authorize: (queue: string, action?: Action) => void,
): Promise<void> {
  for (const partitionId of new Set(partitionIds)) {
    const partition = await services.queues.partitionById(partitionId);
    if (partition) authorize(partition.queue, 'consume');
  }
}
