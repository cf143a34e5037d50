import { describe, expect, it } from 'vitest';
import { assertName, nameProblem, newNameProblem } from '../../server/core/names.js';
import {
  QUEUE_OPTION_DEFAULTS,
  QueueOptionsInput,
  effectiveLeaseSeconds,
  queueOptionsProblem,
  resolveQueueOptions,
} from '../../server/core/queue-options.js';
import { loadConfig } from '../../server/config.js';

describe('unit: names', () => {
  it.each([['orders'], ['Default'], ['a.b-c_d:e@f'], ['émoji-✓'], ['pair-😀'], ['x'.repeat(128)]])(
    'accepts %s',
    (n) => {
      expect(nameProblem(n, 'queue')).toBeUndefined();
    },
  );
  it.each([
    ['', 'must not be empty'],
    ['a/b', 'must not contain'],
    ['a?b', 'must not contain'],
    ['a#b', 'must not contain'],
    ['50%', 'must not contain'],
    [' lead', 'whitespace'],
    ['tab\tin', 'must not contain'],
    ['x'.repeat(129), 'at most 128 bytes'],
    ['lone-\ud800', 'valid Unicode'],
    ['\udc00-lone', 'valid Unicode'],
  ])('refuses %j', (n, why) => {
    expect(nameProblem(n, 'queue')).toContain(why);
  });
  it.each([['next\u0085line'], ['line\u2028sep'], ['para\u2029sep'], ['c1\u009b']])(
    'refuses %j for a new name, and still reads an older one',
    (n) => {
      expect(newNameProblem(n, 'queue')).toContain('control characters');
      expect(nameProblem(n, 'queue')).toBeUndefined();
    },
  );
  it('refuses non-strings and says which kind of name', () => {
    expect(nameProblem(42, 'partition')).toBe('partition name must be a string');
    expect(() => assertName('a/b', 'consumer group')).toThrow(/consumer group name/);
  });
});

describe('unit: queue options', () => {
  it('fills every option left out with its default', () => {
    const o = resolveQueueOptions({ leaseTime: 30, retryLimit: null });
    expect(o.leaseTime).toBe(30);
    expect(o.retryLimit).toBe(QUEUE_OPTION_DEFAULTS.retryLimit);
    expect(o.deadLetterQueue).toBe(true);
    expect(o.dedupWindowSeconds).toBe(3600);
  });
  it('refuses unknown options and wrong types instead of ignoring them', () => {
    expect(QueueOptionsInput.safeParse({ leaseTim: 30 }).success).toBe(false);
    expect(QueueOptionsInput.safeParse({ leaseTime: '30' }).success).toBe(false);
    expect(QueueOptionsInput.safeParse({ retryLimit: 1.5 }).success).toBe(false);
    expect(QueueOptionsInput.safeParse({ encryptionEnabled: 1 }).success).toBe(false);
  });
  it('checks cross-field rules', () => {
    expect(queueOptionsProblem(resolveQueueOptions({ visibilityTimeoutMs: 5000, maxVisibilityMs: 1000 }))).toMatch(
      /maxVisibilityMs/,
    );
    expect(queueOptionsProblem(resolveQueueOptions({}))).toBeUndefined();
  });
  it('computes the effective lease time as seed 002 orders it', () => {
    expect(effectiveLeaseSeconds(10, 300)).toBe(10);
    expect(effectiveLeaseSeconds(0, 300)).toBe(300);
    expect(effectiveLeaseSeconds(undefined, null)).toBe(60);
  });
});

describe('unit: config', () => {
  it('has working defaults', () => {
    const c = loadConfig({});
    expect(c.port).toBe(6632);
    expect(c.host).toBe('127.0.0.1');
    expect(c.dataDir).toBe('./.sluice-data');
  });
  it('reads the environment and refuses nonsense', () => {
    expect(loadConfig({ SLUICE_PORT: '7000', SLUICE_DATA_DIR: '/d' })).toMatchObject({ port: 7000, dataDir: '/d' });
    expect(() => loadConfig({ SLUICE_PORT: 'x' })).toThrow(/SLUICE_PORT/);
    expect(() => loadConfig({ SLUICE_SYNC: 'maybe' })).toThrow(/SLUICE_SYNC/);
  });
  it('refuses an inline threshold whose segments would not fit in one item', () => {
    expect(loadConfig({ SLUICE_INLINE_MAX_BYTES: '8192' }).inlineMaxBytes).toBe(8192);
    expect(() => loadConfig({ SLUICE_INLINE_MAX_BYTES: '1000000' })).toThrow(
      /SLUICE_INLINE_MAX_BYTES must be a number >= 0 and <= 390000/,
    );
  });
});
