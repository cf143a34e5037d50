import { describe, expect, it } from 'vitest';
import { attrsJson } from '../../lambdas/storage/size.js';

describe('unit: caller-built attrsJson', () => {
  it('is used as the attributes text when it holds the same value (any key order)', () => {
    expect(attrsJson({ pk: 'p', sk: 's', ver: 1, attrs: { a: 1, b: 'x' }, attrsJson: '{"b":"x","a":1}' })).toBe(
      '{"b":"x","a":1}',
    );
    expect(attrsJson({ pk: 'p', sk: 's', ver: 1, attrs: { a: 1 } })).toBe('{"a":1}');
  });
  it('fails under the test suite when it no longer holds the attrs (a stale text is never stored)', () => {
    expect(process.env.SLUICE_CHECK_ATTRS_JSON).toBe('1');
    expect(() => attrsJson({ pk: 'p', sk: 's', ver: 1, attrs: { a: 1 }, attrsJson: '{"a":2}' })).toThrow(
      /does not hold its attrs/,
    );
  });
});
