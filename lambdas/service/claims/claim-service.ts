import { randomInt } from 'node:crypto';
import type { SluiceConfig } from '../../config.js';
import * as core from '../../core/claims.js';
import type {
  ClaimItem,
  ClaimLimits,
  Changes,
  GroupState,
  GroupView,
  Member,
  PollRequest,
  Start,
} from '../../core/claims.js';
import { retentionOn } from '../../core/retention.js';
import { SluiceError, invalid, notFound } from '../../core/errors.js';
import { assertName } from '../../core/names.js';
import {
  ConditionFailedError,
  ContentionError,
  type Item,
  type ItemKey,
  type Json,
  type Storage,
  type WriteOp,
} from '../../storage/port.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import { padOffset } from '../log/log-store.js';
import type { PartitionRef, QueueRecord } from '../log/log-store.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { SegmentReader, StoredMessage } from '../log/segments.js';
import type { LongPoll } from '../leases/long-poll.js';
import type { Notifier } from '../notifier.js';
import type { Telemetry } from '../telemetry.js';

/**
 * Storage layout of record claims (table `claims`), per (partition id, group):
 *
 * | pk | sk | what |
 * |---|---|---|
 * | `CG#{pid}#{group}` | `#state` | position: committed, frontier, high, epoch, incarnation, dead-letter count |
 * | `CG#{pid}#{group}` | `B#{first}` | a claim batch: the unfinished records of one hand-out |
 * | `CG#{pid}#{group}` | `R#{offset}` | a redriven dead letter, owed again |
 * | `CM#{pid}#{group}` | `{principal}#{consumer}` | a member name's sessions and its last reclaim |
 * | `CDL#{pid}#{group}` | `{offset}` | a dead-letter pointer (the record stays in the log) |
 *
 * `#state` sorts before `B#` and `R#`, so one query reads the position first and the claims
 * after it: any write that lands between those reads bumps the state's version and fails
 * this call's guard, so a call never acts on a torn view.
 *
 * TTL (`expiresAt`) is set on member items only. A member item never decides whether a
 * record is owed, claimed or finished: it only orders one name's sessions so that a reclaim
 * moves a standing claim from an older session of the same principal and name to a newer
 * one. Losing it therefore cannot change what the group owes; the name's sessions simply
 * start a new order. It expires only after the name has not polled (with a new session or a
 * reclaim, or a refresh) for max(2 x maxVisibilityMs, 1 day), and every claim a poll made is
 * capped at maxVisibilityMs. Position, batches, redrives and dead letters never carry TTL:
 * a batch is deleted in the same transaction that finishes its last record, and items of a
 * voided epoch or deleted incarnation are recognised by their tags, read as absent, and
 * deleted on the side by later writes or {@link ClaimService.sweep}.
 */
export const claimKeys = {
  groupPk: (pid: string, group: string): string => `CG#${pid}#${group}`,
  state: (pid: string, group: string): ItemKey => ({ pk: claimKeys.groupPk(pid, group), sk: '#state' }),
  item: (pid: string, group: string, kind: 'B' | 'R', first: number): ItemKey => ({
    pk: claimKeys.groupPk(pid, group),
    sk: itemSk({ kind, first }),
  }),
  memberPk: (pid: string, group: string): string => `CM#${pid}#${group}`,
  member: (pid: string, group: string, principal: string, consumer: string): ItemKey => ({
    pk: claimKeys.memberPk(pid, group),
    sk: `${encodeURIComponent(principal)}#${consumer}`,
  }),
  deadPk: (pid: string, group: string): string => `CDL#${pid}#${group}`,
  dead: (pid: string, group: string, offset: number): ItemKey => ({
    pk: claimKeys.deadPk(pid, group),
    sk: padOffset(offset),
  }),
};

const itemSk = (it: { kind: 'B' | 'R'; first: number }): string => `${it.kind}#${padOffset(it.first)}`;

/** Group state, batches and members as stored (short attribute names keep items small). */
type StoredRec = [
  delta: number,
  attempts: number,
  status: core.RecStatus,
  until: number,
  holder: number,
  stamp: number,
];
type StoredHolder = [principal: string, consumer: string, session: string, seq: number];

function encodeItem(it: ClaimItem): Record<string, Json> {
  return {
    f: it.first,
    n: it.count,
    k: it.skip,
    i: it.inc,
    e: it.epoch,
    h: it.holders.map((h): StoredHolder => [h.principal, h.consumer, h.session, h.seq]),
    r: it.recs.map((r): StoredRec => [r.offset - it.first, r.attempts, r.status, r.until, r.holder, r.stamp]),
  };
}

function decodeItem(item: Item): ClaimItem {
  const a = item.attrs as { f: number; n: number; k: number; i: number; e: number; h: StoredHolder[]; r: StoredRec[] };
  const kind = item.sk.startsWith('R#') ? 'R' : 'B';
  return {
    kind,
    first: a.f,
    count: a.n,
    skip: a.k,
    inc: a.i,
    epoch: a.e,
    holders: a.h.map(([principal, consumer, session, seq]) => ({ principal, consumer, session, seq })),
    recs: a.r.map(([delta, attempts, status, until, holder, stamp]) => ({
      offset: a.f + delta,
      attempts,
      status,
      until,
      holder,
      stamp,
    })),
    ver: item.ver,
  };
}

/** Whether an item belongs to the group as of `state` (else it is garbage of a voided epoch or incarnation). */
const isLive = (it: { kind: 'B' | 'R'; inc: number; epoch: number }, state: GroupState): boolean =>
  it.inc === state.inc && (it.kind === 'R' || it.epoch === state.epoch);

/**
 * A fingerprint of the live items (their keys and versions), stored in the state by every
 * write. A read whose items do not match the state it read is torn (a transaction landed
 * between the reads of one query) and is read again.
 */
function fingerprint(entries: Iterable<[string, number]>): number {
  let sum = 0;
  let n = 0;
  for (const [sk, ver] of entries) {
    let h = 0x811c9dc5;
    const s = `${sk}:${ver}`;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    sum = (sum + (h >>> 0)) % 0x100000000;
    n++;
  }
  return (sum + n * 0x9e3779b1) % 0x100000000;
}

function decodeMember(item: Item | undefined): (Member & { expiresAt?: number | undefined }) | undefined {
  if (!item) return undefined;
  const a = item.attrs as unknown as Omit<Member, 'ver'>;
  return { ...a, sessions: { ...a.sessions }, ver: item.ver, expiresAt: item.expiresAt };
}

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
  capped: boolean;
}

export interface GroupDescription extends core.GroupCounts {
  tail: number;
  lag: number;
}

/** The (queue, partition, group) a call names, resolved. */
interface Ctx {
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
/** A poll reads owed records in at most this many separate log reads. */
const MAX_READ_RUNS = 8;
/** Owed offsets closer than this are read in one log read. */
const RUN_GAP = 64;
const DAY_MS = 86_400_000;

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
  private readonly storage: Storage;
  private readonly queues: QueueDirectory;
  private readonly segments: SegmentReader;
  private readonly groups: GroupRegistry;
  private readonly notifier: Notifier;
  private readonly longPoll: LongPoll;
  private readonly telemetry: Telemetry;
  private readonly config: SluiceConfig;
  private readonly clock: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** Tail of the queue of calls this process makes on each (partition, group). */
  private readonly turns = new Map<string, Promise<unknown>>();

  constructor(deps: ClaimServiceDeps) {
    this.storage = deps.storage;
    this.queues = deps.queues;
    this.segments = deps.segments;
    this.groups = deps.groups;
    this.notifier = deps.notifier;
    this.longPoll = deps.longPoll;
    this.telemetry = deps.telemetry;
    this.config = deps.config;
    this.clock = deps.clock;
    this.sleep = deps.sleep ?? realSleep;
  }

  // ------------------------------------------------------------- resolving

  /** The claim settings of a queue: its options, or the service defaults for an implicit queue. */
  limitsFor(queue: QueueRecord): ClaimLimits {
    const d = this.config.claimDefaults;
    if (!queue.configured) return { ...d };
    const o = queue.options as Partial<ClaimLimits>;
    return {
      visibilityTimeoutMs: o.visibilityTimeoutMs ?? d.visibilityTimeoutMs,
      maxAttempts: o.maxAttempts ?? d.maxAttempts,
      maxInFlight: o.maxInFlight ?? d.maxInFlight,
      maxVisibilityMs: o.maxVisibilityMs ?? d.maxVisibilityMs,
    };
  }

  private async resolve(queue: string, partition: string, group: string, use: 'register' | 'check'): Promise<Ctx> {
    assertName(group, 'consumer group');
    const q = await this.queues.getQueue(queue);
    if (!q) throw notFound(`queue ${JSON.stringify(queue)} does not exist`);
    const part = await this.queues.getPartition(queue, partition);
    if (!part) throw notFound(`queue ${JSON.stringify(queue)} has no partition ${JSON.stringify(partition)}`);
    if (use === 'register') await this.groups.register(queue, group, 'claim', { mode: 'all', from: null });
    else {
      const reg = await this.groups.get(queue, group);
      if (reg && reg.kind !== 'claim') {
        throw new SluiceError(
          'conflict',
          `consumer group ${JSON.stringify(group)} on queue ${JSON.stringify(queue)} already consumes by partition leases (pop/ack); a group's mode is fixed on first use, so use another group name`,
          { kind: reg.kind },
        );
      }
    }
    return { queue: q, part, group, limits: this.limitsFor(q) };
  }

  // ---------------------------------------------------------------- storage

  /** The group as stored: one query (paged only when very many records are unfinished). */
  private async loadView(pid: string, group: string): Promise<GroupView> {
    for (let attempt = 0; ; attempt++) {
      const { view, fp } = await this.readView(pid, group);
      if (fp === undefined || !view.state || fingerprint(view.items.map((it) => [itemSk(it), it.ver as number])) === fp)
        return view;
      if (attempt >= 20)
        throw new SluiceError('unavailable', 'the group is changing too fast to be read consistently; retry');
      await this.sleep(2 * Math.random());
    }
  }

  private async readView(pid: string, group: string): Promise<{ view: GroupView; fp: number | undefined }> {
    const pk = claimKeys.groupPk(pid, group);
    const raw: Item[] = [];
    let after: string | undefined;
    do {
      const page = await this.storage.items.query('claims', pk, { after });
      raw.push(...page.items);
      after = page.next;
    } while (after);
    let state: GroupState | undefined;
    let stateVer: number | undefined;
    let fp: number | undefined;
    const items: ClaimItem[] = [];
    const garbage: core.Garbage[] = [];
    for (const it of raw) {
      if (it.sk === '#state') {
        const { fp: f, ...rest } = it.attrs as unknown as GroupState & { fp?: number };
        state = rest;
        stateVer = it.ver;
        fp = f;
        continue;
      }
      const ci = decodeItem(it);
      if (state !== undefined && isLive(ci, state)) items.push(ci);
      else garbage.push({ kind: ci.kind, first: ci.first, ver: it.ver });
    }
    items.sort((a, b) => a.first - b.first || (a.kind < b.kind ? -1 : 1));
    return { view: { state, stateVer, items, garbage }, fp };
  }

  /** Writes one decision: one transaction (a lone op is a plain guarded write). */
  private async write(
    ctx: Ctx,
    view: GroupView,
    ch: Changes,
    extra: {
      deadVers?: Map<number, number>;
      staleDead?: Map<number, number>;
      memberKey?: ItemKey;
      memberTtlS?: number;
    } = {},
  ): Promise<void> {
    const pid = ctx.part.id;
    const g = ctx.group;
    const ops: WriteOp[] = [];
    const kinds: ({ t: 'dead'; offset: number } | { t: 'other' })[] = [];
    const push = (op: WriteOp, k: { t: 'dead'; offset: number } | { t: 'other' } = { t: 'other' }): void => {
      ops.push(op);
      kinds.push(k);
    };
    // The live items once this write lands, fingerprinted into the state (see loadView).
    const live = new Map<string, number>();
    for (const it of view.items) if (isLive(it, ch.state)) live.set(itemSk(it), it.ver as number);
    for (const it of ch.deletes) live.delete(itemSk(it));
    for (const it of ch.puts) if (isLive(it, ch.state)) live.set(itemSk(it), (it.ver ?? 0) + 1);
    push({
      op: 'put',
      table: 'claims',
      item: {
        ...claimKeys.state(pid, g),
        ver: (view.stateVer ?? 0) + 1,
        attrs: { ...ch.state, fp: fingerprint(live) } as unknown as Record<string, Json>,
      },
      cond: view.stateVer === undefined ? { kind: 'absent' } : { kind: 'version', ver: view.stateVer },
    });
    for (const it of ch.puts) {
      push({
        op: 'put',
        table: 'claims',
        item: { ...claimKeys.item(pid, g, it.kind, it.first), ver: (it.ver ?? 0) + 1, attrs: encodeItem(it) },
        cond: it.ver === undefined ? { kind: 'absent' } : { kind: 'version', ver: it.ver },
      });
    }
    for (const it of ch.deletes)
      push({
        op: 'delete',
        table: 'claims',
        key: claimKeys.item(pid, g, it.kind, it.first),
        cond: { kind: 'version', ver: it.ver as number },
      });
    for (const it of ch.garbageDeletes)
      push({
        op: 'delete',
        table: 'claims',
        key: claimKeys.item(pid, g, it.kind, it.first),
        cond: { kind: 'version', ver: it.ver },
      });
    for (const d of ch.deadPuts) {
      const stale = extra.staleDead?.get(d.offset);
      push(
        {
          op: 'put',
          table: 'claims',
          item: {
            ...claimKeys.dead(pid, g, d.offset),
            ver: (stale ?? 0) + 1,
            attrs: { inc: ch.state.inc, offset: d.offset, attempts: d.attempts, at: d.at, reason: d.reason },
          },
          cond: stale === undefined ? { kind: 'absent' } : { kind: 'version', ver: stale },
        },
        { t: 'dead', offset: d.offset },
      );
    }
    for (const o of ch.deadDeletes) {
      const ver = extra.deadVers?.get(o);
      push({
        op: 'delete',
        table: 'claims',
        key: claimKeys.dead(pid, g, o),
        cond: ver === undefined ? { kind: 'exists' } : { kind: 'version', ver },
      });
    }
    if (ch.member && extra.memberKey) {
      const { ver, ...attrs } = ch.member;
      push({
        op: 'put',
        table: 'claims',
        item: {
          ...extra.memberKey,
          ver: (ver ?? 0) + 1,
          attrs: attrs as unknown as Record<string, Json>,
          expiresAt: extra.memberTtlS,
        },
        cond: ver === undefined ? { kind: 'absent' } : { kind: 'version', ver },
      });
    }
    try {
      await this.storage.items.transact(ops);
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
  private inTurn<T>(ctx: Ctx, fn: () => Promise<T>): Promise<T> {
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
    // The seed caps a poll's visibility at maxVisibilityMs rather than refusing it.
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
    this.telemetry.count('ClaimPolls', 1, dims);
    let last: PollResult = { records: [], capped: false };
    const found = await this.longPoll.wait({
      queue,
      budgetMs: Math.max(0, Math.min(input.waitMs ?? 0, this.config.claimMaxWaitMs)),
      signal,
      lookAtEnd: true,
      look: async () => {
        const r = await this.inTurn(ctx, () => this.pollOnce(ctx, req));
        if (r.deadLettered > 0) this.telemetry.count('ClaimDeadLettered', r.deadLettered, dims);
        // Reclaim happens once: later rounds of a long poll only take what it reserved.
        req.reclaim = false;
        last = { records: r.records, capped: r.capped };
        return r.records.length > 0 ? last : null;
      },
    });
    const r = found ?? last;
    if (r.capped) this.telemetry.count('ClaimPollsCapped', 1, dims);
    return r;
  }

  private async pollOnce(ctx: Ctx, req: PollRequest): Promise<PollResult & { deadLettered: number }> {
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
        memberKey ? this.storage.items.get('claims', memberKey) : undefined,
      ]);
      const now = this.clock();
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
      const { reads, messages } = await this.readPlan(pid, plan, seen, !retentionOn(ctx.queue.options));
      for (const [o, m] of messages) seen.set(o, m);
      const { knownDead, staleDead } = splitDead(deadSeen, plan.state.inc);
      const { changes, records } = core.completePoll(view, plan, reads, req, now, knownDead);
      if (changes)
        await this.write(ctx, view, changes, { staleDead, memberKey, memberTtlS: this.memberTtlS(ctx.limits, now) });
      return {
        records: records.map((r) => ({ ...r, message: messages.get(r.offset) as StoredMessage })),
        capped: plan.capped,
        deadLettered: changes?.deadPuts.length ?? 0,
      };
    });
  }

  /** Reads what a plan hands out: owed records in a few ranged reads, then new ones from the frontier. */
  private async readPlan(
    pid: string,
    plan: core.PollPlan,
    seen: ReadonlyMap<number, StoredMessage>,
    indexCache: boolean,
  ): Promise<{ reads: core.PollReads; messages: Map<number, StoredMessage> }> {
    const messages = new Map<number, StoredMessage>();
    const delivered: number[] = [];
    const missing: number[] = [];
    let bytes = 0;
    let blocked = false;
    if (plan.candidates.length > 0) {
      const sorted = [...plan.candidates].sort((a, b) => a - b);
      const runs: number[][] = [];
      for (const o of sorted) {
        const run = runs.at(-1);
        if (run && o - (run.at(-1) as number) <= RUN_GAP && o - (run[0] as number) < core.MAX_POLL_RECORDS) run.push(o);
        else runs.push([o]);
      }
      const fetched = new Map<number, StoredMessage>();
      const gone = new Set<number>();
      for (const o of sorted) {
        const m = seen.get(o);
        if (m) fetched.set(o, m);
      }
      const unread = runs.filter((run) => run.some((o) => !fetched.has(o)));
      for (const run of unread.slice(0, MAX_READ_RUNS)) {
        const start = run[0] as number;
        const end = run.at(-1) as number;
        // Finished records between owed ones come along; the byte bound keeps that in check
        // (what a bounded read leaves out stays owed for the next poll).
        const got = await this.segments.read(pid, start, {
          maxCount: end - start + 1,
          maxBytes: core.MAX_POLL_BYTES,
          indexCache,
        });
        for (const m of got) if (m.offset <= end) fetched.set(m.offset, m);
        // The log is dense from its head: an offset below the first one returned was removed by retention.
        const firstAt = got[0]?.offset;
        for (const o of run) if (!fetched.has(o) && (firstAt === undefined || o < firstAt)) gone.add(o);
      }
      for (const o of plan.candidates) {
        if (gone.has(o)) {
          missing.push(o);
          continue;
        }
        const m = fetched.get(o);
        if (!m || (delivered.length > 0 && bytes + m.payload.byteLength > core.MAX_POLL_BYTES)) {
          blocked = true; // beyond the reads or the byte budget: stays owed for the next poll
          break;
        }
        delivered.push(o);
        messages.set(o, m);
        bytes += m.payload.byteLength;
      }
    }
    let newFirst = plan.frontier;
    let newCount = 0;
    if (!blocked && plan.newMax > 0 && bytes < core.MAX_POLL_BYTES) {
      const again: StoredMessage[] = [];
      for (let o = plan.frontier; again.length < plan.newMax && seen.has(o); o++)
        again.push(seen.get(o) as StoredMessage);
      const got =
        again.length === plan.newMax
          ? again
          : await this.segments.read(pid, plan.frontier, {
              maxCount: plan.newMax,
              maxBytes: core.MAX_POLL_BYTES - bytes,
              indexCache,
            });
      const first = got[0];
      if (first) newFirst = first.offset;
      for (const m of got) {
        // Contiguous, and within the byte budget (a record over it goes out only alone).
        if (m.offset !== newFirst + newCount) break;
        if (delivered.length + newCount > 0 && bytes + m.payload.byteLength > core.MAX_POLL_BYTES) break;
        messages.set(m.offset, m);
        bytes += m.payload.byteLength;
        newCount++;
      }
      if (newCount === 0) newFirst = plan.frontier;
    }
    return { reads: { delivered, missing, newFirst, newCount }, messages };
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
          const res = core.ack(view, todo, this.clock());
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
      this.telemetry.count('ClaimAcks', acked, { queue, group });
      this.notifier.notify(queue, ctx.part.id);
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
        const res = core.nack(view, input, this.clock(), ctx.limits);
        await this.write(ctx, view, res.changes);
        return res;
      }),
    );
    if (r.delayMs === 0) this.notifier.notify(queue, ctx.part.id);
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
        const res = core.extend(view, input, this.clock(), ctx.limits);
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
        const res = core.deadLetter(view, input, this.clock(), knownDead);
        await this.write(ctx, view, res.changes, { staleDead });
        return res;
      }),
    );
    this.telemetry.count('ClaimDeadLettered', 1, { queue, group });
    this.notifier.notify(queue, ctx.part.id);
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
    const state = await this.storage.items.get('claims', claimKeys.state(ctx.part.id, group));
    if (!state) return { offsets: [] };
    const inc = (state.attrs as unknown as GroupState).inc;
    const limit = Math.min(opts.limit ?? 1000, 10_000);
    const offsets: number[] = [];
    let after = opts.after !== undefined ? padOffset(opts.after) : undefined;
    let more = false;
    while (offsets.length < limit) {
      const page = await this.storage.items.query('claims', claimKeys.deadPk(ctx.part.id, group), {
        after,
        limit: Math.min(1000, limit - offsets.length),
      });
      for (const it of page.items)
        if ((it.attrs as { inc?: number }).inc === inc) offsets.push(it.attrs.offset as number);
      after = page.next;
      more = page.next !== undefined;
      if (!more) break;
    }
    return more && offsets.length > 0 ? { offsets, next: offsets.at(-1) } : { offsets };
  }

  private async deadPointer(ctx: Ctx, offset: number): Promise<{ ver: number; view: GroupView }> {
    const [item, view] = await Promise.all([
      this.storage.items.get('claims', claimKeys.dead(ctx.part.id, ctx.group, offset)),
      this.loadView(ctx.part.id, ctx.group),
    ]);
    if (!item || !view.state || (item.attrs as { inc?: number }).inc !== view.state.inc)
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
          this.segments.readHead(ctx.part.id),
        ]);
        if (offset < head) {
          throw notFound(
            `offset ${offset} is a dead letter of this group, but retention has removed its record from the log (the partition now starts at offset ${head}), so there is nothing to redrive; discard the dead letter (DELETE .../dead-letters/${offset})`,
          );
        }
        const res = core.redrive(view, offset, this.clock());
        await this.write(ctx, view, res.changes, { deadVers: new Map([[offset, ver]]) });
      }),
    );
    this.notifier.notify(queue, ctx.part.id);
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
      const states = await this.storage.items.getMany(
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
          const state = st.attrs as unknown as GroupState;
          // Redrive items sort by offset: the first live one is the lowest redriven record
          // (items of a deleted incarnation are skipped; there are rarely any).
          let low: number | undefined;
          let after: string | undefined;
          do {
            const page = await this.storage.items.query('claims', claimKeys.groupPk(partitionId, g), {
              prefix: 'R#',
              after,
              limit: 25,
            });
            low = page.items.map(decodeItem).find((it) => it.inc === state.inc)?.first;
            after = page.next;
          } while (low === undefined && after !== undefined);
          needs.push(low === undefined ? state.committed : Math.min(state.committed, low));
        }),
      );
    }
    return { needs, unread };
  }

  // ------------------------------------------------------------------ admin

  private async resolveStartOffset(pid: string, start: Start): Promise<number> {
    const [head, tail] = await Promise.all([this.segments.readHead(pid), this.segments.readTail(pid)]);
    return core.resolveStart(start, head, tail.next);
  }

  /** Creates the group at `start` unless it exists; an existing group is left where it is. */
  async create(
    queue: string,
    partition: string,
    group: string,
    start: Start,
  ): Promise<{ offset: number; moved: boolean }> {
    const ctx = await this.resolve(queue, partition, group, 'register');
    return this.inTurn(ctx, () =>
      this.retrying('create', async () => {
        const view = await this.loadView(ctx.part.id, group);
        if (view.state) return { offset: view.state.committed, moved: false };
        const offset = await this.resolveStartOffset(ctx.part.id, start);
        const res = core.create(view, offset, this.clock(), { inc: randomInc() });
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
    const ctx = await this.resolve(queue, partition, group, 'register');
    const offset = await this.resolveStartOffset(ctx.part.id, start);
    const r = await this.inTurn(ctx, () =>
      this.retrying('seek', async () => {
        const view = await this.loadView(ctx.part.id, group);
        const res = core.seek(view, offset, this.clock());
        await this.write(ctx, view, res.changes);
        return res;
      }),
    );
    this.notifier.notify(queue, ctx.part.id);
    return { offset: r.offset, moved: r.moved };
  }

  async describe(queue: string, partition: string, group: string): Promise<GroupDescription> {
    const ctx = await this.resolve(queue, partition, group, 'check');
    const [view, tail] = await Promise.all([this.loadView(ctx.part.id, group), this.segments.readTail(ctx.part.id)]);
    const counts = core.describe(view, this.clock());
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
      const st = await this.storage.items.get('claims', claimKeys.state(pid, group));
      if (!st) return undefined;
      try {
        await this.storage.items.delete('claims', claimKeys.state(pid, group), { kind: 'version', ver: st.ver });
      } catch (e) {
        if (e instanceof ConditionFailedError) throw new WriteConflict([]);
        throw e;
      }
      return st.attrs as unknown as GroupState;
    });
    if (!gone) return { existed: false };
    for (const pk of [claimKeys.groupPk(pid, group), claimKeys.memberPk(pid, group), claimKeys.deadPk(pid, group)]) {
      await this.sweepPk(
        pk,
        (it) =>
          (it.attrs as { i?: number; inc?: number }).i === gone.inc || (it.attrs as { inc?: number }).inc === gone.inc,
      );
    }
    this.notifier.notify(queue, pid);
    return { existed: true };
  }

  /** Deletes items under `pk` that `dead` says belong to nothing any more (each guarded by its version). */
  private async sweepPk(pk: string, dead: (it: Item) => boolean): Promise<number> {
    let removed = 0;
    let after: string | undefined;
    do {
      const page = await this.storage.items.query('claims', pk, { after, limit: 100 });
      const ops: WriteOp[] = page.items
        .filter((it) => it.sk !== '#state' && dead(it))
        .map((it) => ({
          op: 'delete',
          table: 'claims',
          key: { pk: it.pk, sk: it.sk },
          cond: { kind: 'version', ver: it.ver },
        }));
      if (ops.length > 0) removed += (await this.storage.items.writeEach(ops)).filter((r) => r.ok).length;
      after = page.next;
    } while (after);
    return removed;
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
    let removed = await this.sweepPk(claimKeys.groupPk(ctx.part.id, group), (it) => garbage.has(it.sk));
    const other = (it: Item): boolean => (it.attrs as { inc?: number }).inc !== inc;
    removed += await this.sweepPk(claimKeys.memberPk(ctx.part.id, group), other);
    removed += await this.sweepPk(claimKeys.deadPk(ctx.part.id, group), other);
    return { removed };
  }
}

/** A guard failed: who failed and what was there (dead-letter pointers are told apart). */
class WriteConflict extends Error {
  constructor(readonly failed: { kind: { t: 'dead'; offset: number } | { t: 'other' }; current: Item | undefined }[]) {
    super('a guarded write lost to another writer');
  }
}

/** Remembers the dead-letter pointers a lost write found already there. */
function noteDeadConflicts(conflict: WriteConflict | undefined, seen: Map<number, Item>): void {
  for (const f of conflict?.failed ?? []) if (f.kind.t === 'dead' && f.current) seen.set(f.kind.offset, f.current);
}

/**
 * Pointers found already there: of this incarnation (listed already: neither written nor
 * counted again), or left by a deleted one (overwritten, guarded by their version).
 */
function splitDead(seen: Map<number, Item>, inc: number): { knownDead: Set<number>; staleDead: Map<number, number> } {
  const knownDead = new Set<number>();
  const staleDead = new Map<number, number>();
  for (const [o, it] of seen) {
    if ((it.attrs as { inc?: number }).inc === inc) knownDead.add(o);
    else staleDead.set(o, it.ver);
  }
  return { knownDead, staleDead };
}

/** Member entries live at least a day, and twice the longest a claim can stand. */
function memberTtlMs(limits: ClaimLimits): number {
  return Math.max(2 * limits.maxVisibilityMs, DAY_MS);
}

const randomInc = (): number => randomInt(1, 2 ** 47);
