// One concept past 500 lines: every claim call is one cycle (read the group, the core decides, one guarded write).
import { randomInt } from 'node:crypto';
import type { SluiceConfig } from '../../config.js';
import * as core from '../../core/claims/index.js';
import type { ClaimLimits, Changes, GroupView, PollRequest, Start } from '../../core/claims/index.js';
import { retentionOn } from '../../core/retention.js';
import { SluiceError, invalid, notFound } from '../../core/errors.js';
import { assertName } from '../../core/names.js';
import { ConditionFailedError, ContentionError, type Item, type Storage } from '../../storage/port.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import { CAPPED_RETRY_AFTER_S, type LongPoll } from '../leases/long-poll.js';
import { padOffset, type PartitionRef, type QueueRecord } from '../log/log-store.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import { firstCommittedAfter } from '../log/seek-by-time.js';
import type { SegmentReader, StoredMessage } from '../log/segments.js';
import type { Notifier } from '../notifier.js';
import type { Telemetry } from '../telemetry.js';
import { readPollPlan } from './poll-reads.js';
import {
  changeOps,
  claimKeys,
  consistent,
  deadOffsetOf,
  decodeMember,
  decodeState,
  deleteWhere,
  incarnationOf,
  lowestRedrive,
  ofIncarnation,
  readGroup,
  type ChangeExtras,
  type OpKind,
} from './claim-store.js';

/** Where a poll's consumer-facing input ends up. */
export interface PollInput {
  max?: number | undefined;
  waitMs?: number | undefined;
  visibilityMs?: number | undefined;
  consumer?: string | undefined;
  session?: string | undefined;
  reclaim?: boolean | undefined;
  principal: string;
}

export interface ClaimedRecord {
  offset: number;
  attempts: number;
  skippedBefore: number;
  message: StoredMessage;
}

export interface PollResult {
  records: ClaimedRecord[];
  /** The group's in-flight cap (`maxInFlight`) left no room for new records. */
  capped: boolean;
  /** Set on an empty answer when the wait cap turned the wait away: ask again after this long. */
  retryAfterSeconds?: number | undefined;
}

export interface GroupDescription extends core.GroupCounts {
  tail: number;
  lag: number;
}

/** The (queue, partition, group) a call names, resolved. */
interface ResolvedGroup {
  queue: QueueRecord;
  part: PartitionRef;
  group: string;
  limits: ClaimLimits;
}

export interface ClaimServiceDeps {
  storage: Storage;
  queues: QueueDirectory;
  segments: SegmentReader;
  groups: GroupRegistry;
  notifier: Notifier;
  /** The long-poll wait pops use too: woken by pushes here, re-reading storage for other processes'. */
  longPoll: LongPoll;
  telemetry: Telemetry;
  config: SluiceConfig;
  clock: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const MAX_ATTEMPTS = 60;
const DAY_MS = 86_400_000;
/** A claim group's registration: claim groups read everything retained (their start is their own). */
const CLAIM_SUBSCRIPTION = { mode: 'all', from: null } as const;

const realSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Record claims over the storage port: every state change is one guarded transaction built
 * from a decision of the pure core (`core/claims.ts`). Nothing is kept in this process's
 * memory, so a restart or another Lambda instance loses no claim.
 *
 * Requests per call (AWS): a poll reads the group (one query), the member (one get, only
 * with a consumer name, in parallel), the records (the log's index query and, for segments
 * not in this process's cache, one read each) and writes one transaction; an ack reads the
 * group and writes one transaction. Neither depends on the batch size.
 *
 * @example
 * ```ts
 * const { records } = await svc.claims.poll('orders', 'Default', 'workers', { max: 10, principal: 'me' });
 * await svc.claims.ack('orders', 'Default', 'workers', records.map((r) => r.offset));
 * ```
 */
export class ClaimService {
  private readonly sleep: (ms: number) => Promise<void>;
  /** Tail of the queue of calls this process makes on each (partition, group). */
  private readonly turns = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: ClaimServiceDeps) {
    this.sleep = deps.sleep ?? realSleep;
  }

  // ------------------------------------------------------------- resolving

  /** The claim settings of a queue: its options, or the service defaults for an implicit queue. */
  limitsFor(queue: QueueRecord): ClaimLimits {
    const d = this.deps.config.claimDefaults;
    if (!queue.configured) return { ...d };
    const o = queue.options as Partial<ClaimLimits>;
    return {
      visibilityTimeoutMs: o.visibilityTimeoutMs ?? d.visibilityTimeoutMs,
      maxAttempts: o.maxAttempts ?? d.maxAttempts,
      maxInFlight: o.maxInFlight ?? d.maxInFlight,
      maxVisibilityMs: o.maxVisibilityMs ?? d.maxVisibilityMs,
    };
  }

  private async resolve(
    queue: string,
    partition: string,
    group: string,
    use: 'register' | 'check',
  ): Promise<ResolvedGroup> {
    assertName(group, 'consumer group');
    const q = await this.deps.queues.getQueue(queue);
    if (!q) throw notFound(`queue ${JSON.stringify(queue)} does not exist`, { missing: 'queue' });
    const part = await this.deps.queues.getPartition(queue, partition);
    if (!part)
      throw notFound(`queue ${JSON.stringify(queue)} has no partition ${JSON.stringify(partition)}`, {
        missing: 'partition',
      });
    if (use === 'register') await this.deps.groups.register(queue, group, 'claim', CLAIM_SUBSCRIPTION);
    else {
      const reg = await this.deps.groups.get(queue, group);
      if (reg && reg.kind !== 'claim') {
        throw new SluiceError(
          'conflict',
          `consumer group ${JSON.stringify(group)} on queue ${JSON.stringify(queue)} already consumes by ` +
            `partition leases (pop/ack); a group's mode is fixed on first use, so use another group name`,
          { kind: reg.kind },
        );
      }
    }
    return { queue: q, part, group, limits: this.limitsFor(q) };
  }

  /** Records the group as a claim group on its queue (a no-op once it is). */
  private async register(ctx: ResolvedGroup): Promise<void> {
    await this.deps.groups.register(ctx.queue.name, ctx.group, 'claim', CLAIM_SUBSCRIPTION);
  }

  // ---------------------------------------------------------------- storage

  /** The group as stored, read again while a write lands between the reads of one query (a torn view). */
  private async loadView(pid: string, group: string): Promise<GroupView> {
    for (let attempt = 0; ; attempt++) {
      const { view, fp } = await readGroup(this.deps.storage, pid, group);
      if (consistent(view, fp)) return view;
      if (attempt >= 20)
        throw new SluiceError('unavailable', 'the group is changing too fast to be read consistently; retry');
      await this.sleep(2 * Math.random());
    }
  }

  /** Writes one decision: one transaction (a lone op is a plain guarded write). */
  private async write(ctx: ResolvedGroup, view: GroupView, ch: Changes, extra: ChangeExtras = {}): Promise<void> {
    const { ops, kinds } = changeOps(ctx.part.id, ctx.group, view, ch, extra);
    try {
      await this.deps.storage.items.transact(ops);
    } catch (e) {
      if (e instanceof ConditionFailedError)
        throw new WriteConflict(e.failed.map((f) => ({ kind: kinds[f.index] ?? { t: 'other' }, current: f.current })));
      throw e;
    }
  }

  /**
   * Runs `fn` after the calls this process already makes on the group: racing itself would
   * only lose guards and read again. Other processes still race, and the guards decide.
   */
  private inTurn<T>(ctx: ResolvedGroup, fn: () => Promise<T>): Promise<T> {
    const key = `${ctx.part.id}\u0000${ctx.group}`;
    const prev = this.turns.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.turns.set(key, tail);
    void tail.then(() => {
      if (this.turns.get(key) === tail) this.turns.delete(key);
    });
    return run;
  }

  /**
   * Runs `attempt` until its write lands: a lost guard means another call changed the group
   * in between, so the decision is taken again on a fresh read.
   */
  private async retrying<T>(
    what: string,
    attempt: (n: number, conflict: WriteConflict | undefined) => Promise<T>,
  ): Promise<T> {
    let conflict: WriteConflict | undefined;
    for (let n = 0; n < MAX_ATTEMPTS; n++) {
      try {
        return await attempt(n, conflict);
      } catch (e) {
        if (e instanceof WriteConflict) conflict = e;
        else if (e instanceof ContentionError) conflict = undefined;
        else throw e;
        if (n >= 2) await this.sleep(Math.min(100, 2 ** Math.min(n, 6)) * Math.random());
      }
    }
    throw new SluiceError('unavailable', `${what} on this group is too contended right now; retry`);
  }

  private memberTtlS(limits: ClaimLimits, now: number): number {
    return Math.ceil((now + memberTtlMs(limits)) / 1000);
  }

  // ------------------------------------------------------------------- poll

  /**
   * Hands out up to `max` records: reserved ones first (a member's reclaim), then owed ones,
   * then new ones. With `waitMs`, waits for work (woken by pushes in this process, and
   * looking at storage again every second for other processes' pushes) until the wait ends
   * or `signal` aborts.
   */
  async poll(
    queue: string,
    partition: string,
    group: string,
    input: PollInput,
    signal?: AbortSignal,
  ): Promise<PollResult> {
    const ctx = await this.resolve(queue, partition, group, 'register');
    const limits = ctx.limits;
    if (input.consumer !== undefined) assertName(input.consumer, 'consumer');
    if (input.session !== undefined && input.consumer === undefined)
      throw invalid('session needs a consumer name: a session belongs to a named member');
    if (input.reclaim && input.session === undefined)
      throw invalid('reclaim needs a session token: only a new session takes back what the name held under older ones');
    // A poll's visibility is capped at maxVisibilityMs, not refused (docs/CLAIMS.md, "Configuration").
    const visibilityMs = Math.min(input.visibilityMs ?? limits.visibilityTimeoutMs, limits.maxVisibilityMs);
    const req: PollRequest = {
      max: Math.min(input.max ?? 10, core.MAX_POLL_RECORDS),
      visibilityMs,
      principal: input.principal,
      consumer: input.consumer,
      session: input.session,
      reclaim: input.reclaim ?? false,
    };
    const dims = { queue, group };
    this.deps.telemetry.count('ClaimPolls', 1, dims);
    let last: PollResult = { records: [], capped: false };
    const { value: found, capped: waitCapped } = await this.deps.longPoll.wait({
      queue,
      budgetMs: Math.max(0, Math.min(input.waitMs ?? 0, this.deps.config.claimMaxWaitMs)),
      signal,
      lookAtEnd: true,
      look: async () => {
        const r = await this.inTurn(ctx, () => this.pollOnce(ctx, req));
        if (r.deadLettered > 0) this.deps.telemetry.count('ClaimDeadLettered', r.deadLettered, dims);
        // Reclaim happens once: later rounds of a long poll only take what it reserved.
        req.reclaim = false;
        last = { records: r.records, capped: r.capped };
        return r.records.length > 0 ? last : null;
      },
    });
    const r = found ?? last;
    if (r.capped) this.deps.telemetry.count('ClaimPollsCapped', 1, dims);
    return waitCapped && r.records.length === 0 ? { ...r, retryAfterSeconds: CAPPED_RETRY_AFTER_S } : r;
  }

  private async pollOnce(ctx: ResolvedGroup, req: PollRequest): Promise<PollResult & { deadLettered: number }> {
    const pid = ctx.part.id;
    const memberKey =
      req.consumer !== undefined ? claimKeys.member(pid, ctx.group, req.principal, req.consumer) : undefined;
    const deadSeen = new Map<number, Item>();
    // Records read by an attempt that lost its guard: a retry reuses them (a narrower window
    // between reading the group and writing it, and no second read of the same records).
    const seen = new Map<number, StoredMessage>();
    return this.retrying('poll', async (_n, conflict) => {
      noteDeadConflicts(conflict, deadSeen);
      const [view, memberItem] = await Promise.all([
        this.loadView(pid, ctx.group),
        memberKey ? this.deps.storage.items.get('claims', memberKey) : undefined,
      ]);
      const now = this.deps.clock();
      const member = decodeMember(memberItem);
      const plan = core.planPoll(view, member, req, now, ctx.limits, { inc: randomInc() });
      // Keep an active member's entry from expiring.
      if (
        member &&
        !plan.memberChanged &&
        member.expiresAt !== undefined &&
        member.expiresAt * 1000 - now < memberTtlMs(ctx.limits) / 2
      )
        plan.memberChanged = true;
      const { reads, messages } = await readPollPlan(
        this.deps.segments,
        pid,
        plan,
        seen,
        !retentionOn(ctx.queue.options),
      );
      for (const [o, m] of messages) seen.set(o, m);
      const { knownDead, staleDead } = splitDead(deadSeen, plan.state.inc);
      const { changes, records } = core.completePoll(view, plan, reads, req, now, knownDead);
      if (changes)
        await this.write(ctx, view, changes, {
          staleDead,
          listedDead: new Set(plan.deadLetter.map((x) => x.offset).filter((o) => knownDead.has(o))),
          memberKey,
          memberTtlS: this.memberTtlS(ctx.limits, now),
        });
      return {
        records: records.map((r) => ({ ...r, message: messages.get(r.offset) as StoredMessage })),
        capped: plan.capped,
        deadLettered: changes?.deadPuts.length ?? 0,
      };
    });
  }

  // ---------------------------------------------------------------- settle

  /** Finishes a list of offsets; returns the group's position after the call. */
  async ack(
    queue: string,
    partition: string,
    group: string,
    offsets: readonly number[],
  ): Promise<{ committed: number; acked: number }> {
    if (offsets.length > core.MAX_ACK_OFFSETS)
      throw invalid(`an ack carries at most ${core.MAX_ACK_OFFSETS} offsets (got ${offsets.length}); split it`, {
        limit: core.MAX_ACK_OFFSETS,
      });
    const ctx = await this.resolve(queue, partition, group, 'check');
    let todo = [...offsets];
    let acked = 0;
    let committed = 0;
    // One write per step; a list spanning more batches than one transaction holds takes several.
    for (;;) {
      const r = await this.inTurn(ctx, () =>
        this.retrying('ack', async () => {
          const view = await this.loadView(ctx.part.id, group);
          const res = core.ack(view, todo, this.deps.clock());
          if (res.changes) await this.write(ctx, view, res.changes);
          return res;
        }),
      );
      acked += r.acked;
      committed = r.committed;
      if (r.rest.length === 0 || r.acked === 0) break;
      todo = r.rest;
    }
    if (acked > 0) {
      this.deps.telemetry.count('ClaimAcks', acked, { queue, group });
      this.deps.notifier.notify(queue, ctx.part.id);
    }
    return { committed, acked };
  }

  async nack(
    queue: string,
    partition: string,
    group: string,
    input: core.NackRequest,
  ): Promise<{ offset: number; delayMs: number }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    const r = await this.inTurn(ctx, () =>
      this.retrying('nack', async () => {
        const view = await this.loadView(ctx.part.id, group);
        const res = core.nack(view, input, this.deps.clock(), ctx.limits);
        await this.write(ctx, view, res.changes);
        return res;
      }),
    );
    if (r.delayMs === 0) this.deps.notifier.notify(queue, ctx.part.id);
    return { offset: input.offset, delayMs: r.delayMs };
  }

  async extend(
    queue: string,
    partition: string,
    group: string,
    input: { offset: number; attempts: number; extendMs: number },
  ): Promise<{ visibleMs: number }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    return this.inTurn(ctx, () =>
      this.retrying('extend', async () => {
        const view = await this.loadView(ctx.part.id, group);
        const res = core.extend(view, input, this.deps.clock(), ctx.limits);
        await this.write(ctx, view, res.changes);
        return { visibleMs: res.visibleMs };
      }),
    );
  }

  async deadLetter(
    queue: string,
    partition: string,
    group: string,
    input: { offset: number; attempts?: number | undefined },
  ): Promise<{ offset: number; committed: number }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    const deadSeen = new Map<number, Item>();
    const r = await this.inTurn(ctx, () =>
      this.retrying('dead-letter', async (_n, conflict) => {
        noteDeadConflicts(conflict, deadSeen);
        const view = await this.loadView(ctx.part.id, group);
        const { knownDead, staleDead } = splitDead(deadSeen, view.state?.inc ?? 0);
        const res = core.deadLetter(view, input, this.deps.clock(), knownDead);
        await this.write(ctx, view, res.changes, {
          staleDead,
          listedDead: knownDead.has(input.offset) ? new Set([input.offset]) : undefined,
        });
        return res;
      }),
    );
    this.deps.telemetry.count('ClaimDeadLettered', 1, { queue, group });
    this.deps.notifier.notify(queue, ctx.part.id);
    return { offset: input.offset, committed: r.committed };
  }

  // ---------------------------------------------------------- dead letters

  /** Dead-lettered offsets, ascending, one page at a time. */
  async listDeadLetters(
    queue: string,
    partition: string,
    group: string,
    opts: { after?: number | undefined; limit?: number | undefined } = {},
  ): Promise<{ offsets: number[]; next?: number | undefined }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    const state = await this.deps.storage.items.get('claims', claimKeys.state(ctx.part.id, group));
    if (!state) return { offsets: [] };
    const inc = decodeState(state).state.inc;
    const limit = Math.min(opts.limit ?? 1000, 10_000);
    const offsets: number[] = [];
    let after = opts.after !== undefined ? padOffset(opts.after) : undefined;
    let more = false;
    while (offsets.length < limit) {
      const page = await this.deps.storage.items.query('claims', claimKeys.deadPk(ctx.part.id, group), {
        after,
        limit: Math.min(1000, limit - offsets.length),
      });
      for (const it of page.items) if (incarnationOf(it) === inc) offsets.push(deadOffsetOf(it));
      after = page.next;
      more = page.next !== undefined;
      if (!more) break;
    }
    return more && offsets.length > 0 ? { offsets, next: offsets.at(-1) } : { offsets };
  }

  private async deadPointer(ctx: ResolvedGroup, offset: number): Promise<{ ver: number; view: GroupView }> {
    const [item, view] = await Promise.all([
      this.deps.storage.items.get('claims', claimKeys.dead(ctx.part.id, ctx.group, offset)),
      this.loadView(ctx.part.id, ctx.group),
    ]);
    if (!item || !view.state || incarnationOf(item) !== view.state.inc)
      throw notFound(`offset ${offset} is not a dead letter of this group`);
    return { ver: item.ver, view };
  }

  /**
   * Makes a dead letter owed again with its attempts reset; durable before it answers. A dead
   * letter whose record retention has removed from the log cannot be redriven: `not_found`,
   * and the dead letter stays listed until it is discarded.
   */
  async redrive(
    queue: string,
    partition: string,
    group: string,
    offset: number,
  ): Promise<{ offset: number; redriven: true }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    await this.inTurn(ctx, () =>
      this.retrying('redrive', async () => {
        const [{ ver, view }, head] = await Promise.all([
          this.deadPointer(ctx, offset),
          this.deps.segments.readHead(ctx.part.id),
        ]);
        if (offset < head) {
          throw notFound(
            `offset ${offset} is a dead letter of this group, but retention has removed its record from the ` +
              `log (the partition now starts at offset ${head}), so there is nothing to redrive; discard the ` +
              `dead letter (DELETE .../dead-letters/${offset})`,
          );
        }
        const res = core.redrive(view, offset, this.deps.clock());
        await this.write(ctx, view, res.changes, { deadVers: new Map([[offset, ver]]) });
      }),
    );
    this.deps.notifier.notify(queue, ctx.part.id);
    return { offset, redriven: true };
  }

  /** Stops tracking a dead letter (the record stays in the log). */
  async discard(
    queue: string,
    partition: string,
    group: string,
    offset: number,
  ): Promise<{ offset: number; discarded: true }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    await this.inTurn(ctx, () =>
      this.retrying('discard', async () => {
        const { ver, view } = await this.deadPointer(ctx, offset);
        await this.write(ctx, view, core.discard(view, offset).changes, { deadVers: new Map([[offset, ver]]) });
      }),
    );
    return { offset, discarded: true };
  }

  // -------------------------------------------------------------- retention

  /**
   * What the record-claim groups `groups` still need on a partition, for retention's floor:
   * for each group with a position there, the lowest offset it may still hand out — its
   * `committed`, or a redriven record below it — in `needs`; `unread` counts the groups with no
   * position there (their first poll starts at the earliest retained record, so they are owed
   * everything). One `getMany` per 100 groups, plus one query per group with a position.
   */
  async retentionNeeds(partitionId: string, groups: readonly string[]): Promise<{ needs: number[]; unread: number }> {
    const needs: number[] = [];
    let unread = 0;
    for (let i = 0; i < groups.length; i += 100) {
      const chunk = groups.slice(i, i + 100);
      const states = await this.deps.storage.items.getMany(
        'claims',
        chunk.map((g) => claimKeys.state(partitionId, g)),
      );
      await Promise.all(
        chunk.map(async (g, j) => {
          const st = states[j];
          if (!st) {
            unread++;
            return;
          }
          const { state } = decodeState(st);
          const low = await lowestRedrive(this.deps.storage, partitionId, g, state.inc);
          needs.push(low === undefined ? state.committed : Math.min(state.committed, low));
        }),
      );
    }
    return { needs, unread };
  }

  // ------------------------------------------------------------------ admin

  private async resolveStartOffset(pid: string, start: Start): Promise<number> {
    const [head, tail, firstAfter] = await Promise.all([
      this.deps.segments.readHead(pid),
      this.deps.segments.readTail(pid),
      typeof start === 'object' && 'at' in start
        ? firstCommittedAfter(this.deps.segments, pid, start.at)
        : Promise.resolve(undefined),
    ]);
    return core.resolveStart(start, head, tail.next, firstAfter);
  }

  /** Creates the group at `start` unless it exists; an existing group is left where it is. */
  async create(
    queue: string,
    partition: string,
    group: string,
    start: Start,
  ): Promise<{ offset: number; moved: boolean }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    return this.inTurn(ctx, () =>
      this.retrying('create', async () => {
        const view = await this.loadView(ctx.part.id, group);
        if (view.state) return { offset: view.state.committed, moved: false };
        const offset = await this.resolveStartOffset(ctx.part.id, start);
        // Registered only once the start is known good: a refused create leaves nothing behind.
        await this.register(ctx);
        const res = core.create(view, offset, this.deps.clock(), { inc: randomInc() });
        if (res.changes) await this.write(ctx, view, res.changes);
        return { offset: res.offset, moved: res.moved };
      }),
    );
  }

  /** Moves an existing group; voids every standing claim. */
  async seek(
    queue: string,
    partition: string,
    group: string,
    start: Start,
  ): Promise<{ offset: number; moved: boolean }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    const offset = await this.resolveStartOffset(ctx.part.id, start);
    const r = await this.inTurn(ctx, () =>
      this.retrying('seek', async () => {
        const view = await this.loadView(ctx.part.id, group);
        // Refuses a group that does not exist before anything is written (its registration included).
        const res = core.seek(view, offset, this.deps.clock());
        await this.register(ctx);
        await this.write(ctx, view, res.changes);
        return res;
      }),
    );
    this.deps.notifier.notify(queue, ctx.part.id);
    return { offset: r.offset, moved: r.moved };
  }

  async describe(queue: string, partition: string, group: string): Promise<GroupDescription> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    const [view, tail] = await Promise.all([
      this.loadView(ctx.part.id, group),
      this.deps.segments.readTail(ctx.part.id),
    ]);
    const counts = core.describe(view, this.deps.clock());
    return { ...counts, tail: tail.next, lag: Math.max(0, tail.next - counts.committed) };
  }

  /**
   * Removes the group's position, claims, members and dead letters on this partition, so it
   * starts over (at offset 0) on its next poll. The position goes first, in one guarded
   * delete: from then on the rest is garbage of a finished incarnation, removed here and
   * ignored by a new incarnation should this sweep be cut short. The queue-wide
   * registration (claim mode) stays.
   */
  async deleteGroup(queue: string, partition: string, group: string): Promise<{ existed: boolean }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    const pid = ctx.part.id;
    const gone = await this.retrying('delete', async () => {
      const st = await this.deps.storage.items.get('claims', claimKeys.state(pid, group));
      if (!st) return undefined;
      try {
        await this.deps.storage.items.delete('claims', claimKeys.state(pid, group), { kind: 'version', ver: st.ver });
      } catch (e) {
        if (e instanceof ConditionFailedError) throw new WriteConflict([]);
        throw e;
      }
      return decodeState(st).state;
    });
    if (!gone) return { existed: false };
    for (const pk of [claimKeys.groupPk(pid, group), claimKeys.memberPk(pid, group), claimKeys.deadPk(pid, group)]) {
      await deleteWhere(this.deps.storage, pk, (it) => ofIncarnation(it, gone.inc));
    }
    this.deps.notifier.notify(queue, pid);
    return { existed: true };
  }

  /**
   * The clean-up pass: removes items a seek or a delete left behind. It never removes
   * anything of the current epoch, so a standing claim, a delayed nack or an owed record
   * survives it however long the group has been idle. (Felix drops an idle group's memory
   * and rebuilds it from disk; Sluice has nothing in memory to drop.)
   */
  async sweep(queue: string, partition: string, group: string): Promise<{ removed: number }> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    const view = await this.loadView(ctx.part.id, group);
    const inc = view.state?.inc;
    const garbage = new Set(core.sweepable(view).map((g) => claimKeys.item(ctx.part.id, group, g.kind, g.first).sk));
    let removed = await deleteWhere(this.deps.storage, claimKeys.groupPk(ctx.part.id, group), (it) =>
      garbage.has(it.sk),
    );
    const other = (it: Item): boolean => incarnationOf(it) !== inc;
    removed += await deleteWhere(this.deps.storage, claimKeys.memberPk(ctx.part.id, group), other);
    removed += await deleteWhere(this.deps.storage, claimKeys.deadPk(ctx.part.id, group), other);
    return { removed };
  }
}

/** A guard failed: who failed and what was there (dead-letter pointers are told apart). */
class WriteConflict extends Error {
  constructor(readonly failed: { kind: OpKind; current: Item | undefined }[]) {
    super('a guarded write lost to another writer');
  }
}

/** Remembers the dead-letter pointers a lost write found already there. */
function noteDeadConflicts(conflict: WriteConflict | undefined, seen: Map<number, Item>): void {
  for (const f of conflict?.failed ?? []) {
    if (f.kind.t !== 'dead') continue;
    // A pointer gone since it was seen (redriven, discarded) is listed no more.
    if (f.current) seen.set(f.kind.offset, f.current);
    else seen.delete(f.kind.offset);
  }
}

/**
 * Pointers found already there: of this incarnation (listed already: neither written nor
 * counted again), or left by a deleted one (overwritten, guarded by their version).
 */
function splitDead(seen: Map<number, Item>, inc: number): { knownDead: Set<number>; staleDead: Map<number, number> } {
  const knownDead = new Set<number>();
  const staleDead = new Map<number, number>();
  for (const [o, it] of seen) {
    if (incarnationOf(it) === inc) knownDead.add(o);
    else staleDead.set(o, it.ver);
  }
  return { knownDead, staleDead };
}

/** Member entries live at least a day, and twice the longest a claim can stand. */
function memberTtlMs(limits: ClaimLimits): number {
  return Math.max(2 * limits.maxVisibilityMs, DAY_MS);
}

const randomInc = (): number => randomInt(1, 2 ** 47);
