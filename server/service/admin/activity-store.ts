/**
 * Where each process's one-minute activity buckets go once their minute is over, and the
 * roll-ups maintenance makes of them, so the status and analytics series cover every process
 * — every Lambda instance on AWS, and the local server across restarts (docs/QUEEN-COMPAT.md,
 * "Series") — and a series request reads items that do not grow with the number of processes.
 * The model is `core/activity-rollup.ts`; the pass that writes roll-ups is
 * `maintenance/activity-rollup.ts`.
 *
 * Items, all in table `meta`, attribute `q`: per queue, the bucket's numbers (`activity.ts`
 * defines their order), at most {@link QUEUES_PER_ITEM} queues an item (more go in parts).
 * - Raw: pk `ACT#<epoch hour>`, sk `<epoch minute, 10 digits>#<process id>#<part>`: one process's
 *   minute, put once the minute is over (a repeat replaces it).
 * - Late: pk `ACTL`, sk as raw: a minute a process stored more than `LATE_AFTER_MS` after its
 *   end; the pass folds it into the roll-ups and deletes it.
 * - Roll-up: pk `ACTR#<level>#<start / (level × 1440)>`, sk `<start minute, 10 digits>#<part>`:
 *   every process's sum over an aligned block of `level` minutes (1,440 blocks a partition key).
 * - Watermark: pk `ACTW`, sk `rolled`, `through`: minutes below it are read from roll-ups. Its
 *   version is the roll-ups' version: every change to them bumps it in the same transaction.
 * - All collected 8 days after their minute (series reach 7 days back); TTL only collects, and
 *   readers ask only for the minutes of their window.
 *
 * @example
 * ```ts
 * await store.write(29_000_000, 'proc-1', new Map([['orders', bucket]]), { late: false });
 * const { through, spans } = await store.read([{ from: 28_999_940, to: 29_000_000 }]);
 * ```
 */
import { mapBounded } from '../../core/map-bounded.js';
import { blockEnd, cover, type Block, type Level } from '../../core/activity-rollup.js';
import type { Item, ItemKey, Storage } from '../../storage/port.js';

const MINUTE_S = 60;
/** How long every activity item is kept: a day past the longest window a series request may cover. */
export const KEEP_S = 8 * 24 * 3600;
/** Queues per stored item: ~200 bytes each, far below the 400 KB item limit. */
export const QUEUES_PER_ITEM = 500;
/** Queries one read runs at once: a 7-day window's hours or runs of blocks, in a few round trips. */
const PARALLEL_QUERIES = 8;
/** Blocks a roll-up partition key holds. */
const BLOCKS_PER_PK = 1440;
/** Sorts after every character a process id or part number holds (uuid hex, '-', digits). */
const HIGH = '\u007f';

/** Per queue, a bucket's numbers. */
export type Rows = Map<string, Float64Array>;

const pad = (minute: number): string => String(minute).padStart(10, '0');
const rollupPk = (level: Level, start: number): string =>
  `ACTR#${level}#${Math.floor(start / (level * BLOCKS_PER_PK))}`;

export const activityKeys = {
  raw: (minute: number, processId: string, part: number): ItemKey => ({
    pk: `ACT#${Math.floor(minute / 60)}`,
    sk: `${pad(minute)}#${processId}#${part}`,
  }),
  late: (minute: number, processId: string, part: number): ItemKey => ({
    pk: 'ACTL',
    sk: `${pad(minute)}#${processId}#${part}`,
  }),
  rollup: (b: Block, part: number): ItemKey => ({ pk: rollupPk(b.level, b.start), sk: `${pad(b.start)}#${part}` }),
  watermark: (): ItemKey => ({ pk: 'ACTW', sk: 'rolled' }),
};

/** One process's bucket of one minute (or a part of it), as stored raw or late. */
export interface StoredMinute {
  minute: number;
  processId: string;
  part: number;
  rows: Rows;
  /** The item as read (late items are deleted or rewritten guarded by its version). */
  item: Item;
}

/** One part of a roll-up block, as stored. */
export interface RollupPart {
  block: Block;
  part: number;
  rows: Rows;
  item: Item;
}

/** How far the roll-ups reach, and their version. */
export interface Watermark {
  through: number;
  ver: number;
}

/** Numbers stored over some minutes: a roll-up block (no process) or one process's raw minute. */
export interface StoredSpan {
  /** The first minute it covers (a roll-up block's start). */
  minute: number;
  processId?: string;
  rows: Rows;
}

/** Minutes `[from, to)`: one series bucket. */
export interface MinuteRange {
  from: number;
  to: number;
}

const rowsOf = (item: Item): Rows =>
  new Map(Object.entries((item.attrs.q ?? {}) as Record<string, number[]>).map(([q, n]) => [q, Float64Array.from(n)]));

const attrsOf = (rows: Iterable<[string, Float64Array]>): Item['attrs'] => {
  const q: Record<string, number[]> = {};
  for (const [queue, a] of rows) q[queue] = Array.from(a);
  return { q };
};

function storedMinute(item: Item): StoredMinute {
  const [m, processId = '', part = '0'] = item.sk.split('#');
  return { minute: Number(m), processId, part: Number(part), rows: rowsOf(item), item };
}

/** A roll-up part item (`ver` 1 when new); its expiry follows its block's end. */
export function rollupItem(b: Block, part: number, rows: Iterable<[string, Float64Array]>, ver = 1): Item {
  return { ...activityKeys.rollup(b, part), ver, attrs: attrsOf(rows), expiresAt: blockEnd(b) * MINUTE_S + KEEP_S };
}

/** A new block's items: its queues in name order, {@link QUEUES_PER_ITEM} to a part. */
export function newRollupItems(b: Block, rows: Rows): Item[] {
  const sorted = [...rows].sort(([a], [c]) => (a < c ? -1 : a > c ? 1 : 0));
  const out: Item[] = [];
  for (let i = 0; i < sorted.length; i += QUEUES_PER_ITEM)
    out.push(rollupItem(b, out.length, sorted.slice(i, i + QUEUES_PER_ITEM)));
  return out;
}

export const watermarkItem = (w: Watermark): Item => ({
  ...activityKeys.watermark(),
  ver: w.ver,
  attrs: { through: w.through },
});

/** A late item written back with the queues a fold has not taken yet (its version bumped). */
export const lateItemWith = (m: StoredMinute, rows: Rows): Item => ({
  ...m.item,
  ver: m.item.ver + 1,
  attrs: attrsOf(rows),
});

export class ActivityStore {
  /** Storage requests this store made: the maintenance pass spends a budget of them. */
  requests = 0;

  constructor(private readonly storage: Storage) {}

  /**
   * Stores one process's buckets of one minute (a repeat replaces them): one item per
   * {@link QUEUES_PER_ITEM} queues, so a process that served thousands of queues in a minute
   * stays within the item size limit. `late`: as a late item (`isLate`), for the pass to fold.
   */
  async write(minute: number, processId: string, rows: Rows, opts: { late: boolean }): Promise<void> {
    const entries = [...rows];
    const key = opts.late ? activityKeys.late : activityKeys.raw;
    for (let i = 0, part = 0; i < entries.length; i += QUEUES_PER_ITEM, part++) {
      const item: Item = {
        ...key(minute, processId, part),
        ver: 1,
        attrs: attrsOf(entries.slice(i, i + QUEUES_PER_ITEM)),
        expiresAt: (minute + 1) * MINUTE_S + KEEP_S,
      };
      this.requests++;
      await this.storage.items.put('meta', item);
    }
  }

  /** How far the roll-ups reach (undefined: no pass rolled anything yet; every minute is raw). */
  async watermark(): Promise<Watermark | undefined> {
    this.requests++;
    const it = await this.storage.items.get('meta', activityKeys.watermark());
    return it ? { through: it.attrs.through as number, ver: it.ver } : undefined;
  }

  /**
   * Every process's numbers over the minutes of `buckets`, as spans that each lie within one
   * bucket: roll-up blocks below the watermark (the fewest that tile each bucket), raw items
   * from it on. `through` is the watermark the read used (undefined: none).
   */
  async read(buckets: readonly MinuteRange[]): Promise<{ through: number | undefined; spans: StoredSpan[] }> {
    const through = (await this.watermark())?.through;
    const runs: { level: Level; from: number; to: number }[] = [];
    const raw: MinuteRange[] = [];
    for (const { from, to } of buckets) {
      const split = through === undefined ? from : Math.min(Math.max(through, from), to);
      for (const b of cover(from, split)) {
        const last = runs[runs.length - 1];
        if (last?.level === b.level && last.to === b.start) last.to = blockEnd(b);
        else runs.push({ level: b.level, from: b.start, to: blockEnd(b) });
      }
      const tail = raw[raw.length - 1];
      if (split < to) {
        if (tail?.to === split) tail.to = to;
        else raw.push({ from: split, to });
      }
    }
    const tasks: (() => Promise<StoredSpan[]>)[] = [];
    for (const r of runs)
      for (const q of this.rollupQueries(r.level, r.from, r.to))
        tasks.push(async () => (await q()).map((p) => ({ minute: p.block.start, rows: p.rows })));
    for (const r of raw)
      for (let h = Math.floor(r.from / 60); h * 60 < r.to; h++)
        tasks.push(() => this.rawHour(h, Math.max(r.from, h * 60), Math.min(r.to, h * 60 + 60)));
    const spans = (await mapBounded(tasks, PARALLEL_QUERIES, (t) => t())).flat();
    return { through, spans };
  }

  /** Every process's raw items of the minutes `[from, to)`, which must lie in one hour. */
  async rawHour(hour: number, from: number, to: number): Promise<StoredMinute[]> {
    if (from >= to) return [];
    return (await this.all(`ACT#${hour}`, `${pad(from)}#`, `${pad(to - 1)}#${HIGH}`)).map(storedMinute);
  }

  /** The parts of the blocks of `level` that start in `[from, to)`. */
  async rollups(level: Level, from: number, to: number): Promise<RollupPart[]> {
    return (await mapBounded(this.rollupQueries(level, from, to), PARALLEL_QUERIES, (q) => q())).flat();
  }

  /** One page (up to `limit`) of late items of minutes below `before`, oldest first. */
  async late(before: number, limit: number, after?: string): Promise<{ items: StoredMinute[]; next?: string }> {
    this.requests++;
    const page = await this.storage.items.query('meta', 'ACTL', { lte: `${pad(before - 1)}#${HIGH}`, after, limit });
    return { items: page.items.map(storedMinute), next: page.next };
  }

  /** The queries that read the blocks of `level` starting in `[from, to)`: one per partition key. */
  private rollupQueries(level: Level, from: number, to: number): (() => Promise<RollupPart[]>)[] {
    const out: (() => Promise<RollupPart[]>)[] = [];
    const span = level * BLOCKS_PER_PK;
    for (let at = from; at < to; at = (Math.floor(at / span) + 1) * span) {
      const last = Math.min(to, (Math.floor(at / span) + 1) * span) - level;
      out.push(async () =>
        (await this.all(rollupPk(level, at), `${pad(at)}#`, `${pad(last)}#${HIGH}`)).map((item) => {
          const [start, part] = item.sk.split('#');
          return { block: { level, start: Number(start) }, part: Number(part), rows: rowsOf(item), item };
        }),
      );
    }
    return out;
  }

  private async all(pk: string, gte: string, lte: string): Promise<Item[]> {
    const out: Item[] = [];
    let after: string | undefined;
    do {
      this.requests++;
      const page = await this.storage.items.query('meta', pk, { gte, lte, after });
      out.push(...page.items);
      after = page.next;
    } while (after !== undefined);
    return out;
  }
}
