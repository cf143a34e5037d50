import { describe, expect, it } from 'vitest';
import { payloadSpans } from '../../server/http/payload-spans.js';

const slices = (text: string): (string | undefined)[] | undefined => {
  const b = Buffer.from(text);
  return payloadSpans(b)?.map((s) => (s ? b.subarray(s[0], s[1]).toString() : undefined));
};

describe('unit: payloadSpans', () => {
  it('finds each payload exactly as sent', () => {
    expect(slices('{"items":[{"queue":"q","payload":{"a":1.50,"b":[1e3,"x"]}},{"payload":null,"queue":"q"}]}')).toEqual(
      ['{"a":1.50,"b":[1e3,"x"]}', 'null'],
    );
  });
  it('steps over strings holding brackets, quotes and escapes', () => {
    const t = '{"items":[{"payload":"a]}\\"\\\\{","queue":"q"},{"payload":{"s":"}]\\u00e9✓"}}]}';
    expect(slices(t)).toEqual(['"a]}\\"\\\\{"', '{"s":"}]\\u00e9✓"}']);
    const parsed = JSON.parse(t) as { items: { payload: unknown }[] };
    expect(slices(t)?.map((s): unknown => JSON.parse(s as string))).toEqual(parsed.items.map((i) => i.payload));
  });
  it('handles whitespace, other keys, data as an alias, and items without a payload', () => {
    const t =
      ' { "meta" : {"x":[1,2]} , "items" : [ { "data" : [ 1 , 2 ] , "queue":"q" } , {"queue":"q"} ] , "z": true } ';
    expect(slices(t)).toEqual(['[ 1 , 2 ]', undefined]);
  });
  it('prefers payload over data and the last duplicate key, as JSON.parse does', () => {
    expect(slices('{"items":[{"data":1,"payload":2,"payload":3}]}')).toEqual(['3']);
    expect(slices('{"items":[{"payload":1}],"items":[{"payload":2}]}')).toEqual(['2']);
  });
  it('gives up (undefined) on other shapes', () => {
    expect(payloadSpans(Buffer.from('[1,2]'))).toBeUndefined();
    expect(payloadSpans(Buffer.from('{"items":{"payload":1}}'))).toBeUndefined();
    expect(payloadSpans(Buffer.from('{"other":1}'))).toBeUndefined();
    expect(payloadSpans(Buffer.from('{"items":[1,2]}'))).toBeUndefined();
  });
});

describe('unit: payloadSpans keys', () => {
  it('reads escaped and non-ASCII keys like JSON.parse', () => {
    expect(slices('{"it\\u0065ms":[{"p\\u0061yload":7,"é":1}]}')).toEqual(['7']);
  });
});

describe('unit: payloadSpans on random payloads', () => {
  // Strings built from the characters the scanner treats specially, so runs of backslashes
  // before a quote (escaped or closing) occur in every length.
  const alphabet = ['\\', '"', '{', '}', '[', ']', ',', ':', 'a', ' ', 'é', '✓', '\n'];
  let seed = 7;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const str = (): string => Array.from({ length: rnd(12) }, () => alphabet[rnd(alphabet.length)]).join('');
  const value = (depth: number): unknown => {
    const k = rnd(depth > 2 ? 3 : 5);
    if (k === 0) return str();
    if (k === 1) return rnd(1000) / 7;
    if (k === 2) return [true, false, null][rnd(3)];
    if (k === 3) return Array.from({ length: rnd(4) }, () => value(depth + 1));
    return Object.fromEntries(Array.from({ length: rnd(4) }, () => [str(), value(depth + 1)]));
  };
  it('finds every payload JSON.parse finds, byte for byte, over 300 random bodies', () => {
    for (let n = 0; n < 300; n++) {
      const items = Array.from({ length: 1 + rnd(5) }, () => ({
        queue: str(),
        payload: value(0),
        transactionId: str(),
      }));
      const text = JSON.stringify({ items });
      expect(slices(text)?.map((s) => JSON.parse(s as string) as unknown)).toEqual(items.map((i) => i.payload));
    }
  });
  it('steps over strings of every length, with escapes at every place', () => {
    for (let len = 0; len <= 40; len++) {
      for (const at of [-1, 0, 1, 14, 15, 16, 17, 22, 23, 24, 25, len - 2, len - 1]) {
        if (at >= len) continue;
        // An escaped quote, an escaped backslash and a multi-byte character at position `at`.
        for (const special of ['"', '\\', '✓', '\\"']) {
          const chars = Array.from({ length: len }, (_, k) => (k === at ? special : 'x')).join('');
          const payload = { s: chars };
          const text = JSON.stringify({ items: [{ queue: chars, transactionId: chars, payload }, { payload: chars }] });
          expect(slices(text)?.map((x) => JSON.parse(x as string) as unknown)).toEqual([payload, chars]);
        }
      }
    }
  });
});
