/**
 * The activity roll-up pass, run by `runMaintenance` on every pass: it sums every process's
 * one-minute activity items into one roll-up per minute and per aligned block of 5, 15, 60
 * and 360 minutes, moves the watermark below which series read roll-ups, and folds late items
 * into the roll-ups they belong to (model: `core/activity-rollup.ts`; items:
 * `admin/activity-store.ts`). A series request then reads one item per bucket instead of one
 * per process and minute.
 *
 * - Roll: from the watermark to `rollCutoff(now)`, hour by hour: the hour's raw items (one
 *   query, paged), summed per minute; each block that ends at a minute boundary is the sum of
 *   its children (the ones rolled by earlier passes read back, the others kept from this
 *   one). Raw items are left to TTL: they are never read below the watermark, so deleting
 *   them (a billed write each) buys nothing.
 * - Fold: late items below the watermark, a page at a time, minute by minute: the minute's
 *   roll-up and every existing block holding it get the late numbers, and the late item is
 *   deleted, in one transaction. A block that does not exist yet and ends above the watermark
 *   is left out: the roll that makes it adds up its children, the folded minute among them.
 * - Every write is a transaction that also bumps the watermark's version, guarded by the
 *   version the pass read: so a pass that crashed wrote all of a transaction or none of it (a
 *   re-run finds the late item still there, or gone and counted), and of two passes racing
 *   (one ran past its maintenance lease) the one that writes second fails its guard and stops,
 *   having counted nothing twice. Raw items below the cutoff no longer change, so a roll
 *   computed again gives the same items. One version for every change also keeps a fold
 *   from landing between a block's read of its children and its write.
 * - Readers keep to the watermark they read: below it roll-ups change only by folds, which add
 *   late items no reader reads elsewhere; from it on they read raw items, which a pass never
 *   changes. A read racing a pass counts nothing twice.
 * - Budget: {@link REQUESTS_PER_PASS} storage requests, checked between hours and between
 *   minutes of late items; the next pass goes on from the watermark.
 *
 * @example
 * ```ts
 * const r = await svc.activityRollup.run(); // { minutes: 15, items: 19, late: 2, through: 29000012, complete: true }
 * ```
 */
import {
  blockEnd,
  childLevel,
  containing,
  endingAt,
  firstWatermark,
  LEVELS,
  rollCutoff,
  type Block,
  type Level,
} from '../../core/activity-rollup.js';
import { portItemSize } from '../../storage/usage.js';
import {
  ConditionFailedError,
  ContentionError,
  MAX_TRANSACT_OPS,
  type Condition,
  type Item,
  type Storage,
  type WriteOp,
} from '../../storage/port.js';
import { addRows } from '../admin/activity.js';
import {
  ActivityStore,
  KEEP_S,
  lateItemWith,
  newRollupItems,
  QUEUES_PER_ITEM,
  rollupItem,
  watermarkItem,
  type RollupPart,
  type Rows,
  type StoredMinute,
  type Watermark,
} from '../admin/activity-store.js';

/**
 * Storage requests one pass spends at most: about 5 s of DynamoDB round trips. A normal pass
 * needs a dozen (the interval's minutes are an hour or two of raw items); this lets a pass
 * catch up on about 8 days of 100 busy processes' items (one 1 MB page holds ~3,000 of them).
 */
export const REQUESTS_PER_PASS = 1_000;
/** Late items read per query: a few minutes' worth of idle instances. */
const LATE_PAGE = 100;
/** Bytes one transaction carries at most: DynamoDB takes 4 MB; the rest is room for overhead. */
const TX_BYTES = 3_500_000;
/** What a queue's row adds to a part at most (a long name, 19 long numbers): for sizing transactions. */
const ROW_BYTES = 600;
const TOP = LEVELS[LEVELS.length - 1] as Level;

export interface RollupReport {
  /** Minutes rolled up (the watermark moved over them). */
  minutes: number;
  /** Roll-up items written. */
  items: number;
  /** Late items folded in. */
  late: number;
  /** The watermark after the pass. */
  through: number;
  /** Caught up: rolled to the cutoff, every late item below the watermark folded. */
  complete: boolean;
  /** Another pass changed the roll-ups meanwhile: this one stopped, counting nothing twice. */
  raced?: true;
}

export interface ActivityRollupDeps {
  storage: Storage;
  clock: () => number;
  /** The pass's budget in requests ({@link REQUESTS_PER_PASS} unless given). */
  requestsPerPass?: number | undefined;
  /** Ops a transaction holds (`MAX_TRANSACT_OPS` unless given: tests make writes span several). */
  transactOps?: number | undefined;
}

/** Another pass wrote first: stop. */
class Raced extends Error {}

/**
 * Batches a pass's writes into transactions, each bumping the watermark's version guarded by
 * the one read (see the module doc).
 */
class Transactions {
  private ops: WriteOp[] = [];
  private bytes = 0;
  commits = 0;

  constructor(
    private readonly storage: Storage,
    /** The watermark as stored (`ver` 0: none yet). */
    public mark: Watermark,
    readonly maxOps: number,
  ) {}

  get pending(): number {
    return this.ops.length;
  }

  /** Whether `ops` more writes of `bytes` fit in the transaction under way. */
  fits(ops: number, bytes: number): boolean {
    return this.ops.length + ops + 1 <= this.maxOps && this.bytes + bytes <= TX_BYTES;
  }

  add(op: WriteOp, bytes: number): void {
    this.ops.push(op);
    this.bytes += bytes;
  }

  /** Writes what was added, with the watermark at `through` and its version bumped. */
  async commit(through = this.mark.through): Promise<void> {
    const next = { through, ver: this.mark.ver + 1 };
    const cond: Condition = this.mark.ver === 0 ? { kind: 'absent' } : { kind: 'version', ver: this.mark.ver };
    try {
      await this.storage.items.transact([...this.ops, { op: 'put', table: 'meta', item: watermarkItem(next), cond }]);
    } catch (e) {
      if (e instanceof ConditionFailedError || e instanceof ContentionError) throw new Raced();
      throw e;
    } finally {
      this.commits++;
    }
    this.mark = next;
    this.ops = [];
    this.bytes = 0;
  }
}

const put = (item: Item, cond?: Condition): WriteOp => ({ op: 'put', table: 'meta', item, cond });
const key = (b: Block): string => `${b.level}:${b.start}`;

/**
 * The roll-up pass (see the module doc).
 *
 * @example
 * ```ts
 * const rollup = new ActivityRollup({ storage, clock: Date.now });
 * const { through, complete } = await rollup.run();
 * ```
 */
export class ActivityRollup {
  constructor(private readonly deps: ActivityRollupDeps) {}

  async run(): Promise<RollupReport> {
    const now = this.deps.clock();
    const store = new ActivityStore(this.deps.storage);
    const stored = await store.watermark();
    const tx = new Transactions(
      this.deps.storage,
      stored ?? { through: firstWatermark(now, KEEP_S * 1000), ver: 0 },
      this.deps.transactOps ?? MAX_TRANSACT_OPS,
    );
    const budget = this.deps.requestsPerPass ?? REQUESTS_PER_PASS;
    const left = (): boolean => store.requests + tx.commits < budget;
    const report: RollupReport = { minutes: 0, items: 0, late: 0, through: tx.mark.through, complete: false };
    try {
      const from = tx.mark.through;
      const cutoff = rollCutoff(now);
      await this.roll(store, tx, cutoff, left, report);
      report.minutes = tx.mark.through - from;
      report.complete = tx.mark.through >= cutoff && (await this.fold(store, tx, left, report));
    } catch (e) {
      if (!(e instanceof Raced)) throw e;
      report.raced = true;
      report.complete = false;
    }
    report.through = tx.mark.through;
    return report;
  }

  /** Rolls minutes from the watermark up to `cutoff` (see the module doc, "Roll"). */
  private async roll(
    store: ActivityStore,
    tx: Transactions,
    cutoff: number,
    left: () => boolean,
    report: RollupReport,
  ): Promise<void> {
    const start = tx.mark.through;
    /** Blocks this pass completed whose parent it has not completed yet (empty ones too). */
    const done = new Map<string, Rows>();
    let rolledTo = start;
    for (let m = start; m < cutoff && left();) {
      const hour = Math.floor(m / 60);
      const to = Math.min(cutoff, hour * 60 + 60);
      const byMinute = new Map<number, Rows>();
      for (const it of await store.rawHour(hour, m, to)) {
        let rows = byMinute.get(it.minute);
        if (!rows) byMinute.set(it.minute, (rows = new Map<string, Float64Array>()));
        addRows(rows, it.rows);
      }
      for (; m < to; m++) {
        const minute: Block = { level: 1, start: m };
        const rows = byMinute.get(m) ?? new Map<string, Float64Array>();
        done.set(key(minute), rows);
        const items = newRollupItems(minute, rows);
        for (const b of endingAt(m + 1)) {
          const sum = await this.sumChildren(store, b, start, done);
          if (b.level !== TOP) done.set(key(b), sum);
          items.push(...newRollupItems(b, sum));
        }
        // A boundary too big for one transaction (thousands of queues) spans several; the
        // watermark moves only over complete boundaries.
        for (const item of items) {
          const bytes = portItemSize(item);
          if (!tx.fits(1, bytes)) await tx.commit(rolledTo);
          tx.add(put(item), bytes);
        }
        report.items += items.length;
        rolledTo = m + 1;
      }
    }
    if (tx.pending > 0 || rolledTo > tx.mark.through) await tx.commit(rolledTo);
  }

  /** A block's numbers: its children's, those rolled before this pass read back. */
  private async sumChildren(store: ActivityStore, b: Block, passStart: number, done: Map<string, Rows>): Promise<Rows> {
    const level = childLevel(b.level) as Level;
    const sum: Rows = new Map();
    // Children that ended by the pass's start were rolled by earlier passes.
    const storedTo = Math.max(b.start, Math.floor(passStart / level) * level);
    if (storedTo > b.start) for (const p of await store.rollups(level, b.start, storedTo)) addRows(sum, p.rows);
    for (let c = storedTo; c < blockEnd(b); c += level) {
      const k = key({ level, start: c });
      addRows(sum, done.get(k) ?? new Map());
      done.delete(k);
    }
    return sum;
  }

  /** Folds late items below the watermark (see the module doc, "Fold"); true when none is left. */
  private async fold(
    store: ActivityStore,
    tx: Transactions,
    left: () => boolean,
    report: RollupReport,
  ): Promise<boolean> {
    let after: string | undefined;
    for (;;) {
      if (!left()) return false;
      const page = await store.late(tx.mark.through, LATE_PAGE, after);
      for (let i = 0; i < page.items.length;) {
        const m = (page.items[i] as StoredMinute).minute;
        let j = i;
        while (j < page.items.length && (page.items[j] as StoredMinute).minute === m) j++;
        await this.foldMinute(store, tx, m, page.items.slice(i, j));
        report.late += j - i;
        i = j;
        if (i < page.items.length && !left()) return false;
      }
      if (page.next === undefined) return true;
      after = page.next;
    }
  }

  /**
   * Folds one minute's late items into its roll-up and the blocks holding it: as many late
   * items a transaction as it holds; one too big for a transaction (thousands of queues) is
   * folded a share of its queues at a time, the rest written back with it.
   */
  private async foldMinute(
    store: ActivityStore,
    tx: Transactions,
    minute: number,
    lates: StoredMinute[],
  ): Promise<void> {
    const sets: PartSet[] = [];
    for (const b of containing(minute)) {
      const parts = await store.rollups(b.level, b.start, blockEnd(b));
      // An absent block above the watermark is made later, from its children.
      if (parts.length > 0 || blockEnd(b) <= tx.mark.through) sets.push(new PartSet(b, parts));
    }
    const touched = new Set<Part>();
    const lateOps: { op: WriteOp; bytes: number }[] = [];
    const fits = (parts: Iterable<Part>, lateBytes: number): boolean => {
      const all = new Set([...touched, ...parts]);
      const bytes = [...all].reduce((n, p) => n + p.bytes, 0) + lateOps.reduce((n, o) => n + o.bytes, 0);
      // Room for the parts, the late items' ops with this one's, and the watermark.
      return all.size + lateOps.length + 2 <= tx.maxOps && bytes + lateBytes + ROW_BYTES * sets.length <= TX_BYTES;
    };
    const commit = async (): Promise<void> => {
      for (const p of touched)
        tx.add(put(p.item(), p.ver === 0 ? { kind: 'absent' } : { kind: 'version', ver: p.ver }), 0);
      for (const o of lateOps) tx.add(o.op, 0);
      await tx.commit();
      for (const p of touched) p.ver++;
      touched.clear();
      lateOps.length = 0;
    };
    for (const late of lates) {
      let rest = [...late.rows];
      for (;;) {
        let taken = 0;
        for (const [q, a] of rest) {
          const parts = sets.map((s) => s.partFor(q));
          const empty = taken === 0 && touched.size === 0 && lateOps.length === 0;
          if (!empty && !fits(parts, portItemSize(late.item))) break;
          // Added in memory at once: a transaction that then fails ends the pass (Raced).
          for (const p of parts) {
            p.add(q, a);
            touched.add(p);
          }
          taken++;
        }
        if (taken === 0 && rest.length > 0) {
          await commit(); // the transaction under way is full: the next one takes this item
          continue;
        }
        rest = rest.slice(taken);
        const cond: Condition = { kind: 'version', ver: late.item.ver };
        if (rest.length === 0) {
          if (touched.size + lateOps.length + 2 > tx.maxOps) await commit();
          lateOps.push({
            op: { op: 'delete', table: 'meta', key: { pk: late.item.pk, sk: late.item.sk }, cond },
            bytes: 0,
          });
          break;
        }
        const kept = lateItemWith(late, new Map(rest));
        lateOps.push({ op: put(kept, cond), bytes: portItemSize(kept) });
        await commit();
        late.item = kept;
      }
    }
    if (touched.size > 0 || lateOps.length > 0) await commit();
  }
}

/** One part of a roll-up block, as the fold changes it. */
class Part {
  bytes: number;
  /** Queues it holds or will: the ones in `rows` and those the fold assigned to it. */
  assigned: number;
  constructor(
    readonly block: Block,
    readonly part: number,
    readonly rows: Rows,
    /** As stored (0: not stored yet). */
    public ver: number,
    bytes: number,
  ) {
    this.bytes = bytes;
    this.assigned = rows.size;
  }

  add(queue: string, a: Float64Array): void {
    if (!this.rows.has(queue)) this.bytes += ROW_BYTES;
    addRows(this.rows, new Map([[queue, a]]));
  }

  item(): Item {
    return rollupItem(this.block, this.part, this.rows, this.ver + 1);
  }
}

/** A block's parts, and which one holds each queue. */
class PartSet {
  private readonly parts: Part[];
  private readonly byQueue = new Map<string, Part>();

  constructor(
    private readonly block: Block,
    stored: RollupPart[],
  ) {
    this.parts = stored.map((p) => new Part(block, p.part, p.rows, p.item.ver, portItemSize(p.item)));
    for (const p of this.parts) for (const q of p.rows.keys()) this.byQueue.set(q, p);
  }

  /** The part holding `queue`; for a queue it does not hold, the last part while it has room, else a new one. */
  partFor(queue: string): Part {
    let p = this.byQueue.get(queue);
    if (p) return p;
    p = this.parts[this.parts.length - 1];
    if (!p || p.assigned >= QUEUES_PER_ITEM) {
      p = new Part(this.block, (p?.part ?? -1) + 1, new Map(), 0, 200);
      this.parts.push(p);
    }
    p.assigned++;
    this.byQueue.set(queue, p);
    return p;
  }
}
