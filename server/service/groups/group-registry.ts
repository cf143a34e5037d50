import { SluiceError } from '../../core/errors.js';
import { assertName } from '../../core/names.js';
import { ConditionFailedError, type Storage } from '../../storage/port.js';
import {
  decodeRegistration,
  groupKeys,
  registrationAttrs,
  versionBump,
  type GroupKind,
  type GroupRecord,
  type Subscription,
} from './group-store.js';

/**
 * The registry of consumer groups per queue: a group exists by being named; its kind and
 * subscription are recorded durably on first use and never revisited.
 *
 * @example
 * ```ts
 * const g = await registry.register('orders', 'billing', 'lease', { mode: 'all', from: null });
 * await registry.register('orders', 'billing', 'claim', ...); // throws conflict (409)
 * ```
 */
export class GroupRegistry {
  private readonly cache = new Map<string, { at: number; rec: GroupRecord }>();
  private readonly listCache = new Map<string, { at: number; ver: number; groups: GroupRecord[] }>();

  constructor(
    private readonly storage: Storage,
    private readonly clock: () => number,
    private readonly cacheMs: number,
  ) {}

  async get(queue: string, group: string): Promise<GroupRecord | undefined> {
    const ck = `${queue}\u0000${group}`;
    const hit = this.cache.get(ck);
    // A registration changes only by a delete (the name starts over) or a subscription
    // update, possibly in another process: a hit is trusted for `cacheMs`, like a queue's
    // options. Trusting it for ever would leave this process popping under a deleted
    // registration, which clears of the work index no longer wait for: its wildcard pops could
    // miss partitions other groups drained, until the process restarts.
    if (hit && this.clock() - hit.at < this.cacheMs) return hit.rec;
    const item = await this.storage.items.get('meta', groupKeys.registration(queue, group));
    if (!item) {
      this.cache.delete(ck);
      return undefined;
    }
    const rec = decodeRegistration(item);
    this.cache.set(ck, { at: this.clock(), rec });
    return rec;
  }

  /**
   * The group's registration, creating it with `kind` and `subscription` on first use.
   * Throws `conflict` when the group is already used the other way.
   */
  async register(queue: string, group: string, kind: GroupKind, subscription: Subscription): Promise<GroupRecord> {
    assertName(group, 'consumer group');
    let rec = await this.get(queue, group);
    if (!rec) {
      const now = this.clock();
      const fresh: GroupRecord = { queue, group, kind, subscription, createdAt: now };
      const attrs = registrationAttrs(fresh);
      for (let attempt = 0; attempt < 20 && !rec; attempt++) {
        const ver = await this.storage.items.get('meta', groupKeys.version(queue));
        try {
          await this.storage.items.transact([
            {
              op: 'put',
              table: 'meta',
              item: { ...groupKeys.registration(queue, group), ver: 1, attrs },
              cond: { kind: 'absent' },
            },
            {
              op: 'put',
              table: 'meta',
              item: { ...groupKeys.byGroup(group, queue), ver: 1, attrs: { createdAt: now } },
            },
            { op: 'put', table: 'meta', item: { ...groupKeys.directory(group), ver: 1, attrs: { createdAt: now } } },
            versionBump(queue, ver),
          ]);
          this.listCache.delete(queue);
          rec = fresh;
        } catch (e) {
          if (!(e instanceof ConditionFailedError)) throw e;
          // Lost a race: either the group now exists, or the version moved; look again.
          rec = await this.getFresh(queue, group);
        }
      }
      if (!rec) throw new SluiceError('unavailable', `could not register group ${group} on ${queue}; retry`);
      this.cache.set(`${queue}\u0000${group}`, { at: this.clock(), rec });
    }
    if (rec.kind !== kind) {
      const other = rec.kind === 'lease' ? 'partition leases (pop/ack)' : 'record claims (poll/ack under /groups/)';
      throw new SluiceError(
        'conflict',
        `consumer group ${JSON.stringify(group)} on queue ${JSON.stringify(queue)} already consumes by ` +
          `${other}; a group's mode is fixed on first use, so use another group name`,
        { kind: rec.kind },
      );
    }
    return rec;
  }

  private async getFresh(queue: string, group: string): Promise<GroupRecord | undefined> {
    this.cache.delete(`${queue}\u0000${group}`);
    return this.get(queue, group);
  }

  /**
   * The queue's groups with the registry version they were read at (cached briefly; commits
   * that depend on the list check the version transactionally).
   */
  async list(queue: string, opts: { fresh?: boolean } = {}): Promise<{ ver: number; groups: GroupRecord[] }> {
    const now = this.clock();
    const hit = this.listCache.get(queue);
    if (!opts.fresh && hit && now - hit.at < this.cacheMs) return hit;
    const verItem = await this.storage.items.get('meta', groupKeys.version(queue));
    const groups: GroupRecord[] = [];
    let after: string | undefined;
    // Every registration bumps the version: no version item means no group was ever registered.
    if (verItem) {
      do {
        const page = await this.storage.items.query('meta', groupKeys.registration(queue, '').pk, {
          after,
          limit: 500,
        });
        for (const it of page.items) groups.push(decodeRegistration(it));
        after = page.next;
      } while (after);
    }
    const out = { at: now, ver: verItem?.ver ?? 0, groups };
    this.listCache.set(queue, out);
    return out;
  }

  /** Queues on which `group` is registered. */
  async queuesOf(group: string): Promise<string[]> {
    const out: string[] = [];
    let after: string | undefined;
    do {
      const page = await this.storage.items.query('meta', groupKeys.byGroup(group, '').pk, { after, limit: 500 });
      for (const it of page.items) out.push(it.sk);
      after = page.next;
    } while (after);
    return out;
  }

  /** Every group name ever registered (and not deleted everywhere). */
  async allGroups(): Promise<string[]> {
    const out: string[] = [];
    let after: string | undefined;
    do {
      const page = await this.storage.items.query('meta', groupKeys.directory('').pk, { after, limit: 500 });
      for (const it of page.items) out.push(it.sk);
      after = page.next;
    } while (after);
    return out;
  }

  /** Forgets the registration on one queue, so the name can start over. Returns whether it existed. */
  async remove(queue: string, group: string): Promise<boolean> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const reg = await this.storage.items.get('meta', groupKeys.registration(queue, group));
      if (!reg) {
        this.forget(queue, group);
        return false;
      }
      const ver = await this.storage.items.get('meta', groupKeys.version(queue));
      try {
        await this.storage.items.transact([
          {
            op: 'delete',
            table: 'meta',
            key: groupKeys.registration(queue, group),
            cond: { kind: 'version', ver: reg.ver },
          },
          { op: 'delete', table: 'meta', key: groupKeys.byGroup(group, queue) },
          versionBump(queue, ver),
        ]);
        this.forget(queue, group);
        const left = await this.queuesOf(group);
        if (left.length === 0) await this.storage.items.delete('meta', groupKeys.directory(group));
        return true;
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
      }
    }
    throw new SluiceError('unavailable', `could not remove group ${group} from ${queue}; retry`);
  }

  /**
   * Replaces the stored subscription of a registered group on one queue (a lease group's
   * start for partitions it has not read yet; existing cursors stay put). Returns false when
   * the group is not registered there. Other processes may keep their cached copy.
   */
  async updateSubscription(queue: string, group: string, subscription: Subscription): Promise<boolean> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const item = await this.storage.items.get('meta', groupKeys.registration(queue, group));
      if (!item) return false;
      const rec = { ...decodeRegistration(item), subscription };
      try {
        await this.storage.items.put(
          'meta',
          { ...item, ver: item.ver + 1, attrs: registrationAttrs(rec) },
          { kind: 'version', ver: item.ver },
        );
        this.cache.set(`${queue}\u0000${group}`, { at: this.clock(), rec });
        this.listCache.delete(queue);
        return true;
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
      }
    }
    throw new SluiceError('unavailable', `could not update the subscription of ${group} on ${queue}; retry`);
  }

  /** Drops cached entries (after a delete seen in this process). */
  forget(queue: string, group: string): void {
    this.cache.delete(`${queue}\u0000${group}`);
    this.listCache.delete(queue);
  }
}
