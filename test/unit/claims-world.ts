/**
 * A pure in-memory harness for the claim core: it plays the storage's part (applying each
 * decision's changes, checking the state-version guard) and the log's part (a retained range
 * [head, tail)), with an explicit `now`. No I/O, no timers.
 */
import * as core from '../../server/core/claims/index.js';
import type {
  Changes,
  ClaimLimits,
  DeadLetter,
  Delivery,
  GroupView,
  Member,
  PollRequest,
  Start,
} from '../../server/core/claims/index.js';

export const LIMITS: ClaimLimits = {
  visibilityTimeoutMs: 30_000,
  maxAttempts: 5,
  maxInFlight: 10_000,
  maxVisibilityMs: 43_200_000,
};

export interface PollOpts {
  max?: number;
  visibilityMs?: number;
  principal?: string;
  consumer?: string;
  session?: string;
  reclaim?: boolean;
}

/**
 * Applies a write to a view, as storage would: the harness's stand-in for writing the
 * changes and reading the group back (the service reads back from storage).
 */
export function applyChanges(view: GroupView, changes: Changes): GroupView {
  const key = (i: { kind: string; first: number }): string => `${i.kind}${i.first}`;
  const gone = new Set([...changes.deletes, ...changes.garbageDeletes].map(key));
  const put = new Map(changes.puts.map((p) => [key(p), p]));
  const items = view.items.filter((it) => !gone.has(key(it)) && !put.has(key(it)));
  for (const p of changes.puts) items.push({ ...p, ver: (p.ver ?? 0) + 1 });
  items.sort((a, b) => a.first - b.first || a.kind.localeCompare(b.kind));
  const garbage = view.garbage.filter((g) => !gone.has(key(g)) && !put.has(key(g)));
  // Batches of another epoch are garbage after a seek.
  const live = items.filter(
    (it) => it.inc === changes.state.inc && (it.kind === 'R' || it.epoch === changes.state.epoch),
  );
  for (const it of items) if (!live.includes(it)) garbage.push({ kind: it.kind, first: it.first, ver: it.ver ?? 1 });
  return { state: changes.state, stateVer: (view.stateVer ?? 0) + 1, items: live, garbage };
}

export class World {
  view: GroupView = { state: undefined, stateVer: undefined, items: [], garbage: [] };
  members = new Map<string, Member>();
  dead = new Map<number, DeadLetter>();
  now = 1_000_000;
  head = 0;
  tail = 0;
  limits: ClaimLimits;
  lastCapped = false;
  private incSeed = 41;

  constructor(limits: Partial<ClaimLimits> = {}) {
    this.limits = { ...LIMITS, ...limits };
  }

  push(n: number): void {
    this.tail += n;
  }

  advance(ms: number): void {
    this.now += ms;
  }

  /** Applies a write decided on `basedOn`, refusing it when the state moved meanwhile (the storage guard). */
  commit(changes: Changes, basedOn: number | undefined, memberKey?: string): void {
    if (basedOn !== this.view.stateVer)
      throw new Error(`guard failed: decided on state version ${basedOn}, now ${this.view.stateVer}`);
    if (changes.state.inc !== this.view.state?.inc) this.dead.clear();
    this.view = applyChanges(this.view, changes);
    for (const d of changes.deadPuts) this.dead.set(d.offset, d);
    for (const o of changes.deadDeletes) this.dead.delete(o);
    if (changes.member && memberKey)
      this.members.set(memberKey, { ...changes.member, ver: (changes.member.ver ?? 0) + 1 });
  }

  plan(o: PollOpts = {}): { plan: core.PollPlan; req: PollRequest; memberKey: string | undefined } {
    const req: PollRequest = {
      max: o.max ?? 10,
      visibilityMs: o.visibilityMs ?? this.limits.visibilityTimeoutMs,
      principal: o.principal ?? 'alice',
      consumer: o.consumer,
      session: o.session,
      reclaim: o.reclaim ?? false,
    };
    const memberKey = o.consumer !== undefined ? `${req.principal}#${o.consumer}` : undefined;
    const member = memberKey ? this.members.get(memberKey) : undefined;
    return {
      plan: core.planPoll(this.view, member, req, this.now, this.limits, { inc: this.incSeed++ }),
      req,
      memberKey,
    };
  }

  /** A poll: plan, "read the log", complete, commit. Returns the deliveries. */
  poll(o: PollOpts = {}): Delivery[] {
    const { plan, req, memberKey } = this.plan(o);
    this.lastCapped = plan.capped;
    const delivered = plan.candidates.filter((x) => x >= this.head);
    const missing = plan.candidates.filter((x) => x < this.head);
    const newFirst = Math.max(plan.frontier, this.head);
    const newCount = Math.max(0, Math.min(plan.newMax, this.tail - newFirst));
    const knownDead = new Set(plan.deadLetter.map((d) => d.offset).filter((x) => this.dead.has(x)));
    const { changes, records } = core.completePoll(
      this.view,
      plan,
      { delivered, missing, newFirst, newCount },
      req,
      this.now,
      knownDead,
    );
    if (changes) this.commit(changes, this.view.stateVer, memberKey);
    return records;
  }

  offsets(o: PollOpts = {}): number[] {
    return this.poll(o).map((r) => r.offset);
  }

  ack(offsets: number[]): number {
    const r = core.ack(this.view, offsets, this.now);
    if (r.changes) this.commit(r.changes, this.view.stateVer);
    return r.committed;
  }

  nack(offset: number, opts: { attempts?: number; delayMs?: number; refund?: boolean } = {}): void {
    this.commit(core.nack(this.view, { offset, ...opts }, this.now, this.limits).changes, this.view.stateVer);
  }

  extend(offset: number, attempts: number, extendMs: number): number {
    const r = core.extend(this.view, { offset, attempts, extendMs }, this.now, this.limits);
    this.commit(r.changes, this.view.stateVer);
    return r.visibleMs;
  }

  deadLetter(offset: number, attempts?: number): void {
    const known = new Set(this.dead.has(offset) ? [offset] : []);
    this.commit(core.deadLetter(this.view, { offset, attempts }, this.now, known).changes, this.view.stateVer);
  }

  redrive(offset: number): void {
    if (!this.dead.has(offset)) throw new Error(`${offset} is not a dead letter`);
    this.commit(core.redrive(this.view, offset, this.now).changes, this.view.stateVer);
  }

  create(start: Start): { offset: number; moved: boolean } {
    const r = core.create(this.view, core.resolveStart(start, this.head, this.tail), this.now, { inc: this.incSeed++ });
    if (r.changes) this.commit(r.changes, this.view.stateVer);
    return { offset: r.offset, moved: r.moved };
  }

  seek(start: Start): { offset: number; moved: boolean } {
    const r = core.seek(this.view, core.resolveStart(start, this.head, this.tail), this.now);
    this.commit(r.changes, this.view.stateVer);
    return { offset: r.offset, moved: r.moved };
  }

  describe(): core.GroupCounts {
    return core.describe(this.view, this.now);
  }

  get committed(): number {
    return this.view.state?.committed ?? 0;
  }

  deadList(): number[] {
    return [...this.dead.keys()].sort((a, b) => a - b);
  }

  /** A restart: everything goes through its stored (JSON) form and nothing else survives. */
  restart(): void {
    this.view = JSON.parse(JSON.stringify(this.view)) as GroupView;
    this.members = new Map(JSON.parse(JSON.stringify([...this.members])) as [string, Member][]);
    this.dead = new Map(JSON.parse(JSON.stringify([...this.dead])) as [number, DeadLetter][]);
  }
}
