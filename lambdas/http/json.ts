/**
 * JSON with raw splices: payloads are stored as the JSON text they were pushed as, and go
 * back out inside responses without a parse and re-stringify.
 */
export class RawJson {
  constructor(readonly text: string) {}
  /** A route that returns RawJson must say `raw: true`; JSON.stringify would mangle it. */
  toJSON(): never {
    throw new Error('RawJson reached JSON.stringify: return { raw: true } from the route');
  }
}

/** JSON.stringify that writes {@link RawJson} values verbatim. */
export function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : toJson(v))).join(',')}]`;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const parts: string[] = [];
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined || typeof v === 'function') continue;
      parts.push(`${JSON.stringify(k)}:${toJson(v)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Payload bytes (JSON text) as a raw splice. */
export const rawPayload = (bytes: Uint8Array): RawJson => new RawJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
