// The local server's --target value (server/local/target-flags.ts): the group, the handler
// module and PUT's knobs in one value, read by the contract's TargetSettings so every default,
// range and refusal is the API's; each refusal is one line naming the value and what is wrong.
import { describe, expect, it } from 'vitest';
import { TargetSettings } from '../../contract/targets.js';
import { parseTargetFlags, targetFlagValues } from '../../server/local/target-flags.js';

const one = (value: string) => {
  const [t] = parseTargetFlags([value], '/work/app');
  return t!;
};

describe('unit: --target values', () => {
  it('names a lease target on the group with every default of a PUT, the file resolved against the directory', () => {
    expect(one('orders/billing=./consumers/billing.ts')).toEqual({
      queue: 'orders',
      group: 'billing',
      settings: TargetSettings.parse({
        endpoint: { kind: 'module', path: '/work/app/consumers/billing.ts' },
        mode: 'leases',
      }),
    });
    expect(one('orders/billing=/abs/h.mjs').settings.endpoint).toEqual({ kind: 'module', path: '/abs/h.mjs' });
  });

  it('reads every knob as its type: numbers, booleans, enums, the list knob once per occurrence', () => {
    const t = one(
      'jobs/workers=h.ts?mode=claims&batchSize=10&maximumConcurrency=2&maximumBatchingWindowInSeconds=3' +
        '&functionResponseTypes=ReportBatchItemFailures&bisectBatchOnFunctionError=true&maximumRetryAttempts=0' +
        '&maximumRecordAgeInSeconds=60&timeoutSeconds=5&startingPosition=AT_TIMESTAMP&startingPositionTimestamp=1700000000000',
    );
    expect(t.settings).toEqual({
      endpoint: { kind: 'module', path: '/work/app/h.ts' },
      mode: 'claims',
      batchSize: 10,
      maximumConcurrency: 2,
      maximumBatchingWindowInSeconds: 3,
      functionResponseTypes: ['ReportBatchItemFailures'],
      bisectBatchOnFunctionError: true,
      maximumRetryAttempts: 0,
      maximumRecordAgeInSeconds: 60,
      timeoutSeconds: 5,
      startingPosition: 'AT_TIMESTAMP',
      startingPositionTimestamp: 1_700_000_000_000,
    });
    expect(one('q/g=h.ts?maximumRecordAgeInSeconds=-1&bisectBatchOnFunctionError=false').settings).toMatchObject({
      maximumRecordAgeInSeconds: -1,
      bisectBatchOnFunctionError: false,
    });
  });

  it('decodes percent-escapes in the names (a name may hold = and , but never %), not in the file', () => {
    const t = one('a%3Db/c%2Cd=./x%20y.ts');
    expect([t.queue, t.group]).toEqual(['a=b', 'c,d']);
    expect(t.settings.endpoint).toEqual({ kind: 'module', path: '/work/app/x%20y.ts' });
  });

  it('takes several values, one per group', () => {
    const ts = parseTargetFlags(['a/g=one.ts', 'b/g=two.ts?mode=claims', 'a/h=one.ts'], '/w');
    expect(ts.map((t) => [t.queue, t.group, t.settings.mode])).toEqual([
      ['a', 'g', 'leases'],
      ['b', 'g', 'claims'],
      ['a', 'h', 'leases'],
    ]);
  });

  it.each([
    ['no group', 'orders=h.ts', /expected <queue>\/<group>=<file>/],
    ['no file part', 'orders/billing', /expected <queue>\/<group>=<file>/],
    ['an empty file', 'orders/billing=?batchSize=2', /no handler module file/],
    ['an empty queue name', '/billing=h.ts', /queue name must not be empty/],
    ['a queue name "."', './billing=h.ts', /queue name must not be "\."/],
    ['a group holding an escaped /', 'orders/bil%2Fling=h.ts', /consumer group name must not contain/],
    ['a malformed escape', 'orders/bil%zzling=h.ts', /malformed %-escape/],
    [
      'an unknown knob, with the one meant',
      'q/g=h.ts?concurrency=2',
      /unknown knob concurrency \(did you mean maximumConcurrency\?\)/,
    ],
    ['the endpoint as a knob', 'q/g=h.ts?endpoint=x', /unknown knob endpoint; the knobs are mode, batchSize/],
    ['a knob twice', 'q/g=h.ts?batchSize=2&batchSize=3', /knob batchSize is given twice/],
    ['a batch size of 0', 'q/g=h.ts?batchSize=0', /invalid knobs: batchSize: .*>=1/],
    ['a batch size over 10,000', 'q/g=h.ts?batchSize=10001', /invalid knobs: batchSize: .*<=10000/],
    ['a number that is not one', 'q/g=h.ts?batchSize=ten', /batchSize: .*expected number/],
    ['a fraction', 'q/g=h.ts?maximumConcurrency=1.5', /maximumConcurrency: .*int/],
    ['a boolean that is not one', 'q/g=h.ts?bisectBatchOnFunctionError=yes', /bisectBatchOnFunctionError: .*boolean/],
    ['an unknown mode', 'q/g=h.ts?mode=stream', /mode: /],
    ['retrying forever', 'q/g=h.ts?maximumRetryAttempts=-1', /maximumRetryAttempts: /],
    [
      'a record age under 60 s',
      'q/g=h.ts?maximumRecordAgeInSeconds=30',
      /maximumRecordAgeInSeconds is -1 \(no limit\) or 60/,
    ],
    [
      'AT_TIMESTAMP without its timestamp',
      'q/g=h.ts?startingPosition=AT_TIMESTAMP',
      /startingPositionTimestamp goes with/,
    ],
    ['an unknown response type', 'q/g=h.ts?functionResponseTypes=Everything', /functionResponseTypes/],
  ])('refuses %s, in one line naming the value', (_what, value, message) => {
    let error: Error | undefined;
    try {
      parseTargetFlags([value], '/w');
    } catch (e) {
      error = e as Error;
    }
    expect(error?.message).toMatch(message);
    expect(error!.message.startsWith(`--target ${value}: `)).toBe(true);
    expect(error!.message).not.toContain('\n');
  });

  it('refuses two values for one group, and more targets than a deployment holds', () => {
    expect(() => parseTargetFlags(['q/g=a.ts', 'q/g=b.ts?mode=claims'], '/w')).toThrow(
      /^--target q\/g=b\.ts\?mode=claims: consumer group g on queue q is given a target twice$/,
    );
    const many = Array.from({ length: 101 }, (_, i) => `q/g${i}=h.ts`);
    expect(() => parseTargetFlags(many, '/w')).toThrow(/at most 100 targets/);
    expect(parseTargetFlags(many.slice(0, 100), '/w')).toHaveLength(100);
  });

  it('names SLUICE_TARGETS when the values came from it', () => {
    expect(() => parseTargetFlags(['q/g=h.ts?nope=1'], '/w', 'SLUICE_TARGETS')).toThrow(
      /^SLUICE_TARGETS q\/g=h\.ts\?nope=1: unknown knob nope/,
    );
  });
});

describe('unit: where --target values come from', () => {
  it('the flags when any is given (they replace the variable), else SLUICE_TARGETS cut at commas', () => {
    expect(targetFlagValues(['a/b=x,y.ts'], 'c/d=z.ts')).toEqual({ values: ['a/b=x,y.ts'], source: '--target' });
    expect(targetFlagValues(undefined, ' a/b=./x.ts , c/d=./y.ts?batchSize=2,')).toEqual({
      values: ['a/b=./x.ts', 'c/d=./y.ts?batchSize=2'],
      source: 'SLUICE_TARGETS',
    });
    expect(targetFlagValues([], undefined)).toEqual({ values: [], source: 'SLUICE_TARGETS' });
  });
});
