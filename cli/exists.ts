/**
 * Saying so when a command names a queue, a partition or a record-claim group that does not
 * exist, instead of printing "no messages" (or, for `claims poll`, creating the group).
 * Partition-lease groups are created by naming them (as in Queen), so they are never checked;
 * partitions are created by pushes, so naming one that was never pushed to is a mistake.
 */
import { Browse } from '../client/browse.js';
import type { ClaimGroup } from '../client/claims.js';
import { SluiceApiError } from '../client/errors.js';
import type { ClaimGroupState } from '../client/types.js';
import type { Sluice } from '../client/sluice.js';
import { NotFoundError } from './errors.js';

/** The answer was a 404 naming what is missing (`details.missing` in the error body), if it says. */
function missingOf(e: unknown): string | undefined {
  if (!(e instanceof SluiceApiError) || e.status !== 404) return undefined;
  const m = (e.body as { missing?: unknown } | undefined)?.missing;
  return typeof m === 'string' ? m : 'unknown';
}

const queueMissing = (queue: string): NotFoundError =>
  new NotFoundError(
    `queue ${JSON.stringify(queue)} does not exist (a push creates it, or \`sluice configure ${queue}\`)`,
  );

/** Throws {@link NotFoundError} unless `queue` exists (one request). */
export async function requireQueue(sluice: Sluice, queue: string, signal?: AbortSignal): Promise<void> {
  try {
    await sluice.queue(queue).describe(signal ? { signal } : {});
  } catch (e) {
    if (missingOf(e) === undefined) throw e;
    throw queueMissing(queue);
  }
}

/**
 * Throws {@link NotFoundError} unless `queue` exists and has `partition` (one request: the
 * queue's partition listing, `GET /api/v1/resources/queues/{queue}`). The pop routes answer an
 * unknown partition as an empty one (204), so only this listing tells the two apart.
 *
 * @example
 * ```ts
 * if (msgs.length === 0) await requirePartition(sluice, 'orders', 'eu'); // throws: queue "orders" has no partition "eu"
 * ```
 */
export async function requirePartition(
  sluice: Sluice,
  queue: string,
  partition: string,
  signal?: AbortSignal,
): Promise<void> {
  let names: string[];
  try {
    const detail = await new Browse(sluice.http).queue(queue, signal ? { signal } : {});
    names = detail.partitions.map((p) => p.name);
  } catch (e) {
    if (missingOf(e) === undefined) throw e;
    throw queueMissing(queue);
  }
  if (!names.includes(partition)) throw partitionMissing(queue, partition, names);
}

/** The error for a partition `queue` does not have, listing (the first ten of) those it has. */
export function partitionMissing(queue: string, partition: string, has: string[]): NotFoundError {
  const list = has.length === 0 ? 'none yet' : has.slice(0, 10).join(', ') + (has.length > 10 ? ', …' : '');
  return new NotFoundError(
    `queue ${JSON.stringify(queue)} has no partition ${JSON.stringify(partition)} (it has ${list}; a push creates one)`,
  );
}

/** Runs a call on a record-claim group, a 404 turned into {@link NotFoundError} naming what is missing. */
export async function onClaimGroup<T>(g: ClaimGroup, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    throw claimNotFound(e, g);
  }
}

/** The message for a record-claim group call that answered 404, or the error itself. */
function claimNotFound(e: unknown, g: ClaimGroup): unknown {
  const missing = missingOf(e);
  if (missing === undefined) return e;
  const where = `${g.queue}/${g.partition}`;
  if (missing === 'group')
    return new NotFoundError(
      `record-claim group ${JSON.stringify(g.group)} does not exist on ${where} ` +
        `(create it: sluice claims create ${g.queue} ${g.partition} ${g.group})`,
    );
  if (missing === 'partition')
    return new NotFoundError(`queue ${JSON.stringify(g.queue)} has no partition ${JSON.stringify(g.partition)}`);
  if (missing === 'queue') return new NotFoundError(`queue ${JSON.stringify(g.queue)} does not exist`);
  return new NotFoundError((e as Error).message);
}

/** The group's state; throws {@link NotFoundError} naming what is missing (queue, partition or group). */
export function requireClaimGroup(g: ClaimGroup): Promise<ClaimGroupState> {
  return onClaimGroup(g, () => g.describe());
}
