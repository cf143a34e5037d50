/**
 * Where the consumer-group registry lives and how its items are encoded (table `meta`; the
 * layout is in docs/STORAGE.md, "Keys"): a group's registration per queue, the queues of a
 * group, the directory of group names, and the per-queue version that commits check.
 *
 * @example
 * ```ts
 * const item = await storage.items.get('meta', groupKeys.registration('orders', 'billing'));
 * const reg = item ? decodeRegistration(item) : undefined;
 * ```
 */
import type { Item, ItemKey, Json, WriteOp } from '../../storage/port.js';

/**
 * How a group consumes: `lease` (Queen's partition leases) or `claim` (Felix's record
 * claims). Fixed on first use; using a group the other way is refused with 409.
 */
export type GroupKind = 'lease' | 'claim';

/**
 * Where a lease group starts on a partition it has never read (docs/LEASES.md, "Consumer groups
 * and subscriptions").
 */
export interface Subscription {
  mode: 'all' | 'new' | 'from';
  /** Epoch ms: for `new`, the registration time; for `from`, the given instant. */
  from: number | null;
}

export interface GroupRecord {
  queue: string;
  group: string;
  kind: GroupKind;
  subscription: Subscription;
  createdAt: number;
}

export const groupKeys = {
  /** A group's registration on a queue; the pk lists a queue's groups. */
  registration: (queue: string, group: string): ItemKey => ({ pk: `GRP#${queue}`, sk: group }),
  /** The queues a group is registered on. */
  byGroup: (group: string, queue: string): ItemKey => ({ pk: `GROUP#${group}`, sk: queue }),
  /** Directory of every group name. */
  directory: (group: string): ItemKey => ({ pk: 'GROUPS', sk: group }),
  /**
   * Bumped whenever a queue gains or loses a group. A commit that writes per-group entries
   * checks it in the same transaction, so it can never miss a group registered meanwhile.
   */
  version: (queue: string): ItemKey => ({ pk: `GRPVER#${queue}`, sk: 'v' }),
};

export const decodeRegistration = (item: Item): GroupRecord => item.attrs as unknown as GroupRecord;

export const registrationAttrs = (rec: GroupRecord): Record<string, Json> => rec as unknown as Record<string, Json>;

/** The write that bumps a queue's group-list version, guarded by the version read (`cur`). */
export function versionBump(queue: string, cur: Item | undefined): WriteOp {
  return {
    op: 'put',
    table: 'meta',
    item: { ...groupKeys.version(queue), ver: (cur?.ver ?? 0) + 1, attrs: {} },
    cond: cur ? { kind: 'version', ver: cur.ver } : { kind: 'absent' },
  };
}

/** A check, inside a commit, that the queue's group list is still at version `ver` (0: never registered). */
export function versionCheck(queue: string, ver: number): WriteOp {
  return {
    op: 'check',
    table: 'meta',
    key: groupKeys.version(queue),
    cond: ver > 0 ? { kind: 'version', ver } : { kind: 'absent' },
  };
}
