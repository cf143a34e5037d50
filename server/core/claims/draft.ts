import { SluiceError, invalid } from '../errors.js';
import { MAX_GARBAGE_PER_CALL, computeCommitted } from './model.js';
import type {
  Changes,
  ClaimItem,
  ClaimRecord,
  DeadLetter,
  Garbage,
  GroupState,
  GroupView,
  Holder,
  Member,
} from './model.js';

/**
 * The working copy every transition of the claims core edits, and the checks and errors they
 * share. Internal to `core/claims/`: the transitions return plain {@link Changes}.
 */

/** A mutable copy of a view that tracks which items a call changed. */
export class Draft {
  readonly state: GroupState;
  readonly items: ClaimItem[];
  readonly touched = new Set<ClaimItem>();
  readonly created = new Set<ClaimItem>();
  readonly stamp: number;
  readonly garbage: Garbage[];

  constructor(view: GroupView, state?: GroupState) {
    this.state = { ...(state ?? (view.state as GroupState)) };
    this.items = view.items.map((it) => ({
      ...it,
      holders: [...it.holders],
      records: it.records.map((r) => ({ ...r })),
    }));
    this.stamp = (view.stateVer ?? 0) + 1;
    this.garbage = view.garbage;
  }

  /** Every record at `offset` (a batch record and, rarely, a redrive record after a seek back). */
  at(offset: number): { item: ClaimItem; record: ClaimRecord }[] {
    const out: { item: ClaimItem; record: ClaimRecord }[] = [];
    for (const item of this.items) {
      if (offset < item.first || offset >= item.first + item.count) continue;
      const record = item.records.find((r) => r.offset === offset);
      if (record) out.push({ item, record });
    }
    return out;
  }

  touch(item: ClaimItem): void {
    this.touched.add(item);
  }

  remove(item: ClaimItem, record: ClaimRecord): void {
    item.records = item.records.filter((r) => r !== record);
    this.touch(item);
  }

  holderIndex(item: ClaimItem, h: Holder | undefined): number {
    if (!h) return -1;
    const i = item.holders.findIndex(
      (x) => x.principal === h.principal && x.consumer === h.consumer && x.session === h.session && x.seq === h.seq,
    );
    if (i >= 0) return i;
    item.holders.push(h);
    return item.holders.length - 1;
  }

  /** The write: touched items put (or deleted once empty), the state with its cursor recomputed. */
  changes(
    extra: {
      deadPuts?: DeadLetter[];
      deadDeletes?: number[];
      member?: Member | undefined;
      garbageBudget?: number;
    } = {},
  ): Changes {
    const live = this.items.filter((it) => it.records.length > 0 || !this.touched.has(it));
    this.state.committed = computeCommitted(this.state, live);
    const puts: ClaimItem[] = [];
    const deletes: ClaimItem[] = [];
    for (const it of this.touched) {
      if (it.records.length > 0) puts.push(compactHolders(it));
      else if (!this.created.has(it)) deletes.push(it);
    }
    const busy = new Set([...puts, ...deletes].map((i) => `${i.kind}${i.first}`));
    const garbageDeletes = this.garbage
      .filter((g) => !busy.has(`${g.kind}${g.first}`))
      .slice(0, extra.garbageBudget ?? MAX_GARBAGE_PER_CALL);
    return {
      state: this.state,
      puts,
      deletes,
      garbageDeletes,
      deadPuts: extra.deadPuts ?? [],
      deadDeletes: extra.deadDeletes ?? [],
      member: extra.member,
    };
  }
}

/** Drops holders no record points at any more (an item's holder list never grows without bound). */
function compactHolders(item: ClaimItem): ClaimItem {
  const used = new Set(item.records.map((r) => r.holder).filter((h) => h >= 0));
  if (used.size === item.holders.length) return item;
  const map = new Map<number, number>();
  const holders: Holder[] = [];
  for (const i of [...used].sort((a, b) => a - b)) {
    map.set(i, holders.length);
    holders.push(item.holders[i] as Holder);
  }
  return {
    ...item,
    holders,
    records: item.records.map((r) => ({ ...r, holder: r.holder >= 0 ? (map.get(r.holder) as number) : -1 })),
  };
}

export function requireState(view: GroupView, what: string): GroupState {
  if (!view.state) throw invalid(`cannot ${what}: this group has handed out nothing on this partition yet`);
  return view.state;
}

/**
 * Classifies an offset a consumer names (ack, nack, extend, dead-letter) that has no record:
 * finished already (a harmless duplicate), handed out only before a seek (stale), or never
 * handed out (invalid).
 */
export function absentKind(state: GroupState, offset: number): 'finished' | 'stale' | 'never' {
  if (offset < state.frontier) return 'finished';
  if (offset < state.high) return 'stale';
  return 'never';
}

export const staleSeek = (offset: number): SluiceError =>
  new SluiceError(
    'stale_claim',
    `offset ${offset} was handed out before a seek voided its claim; the group owes it again and will deliver it from its new position`,
    { offset },
  );

export const neverHandedOut = (offset: number): SluiceError =>
  invalid(
    `offset ${offset} has never been handed out to this group (it is at or past the group's ` +
      `frontier, or past the partition's tail); acknowledging a record that was not delivered would ` +
      `skip it`,
    { offset },
  );
