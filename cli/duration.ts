/**
 * Durations on the command line: always with a unit. A bare number used to mean milliseconds on
 * some flags and seconds on others (`--idle 5` was 5 ms), so every flag now refuses one and says
 * what to write instead.
 */
import { InvalidArgumentError } from 'commander';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** How a duration flag describes its value in `--help`. */
export const DURATION_HELP = '500ms, 30s, 5m, 1h30m';

/**
 * Parses a duration to milliseconds: `500ms`, `30s`, `5m`, `1h30m`, `2d` (units ms, s, m, h, d;
 * fractions allowed while the result is whole milliseconds). `0` needs no unit (it is zero in
 * all of them); any other bare number is refused with a hint naming both readings.
 *
 * @example
 * ```ts
 * parseDuration('1m30s'); // 90_000
 * parseDuration('0');     // 0
 * parseDuration('5', 'idle'); // throws: idle needs a unit: 5s or 5ms? (e.g. 500ms, 30s, 5m, 1h30m)
 * ```
 */
export function parseDuration(v: string, what = 'duration'): number {
  const text = v.trim();
  if (/^0+$/.test(text)) return 0;
  if (/^\d+(\.\d+)?$/.test(text))
    throw new InvalidArgumentError(`${what} needs a unit: ${text}s or ${text}ms? (e.g. ${DURATION_HELP})`);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text)
    throw new InvalidArgumentError(`${what} must be a duration (e.g. ${DURATION_HELP}); got ${JSON.stringify(v)}`);
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2] as keyof typeof UNIT_MS], 0);
  if (!Number.isSafeInteger(ms))
    throw new InvalidArgumentError(`${what} must come to whole milliseconds; got ${JSON.stringify(v)}`);
  return ms;
}

/**
 * A parser for a duration option (see {@link parseDuration}) of at least `min` ms, in ms. With
 * `wholeSeconds`, for a setting the API takes in seconds, a fraction of a second is refused
 * rather than rounded.
 *
 * @example
 * ```ts
 * durationArg('window', { wholeSeconds: true })('1m');    // 60_000
 * durationArg('window', { wholeSeconds: true })('1500ms'); // throws: window must be whole seconds …
 * ```
 */
export const durationArg =
  (what: string, opts: { min?: number; wholeSeconds?: boolean } = {}) =>
  (v: string): number => {
    const ms = parseDuration(v, what);
    const min = opts.min ?? 0;
    if (ms < min) throw new InvalidArgumentError(`${what} must be at least ${min} ms (got ${JSON.stringify(v)})`);
    if (opts.wholeSeconds && ms % 1000 !== 0)
      throw new InvalidArgumentError(
        `${what} must be whole seconds (the setting is in seconds; got ${JSON.stringify(v)}, ${ms} ms)`,
      );
    return ms;
  };
