/**
 * Where each process's one-minute activity buckets go once their minute is over, so the
 * status and analytics series cover every process — every Lambda instance on AWS, and the
 * local server across restarts (docs/QUEEN-COMPAT.md, "Series"). One put per process per
 * minute it served something, never on the commit path; readers query the hours a window
 * spans and add the processes' rows up.
 *
 * - Item: table `meta`, pk `ACT#<epoch hour>`, sk `<epoch minute, 10 digits>#<process id>#<part>`;
 *   attribute `q`: per queue, the bucket's numbers (`activity.ts` defines their order).
 * - Collected 8 days after its minute (series reach 7 days back); TTL only collects, and
 *   readers ask only for the minutes of their window.
 *
 * @example
 * ```ts
 * await store.write(29_000_000, 'proc-1', new Map([['orders', bucket]]));
 * for (const m of await store.read(28_999_940, 29_000_000)) m.rows.get('orders');
 * ```
 */
import type { Item, Storage } from '../../storage/port.js';

const MINUTE_S = 60;
/** How long a bucket is kept: a day past the longest window a series request may cover. */
const KEEP_S = 8 * 24 * 3600;
/** Queues per stored item: ~200 bytes each, far below the 400 KB item limit. */
export const QUEUES_PER_ITEM = 500;
/** Hours one read queries at once. */
const PARALLEL_HOURS = 8;

const pkOf = (minute: number): string => `ACT#${Math.floor(minute / 60)}`;
const skOf = (minute: number, processId: string): string => `${String(minute).padStart(10, '0')}#${processId}`;

/** One process's bucket of one minute, as stored. */
export interface StoredMinute {
  minute: number;
  processId: string;
  rows: Map<string, Float64Array>;
}

export class ActivityStore {
  constructor(private readonly storage: Storage) {}

  /**
   * Stores one process's buckets of one minute (a repeat replaces them): one item per
   * {@link QUEUES_PER_ITEM} queues, so a process that served thousands of queues in a minute
   * stays within the item size limit.
   */
  async write(minute: number, processId: string, rows: ReadonlyMap<string, Float64Array>): Promise<void> {
    const entries = [...rows];
    for (let i = 0, part = 0; i < entries.length; i += QUEUES_PER_ITEM, part++) {
      const q: Record<string, number[]> = {};
      for (const [queue, a] of entries.slice(i, i + QUEUES_PER_ITEM)) q[queue] = Array.from(a);
      const item: Item = {
        pk: pkOf(minute),
        sk: `${skOf(minute, processId)}#${part}`,
        ver: 1,
        attrs: { q },
        expiresAt: (minute + 1) * MINUTE_S + KEEP_S,
      };
      await this.storage.items.put('meta', item);
    }
  }

  /** Every process's buckets of the minutes `from..to` (inclusive), oldest first. */
  async read(from: number, to: number): Promise<StoredMinute[]> {
    const hours: number[] = [];
    for (let h = Math.floor(from / 60); h <= Math.floor(to / 60); h++) hours.push(h);
    const out: StoredMinute[] = [];
    for (let i = 0; i < hours.length; i += PARALLEL_HOURS) {
      const pages = await Promise.all(hours.slice(i, i + PARALLEL_HOURS).map((h) => this.readHour(h, from, to)));
      for (const p of pages) out.push(...p);
    }
    return out;
  }

  private async readHour(hour: number, from: number, to: number): Promise<StoredMinute[]> {
    const out: StoredMinute[] = [];
    const gte = skOf(Math.max(from, hour * 60), '');
    // DEL sorts after every character a process id holds (uuid hex and '-').
    const lte = skOf(Math.min(to, hour * 60 + 59), '\u007f');
    let after: string | undefined;
    do {
      const page = await this.storage.items.query('meta', `ACT#${hour}`, { gte, lte, after });
      for (const it of page.items) {
        const [m, processId = ''] = it.sk.split('#');
        const q = (it.attrs.q ?? {}) as Record<string, number[]>;
        out.push({
          minute: Number(m),
          processId,
          rows: new Map(Object.entries(q).map(([queue, nums]) => [queue, Float64Array.from(nums)])),
        });
      }
      after = page.next;
    } while (after !== undefined);
    return out;
  }
}
