/**
 * The data behind Queen's analytics series (docs/QUEEN-COMPAT.md): per-queue operations and pop
 * lag from the activity of every process, this process as the one worker and the one replica,
 * and the bare window of the series Sluice does not track (retention, parked consumers). Each
 * read takes the series filter as the route parsed it and the caller's visibility; Queen's JSON
 * shapes are written from it in http/answers/analytics.ts.
 *
 * @example
 * ```ts
 * const ops = await queueOpsSeries(services, { queue: 'orders' }, (q) => allowed(q));
 * ops.queues[0]?.rows.length === ops.starts.length; // one activity row per bucket
 * ```
 */
import { hostname } from 'node:os';
import { mapBounded } from '../../core/map-bounded.js';
import { bucketMinutes, bucketStarts, windowOf, type Window } from '../../core/queue-stats.js';
import type { Services } from '../runtime.js';
import { addRow, emptyRow, type ActivityRow } from './activity.js';
import type { Visible } from './queue-stats.js';
import { bucketsOf } from './views.js';

/** What a series route asks: a window (default the last hour) and optionally one queue. */
export interface SeriesFilter {
  from?: number | undefined;
  to?: number | undefined;
  queue?: string | undefined;
}

/** A series' window, its bucket width (Queen's, from the window's length) and the bucket starts, oldest first. */
export interface SeriesWindow {
  window: Window;
  minutes: number;
  starts: number[];
}

/**
 * Partition counts read at once: one directory query per queue, and a dashboard asks for
 * every queue it may see, so a bound keeps a large deployment from bursting the table.
 */
const PARTITION_COUNT_CONCURRENCY = 4;

/**
 * The window a series covers now, in Queen's buckets.
 *
 * @example
 * ```ts
 * seriesWindow(services, {}).minutes; // 1: the default hour is in one-minute buckets
 * ```
 */
export function seriesWindow(services: Pick<Services, 'clock'>, f: SeriesFilter): SeriesWindow {
  const window = windowOf(f, services.clock());
  const minutes = bucketMinutes(window);
  return { window, minutes, starts: bucketStarts(window, minutes) };
}

/** One queue's operations per bucket, with its partitions now. */
export interface QueueOpsRow {
  queue: string;
  partitionCount: number;
  /** One row per bucket of the window, oldest first. */
  rows: ActivityRow[];
}

/** The visible queues' operations per bucket. */
export interface QueueOpsSeries extends SeriesWindow {
  queues: QueueOpsRow[];
}

/**
 * Per queue and bucket: what every process served, for the queue asked (if visible) or every
 * visible queue with activity, in name order; with each queue's partition count.
 *
 * @example
 * ```ts
 * const { starts, queues } = await queueOpsSeries(services, {}, (q) => allowed(q));
 * ```
 */
export async function queueOpsSeries(
  services: Pick<Services, 'clock' | 'activity' | 'queues'>,
  f: SeriesFilter,
  visible: Visible,
): Promise<QueueOpsSeries> {
  const w = seriesWindow(services, f);
  const all = await services.activity.seriesEverywhere(w.starts, w.minutes);
  const names =
    f.queue !== undefined ? (visible(f.queue) ? [f.queue] : []) : [...all.keys()].filter((q) => visible(q)).sort();
  const counts = await mapBounded(
    names,
    PARTITION_COUNT_CONCURRENCY,
    async (q) => (await services.queues.listPartitions(q)).length,
  );
  const queues = names.map((queue, i) => ({
    queue,
    partitionCount: counts[i] ?? 0,
    rows: w.starts.map((_, b) => all.get(queue)?.[b] ?? emptyRow()),
  }));
  return { ...w, queues };
}

/** The age of what pops delivered in one queue and minute. */
export interface PopLagPoint {
  queue: string;
  /** The minute's start (epoch ms). */
  bucket: number;
  row: ActivityRow;
}

/**
 * The minutes with pops of the queue asked or every visible queue, per queue, newest first.
 *
 * @example
 * ```ts
 * const [latest] = await popLag(services, { queue: 'orders' }, (q) => allowed(q));
 * latest?.row.maxLagMs;
 * ```
 */
export async function popLag(
  services: Pick<Services, 'clock' | 'activity'>,
  f: SeriesFilter,
  visible: Visible,
): Promise<PopLagPoint[]> {
  const starts = bucketStarts(windowOf(f, services.clock()), 1);
  const out: PopLagPoint[] = [];
  for (const [queue, rows] of await services.activity.seriesEverywhere(starts, 1)) {
    if (!visible(queue) || (f.queue !== undefined && queue !== f.queue)) continue;
    rows.forEach((row, i) => {
      if (row.lagCount > 0) out.push({ queue, bucket: starts[i]!, row });
    });
  }
  return out.sort((a, b) => (a.bucket < b.bucket ? 1 : -1));
}

/** This process as Queen's one worker: the visible queues' activity per bucket, summed, and per queue over the window. */
export interface WorkerActivity extends SeriesWindow {
  now: number;
  /** Every visible queue's activity summed, one row per bucket, oldest first. */
  rows: ActivityRow[];
  /** The sum of `rows`. */
  total: ActivityRow;
  /** Each visible queue with activity, over the whole window (undefined: none stored for it). */
  queues: { queue: string; row: ActivityRow | undefined }[];
}

/**
 * What the visible queues served over the window: per bucket, in total, and per queue.
 *
 * @example
 * ```ts
 * const { total } = await workerActivity(services, {}, (q) => allowed(q));
 * ```
 */
export async function workerActivity(
  services: Pick<Services, 'clock' | 'activity'>,
  f: SeriesFilter,
  visible: Visible,
): Promise<WorkerActivity> {
  const now = services.clock();
  const window = windowOf(f, now);
  const minutes = bucketMinutes(window);
  const { starts, rows } = await bucketsOf(services, window, minutes, visible);
  const total = emptyRow();
  for (const r of rows) addRow(total, r);
  // One bucket as long as the window: each queue's activity over all of it.
  const whole = await services.activity.seriesEverywhere(
    [starts[0] ?? window.from],
    Math.ceil((window.to - window.from) / 60_000),
  );
  const queues = [...whole].filter(([q]) => visible(q)).map(([queue, [row]]) => ({ queue, row }));
  return { window, minutes, starts, now, rows, total, queues };
}

/** This process as Queen's one replica: one sample of its CPU and memory. */
export interface ProcessSample {
  window: Window;
  minutes: number;
  now: number;
  hostname: string;
  port: number;
  /** CPU time since start per wall time since start, in percent × 100. */
  cpu: { user: number; system: number };
  memory: NodeJS.MemoryUsage;
}

/**
 * One sample of this process, now, for the window asked.
 *
 * @example
 * ```ts
 * processSample(services, {}).cpu.user; // 2500: a quarter of one core since start
 * ```
 */
export function processSample(services: Pick<Services, 'clock' | 'config'>, f: SeriesFilter): ProcessSample {
  const now = services.clock();
  const window = windowOf(f, now);
  const cpu = process.cpuUsage();
  const upUs = Math.max(1, process.uptime() * 1e6);
  return {
    window,
    minutes: bucketMinutes(window),
    now,
    hostname: hostname(),
    port: services.config.port,
    cpu: { user: Math.round((cpu.user / upUs) * 10_000), system: Math.round((cpu.system / upUs) * 10_000) },
    memory: process.memoryUsage(),
  };
}
