/**
 * What this process served, counted at the HTTP boundary from the routes' results (never on
 * the commit path): per queue, lifetime totals and one-minute buckets of pushes, pops, acks,
 * dead letters, claim polls and the age of what pops delivered; and per route, a latency
 * histogram. The status and analytics routes draw their series from it, `/metrics` its
 * counters.
 *
 * It lives in memory, and each minute's buckets go to storage once the minute is over
 * (`activity-store.ts`, one put per process per minute it served something, at the end of
 * the first request after it), so series read there cover every process: every Lambda
 * instance, and the local server across restarts. Maintenance rolls them up (one item per
 * minute and per block of minutes, whatever the number of processes); a minute stored more
 * than two minutes after its end goes in as a late item the next pass folds in. Only the
 * minute under way in other processes, and late minutes until that pass, are missing from
 * them (docs/QUEEN-COMPAT.md). Recording is a few map lookups and additions into
 * preallocated arrays: nothing per request is allocated once a queue and a route have been
 * seen.
 *
 * @example
 * ```ts
 * activity.count('orders', 'pushMessages', 100);
 * activity.lag('orders', 250);
 * (await activity.seriesEverywhere(starts, 1)).get('orders'); // one row per minute bucket, every process
 * ```
 */
import { randomUUID } from 'node:crypto';
import { isLate } from '../../core/activity-rollup.js';
import type { ActivityStore, Rows } from './activity-store.js';

/** The counters kept per queue (Queen's per-queue series, plus Sluice's own). */
export const ACTIVITY_COUNTERS = [
  'pushRequests',
  'pushMessages',
  'duplicates',
  'popRequests',
  'popMessages',
  'popEmpty',
  'ttlExpired',
  'ackRequests',
  'ackSuccess',
  'ackFailed',
  'deadLetters',
  'transactions',
  'claimPolls',
  'claimPollsCapped',
  'claimMessages',
  'claimAcks',
] as const;
export type ActivityCounter = (typeof ACTIVITY_COUNTERS)[number];

const INDEX = Object.fromEntries(ACTIVITY_COUNTERS.map((c, i) => [c, i])) as Record<ActivityCounter, number>;
/** After the counters: how many lag samples, their sum and their maximum (ms). */
const LAG_COUNT = ACTIVITY_COUNTERS.length;
const LAG_SUM = LAG_COUNT + 1;
const LAG_MAX = LAG_COUNT + 2;
const WIDTH = LAG_COUNT + 3;

/** Where routes report what they served: `HttpResult.meter` is called with it. */
export interface Meter {
  count(queue: string, counter: ActivityCounter, n?: number): void;
  /** How old (ms) a message was when a pop or poll delivered it. */
  lag(queue: string, ms: number): void;
}

/** A queue's counters over some span, with the delivered messages' age. */
export type ActivityRow = Record<ActivityCounter, number> & { lagCount: number; avgLagMs: number; maxLagMs: number };

function rowOf(a: Float64Array | undefined): ActivityRow {
  const row = {} as ActivityRow;
  for (const c of ACTIVITY_COUNTERS) row[c] = a ? (a[INDEX[c]] as number) : 0;
  const n = a ? (a[LAG_COUNT] as number) : 0;
  row.lagCount = n;
  row.avgLagMs = n > 0 ? Math.round((a![LAG_SUM] as number) / n) : 0;
  row.maxLagMs = a ? (a[LAG_MAX] as number) : 0;
  return row;
}

/** A row of zeros. */
export const emptyRow = (): ActivityRow => rowOf(undefined);

/** Adds row `b` into row `a` (the average lag weighted by samples). */
export function addRow(a: ActivityRow, b: ActivityRow): void {
  const n = a.lagCount + b.lagCount;
  a.avgLagMs = n > 0 ? Math.round((a.avgLagMs * a.lagCount + b.avgLagMs * b.lagCount) / n) : 0;
  a.maxLagMs = Math.max(a.maxLagMs, b.maxLagMs);
  a.lagCount = n;
  for (const c of ACTIVITY_COUNTERS) a[c] += b[c];
}

function addInto(into: Float64Array, a: Float64Array): void {
  for (let i = 0; i < LAG_MAX; i++) into[i] = (into[i] as number) + (a[i] as number);
  into[LAG_MAX] = Math.max(into[LAG_MAX] as number, a[LAG_MAX] as number);
}

/**
 * Adds buckets `rows` into `into`, queue by queue (counts summed, the lag maximum kept): how
 * roll-ups are made of processes' minutes and of smaller blocks. Rows stored by a version
 * with other counters are skipped, as readers skip them.
 *
 * @example
 * ```ts
 * const minute = new Map(); for (const item of rawItems) addRows(minute, item.rows);
 * ```
 */
export function addRows(into: Rows, rows: ReadonlyMap<string, Float64Array>): void {
  for (const [q, a] of rows) {
    if (a.length !== WIDTH) continue;
    let to = into.get(q);
    if (!to) into.set(q, (to = new Float64Array(WIDTH)));
    addInto(to, a);
  }
}

/** Request latency buckets (seconds): from the µs of `/health` to long polls. */
export const LATENCY_BUCKETS_S = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
] as const;

/** One route's latency histogram, for one status class. */
export interface Histogram {
  /** Per bucket (non-cumulative), the last one past every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** Minute buckets kept: one day. Older ones are dropped as new minutes start. */
const KEEP_MINUTES = 1440;
/** Tries to store one minute's buckets before giving it up (a store that keeps refusing it). */
const MAX_FLUSH_TRIES = 3;
const MINUTE = 60_000;

export class Activity implements Meter {
  private readonly totals = new Map<string, Float64Array>();
  private readonly minutes = new Map<number, Map<string, Float64Array>>();
  private current = -1;
  private currentMap = new Map<string, Float64Array>();
  private readonly latency = new Map<string, Histogram[]>();
  /** Minutes whose buckets are in the store as they are here. */
  private readonly flushed = new Set<number>();
  private flushing: Promise<void> | undefined;
  /** The minute whose predecessors {@link flushDue} last looked at (no scan until the next). */
  private checkedUpTo = -1;
  /** Per minute, failed tries to store it. */
  private readonly failures = new Map<number, number>();
  /**
   * Minutes that may be in the store: a put of them was tried (a failed one may have landed
   * part of it). Such a minute is never stored as a late item, which could count it twice;
   * below the roll-ups' watermark the store's copy is what series read, not memory.
   */
  private readonly maybeStored = new Set<number>();
  readonly startedAt: number;

  /**
   * `store`: where finished minutes go (none: this process's memory is every series, as in
   * unit tests). `processId` names this process's buckets there.
   */
  constructor(
    private readonly clock: () => number,
    private readonly store?: ActivityStore,
    readonly processId: string = randomUUID(),
  ) {
    this.startedAt = clock();
  }

  private cell(queue: string): { total: Float64Array; bucket: Float64Array } {
    const minute = Math.floor(this.clock() / MINUTE);
    if (minute !== this.current) this.roll(minute);
    let total = this.totals.get(queue);
    if (!total) this.totals.set(queue, (total = new Float64Array(WIDTH)));
    let bucket = this.currentMap.get(queue);
    if (!bucket) this.currentMap.set(queue, (bucket = new Float64Array(WIDTH)));
    return { total, bucket };
  }

  private roll(minute: number): void {
    this.current = minute;
    if (this.flushed.delete(minute)) this.checkedUpTo = -1; // counted again (a clock that went back): stored again
    let map = this.minutes.get(minute);
    if (!map) this.minutes.set(minute, (map = new Map<string, Float64Array>()));
    this.currentMap = map;
    for (const m of [...this.minutes.keys()])
      if (m <= minute - KEEP_MINUTES) {
        this.minutes.delete(m);
        this.flushed.delete(m);
        this.maybeStored.delete(m);
      }
  }

  /**
   * Stores the buckets of every finished minute not stored yet: one put per minute, oldest
   * first. Called after each request; nothing to do (no I/O) but once a minute. A failed put
   * is tried again after the next request. A minute stored late (`isLate`) goes in as a late
   * item, unless it may be in the store already: then it is given up, since maintenance may
   * have rolled the first copy up and a second would count twice.
   */
  async flushDue(opts: { underWay?: boolean } = {}): Promise<void> {
    if (!this.store) return;
    if (this.flushing) {
      if (!opts.underWay) return; // another request is storing them; nobody waits for it
      await this.flushing;
    }
    // `underWay`: the minute under way too (the local server stopping; a later count stores it again).
    const now = Math.floor(this.clock() / MINUTE) + (opts.underWay ? 1 : 0);
    // The common case, every request: this minute was looked at and nothing failed since.
    if (now === this.checkedUpTo && this.failures.size === 0) return;
    this.checkedUpTo = now;
    const due = [...this.minutes.keys()].filter((m) => m < now && !this.flushed.has(m)).sort((a, b) => a - b);
    if (due.length === 0) return;
    const store = this.store;
    this.flushing = (async () => {
      try {
        for (const m of due) {
          const rows = this.minutes.get(m);
          const late = isLate(m, this.clock());
          try {
            if (rows && rows.size > 0 && !(late && this.maybeStored.has(m))) {
              this.maybeStored.add(m);
              await store.write(m, this.processId, rows, { late });
            }
          } catch (e) {
            // A minute the store keeps refusing is given up after a few requests' tries.
            const tries = (this.failures.get(m) ?? 0) + 1;
            this.failures.set(m, tries);
            if (tries < MAX_FLUSH_TRIES) throw e;
          }
          this.failures.delete(m);
          if (m < Math.floor(this.clock() / MINUTE)) this.flushed.add(m);
        }
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  count(queue: string, counter: ActivityCounter, n = 1): void {
    if (n === 0) return;
    const { total, bucket } = this.cell(queue);
    const i = INDEX[counter];
    total[i] = (total[i] as number) + n;
    bucket[i] = (bucket[i] as number) + n;
  }

  lag(queue: string, ms: number): void {
    const { total, bucket } = this.cell(queue);
    const v = Math.max(0, ms);
    for (const a of [total, bucket]) {
      a[LAG_COUNT] = (a[LAG_COUNT] as number) + 1;
      a[LAG_SUM] = (a[LAG_SUM] as number) + v;
      a[LAG_MAX] = Math.max(a[LAG_MAX] as number, v);
    }
  }

  /** Records one answered request: `route` is `METHOD /path/template`. */
  request(route: string, status: number, seconds: number): void {
    let byClass = this.latency.get(route);
    if (!byClass) this.latency.set(route, (byClass = []));
    const cls = Math.min(5, Math.max(1, Math.floor(status / 100)));
    let h = byClass[cls];
    if (!h) byClass[cls] = h = { counts: new Float64Array(LATENCY_BUCKETS_S.length + 1), sum: 0, count: 0 };
    let b = 0;
    while (b < LATENCY_BUCKETS_S.length && seconds > (LATENCY_BUCKETS_S[b] as number)) b++;
    h.counts[b] = (h.counts[b] as number) + 1;
    h.sum += seconds;
    h.count++;
  }

  /** Every route's histograms, by status class (`2xx`, `4xx`, ...). */
  latencies(): { route: string; statusClass: string; histogram: Histogram }[] {
    const out: { route: string; statusClass: string; histogram: Histogram }[] = [];
    for (const [route, byClass] of this.latency)
      byClass.forEach((histogram, cls) => {
        if (histogram) out.push({ route, statusClass: `${cls}xx`, histogram });
      });
    return out;
  }

  /** Lifetime counters of every queue this process has seen. */
  queueTotals(): Map<string, ActivityRow> {
    const out = new Map<string, ActivityRow>();
    for (const [q, a] of this.totals) out.set(q, rowOf(a));
    return out;
  }

  /**
   * Per queue, one row per bucket of `minutes` starting at `starts` (oldest first, as
   * `bucketStarts` makes them). Queues with nothing in those buckets are left out; buckets
   * older than a day are empty (only a day of minutes is kept).
   */
  series(starts: readonly number[], minutes: number): Map<string, ActivityRow[]> {
    const acc = new Map<string, Float64Array[]>();
    for (const [minute, byQueue] of this.minutes) addMinute(acc, starts, minutes, minute, byQueue);
    return rowsOf(acc);
  }

  /**
   * As {@link series}, over every process: the store's roll-ups below their watermark, its raw
   * buckets of other processes (and of earlier runs of this one) from there on, and this
   * process's own from memory, including the minute under way (below the watermark only the
   * minutes it never stored: the roll-ups hold the others). Without a store, this process's
   * alone.
   */
  async seriesEverywhere(starts: readonly number[], minutes: number): Promise<Map<string, ActivityRow[]>> {
    if (!this.store || starts.length === 0) return this.series(starts, minutes);
    // The minutes whose start falls in each bucket, as addMinute places them.
    const buckets = starts.map((s) => ({
      from: Math.ceil(s / MINUTE),
      to: Math.ceil((s + minutes * MINUTE) / MINUTE),
    }));
    const { through, spans } = await this.store.read(buckets);
    const acc = new Map<string, Float64Array[]>();
    for (const m of spans) if (m.processId !== this.processId) addMinute(acc, starts, minutes, m.minute, m.rows);
    for (const [minute, byQueue] of this.minutes)
      if (through === undefined || minute >= through || !this.maybeStored.has(minute))
        addMinute(acc, starts, minutes, minute, byQueue);
    return rowsOf(acc);
  }

  /** Drops a deleted queue's counters, so its series leave `/metrics` and the analytics. */
  forget(queue: string): void {
    this.totals.delete(queue);
    for (const byQueue of this.minutes.values()) byQueue.delete(queue);
  }
}

/** Adds one minute's buckets into the bucket of `starts` (each `minutes` wide) it falls in. */
function addMinute(
  acc: Map<string, Float64Array[]>,
  starts: readonly number[],
  minutes: number,
  minute: number,
  byQueue: ReadonlyMap<string, Float64Array>,
): void {
  const t = minute * MINUTE;
  const i = starts.findIndex((s) => t >= s && t < s + minutes * MINUTE);
  if (i < 0) return;
  for (const [q, a] of byQueue) {
    if (a.length !== WIDTH) continue; // stored by a version with other counters
    let rows = acc.get(q);
    if (!rows) acc.set(q, (rows = starts.map(() => new Float64Array(WIDTH))));
    addInto(rows[i] as Float64Array, a);
  }
}

function rowsOf(acc: Map<string, Float64Array[]>): Map<string, ActivityRow[]> {
  const out = new Map<string, ActivityRow[]>();
  for (const [q, rows] of acc) out.set(q, rows.map(rowOf));
  return out;
}
