// The activity roll-up (maintenance/activity-rollup.ts) on both storage backends: what series
// requests read stops growing with the number of processes once a pass has run, the series
// read the same before and after it, late minutes are folded in once, and a pass that crashes
// or races another counts nothing twice. Time is moved by hand; processes are simulated by
// writing their raw items (or by Activity instances with their own ids).
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { bucketMinutes, bucketStarts } from '../../server/core/queue-stats.js';
import { rollCutoff } from '../../server/core/activity-rollup.js';
import { Activity, ACTIVITY_COUNTERS, type ActivityRow } from '../../server/service/admin/activity.js';
import { ActivityStore, activityKeys, QUEUES_PER_ITEM } from '../../server/service/admin/activity-store.js';
import { ActivityRollup } from '../../server/service/maintenance/activity-rollup.js';
import type { Item, Storage, WriteOp } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, startTestServer } from '../support/http.js';
import { TestClock, testServices } from '../support/services.js';
import { crashing, withItems } from '../support/storage.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const MINUTE = 60_000;
const WIDTH = ACTIVITY_COUNTERS.length + 3;
const QUEUES = ['orders', 'billing', 'audit'];

/** A process's bucket: pushes and pops that differ per process, minute and queue; lag samples. */
function bucket(p: number, m: number, q: number): Float64Array {
  const a = new Float64Array(WIDTH);
  a[ACTIVITY_COUNTERS.indexOf('pushMessages')] = 1 + ((p + m + q) % 7);
  a[ACTIVITY_COUNTERS.indexOf('popMessages')] = (p * 3 + q) % 5;
  a[WIDTH - 3] = 2; // lag samples
  a[WIDTH - 2] = 100 + p; // their sum (ms)
  a[WIDTH - 1] = 50 + ((p * 13 + m) % 200); // their maximum
  return a;
}

/** `processes` processes' raw items for each of `minutes`, written as the processes would. */
async function simulate(storage: Storage, processes: number, minutes: number[]): Promise<void> {
  const ops: WriteOp[] = [];
  for (let p = 0; p < processes; p++)
    for (const m of minutes) {
      const q: Record<string, number[]> = {};
      QUEUES.forEach((name, i) => (q[name] = Array.from(bucket(p, m, i))));
      const item: Item = {
        ...activityKeys.raw(m, `proc-${p}`, 0),
        ver: 1,
        attrs: { q },
        expiresAt: m * 60 + 8 * 86_400,
      };
      ops.push({ op: 'put', table: 'meta', item });
    }
  for (let i = 0; i < ops.length; i += 100) await storage.items.writeEach(ops.slice(i, i + 100));
}

/** The storage, counting the activity items (pk `ACT…`) its reads return. */
function countingReads(inner: Storage): { storage: Storage; items: () => number; reset: () => void } {
  let n = 0;
  const storage = withItems(inner, {
    get: async (t, k) => {
      const it = await inner.items.get(t, k);
      if (it && k.pk.startsWith('ACT')) n++;
      return it;
    },
    query: async (t, pk, o) => {
      const page = await inner.items.query(t, pk, o);
      if (pk.startsWith('ACT')) n += page.items.length;
      return page;
    },
  });
  return { storage, items: () => n, reset: () => (n = 0) };
}

const rowFields = (r: ActivityRow) => ({ ...r });
const plain = (m: Map<string, ActivityRow[]>) =>
  Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([q, rows]) => [q, rows.map(rowFields)]));

describe.each(backends)('integration: activity roll-ups on $name', (backend) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });
  const fresh = async (): Promise<Storage> => {
    const { storage, cleanup } = await backend.newStorage();
    cleanups.push(cleanup);
    return storage;
  };
  /** A clock a few seconds into a minute; minutes before it are the simulated past. */
  const clockAt = (): TestClock => new TestClock(Math.floor(Date.now() / MINUTE) * MINUTE + 5_000);

  /** Every window /status and the analytics use, as a reader with no minutes of its own reads them. */
  const windows = (clock: TestClock) =>
    [3_600_000, 6 * 3_600_000, 86_400_000, 7 * 86_400_000].map((ms) => {
      const w = { from: clock.t - ms, to: clock.t };
      const minutes = bucketMinutes(w);
      return { starts: bucketStarts(w, minutes), minutes };
    });
  const seriesOf = async (storage: Storage, clock: TestClock) => {
    const reader = new Activity(clock.now, new ActivityStore(storage), 'reader');
    const out = [];
    for (const w of windows(clock)) out.push(plain(await reader.seriesEverywhere(w.starts, w.minutes)));
    // One bucket over an unaligned span (the analytics' totals).
    out.push(plain(await reader.seriesEverywhere([clock.t - 97 * MINUTE - 1_234], 90)));
    return out;
  };

  /** What /status reads of activity items, and the series, for `processes` simulated processes. */
  async function measure(processes: number, at: number) {
    const storage = await fresh();
    const clock = new TestClock(at);
    const now = Math.floor(clock.t / MINUTE);
    // Minutes that straddle an hour and a 15-minute boundary, all older than the roll-up delay.
    const minutes = [now - 20, now - 19, now - 8, now - 7, now - 6];
    await simulate(storage, processes, minutes);
    const before = await seriesOf(storage, clock);
    const counted = countingReads(storage);
    const server = await startTestServer(testServices(counted.storage, { clock }));
    try {
      const status = async (window: string): Promise<number> => {
        counted.reset();
        const r = await call(server.url, 'GET', `/api/v1/status${window}`);
        expect(r.status).toBe(200);
        return counted.items();
      };
      const day = `?from=${new Date(clock.t - 86_400_000).toISOString()}&to=${new Date(clock.t).toISOString()}`;
      const raw = { hour: await status(''), day: await status(day) };
      const report = await new ActivityRollup({ storage, clock: clock.now }).run();
      expect(report).toMatchObject({ through: rollCutoff(clock.t), complete: true, late: 0 });
      const rolled = { hour: await status(''), day: await status(day) };
      expect(await seriesOf(storage, clock)).toEqual(before);
      return { raw, rolled, before };
    } finally {
      await server.close();
    }
  }

  it('after a pass, /status reads as many activity items for 500 processes as for 5, and the same series', async () => {
    // The same time for both, so the minutes fall in the same buckets.
    const at = clockAt().t;
    const few = await measure(5, at);
    const many = await measure(500, at);
    // Before the pass: one item per process and minute (plus the watermark read).
    expect(many.raw.hour).toBeGreaterThanOrEqual(500 * 5);
    // After: the watermark and one roll-up per minute (1-minute buckets) or block, whatever the processes.
    expect(many.rolled).toEqual(few.rolled);
    expect(many.rolled.hour).toBeLessThanOrEqual(1 + 5);
    expect(many.rolled.day).toBeLessThanOrEqual(1 + 5);
    // The series are the processes' sums: 500 processes' pushes are in them.
    const pushes = (s: (typeof many.before)[number]) =>
      Object.values(s).reduce((n, rows) => n + rows.reduce((k, r) => k + r.pushMessages, 0), 0);
    expect(pushes(many.before[0]!)).toBeGreaterThan(pushes(few.before[0]!) * 50);
  });

  it('a minute stored late is folded into the roll-ups by the next pass, once', async () => {
    const storage = await fresh();
    const clock = clockAt();
    const rollup = new ActivityRollup({ storage, clock: clock.now });
    const served = new Activity(clock.now, new ActivityStore(storage), 'idle-instance');
    const minute = Math.floor(clock.t / MINUTE);
    served.count('orders', 'pushMessages', 7);
    served.lag('orders', 900);
    // The instance gets no request for ten minutes; passes meanwhile roll its minute as empty.
    clock.advance(10 * MINUTE);
    expect((await rollup.run()).through).toBeGreaterThan(minute);
    const reader = new Activity(clock.now, new ActivityStore(storage), 'reader');
    const total = async (width: number): Promise<number> => {
      const starts = bucketStarts({ from: clock.t - 60 * MINUTE, to: clock.t }, width);
      const rows = (await reader.seriesEverywhere(starts, width)).get('orders') ?? [];
      return rows.reduce((n, r) => n + r.pushMessages, 0);
    };
    // Its own series have the minute (from memory, never stored); others' do not yet.
    const own = await served.seriesEverywhere([clock.t - 60 * MINUTE], 60);
    expect(own.get('orders')?.[0]?.pushMessages).toBe(7);
    expect(await total(1)).toBe(0);

    await served.flushDue(); // its next request stores the minute, too late for a raw item
    const late = await storage.items.query('meta', 'ACTL');
    expect(late.items).toHaveLength(1);
    const r = await rollup.run();
    expect(r.late).toBe(1);
    expect((await storage.items.query('meta', 'ACTL')).items).toHaveLength(0);
    for (const width of [1, 5, 15, 60]) expect(await total(width)).toBe(7);
    const lag = (await reader.seriesEverywhere([clock.t - 60 * MINUTE], 60)).get('orders')?.[0];
    expect([lag?.lagCount, lag?.maxLagMs]).toEqual([1, 900]);
    // Again: nothing left to fold, nothing counted twice.
    expect((await rollup.run()).late).toBe(0);
    for (const width of [1, 5, 15, 60]) expect(await total(width)).toBe(7);
  });

  it('blocks of more queues than an item holds, folded and rolled in small transactions, add up', async () => {
    const storage = await fresh();
    // Five minutes past a 6-hour boundary: every block holding the minute is complete, so the
    // fold touches one or two parts on each of the five levels.
    const clock = new TestClock(Math.floor(Date.now() / (360 * MINUTE)) * 360 * MINUTE + 5 * MINUTE);
    const minute = Math.floor(clock.t / MINUTE) - 40;
    const wide = new Map(Array.from({ length: QUEUES_PER_ITEM + 100 }, (_, i) => [`q${i}`, bucket(i, 1, 0)] as const));
    const store = new ActivityStore(storage);
    await store.write(minute, 'wide-proc', wide, { late: false });
    // Late: queues in both parts of the minute's roll-up, and one it does not hold yet.
    const late = new Map([
      ['q0', bucket(1, 1, 1)],
      [`q${QUEUES_PER_ITEM + 50}`, bucket(2, 1, 1)],
      ['q-new', bucket(3, 1, 1)],
    ]);
    await store.write(minute, 'late-proc', late, { late: true });
    // Eight ops a transaction: a boundary's parts span several, the late item is folded in shares.
    const sizes: number[] = [];
    let shares = 0;
    const watched = withItems(storage, {
      transact: (ops) => {
        sizes.push(ops.length);
        if (ops.some((o) => o.op === 'put' && o.item.pk === 'ACTL')) shares++;
        return storage.items.transact(ops);
      },
    });
    const r = await new ActivityRollup({ storage: watched, clock: clock.now, transactOps: 8 }).run();
    expect(r).toMatchObject({ complete: true, late: 1 });
    expect(Math.max(...sizes)).toBeLessThanOrEqual(8);
    expect(shares).toBeGreaterThan(0);
    expect((await storage.items.query('meta', 'ACTL')).items).toHaveLength(0);
    const parts = await store.rollups(1, minute, minute + 1);
    expect(parts.map((p) => p.part).sort()).toEqual([0, 1]);
    const reader = new Activity(clock.now, store, 'reader');
    const push = ACTIVITY_COUNTERS.indexOf('pushMessages');
    for (const width of [1, 15, 60, 360]) {
      const start = Math.floor(minute / width) * width * MINUTE;
      const got = await reader.seriesEverywhere([start], width);
      expect(got.size).toBe(QUEUES_PER_ITEM + 101);
      expect(got.get('q0')?.[0]?.pushMessages).toBe(wide.get('q0')![push]! + late.get('q0')![push]!);
      expect(got.get('q-new')?.[0]?.pushMessages).toBe(late.get('q-new')![push]);
      expect(got.get(`q${QUEUES_PER_ITEM + 99}`)?.[0]?.pushMessages).toBe(wide.get(`q${QUEUES_PER_ITEM + 99}`)![push]);
    }
  });

  it('a pass that crashes between transactions, run again, counts every minute once', async () => {
    const storage = await fresh();
    const clock = clockAt();
    const now = Math.floor(clock.t / MINUTE);
    // 150 minutes with activity: more roll-up items than one transaction holds.
    const minutes = Array.from({ length: 150 }, (_, i) => now - 160 + i);
    await simulate(storage, 2, minutes);
    const before = await seriesOf(storage, clock);
    let transactions = 0;
    const dies = crashing(storage, (ops) => ops.length > 1 && ++transactions === 2);
    await expect(new ActivityRollup({ storage: dies, clock: clock.now }).run()).rejects.toThrow('simulated crash');
    const mark = (await new ActivityStore(storage).watermark())!;
    expect(mark.through).toBeLessThan(rollCutoff(clock.t)); // the first transaction's minutes only
    expect(await seriesOf(storage, clock)).toEqual(before);
    expect((await new ActivityRollup({ storage, clock: clock.now }).run()).complete).toBe(true);
    expect(await seriesOf(storage, clock)).toEqual(before);
  });

  it('of two passes racing, the one that writes second stops; nothing is counted twice', async () => {
    const storage = await fresh();
    const clock = clockAt();
    const minute = Math.floor(clock.t / MINUTE) - 30;
    await simulate(storage, 3, [minute]);
    // A late minute too, for the fold.
    await new ActivityStore(storage).write(minute, 'late-proc', new Map([['orders', bucket(9, 9, 9)]]), { late: true });
    const before = await seriesOf(storage, clock);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let paused = false;
    // Pass A reads the watermark and the raw items, then waits at its first write.
    const slow = withItems(storage, {
      transact: async (ops) => {
        if (!paused) {
          paused = true;
          await held;
        }
        return storage.items.transact(ops);
      },
    });
    const a = new ActivityRollup({ storage: slow, clock: clock.now }).run();
    while (!paused) await new Promise((r) => setTimeout(r, 5));
    const b = await new ActivityRollup({ storage, clock: clock.now }).run();
    expect(b).toMatchObject({ complete: true, late: 1 });
    release();
    expect(await a).toMatchObject({ raced: true, complete: false });
    // The late bucket is now in the roll-ups, counted once.
    const after = await seriesOf(storage, clock);
    const sum = (s: (typeof before)[number]) =>
      Object.values(s).reduce((n, rows) => n + rows.reduce((k, r) => k + r.pushMessages, 0), 0);
    expect(sum(after[2]!)).toBe(sum(before[2]!) + bucket(9, 9, 9)[ACTIVITY_COUNTERS.indexOf('pushMessages')]!);
    expect(await new ActivityRollup({ storage, clock: clock.now }).run()).toMatchObject({ late: 0, items: 0 });
    expect(await seriesOf(storage, clock)).toEqual(after);
  });

  it('the first pass on a new store walks the kept days within its budget and catches up', async () => {
    const storage = await fresh();
    const clock = clockAt();
    let requests = 0;
    const counted = withItems(storage, {
      get: (t, k) => (requests++, storage.items.get(t, k)),
      query: (t, pk, o) => (requests++, storage.items.query(t, pk, o)),
      transact: (ops) => (requests++, storage.items.transact(ops)),
    });
    const r = await new ActivityRollup({ storage: counted, clock: clock.now }).run();
    expect(r).toMatchObject({ complete: true, through: rollCutoff(clock.t), items: 0 });
    // One query per hour of 8 days, the watermark read and written.
    expect(requests).toBeLessThanOrEqual(8 * 24 + 6 + 5);
    requests = 0;
    clock.advance(15 * MINUTE);
    await new ActivityRollup({ storage: counted, clock: clock.now }).run();
    // A pass an interval later: the watermark read and written, an hour or two of raw items, per
    // level the minutes of its first block that earlier passes rolled, the late items.
    expect(requests).toBeLessThanOrEqual(1 + 2 + 4 + 1 + 1);
  });
});
