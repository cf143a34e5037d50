/**
 * Finds where values sit inside JSON text that `JSON.parse` has already accepted, so a push can
 * store each payload as the exact bytes the client sent: no re-serialisation (costly on the
 * push path, docs/BENCHMARKS.md) and no change to number formats or key order.
 *
 * Works on UTF-8 bytes: every structural character is ASCII, and bytes of multi-byte UTF-8
 * sequences are never ASCII, so scanning bytes is exact.
 */

const WHITESPACE = new Uint8Array(256);
for (const c of [0x20, 0x09, 0x0a, 0x0d]) WHITESPACE[c] = 1;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function skipWhitespace(b: Uint8Array, i: number): number {
  while (i < b.length && WHITESPACE[b[i] as number]) i++;
  return i;
}

/** Index just past the string starting at `i` (which is a quote). */
function skipString(b: Uint8Array, i: number): number {
  // Payload bytes are mostly string contents: jump from quote to quote with the native
  // search instead of looking at every byte. A quote preceded by an odd run of backslashes
  // is escaped.
  let from = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, from);
    if (q < 0) throw new Error('unterminated string');
    let k = q - 1;
    while (b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** Index just past the value starting at `i`. */
function skipValue(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === 0x7b || c === 0x5b) {
    // Object or array: count depth, stepping over strings (which may hold brackets).
    let depth = 0;
    for (;;) {
      const d = b[i];
      if (d === undefined) throw new Error('unterminated container');
      if (d === QUOTE) {
        i = skipString(b, i);
        continue;
      }
      if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
  }
  // Number, true, false, null: up to the next delimiter.
  while (i < b.length) {
    const d = b[i] as number;
    if (d === 0x2c || d === 0x7d || d === 0x5d || WHITESPACE[d]) break;
    i++;
  }
  return i;
}

const KEY_ITEMS = Buffer.from('items');
const KEY_PAYLOAD = Buffer.from('payload');
const KEY_DATA = Buffer.from('data');

/**
 * Whether the key whose quotes are at `start` and `end - 1` is `name`. Compared as bytes, so
 * the scan allocates nothing per key; an escaped key (rare) is decoded to compare.
 */
function keyIs(b: Uint8Array, start: number, end: number, name: Uint8Array): boolean {
  const length = end - start - 2;
  let escaped = false;
  for (let j = start + 1; j < end - 1; j++) {
    if (b[j] === BACKSLASH) {
      escaped = true;
      break;
    }
  }
  if (escaped) {
    const key = JSON.parse(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('utf8')) as string;
    return key === Buffer.from(name.buffer, name.byteOffset, name.byteLength).toString('latin1');
  }
  if (length !== name.byteLength) return false;
  for (let j = 0; j < length; j++) if (b[start + 1 + j] !== name[j]) return false;
  return true;
}

/** The index of the value after the key whose closing quote ends before `end` (skips the colon). */
function afterColon(b: Uint8Array, end: number): number {
  return skipWhitespace(b, skipWhitespace(b, end) + 1);
}

/**
 * For the JSON object `{"items": [ {...}, ... ]}` in `body`, the byte span of each item's
 * `payload` (else `data`) value, or undefined for an item that has neither. Later duplicate
 * keys win, as in `JSON.parse`. Returns undefined when the text is not of that shape.
 *
 * @example
 * ```ts
 * payloadSpans(Buffer.from('{"items":[{"queue":"q","payload":{"a":1.50}}]}'));
 * // → [[30, 40]]  (the text {"a":1.50})
 * ```
 */
export function payloadSpans(body: Uint8Array): ([number, number] | undefined)[] | undefined {
  try {
    let i = skipWhitespace(body, 0);
    if (body[i] !== 0x7b) return undefined;
    i = skipWhitespace(body, i + 1);
    let spans: ([number, number] | undefined)[] | undefined;
    while (body[i] === QUOTE) {
      const keyEnd = skipString(body, i);
      const isItems = keyIs(body, i, keyEnd, KEY_ITEMS);
      i = afterColon(body, keyEnd);
      if (isItems && body[i] === 0x5b) {
        spans = [];
        i = skipWhitespace(body, i + 1);
        while (body[i] === 0x7b) {
          let payload: [number, number] | undefined;
          let data: [number, number] | undefined;
          i = skipWhitespace(body, i + 1);
          while (body[i] === QUOTE) {
            const fieldEnd = skipString(body, i);
            const isPayload = keyIs(body, i, fieldEnd, KEY_PAYLOAD);
            const isData = !isPayload && keyIs(body, i, fieldEnd, KEY_DATA);
            const start = afterColon(body, fieldEnd);
            const end = skipValue(body, start);
            if (isPayload) payload = [start, end];
            else if (isData) data = [start, end];
            i = skipWhitespace(body, end);
            if (body[i] === 0x2c) i = skipWhitespace(body, i + 1);
          }
          if (body[i] !== 0x7d) return undefined;
          spans.push(payload ?? data);
          i = skipWhitespace(body, i + 1);
          if (body[i] === 0x2c) i = skipWhitespace(body, i + 1);
        }
        if (body[i] !== 0x5d) return undefined;
        i = skipWhitespace(body, i + 1);
      } else {
        i = skipWhitespace(body, skipValue(body, i));
      }
      if (body[i] === 0x2c) i = skipWhitespace(body, i + 1);
    }
    return body[i] === 0x7d ? spans : undefined;
  } catch {
    return undefined;
  }
}
