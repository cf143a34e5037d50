/**
 * The JSON writer: every JSON text Sluice builds by hand goes through here (HTTP answers,
 * frame headers, dedup reservations), so there is one escaper. Built by concatenation because
 * `JSON.stringify` of small objects showed up on the push path's profile (docs/BENCHMARKS.md,
 * HTTP layer and JSON); the text is exactly what `JSON.stringify` writes.
 */

/** Characters JSON.stringify escapes (lone surrogates only; a pair goes to it too, harmlessly). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify(s)` for a string, fast when nothing needs escaping.
 *
 * @example
 * ```ts
 * jsonString('tx-1');   // '"tx-1"'
 * jsonString('a"b');    // '"a\\"b"'
 * ```
 */
export function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/**
 * {@link jsonString}, or `null` for null (trace ids, a pop's partition when it has none).
 *
 * @example
 * ```ts
 * jsonStringOrNull(null); // 'null'
 * jsonStringOrNull('t');  // '"t"'
 * ```
 */
export function jsonStringOrNull(s: string | null): string {
  return s === null ? 'null' : jsonString(s);
}

/**
 * `JSON.stringify(n)` for a number: `null` when it is not finite.
 *
 * @example
 * ```ts
 * jsonNumber(1.5); // '1.5'
 * jsonNumber(NaN); // 'null'
 * ```
 */
export function jsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/**
 * JSON text to splice in verbatim: payloads are stored as the JSON text they were pushed as,
 * and go back out inside answers without a parse and re-stringify.
 *
 * @example
 * ```ts
 * toJson({ data: new RawJson('{"a":1.50}') }); // '{"data":{"a":1.50}}'
 * ```
 */
export class RawJson {
  constructor(readonly text: string) {}
  /** A route that returns RawJson must say `raw: true`; JSON.stringify would mangle it. */
  toJSON(): never {
    throw new Error('RawJson reached JSON.stringify: return { raw: true } from the route');
  }
}

/**
 * JSON.stringify that writes {@link RawJson} values verbatim, concatenating leaves written by
 * {@link jsonString} and {@link jsonNumber}: answers have ~11 leaves per message.
 *
 * @example
 * ```ts
 * toJson({ a: 1, skipped: undefined, data: new RawJson('[1.0]') }); // '{"a":1,"data":[1.0]}'
 * ```
 */
export function toJson(value: unknown): string {
  if (typeof value === 'string') return jsonString(value);
  if (typeof value === 'number') return jsonNumber(value);
  if (value === null || typeof value !== 'object' || value instanceof Date) return JSON.stringify(value) ?? 'null';
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      out += `${i === 0 ? '' : ','}${v === undefined ? 'null' : toJson(v)}`;
    }
    return `${out}]`;
  }
  let out = '{';
  let first = true;
  for (const k of Object.keys(value)) {
    const v: unknown = (value as Record<string, unknown>)[k];
    if (v === undefined || typeof v === 'function') continue;
    out += `${first ? '' : ','}${jsonString(k)}:${toJson(v)}`;
    first = false;
  }
  return `${out}}`;
}

/**
 * Payload bytes (JSON text) as a raw splice.
 *
 * @example
 * ```ts
 * toJson({ data: rawPayload(message.payload) });
 * ```
 */
export const rawPayload = (bytes: Uint8Array): RawJson =>
  new RawJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
