import { describe, expect, it } from 'vitest';
import { jsonNumber, jsonString } from '../../lambdas/codec/json-text.js';

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
});
