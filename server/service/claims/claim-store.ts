/**
 * Where record claims live and how their items are encoded (table `claims`; docs/CLAIMS.md,
 * "Storage layout"), per (partition id, group):
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
 * deleted on the side by later writes or `ClaimService.sweep`.
 *
 * @example
 * ```ts
 * const { view, fp } = await readGroup(storage, partitionId, 'workers');
 * if (consistent(view, fp)) await storage.items.transact(changeOps(partitionId, 'workers', view, changes).ops);
 * ```
 */
import type {
  Changes,
  ClaimItem,
  Garbage,
  GroupState,
  GroupView,
  Member,
  ClaimRecordStatus,
} from '../../core/claims/index.js';
import type { Item, ItemKey, Json, Storage, WriteOp } from '../../storage/port.js';
import { padOffset } from '../log/log-store.js';

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

export const itemSk = (it: { kind: 'B' | 'R'; first: number }): string => `${it.kind}#${padOffset(it.first)}`;

/** Group state, batches and members as stored (short attribute names keep items small). */
type StoredRecord = [
  delta: number,
  attempts: number,
  status: ClaimRecordStatus,
  until: number,
  holder: number,
  stamp: number,
];
type StoredHolder = [principal: string, consumer: string, session: string, seq: number];

export function encodeItem(it: ClaimItem): Record<string, Json> {
  return {
    f: it.first,
    n: it.count,
    k: it.skip,
    i: it.inc,
    e: it.epoch,
    h: it.holders.map((h): StoredHolder => [h.principal, h.consumer, h.session, h.seq]),
    r: it.records.map((r): StoredRecord => [r.offset - it.first, r.attempts, r.status, r.until, r.holder, r.stamp]),
  };
}

export function decodeItem(item: Item): ClaimItem {
  const a = item.attrs as {
    f: number;
    n: number;
    k: number;
    i: number;
    e: number;
    h: StoredHolder[];
    r: StoredRecord[];
  };
  const kind = item.sk.startsWith('R#') ? 'R' : 'B';
  return {
    kind,
    first: a.f,
    count: a.n,
    skip: a.k,
    inc: a.i,
    epoch: a.e,
    holders: a.h.map(([principal, consumer, session, seq]) => ({ principal, consumer, session, seq })),
    records: a.r.map(([delta, attempts, status, until, holder, stamp]) => ({
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
export const isLive = (it: { kind: 'B' | 'R'; inc: number; epoch: number }, state: GroupState): boolean =>
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

export function decodeMember(item: Item | undefined): (Member & { expiresAt?: number | undefined }) | undefined {
  if (!item) return undefined;
  const a = item.attrs as unknown as Omit<Member, 'ver'>;
  return { ...a, sessions: { ...a.sessions }, ver: item.ver, expiresAt: item.expiresAt };
}

/** The group incarnation a member item or dead-letter pointer was written in. */
export const incarnationOf = (item: Item): number | undefined => (item.attrs as { inc?: number }).inc;

/** Whether an item under a group's keys belongs to incarnation `inc` (batches tag it `i`, the rest `inc`). */
export function ofIncarnation(item: Item, inc: number): boolean {
  const a = item.attrs as { i?: number; inc?: number };
  return a.i === inc || a.inc === inc;
}

/** The group's position as stored (without the fingerprint of its live items). */
export function decodeState(item: Item): { state: GroupState; fp: number | undefined } {
  const { fp, ...state } = item.attrs as unknown as GroupState & { fp?: number };
  return { state, fp };
}

/** A dead-letter pointer's offset. */
export const deadOffsetOf = (item: Item): number => item.attrs.offset as number;

/**
 * The group as stored: its position and live items (one query, paged only when very many
 * records are unfinished), and the fingerprint its state carries.
 */
export async function readGroup(
  storage: Storage,
  pid: string,
  group: string,
): Promise<{ view: GroupView; fp: number | undefined }> {
  const pk = claimKeys.groupPk(pid, group);
  const raw: Item[] = [];
  let after: string | undefined;
  do {
    const page = await storage.items.query('claims', pk, { after });
    raw.push(...page.items);
    after = page.next;
  } while (after);
  let state: GroupState | undefined;
  let stateVer: number | undefined;
  let fp: number | undefined;
  const items: ClaimItem[] = [];
  const garbage: Garbage[] = [];
  for (const it of raw) {
    if (it.sk === '#state') {
      ({ state, fp } = decodeState(it));
      stateVer = it.ver;
      continue;
    }
    const ci = decodeItem(it);
    if (state !== undefined && isLive(ci, state)) items.push(ci);
    else garbage.push({ kind: ci.kind, first: ci.first, ver: it.ver });
  }
  items.sort((a, b) => a.first - b.first || (a.kind < b.kind ? -1 : 1));
  return { view: { state, stateVer, items, garbage }, fp };
}

/** Whether a view read in one query matches the fingerprint its state carries (else a write landed in between). */
export function consistent(view: GroupView, fp: number | undefined): boolean {
  return fp === undefined || !view.state || fingerprint(view.items.map((it) => [itemSk(it), it.ver as number])) === fp;
}

/** What each op of {@link changeOps} writes: dead-letter pointers are told apart when their guard fails. */
export type OpKind = { t: 'dead'; offset: number } | { t: 'other' };

/** What a decision writes besides the view's items: versions read elsewhere, and the member item. */
export interface ChangeExtras {
  /** Versions of dead-letter pointers the call read (their deletes are guarded by them). */
  deadVers?: Map<number, number>;
  /** Pointers a deleted incarnation left at offsets this call dead-letters (overwritten, guarded). */
  staleDead?: Map<number, number>;
  /**
   * Offsets this call dead-letters as listed already (it found their pointers when a write of
   * its own collided): checked to still exist when it lands, since a redrive may have removed
   * one since — then the call reads again and lists the record anew.
   */
  listedDead?: ReadonlySet<number>;
  memberKey?: ItemKey;
  memberTtlS?: number;
}

/** The guarded ops that write one decision of the core (one transaction), and what each op is. */
export function changeOps(
  pid: string,
  g: string,
  view: GroupView,
  ch: Changes,
  extra: ChangeExtras = {},
): { ops: WriteOp[]; kinds: OpKind[] } {
  const ops: WriteOp[] = [];
  const kinds: OpKind[] = [];
  const push = (op: WriteOp, k: OpKind = { t: 'other' }): void => {
    ops.push(op);
    kinds.push(k);
  };
  // The live items once this write lands, fingerprinted into the state (see `consistent`).
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
      attrs: { ...ch.state, fp: fingerprint(live) },
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
  for (const o of extra.listedDead ?? [])
    push(
      { op: 'check', table: 'claims', key: claimKeys.dead(pid, g, o), cond: { kind: 'exists' } },
      { t: 'dead', offset: o },
    );
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
        attrs,
        expiresAt: extra.memberTtlS,
      },
      cond: ver === undefined ? { kind: 'absent' } : { kind: 'version', ver },
    });
  }
  return { ops, kinds };
}

/**
 * The lowest redriven offset of incarnation `inc` on the partition, if any. Redrive items sort
 * by offset, so this is the first live one (items of a deleted incarnation are skipped; there
 * are rarely any).
 */
export async function lowestRedrive(
  storage: Storage,
  pid: string,
  group: string,
  inc: number,
): Promise<number | undefined> {
  let low: number | undefined;
  let after: string | undefined;
  do {
    const page = await storage.items.query('claims', claimKeys.groupPk(pid, group), {
      prefix: 'R#',
      after,
      limit: 25,
    });
    low = page.items.map(decodeItem).find((it) => it.inc === inc)?.first;
    after = page.next;
  } while (low === undefined && after !== undefined);
  return low;
}

/** Deletes the items under `pk` that `dead` says belong to nothing any more (never the state), each version-guarded. */
export async function deleteWhere(storage: Storage, pk: string, dead: (it: Item) => boolean): Promise<number> {
  let removed = 0;
  let after: string | undefined;
  do {
    const page = await storage.items.query('claims', pk, { after, limit: 100 });
    const ops: WriteOp[] = page.items
      .filter((it) => it.sk !== '#state' && dead(it))
      .map((it) => ({
        op: 'delete',
        table: 'claims',
        key: { pk: it.pk, sk: it.sk },
        cond: { kind: 'version', ver: it.ver },
      }));
    if (ops.length > 0) removed += (await storage.items.writeEach(ops)).filter((r) => r.ok).length;
    after = page.next;
  } while (after);
  return removed;
}
