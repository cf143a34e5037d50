import { describe, expect, it } from 'vitest';
import {
  claimSettlement,
  firstFailure,
  leaseSettlement,
  readOutcome,
  type InvokeResult,
  type Outcome,
} from '../../server/core/targets/index.js';

const IDS = ['t0', 't1', 't2', 't3'];
const answered = (value: unknown): InvokeResult => ({ kind: 'answered', value });
const partial = (entries: [number, string][]): Outcome => ({ kind: 'partial', failed: new Map(entries) });
/** The same expected outcome with the flag off and on. */
const twice = (o: Outcome): [Outcome, Outcome] => [o, o];

describe('targets: reading an invoke result', () => {
  // [name, result, outcome with ReportBatchItemFailures off, outcome with it on]
  const cases: [string, InvokeResult, Outcome, Outcome][] = [
    ['an empty answer', answered(undefined), { kind: 'ok' }, { kind: 'ok' }],
    ['null', answered(null), { kind: 'ok' }, { kind: 'ok' }],
    ['a string', answered('done'), { kind: 'ok' }, { kind: 'ok' }],
    ['an object without the field', answered({ status: 'fine' }), { kind: 'ok' }, { kind: 'ok' }],
    ['an empty list', answered({ batchItemFailures: [] }), { kind: 'ok' }, { kind: 'ok' }],
    ['a null list', answered({ batchItemFailures: null }), { kind: 'ok' }, { kind: 'ok' }],
    [
      'failures named, with errors',
      answered({ batchItemFailures: [{ itemIdentifier: 't2', error: 'card declined' }, { itemIdentifier: 't0' }] }),
      { kind: 'ok' },
      partial([
        [2, 'card declined'],
        [0, 'reported failed by the handler (batchItemFailures)'],
      ]),
    ],
    [
      'every record named',
      answered({ batchItemFailures: IDS.map((itemIdentifier) => ({ itemIdentifier, error: 'x' })) }),
      { kind: 'ok' },
      partial(IDS.map((_, i) => [i, 'x'])),
    ],
    [
      'a function error',
      { kind: 'function-error', error: 'Unhandled: boom' },
      ...twice({ kind: 'failed', error: 'Unhandled: boom' }),
    ],
    [
      'a throttle with Retry-After',
      { kind: 'throttled', error: 'HTTP 429', retryAfterMs: 2_000 },
      ...twice({ kind: 'not-run', error: 'HTTP 429', retryAfterMs: 2_000 }),
    ],
    [
      'a throttle without',
      { kind: 'throttled', error: 'TooManyRequestsException' },
      ...twice({ kind: 'not-run', error: 'TooManyRequestsException' }),
    ],
    [
      'unreachable',
      { kind: 'unreachable', error: 'ECONNREFUSED' },
      ...twice({ kind: 'not-run', error: 'ECONNREFUSED' }),
    ],
  ];

  it.each(cases)('%s, ReportBatchItemFailures off', (_name, result, off) => {
    expect(readOutcome(result, IDS, false)).toStrictEqual(off);
  });
  it.each(cases)('%s, ReportBatchItemFailures on', (_name, result, _off, on) => {
    expect(readOutcome(result, IDS, true)).toStrictEqual(on);
  });

  // An invalid list fails the whole batch (Lambda's rule); with the flag off it is never read.
  const invalid: [string, unknown][] = [
    ['not an array', { batchItemFailures: 't1' }],
    ['an object', { batchItemFailures: { itemIdentifier: 't1' } }],
    ['an id not in the batch', { batchItemFailures: [{ itemIdentifier: 't1' }, { itemIdentifier: 'other' }] }],
    ['an entry without an id', { batchItemFailures: [{ error: 'x' }] }],
    ['an empty id', { batchItemFailures: [{ itemIdentifier: '' }] }],
    ['a null entry', { batchItemFailures: [null] }],
  ];
  it.each(invalid)('an invalid batchItemFailures (%s) fails the whole batch', (_name, value) => {
    const on = readOutcome(answered(value), IDS, true);
    expect(on.kind).toBe('failed');
    expect(on.kind === 'failed' && on.error).toMatch(/batchItemFailures .*t0, t1, t2, …/);
    expect(readOutcome(answered(value), IDS, false)).toEqual({ kind: 'ok' });
  });
});

describe('targets: settling a lease batch (offset order)', () => {
  it.each([0, 1, 2, 3, 4])('a partial answer failing record %i acks exactly the records before it', (k) => {
    const failed = partial([
      [k, `bad ${k}`],
      ...Array.from({ length: 4 - k }, (_, j): [number, string] => [k + 1 + j, 'later']),
    ]);
    expect(leaseSettlement(5, failed)).toEqual({ completed: k, rest: 'charge', error: `bad ${k}` });
  });

  const cases: [string, Outcome, ReturnType<typeof leaseSettlement>][] = [
    ['ok', { kind: 'ok' }, { completed: 5, rest: 'none' }],
    [
      'partial, failures out of order',
      partial([
        [3, 'x'],
        [1, 'y'],
      ]),
      { completed: 1, rest: 'charge', error: 'y' },
    ],
    ['partial naming nothing', partial([]), { completed: 5, rest: 'none' }],
    ['failed', { kind: 'failed', error: 'boom' }, { completed: 0, rest: 'charge', error: 'boom' }],
    [
      'not run',
      { kind: 'not-run', error: 'HTTP 429', retryAfterMs: 1 },
      { completed: 0, rest: 'release', error: 'HTTP 429' },
    ],
  ];
  it.each(cases)('%s', (_name, outcome, settlement) => {
    expect(leaseSettlement(5, outcome)).toStrictEqual(settlement);
  });

  it('reads the first failure of a partial answer in offset order', () => {
    expect(firstFailure(new Map())).toBeUndefined();
    expect(
      firstFailure(
        new Map([
          [7, 'a'],
          [2, 'b'],
          [4, 'c'],
        ]),
      ),
    ).toEqual({ index: 2, error: 'b' });
  });
});

describe('targets: settling claimed records', () => {
  const cases: [string, Outcome, ReturnType<typeof claimSettlement>][] = [
    ['ok', { kind: 'ok' }, { ack: [0, 1, 2], nack: [] }],
    [
      'partial',
      partial([
        [2, 'x'],
        [0, 'y'],
      ]),
      {
        ack: [1],
        nack: [
          { index: 0, error: 'y', charge: true },
          { index: 2, error: 'x', charge: true },
        ],
      },
    ],
    [
      'failed',
      { kind: 'failed', error: 'boom' },
      { ack: [], nack: [0, 1, 2].map((index) => ({ index, error: 'boom', charge: true })) },
    ],
    [
      'not run: handed back, never charged',
      { kind: 'not-run', error: 'ETIMEDOUT' },
      { ack: [], nack: [0, 1, 2].map((index) => ({ index, error: 'ETIMEDOUT', charge: false })) },
    ],
  ];
  it.each(cases)('%s', (_name, outcome, settlement) => {
    expect(claimSettlement(3, outcome)).toStrictEqual(settlement);
  });
});
