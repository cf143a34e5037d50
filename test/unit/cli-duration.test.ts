// The CLI's one duration parser (cli/duration.ts): units always, a bare number refused with a hint.
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { durationArg, parseDuration } from '../../cli/duration.js';

describe('unit: parseDuration', () => {
  it('reads every unit, compounds and fractions that come to whole milliseconds', () => {
    const cases: [string, number][] = [
      ['500ms', 500],
      ['30s', 30_000],
      ['5m', 300_000],
      ['1h30m', 5_400_000],
      ['1.5s', 1500],
      ['2d', 172_800_000],
      [' 2s ', 2000],
      ['1m0.5s', 60_500],
    ];
    for (const [text, ms] of cases) expect({ text, ms: parseDuration(text) }).toEqual({ text, ms });
  });

  it('takes 0 without a unit: it is zero in every unit', () => {
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('000')).toBe(0);
    expect(parseDuration('0s')).toBe(0);
  });

  it('refuses a bare number, naming both readings', () => {
    expect(() => parseDuration('5', 'idle')).toThrow(InvalidArgumentError);
    expect(() => parseDuration('5', 'idle')).toThrow('idle needs a unit: 5s or 5ms? (e.g. 500ms, 30s, 5m, 1h30m)');
    expect(() => parseDuration('3600', 'min-lag')).toThrow('min-lag needs a unit: 3600s or 3600ms?');
    expect(() => parseDuration('1.5')).toThrow('duration needs a unit: 1.5s or 1.5ms?');
  });

  it('refuses what is not a duration', () => {
    for (const bad of ['5 min', 's', '-5s', '5x', '', '5s5', 'ms', '1e3ms'])
      expect(() => parseDuration(bad, 'wait')).toThrow(/wait must be a duration/);
    expect(() => parseDuration('1.0001s')).toThrow(/whole milliseconds/);
  });

  it('durationArg applies a minimum after parsing', () => {
    expect(durationArg('lease', { min: 1000 })('2s')).toBe(2000);
    expect(() => durationArg('lease', { min: 1000 })('500ms')).toThrow('lease must be at least 1000 ms');
    expect(() => durationArg('idle', { min: 1 })('0')).toThrow('idle must be at least 1 ms');
  });

  it('durationArg with wholeSeconds refuses a fraction of a second rather than rounding it', () => {
    const window = durationArg('window', { wholeSeconds: true });
    expect([window('0'), window('2s'), window('1m'), window('2000ms'), window('1.5m')]).toEqual([
      0, 2000, 60_000, 2000, 90_000,
    ]);
    for (const bad of ['1500ms', '1.5s', '1m0.5s'])
      expect(() => window(bad)).toThrow(`window must be whole seconds (the setting is in seconds; got "${bad}"`);
  });
});
