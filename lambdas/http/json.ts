import { jsonNumber, jsonString } from '../codec/json-text.js';

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

/**
 * JSON.stringify that writes {@link RawJson} values verbatim. Built by concatenation, with
 * strings and numbers written by codec/json-text.ts: a pop of 100 messages is about 1,100
 * leaves, and per-leaf JSON.stringify with an array per object cost about 12 µs a message.
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

/** Payload bytes (JSON text) as a raw splice. */
export const rawPayload = (bytes: Uint8Array): RawJson =>
  new RawJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
