/**
 * What the activity roll-up (server/service/maintenance/activity-rollup.ts) costs, and what it
 * saves the series requests, on the AWS backend (DynamoDB Local), metered like the cost rows:
 *
 * - the pass: {@link PROCESSES} always-busy processes, each storing a minute of {@link QUEUES}
 *   queues every minute, and one pass every {@link INTERVAL_MIN} minutes rolling them up
 *   (measured over one interval's items, scaled to a month of passes);
 * - a 24-hour `/status` (96 buckets of 15 minutes): once with a day of roll-ups (measured over a
 *   day of one process's minutes rolled up; the roll-ups do not depend on the number of
 *   processes) plus the raw tail a pass leaves, and once without roll-ups, one raw item per
 *   process and minute (measured per raw item, scaled to {@link STATUS_PROCESSES} processes).
 *
 * @example
 * ```ts
 * const { pass, status, note } = await activityRollupCost(endpoints);
 * ```
 */
import { MINUTE_MS, ROLL_AFTER_MS } from '../server/core/activity-rollup.js';
import { bucketStarts } from '../server/core/queue-stats.js';
import { Activity, ACTIVITY_COUNTERS } from '../server/service/admin/activity.js';
import { ActivityStore } from '../server/service/admin/activity-store.js';
import { ActivityRollup } from '../server/service/maintenance/activity-rollup.js';
import type { ItemStore, Storage } from '../server/storage/port.js';
import type { AwsEndpoints } from '../test/support/aws-emulator.js';
import { meteredAwsStorage } from './aws-meter.js';
import { MAINTENANCE_GB, PRICES, ROUND_TRIP_MS, measureCall } from './cost-model.js';

/** Busy processes the pass is measured over: a fleet of warm Lambda instances. */
const PROCESSES = 100;
/** Queues each process serves every minute. */
const QUEUES = 10;
/** The maintenance schedule's default (lib/service/functions.ts): one pass per interval. */
const INTERVAL_MIN = 15;
/** Passes in a 30-day month. */
const PASSES_PER_MONTH = (30 * 24 * 60) / INTERVAL_MIN;
/**
 * The fleet the `/status` figures are given for (docs/QUEEN-COMPAT.md, "Series on the local server
 * and on AWS").
 */
const STATUS_PROCESSES = 500;
/** The API functions' memory (the stack's default), in GB: `/status` runs there. */
const API_GB = 1;
/** Minutes of raw items the newest a pass leaves unrolled, at most: the roll delay and an interval. */
const TAIL_MIN = ROLL_AFTER_MS / MINUTE_MS + INTERVAL_MIN;

const WIDTH = ACTIVITY_COUNTERS.length + 3;

/** A busy process's bucket of one queue: every counter and the lag with a few digits. */
function bucket(p: number, m: number): Float64Array {
  const a = new Float64Array(WIDTH);
  for (let i = 0; i < WIDTH; i++) a[i] = 10 + ((p * 31 + m * 7 + i * 13) % 990);
  return a;
}

/** One process's minute, as it stores it. */
const rowsOf = (p: number, m: number): Map<string, Float64Array> =>
  new Map(Array.from({ length: QUEUES }, (_, q) => [`queue-${q}`, bucket(p, m)] as const));

/** Stores `processes` processes' minutes `[from, to)`, a few puts at a time. */
async function store(s: ActivityStore, processes: number, from: number, to: number): Promise<void> {
  const puts: (() => Promise<void>)[] = [];
  for (let p = 0; p < processes; p++)
    for (let m = from; m < to; m++) puts.push(() => s.write(m, `proc-${p}`, rowsOf(p, m), { late: false }));
  for (let i = 0; i < puts.length; i += 16) await Promise.all(puts.slice(i, i + 16).map((f) => f()));
}

export interface ActivityRollupCost {
  /** One pass over an interval of {@link PROCESSES} busy processes' minutes. */
  pass: { readUnits: number; writeUnits: number; requests: number; ms: number; usdPerMonth: number };
  /** One 24-hour `/status` read, with and without roll-ups, at {@link STATUS_PROCESSES} processes. */
  status: { rolledItems: number; rolledReadUnits: number; rawItems: number; rawReadUnits: number };
  /** Dollars per 24-hour `/status` request at {@link STATUS_PROCESSES} processes, with and without roll-ups. */
  statusUsd: { rolled: number; raw: number };
  note: string;
}

/** The storage, counting the items its reads return. */
function countingItems(inner: Storage): { storage: Storage; items: () => number } {
  let n = 0;
  const items: ItemStore = {
    ...inner.items,
    get: async (t, k) => {
      const it = await inner.items.get(t, k);
      if (it) n++;
      return it;
    },
    query: async (t, pk, o) => {
      const page = await inner.items.query(t, pk, o);
      n += page.items.length;
      return page;
    },
  };
  return {
    storage: { ...inner, kind: inner.kind, items, blobs: inner.blobs, close: () => inner.close() },
    items: () => n,
  };
}

/**
 * Measures the pass and the reads (see the module doc).
 *
 * @example
 * ```ts
 * const cost = await activityRollupCost(emulator.endpoints);
 * ```
 */
export async function activityRollupCost(endpoints: AwsEndpoints): Promise<ActivityRollupCost> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  try {
    let t = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS + 5_000;
    const clock = (): number => t;
    const s = new ActivityStore(storage);
    const rollup = new ActivityRollup({ storage, clock });
    const counted = countingItems(storage);
    const reader = new Activity(clock, new ActivityStore(counted.storage), 'reader');
    /** One series read, its items, units and billed time. */
    const read = async (starts: number[], minutes: number) => {
      const before = counted.items();
      const c = await measureCall(meter, () => reader.seriesEverywhere(starts, minutes));
      return { items: counted.items() - before, units: c.readUnits, ms: c.ms };
    };
    // A day of one process's minutes, rolled up: what a day of roll-ups is, for any fleet.
    const dayStart = Math.floor(t / MINUTE_MS) - 1440;
    await store(s, 1, dayStart, dayStart + 1440);
    t = (dayStart + 1440) * MINUTE_MS + ROLL_AFTER_MS + 5_000;
    if (!(await rollup.run()).complete) throw new Error('roll-up cost: the first pass did not catch up');
    const rolled = await read(bucketStarts({ from: t - 86_400_000, to: t }, 15), 15);
    // One interval of the fleet's minutes, read raw (as a series request reads the tail), then rolled up.
    const from = (await s.watermark())!.through;
    await store(s, PROCESSES, from, from + INTERVAL_MIN);
    t += INTERVAL_MIN * MINUTE_MS;
    const raw = await read([from * MINUTE_MS], INTERVAL_MIN);
    const perRawUnits = raw.units / raw.items;
    const perRawMs = raw.ms / raw.items;
    const pass = await measureCall(meter, () => rollup.run());
    if (pass.out.minutes !== INTERVAL_MIN || !pass.out.complete) throw new Error('roll-up cost: unexpected pass');
    const requests = meter.dynamoRequests();
    const usdPerMonth =
      PASSES_PER_MONTH *
      ((pass.readUnits * PRICES.readUnitPerMillion + pass.writeUnits * PRICES.writeUnitPerMillion) / 1e6 +
        (pass.ms / 1000) * MAINTENANCE_GB * PRICES.lambdaPerGbSecond);
    // A day of raw items for the fleet, or the roll-ups and the tail a pass leaves at most.
    const rawItems = STATUS_PROCESSES * 1440;
    const tailItems = STATUS_PROCESSES * TAIL_MIN;
    const dollars = (units: number, ms: number): number =>
      (units * PRICES.readUnitPerMillion) / 1e6 + (ms / 1000) * API_GB * PRICES.lambdaPerGbSecond;
    const statusUsd = {
      rolled: dollars(rolled.units + tailItems * perRawUnits, rolled.ms + tailItems * perRawMs),
      raw: dollars(rawItems * perRawUnits, rawItems * perRawMs),
    };
    const usd = (n: number): string => (n < 0.01 ? `$${n.toFixed(5)}` : `$${n.toFixed(2)}`);
    const n = (x: number): string => Math.round(x).toLocaleString('en-US');
    return {
      pass: { readUnits: pass.readUnits, writeUnits: pass.writeUnits, requests, ms: pass.ms, usdPerMonth },
      status: {
        rolledItems: rolled.items,
        rolledReadUnits: rolled.units,
        rawItems,
        rawReadUnits: rawItems * perRawUnits,
      },
      statusUsd,
      note:
        `${usd(usdPerMonth)} a month for ${PROCESSES} always-busy processes (${QUEUES} queues each), one pass every ` +
        `${INTERVAL_MIN} minutes: ${n(pass.readUnits)} read units a pass (the interval's ${n(PROCESSES * INTERVAL_MIN)} ` +
        `raw items, left to TTL), ${n(pass.writeUnits)} write units (the roll-ups, in transactions, whatever the ` +
        `number of processes), ${requests} requests, ${pass.ms} ms at ${ROUND_TRIP_MS.dynamodb} ms a request. ` +
        `What it saves: without roll-ups a 24-hour \`/status\` of ${STATUS_PROCESSES} busy processes reads ` +
        `${n(rawItems)} raw items (${n(rawItems * perRawUnits)} read units, ${usd(statusUsd.raw)} a request with its ` +
        `Lambda time); with them ${rolled.items} items (${n(rolled.units)} read units) and at most ${TAIL_MIN} ` +
        `minutes of raw tail (${n(tailItems)} items just before a pass): ${usd(statusUsd.rolled)} a request`,
    };
  } finally {
    await storage.close();
  }
}
