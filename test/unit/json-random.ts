/**
 * Seeded random inputs for the JSON writer tests: strings made of what JSON escapes (quotes,
 * backslashes, control characters, lone surrogates) mixed with plain and non-ASCII text,
 * numbers JSON cannot hold, and trees with undefined fields, functions, dates and raw splices.
 */
import { RawJson } from '../../server/codec/json-writer.js';

/** Mulberry32: a small seeded generator, so a failure reproduces. */
export function randomSource(seed: number) {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const below = (n: number): number => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[below(items.length)] as T;

  const pieces = [
    'a',
    'Z',
    '0',
    ' ',
    '-',
    '.',
    '"',
    '\\',
    '\\"',
    '/',
    '\n',
    '\t',
    '\u0000',
    '\u001f',
    '\u007f',
    'é',
    '✓',
    '\u2028',
    '\ud800',
    '\udfff',
    '😀',
    '</script>',
    'order-',
  ];
  /** Mostly plain (the common case takes the fast path), sometimes anything JSON escapes. */
  const string = (maxPieces = 12): string => {
    if (below(3) === 0) return `id-${below(1e6)}`;
    return Array.from({ length: below(maxPieces + 1) }, () => pick(pieces)).join('');
  };
  const oddNumbers = [0, -0, 1, -1, 1.5, 0.1, 1e21, 1e-7, 5e-324, 2 ** 53, NaN, Infinity, -Infinity, 1_764_459_000_123];
  const number = (): number => (below(2) === 0 ? pick(oddNumbers) : (next() - 0.5) * 10 ** below(25));
  /** JSON text for a raw splice, written the way a client might have: spacing and number forms kept. */
  const rawText = (): string =>
    pick([
      '1.50',
      ' [ 1 , 2 ] ',
      '{"a" : "x", "b":[true,null]}',
      '"\\u00e9\\""',
      '-1.50',
      '1E3',
      'null',
      '{}',
      '"plain"',
    ]);

  /**
   * A random tree three ways: `value` holds {@link RawJson} splices, `reference` holds
   * `@@splice-N@@` in their place (for JSON.stringify), `parsed` holds what each splice parses to.
   */
  const tree = (): { value: unknown; reference: unknown; parsed: unknown; splices: string[] } => {
    const splices: string[] = [];
    const build = (depth: number): [unknown, unknown, unknown] => {
      const kind = below(depth > 3 ? 7 : 10);
      switch (kind) {
        case 0:
        case 1: {
          const s = string();
          return [s, s, s];
        }
        case 2: {
          const n = number();
          return [n, n, n];
        }
        case 3: {
          const b = pick([true, false, null]);
          return [b, b, b];
        }
        case 4: {
          const d = new Date(pick([0, 1_764_459_000_123, -1, NaN]));
          return [d, d, d];
        }
        case 5: {
          const u = pick([undefined, () => 1]);
          return [u, u, u];
        }
        case 6: {
          const text = rawText();
          splices.push(text);
          return [new RawJson(text), `@@splice-${splices.length - 1}@@`, JSON.parse(text) as unknown];
        }
        case 7:
        case 8: {
          const items = Array.from({ length: below(5) }, () => build(depth + 1));
          return [items.map((i) => i[0]), items.map((i) => i[1]), items.map((i) => i[2])];
        }
        default: {
          const entries = Array.from({ length: below(5) }, () => [string(6), build(depth + 1)] as const);
          const side = (k: 0 | 1 | 2) => Object.fromEntries(entries.map(([key, v]) => [key, v[k]]));
          return [side(0), side(1), side(2)];
        }
      }
    };
    const [value, reference, parsed] = build(0);
    return { value, reference, parsed, splices };
  };
  return { next, below, pick, string, number, tree };
}

/** `JSON.stringify(reference)` with each `"@@splice-N@@"` replaced by the splice's text. */
export function stringifyWithSplices(reference: unknown, splices: readonly string[]): string {
  return (JSON.stringify(reference) ?? 'null').replace(
    /"@@splice-(\d+)@@"/g,
    (_, n: string) => splices[Number(n)] as string,
  );
}
