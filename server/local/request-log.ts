/**
 * The local server's request log: one JSON line per answered request on stdout (method, route
 * template, status, duration, principal, queue), at a level that can be turned down with
 * `--log-level` or SLUICE_LOG_LEVEL:
 *
 * | level | request lines |
 * |---|---|
 * | `debug`, `info` (default) | every request (`INFO`; a 5xx is `ERROR`) |
 * | `warn`, `error` | only 5xx answers |
 * | `silent` | none (and no per-request work at all) |
 *
 * A line is built by concatenation with the one JSON escaper (codec/json-writer.ts): no object
 * is serialised per request. That is why it writes its own lines (same shape as the telemetry's)
 * instead of going through the Telemetry facade: it is the access log, on every request's path.
 *
 * @example
 * ```ts
 * const requestLog = requestLogger(parseLogLevel(env.SLUICE_LOG_LEVEL));
 * makeHandler(SERVER_ROUTES, { requestLog });
 * ```
 */
import { jsonNumber, jsonString, jsonStringOrNull } from '../codec/json-writer.js';
import type { RequestLog } from '../http/handler.js';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A log level from the environment or a flag; `info` when unset. */
export function parseLogLevel(raw: string | undefined): LogLevel {
  const v = (raw ?? '').trim().toLowerCase();
  if (v === '') return 'info';
  const level = LOG_LEVELS.find((l) => l === v);
  if (!level) throw new Error(`log level must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(raw)})`);
  return level;
}

/**
 * The request log for a level, writing lines to `write` (stdout by default); undefined for
 * `silent`, so the handler does nothing per request for it.
 */
export function requestLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => void process.stdout.write(line),
): RequestLog | undefined {
  if (level === 'silent') return undefined;
  const everything = level === 'debug' || level === 'info';
  // The timestamp's text up to the second, rebuilt once a second: Date#toISOString per line
  // was half the cost of a line.
  let second = -1;
  let prefix = '';
  const timestamp = (): string => {
    const now = Date.now();
    const s = Math.floor(now / 1000);
    if (s !== second) {
      second = s;
      prefix = new Date(s * 1000).toISOString().slice(0, 20);
    }
    return `${prefix}${String(now - s * 1000).padStart(3, '0')}Z`;
  };
  return (r) => {
    const failed = r.status >= 500;
    if (!failed && !everything) return;
    write(
      `{"level":"${failed ? 'ERROR' : 'INFO'}","message":"request","method":${jsonString(r.method)}` +
        `,"route":${jsonString(r.route)},"status":${jsonNumber(r.status)}` +
        `,"durationMs":${jsonNumber(Math.round(r.durationMs * 1000) / 1000)}` +
        `,"principal":${jsonString(r.principal)},"queue":${jsonStringOrNull(r.queue ?? null)}` +
        `,"timestamp":"${timestamp()}"}\n`,
    );
  };
}
