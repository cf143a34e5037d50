/**
 * Saying so when a command names a queue or a record-claim group that does not exist, instead
 * of printing "no messages" (or, for `claims poll`, creating the group). Partition-lease groups
 * are created by naming them (as in Queen), so they are never checked.
 */
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

/** Throws {@link NotFoundError} unless `queue` exists (one request). */
export async function requireQueue(sluice: Sluice, queue: string, signal?: AbortSignal): Promise<void> {
  try {
    await sluice.queue(queue).describe(signal ? { signal } : {});
  } catch (e) {
    if (missingOf(e) === undefined) throw e;
    throw new NotFoundError(
      `queue ${JSON.stringify(queue)} does not exist (a push creates it, or \`sluice configure ${queue}\`)`,
    );
  }
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
