/**
 * The activity roll-up's arithmetic, pure and with an explicit `now` (the store is
 * `service/admin/activity-store.ts`, the pass `service/maintenance/activity-rollup.ts`).
 *
 * Model, in epoch minutes. Each process stores one item per minute it served something (a
 * raw item). Maintenance sums every process's raw items of a minute into one roll-up item, and
 * the minutes of each aligned block of 5, 15, 60 and 360 minutes (Queen's bucket widths) into
 * one more, so a series bucket reads one item whatever the number of processes. A watermark
 * `through` splits time: minutes below it are read from roll-ups, minutes from it on from the
 * raw items. The pass moves it forward only over minutes no process will store a raw item for
 * any more ({@link rollCutoff}): a process that stores a minute later than {@link isLate}
 * writes a late item instead, which a later pass folds into the roll-ups it belongs to.
 *
 * @example
 * ```ts
 * cover(600, 1_000);            // [{ level: 360, start: 720 }, ...]: the fewest aligned blocks
 * isLate(29_000_000, now);      // true once the minute ended more than LATE_AFTER_MS ago
 * rollCutoff(now);              // minutes below it may be rolled up
 * ```
 */

export const MINUTE_MS = 60_000;

/**
 * Roll-up block sizes in minutes: Queen's bucket widths (`bucketMinutes`), so each bucket of a
 * standard window is one roll-up item. Each divides the next, which makes blocks nest.
 */
export const LEVELS = [1, 5, 15, 60, 360] as const;
export type Level = (typeof LEVELS)[number];

/** An aligned span of `level` minutes from `start` (a multiple of `level`). */
export interface Block {
  level: Level;
  start: number;
}

export const blockEnd = (b: Block): number => b.start + b.level;

/**
 * A process stores a finished minute as a raw item until this long after its end, as a late
 * item afterwards. Busy processes store within seconds of the minute's end; two minutes leave
 * room for one that serves a request only every minute or so.
 */
export const LATE_AFTER_MS = 2 * MINUTE_MS;

/**
 * A minute is rolled up this long after its end: {@link LATE_AFTER_MS}, plus a minute for a
 * put decided just before it that is still under way (an API function runs at most 30 s) and
 * for clock skew between instances (milliseconds on Lambda).
 */
export const ROLL_AFTER_MS = LATE_AFTER_MS + MINUTE_MS;

/**
 * Whether a process storing `minute` at `now` must write a late item: a raw item could land
 * after the pass rolled the minute up, and count nowhere.
 *
 * @example
 * ```ts
 * isLate(10, 11 * 60_000 + 119_999); // false
 * isLate(10, 11 * 60_000 + 120_000); // true
 * ```
 */
export const isLate = (minute: number, now: number): boolean => now >= (minute + 1) * MINUTE_MS + LATE_AFTER_MS;

/**
 * The first minute a pass at `now` may not roll up yet: every minute below it ended at least
 * {@link ROLL_AFTER_MS} ago, so no raw item of it is still to come.
 *
 * @example
 * ```ts
 * rollCutoff(13 * 60_000); // 10: minutes 0..9 may be rolled up
 * ```
 */
export const rollCutoff = (now: number): number => Math.floor((now - ROLL_AFTER_MS) / MINUTE_MS);

/**
 * Where the very first pass starts: the oldest minute whose raw items may still be kept
 * (`keepMs`), down to a boundary of the largest block, so every block the passes write is
 * made of minutes they rolled.
 *
 * @example
 * ```ts
 * firstWatermark(Date.now(), 8 * 86_400_000) % 360; // 0
 * ```
 */
export function firstWatermark(now: number, keepMs: number): number {
  const top = LEVELS[LEVELS.length - 1] as number;
  return Math.floor((now - keepMs) / MINUTE_MS / top) * top;
}

/**
 * The fewest aligned blocks that tile the minutes `[from, to)`, oldest first: at each point the
 * largest block that starts there and fits.
 *
 * @example
 * ```ts
 * cover(58, 125); // 58, 59 (1), 60 (60), 120 (5)
 * ```
 */
export function cover(from: number, to: number): Block[] {
  const out: Block[] = [];
  for (let at = from; at < to;) {
    let level: Level = 1;
    for (const l of LEVELS) if (at % l === 0 && at + l <= to) level = l;
    out.push({ level, start: at });
    at += level;
  }
  return out;
}

/** The level whose blocks make up a block of `level` (undefined for single minutes). */
export function childLevel(level: Level): Level | undefined {
  const i = LEVELS.indexOf(level);
  return i > 0 ? LEVELS[i - 1] : undefined;
}

/**
 * The blocks above single minutes that end at minute boundary `end`, smallest first (each is
 * made of the ones before it).
 *
 * @example
 * ```ts
 * endingAt(60); // 5 (55..59), 15 (45..59), 60 (0..59)
 * ```
 */
export function endingAt(end: number): Block[] {
  return LEVELS.filter((l) => l > 1 && end % l === 0).map((level) => ({ level, start: end - level }));
}

/**
 * The block of each level that holds `minute`, single minute first.
 *
 * @example
 * ```ts
 * containing(61); // 61 (1), 60 (5), 60 (15), 60 (60), 0 (360)
 * ```
 */
export function containing(minute: number): Block[] {
  return LEVELS.map((level) => ({ level, start: Math.floor(minute / level) * level }));
}
