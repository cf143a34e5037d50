/**
 * Where partition leases live and how their rows are encoded (table `leases`; layout table in
 * docs/LEASES.md, "Storage layout"): a lane's cursor row, the work index, and a group's
 * registration scan. Partition ids are UUIDs and queue and group names cannot contain `#`,
 * so the prefixes below never collide with cursor rows.
 *
 * @example
 * ```ts
 * const row = await storage.items.get('leases', leaseKeys.cursor(partitionId, 'billing'));
 * const state = row ? decodeCursor(row) : emptyCursor();
 * ```
 */
import { emptyCursor, type CursorState } from '../../core/leases.js';
import { NO_SWEEP, type SweepState } from '../../core/work-repair.js';
import { ConditionFailedError, type Item, type ItemKey, type Json, type Storage } from '../../storage/port.js';
import type { PartitionRef } from '../log/log-store.js';

export const leaseKeys = {
  /** leases: a (partition, group) cursor and lease row. A partition's rows share the pk. */
  cursor: (partitionId: string, group: string): ItemKey => ({ pk: partitionId, sk: group }),
  /**
   * leases: the work index — partitions of a queue incarnation that may have work for some
   * lease group (see `work-index.ts`).
   */
  work: (queueId: string, partitionId: string): ItemKey => ({ pk: workPk(queueId), sk: partitionId }),
  /**
   * leases: the selector work index (see `selector-work.ts`): under pk `WSEL#<selector>`, one
   * item per queue that may have work (sk `Q#<queue>`), the repair pass's progress (sk `SEED`,
   * a stored key that keeps its old name), per consumer group and caller how far its
   * preparation got (sk `G#<group>#<principal hash>`) and when it was last reset (sk `E#<group>`).
   */
  selectorWork: (selPk: string, queue: string): ItemKey => ({ pk: selectorWorkPk(selPk), sk: `Q#${queue}` }),
  selectorRepair: (selPk: string): ItemKey => ({ pk: selectorWorkPk(selPk), sk: 'SEED' }),
  /** A group's preparation as one principal's pops made it (grants differ per principal). */
  selectorGroup: (selPk: string, group: string, principal: string): ItemKey => ({
    pk: selectorWorkPk(selPk),
    sk: `G#${group}#${principal}`,
  }),
  /** A group's reset epoch under the selector: preparations made before it do not count. */
  selectorGroupEpoch: (selPk: string, group: string): ItemKey => ({ pk: selectorWorkPk(selPk), sk: `E#${group}` }),
  /** leases: progress of marking a newly registered group's existing partitions as having work. */
  scan: (queue: string, group: string): ItemKey => ({ pk: `SCAN#${queue}#${group}`, sk: 'state' }),
  /** leases: the work-index repair sweep's progress, one for the deployment (see `maintenance/work-repair.ts`). */
  workRepair: (): ItemKey => ({ pk: 'WREPAIR', sk: 'SEED' }),
};

export const workPk = (queueId: string): string => `WORK#${queueId}`;
export const selectorWorkPk = (selPk: string): string => `WSEL#${selPk}`;
/** The sk prefix of a selector work item (the queue name follows). */
export const SELECTOR_WORK_PREFIX = 'Q#';

// ------------------------------------------------------------ cursor rows

/** Cursor row attributes: the core state plus names for admin views. */
type CursorAttrs = CursorState & { queue: string; partition: string };

export function decodeCursor(item: Item): CursorState {
  const a = item.attrs as unknown as Partial<CursorAttrs>;
  return { ...emptyCursor(), ...a };
}

export function cursorItem(part: PartitionRef, group: string, s: CursorState, ver: number): Item {
  const attrs: CursorAttrs = { ...s, queue: part.queue, partition: part.name };
  return { ...leaseKeys.cursor(part.id, group), ver, attrs: attrs as unknown as Record<string, Json> };
}

/** A read row with a new state, keeping the names it carries (for a write guarded by its version). */
export function replacedCursor(row: Item, next: CursorState): Item {
  const a = row.attrs as unknown as CursorAttrs;
  return {
    ...row,
    ver: row.ver + 1,
    attrs: { ...next, queue: a.queue, partition: a.partition } as unknown as Record<string, Json>,
  };
}

/** Writes a row guarded by the version it was read at; false when another write won. */
export async function putCursor(
  storage: Storage,
  part: PartitionRef,
  group: string,
  next: CursorState,
  prev: Item | undefined,
): Promise<boolean> {
  try {
    await storage.items.put(
      'leases',
      cursorItem(part, group, next, (prev?.ver ?? 0) + 1),
      prev ? { kind: 'version', ver: prev.ver } : { kind: 'absent' },
    );
    return true;
  } catch (e) {
    if (e instanceof ConditionFailedError) return false;
    throw e;
  }
}

/** The cursor rows of one group on the given partitions (getMany in pages of 100). */
export async function cursorRows(
  storage: Storage,
  pids: readonly string[],
  group: string,
): Promise<(Item | undefined)[]> {
  const out: (Item | undefined)[] = [];
  for (let i = 0; i < pids.length; i += 100)
    out.push(
      ...(await storage.items.getMany(
        'leases',
        pids.slice(i, i + 100).map((p) => leaseKeys.cursor(p, group)),
      )),
    );
  return out;
}

/** Every lease group's cursor on one partition (one query: a partition's rows share the pk). */
export async function partitionCursors(
  storage: Storage,
  partitionId: string,
): Promise<{ group: string; state: CursorState }[]> {
  const rows = await storage.items.query('leases', partitionId, { limit: 1000 });
  return rows.items.map((r) => ({ group: r.sk, state: decodeCursor(r) }));
}

// ------------------------------------------------------------ work index

/** A work item: the partition may have work for some lease group. `ver` changes with every mark. */
export const workItem = (queueId: string, partitionId: string, ver: number): Item => ({
  ...leaseKeys.work(queueId, partitionId),
  ver,
  attrs: {},
});

/** Progress of marking a group's existing partitions as having work (see `work-index.ts`). */
export interface ScanState {
  /** The registration it is for (its `createdAt`). */
  regAt: number;
  /** The last partition name item examined (null: from the first). */
  after: string | null;
  done: boolean;
}

export const decodeScanState = (item: Item): ScanState => item.attrs as unknown as ScanState;

export const scanStateItem = (queue: string, group: string, ver: number, s: ScanState): Item => ({
  ...leaseKeys.scan(queue, group),
  ver,
  attrs: { regAt: s.regAt, after: s.after, done: s.done },
});

// ------------------------------------------------------------ work-index repair

/** The repair sweep's progress as stored (see `maintenance/work-repair.ts`). */
export function decodeSweepState(item: Item): SweepState {
  const a = item.attrs as unknown as Partial<SweepState>;
  return { sweptAt: typeof a.sweptAt === 'number' ? a.sweptAt : NO_SWEEP.sweptAt, cursor: a.cursor ?? null };
}

export const sweepStateItem = (s: SweepState, ver: number): Item => ({
  ...leaseKeys.workRepair(),
  ver,
  attrs: { sweptAt: s.sweptAt, cursor: s.cursor as unknown as Json },
});
