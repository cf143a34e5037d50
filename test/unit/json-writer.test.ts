import { describe, expect, it } from 'vitest';
import { RawJson, jsonNumber, jsonString, rawPayload, toJson } from '../../server/codec/json-writer.js';
import { packFrames, type Frame } from '../../server/codec/segment.js';
import { reservationJson } from '../../server/core/dedup.js';
import { randomSource, stringifyWithSplices } from './json-random.js';

describe('unit: hand-built JSON text', () => {
  it('writes strings exactly as JSON.stringify does', () => {
    const cases = [
      '',
      'plain',
      'q"uote',
      'back\\slash',
      'nl\nx',
      '\u0000\u001f\u007f',
      'ü✓',
      '\u2028\u2029',
      '\ud800',
      'a\udfffb',
      '😀',
      '</script>',
      'x'.repeat(300),
    ];
    for (const s of cases) expect(jsonString(s)).toBe(JSON.stringify(s));
  });
  it('writes numbers exactly as JSON.stringify does, null when not finite', () => {
    for (const n of [0, -0, 1, -1, 1.5, 1_764_459_000_123, 2 ** 53, 1e21, 1e-7, NaN, Infinity, -Infinity])
      expect(jsonNumber(n)).toBe(JSON.stringify(n));
  });
  it('writes 2,000 random strings and numbers exactly as JSON.stringify does', () => {
    const random = randomSource(13);
    for (let n = 0; n < 2000; n++) {
      const s = random.string(20);
      expect(jsonString(s)).toBe(JSON.stringify(s));
      const x = random.number();
      expect(jsonNumber(x)).toBe(JSON.stringify(x));
    }
  });
});

describe('unit: toJson', () => {
  it('splices raw JSON verbatim and matches JSON.stringify otherwise', () => {
    const v = { a: 1, b: [true, null, 'x'], c: { d: new RawJson('{"raw":1.50}') }, u: undefined };
    expect(toJson(v)).toBe('{"a":1,"b":[true,null,"x"],"c":{"d":{"raw":1.50}}}');
    const plain = { s: 'é"\n', n: [1.5, -0, 1e21], o: {} };
    expect(toJson(plain)).toBe(JSON.stringify(plain));
  });
  it('matches JSON.stringify on keys and leaves that need escaping, non-finite numbers, dates and holes', () => {
    const odd = {
      'k"ey\\': [
        'q"uote',
        'back\\slash',
        'ctl\u0001',
        '\ud800lone',
        '😀',
        '',
        0,
        -0,
        NaN,
        Infinity,
        1e21,
        5e-324,
        2 ** 53,
        true,
        false,
        null,
      ],
      date: new Date(0),
      nested: [[], {}, [undefined], { gone: undefined, fn: () => 1 }],
      ü: { 'a\nb': 1 },
    };
    expect(toJson(odd)).toBe(JSON.stringify(odd));
    for (const v of [null, true, 'x"', 5, NaN, [], {}, new Date(5)]) expect(toJson(v)).toBe(JSON.stringify(v));
    expect(toJson(undefined)).toBe('null');
  });
  it('over 1,000 random trees: byte-equal to JSON.stringify outside the splices, and parses back to the value', () => {
    const random = randomSource(29);
    for (let n = 0; n < 1000; n++) {
      const { value, reference, parsed, splices } = random.tree();
      const out = toJson(value);
      expect(out).toBe(stringifyWithSplices(reference, splices));
      expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(parsed) ?? 'null'));
    }
  });
  it('splices payload bytes as the UTF-8 text they hold, from any view of a buffer', () => {
    const bytes = Buffer.from('xx{"é":[1.0]}yy').subarray(2, 14);
    expect(toJson({ data: rawPayload(bytes) })).toBe('{"data":{"é":[1.0]}}');
  });
  it('refuses to be written by JSON.stringify (a route returning splices must say raw: true)', () => {
    expect(() => JSON.stringify({ data: new RawJson('1') })).toThrow(/raw: true/);
  });
});

describe('unit: texts built on the writer', () => {
  const random = randomSource(41);
  it('writes dedup reservations as JSON.stringify({ push, mid, at })', () => {
    for (let n = 0; n < 500; n++) {
      const [push, mid, at] = [random.string(), random.string(), random.number()];
      const text = reservationJson(push, at)(mid);
      expect(text).toBe(JSON.stringify({ push, mid, at }));
      expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify({ push, mid, at })));
    }
  });
  it('writes frame headers as JSON.stringify({ i, t, r, c, e? })', () => {
    for (let n = 0; n < 200; n++) {
      const frames: Frame[] = Array.from({ length: 1 + random.below(4) }, (_, k) => ({
        id: random.string(),
        transactionId: random.string(),
        traceId: random.below(2) === 0 ? null : random.string(),
        createdAt: k > 0 && random.below(2) === 0 ? 1_700_000_000_000 : random.number(),
        payload: Buffer.from('{}'),
        sealed: random.below(3) === 0 ? true : undefined,
      }));
      const packed = packFrames(frames);
      let at = 0;
      for (const f of frames) {
        const headerLength = packed.readUInt16BE(at + 4);
        const header = packed.toString('utf8', at + 6, at + 6 + headerLength);
        const expected = JSON.stringify({
          i: f.id,
          t: f.transactionId,
          r: f.traceId,
          c: f.createdAt,
          ...(f.sealed ? { e: 1 } : {}),
        });
        expect(header).toBe(expected);
        at += 4 + packed.readUInt32BE(at);
      }
    }
  });
});
