// Per-message outcomes of a batch handler (client/batch-outcome.ts): Lambda's batchItemFailures
// read against the call, and a throwing call retried one item at a time.
import { describe, expect, it } from 'vitest';
import { failuresOf, runBatch, type CallResult } from '../../client/batch-outcome.js';

const ids = ['a', 'b', 'c'];

describe('unit: failuresOf', () => {
  it('anything but a batch response means every item succeeded', () => {
    for (const v of [undefined, null, 3, 'x', {}, { batchItemFailures: [] }, { batchItemFailures: null }])
      expect(failuresOf(v, ids)).toEqual(new Map());
  });

  it('names failures by transactionId, with the optional error text', () => {
    const r = failuresOf(
      { batchItemFailures: [{ itemIdentifier: 'c' }, { itemIdentifier: 'a', error: 'bad a' }] },
      ids,
    );
    expect(r).toEqual(
      new Map([
        [2, 'reported failed by the handler (batchItemFailures)'],
        [0, 'bad a'],
      ]),
    );
  });

  it('an id not in the call, or a list that is not one, is an invalid response (undefined)', () => {
    expect(failuresOf({ batchItemFailures: [{ itemIdentifier: 'zz' }] }, ids)).toBeUndefined();
    expect(failuresOf({ batchItemFailures: [null] }, ids)).toBeUndefined();
    expect(failuresOf({ batchItemFailures: { itemIdentifier: 'a' } }, ids)).toBeUndefined();
  });
});

/** A handler over letters: those in `bad` make a call throw (with their own error); calls are recorded. */
function handler(bad: string[], opts: { report?: boolean } = {}) {
  const calls: string[][] = [];
  const call = (part: string[]): Promise<CallResult> => {
    calls.push(part);
    const failing = part.filter((x) => bad.includes(x));
    if (failing.length === 0) return Promise.resolve({ kind: 'done', value: undefined });
    if (opts.report)
      return Promise.resolve({
        kind: 'done',
        value: { batchItemFailures: failing.map((x) => ({ itemIdentifier: x, error: `no ${x}` })) },
      });
    return Promise.resolve({ kind: 'error', error: new Error(`no ${failing[0]}`) });
  };
  return { calls, call };
}
const texts = (outcomes: { ok: boolean; error?: unknown }[]) =>
  outcomes.map((o) => (o.ok ? 'ok' : (o.error as Error).message));

describe('unit: runBatch', () => {
  it('a clean call settles every item in one call', async () => {
    const h = handler([]);
    const r = await runBatch(['a', 'b', 'c'], (x) => x, h.call, { stopAtFailure: true });
    expect(texts(r.outcomes)).toEqual(['ok', 'ok', 'ok']);
    expect(h.calls).toEqual([['a', 'b', 'c']]);
  });

  it('a throw: each item alone, only the one that fails alone fails, with its own error', async () => {
    const h = handler(['b', 'd']);
    let before = 0;
    const r = await runBatch(['a', 'b', 'c', 'd'], (x) => x, h.call, {
      stopAtFailure: false,
      beforeSolo: async () => void before++,
    });
    expect(texts(r.outcomes)).toEqual(['ok', 'no b', 'ok', 'no d']);
    expect((r.threw as Error).message).toBe('no b');
    expect(before).toBe(1);
    expect(h.calls).toEqual([['a', 'b', 'c', 'd'], ['a'], ['b'], ['c'], ['d']]);
  });

  it('in order (leases): stops at the first item that fails alone', async () => {
    const h = handler(['b', 'd']);
    const r = await runBatch(['a', 'b', 'c', 'd'], (x) => x, h.call, { stopAtFailure: true });
    expect(texts(r.outcomes)).toEqual(['ok', 'no b']);
    expect(h.calls).toEqual([['a', 'b', 'c', 'd'], ['a'], ['b']]);
  });

  it('reported failures need no retry; in order, the first one ends the run', async () => {
    const h = handler(['b', 'c'], { report: true });
    expect(texts((await runBatch(['a', 'b', 'c'], (x) => x, h.call, { stopAtFailure: false })).outcomes)).toEqual([
      'ok',
      'no b',
      'no c',
    ]);
    expect(texts((await runBatch(['a', 'b', 'c'], (x) => x, h.call, { stopAtFailure: true })).outcomes)).toEqual([
      'ok',
      'no b',
    ]);
    expect(h.calls).toHaveLength(2);
  });

  it('one item that throws is not called again; an invalid response is retried alone', async () => {
    const h = handler(['a']);
    const one = await runBatch(['a'], (x) => x, h.call, { stopAtFailure: true });
    expect(texts(one.outcomes)).toEqual(['no a']);
    expect(h.calls).toEqual([['a']]);

    const wrongIds = (part: string[]): Promise<CallResult> =>
      Promise.resolve({ kind: 'done', value: { batchItemFailures: part.map((x) => ({ itemIdentifier: `id-${x}` })) } });
    const r = await runBatch(['a', 'b'], (x) => x, wrongIds, { stopAtFailure: false });
    expect(r.outcomes.map((o) => o.ok)).toEqual([false, false]);
    expect(texts(r.outcomes)[0]).toMatch(/not an array of \{ itemIdentifier \} naming transactionIds/);
  });

  it('an abandoned call ends the run without outcomes for what it held', async () => {
    let n = 0;
    const r = await runBatch(
      ['a', 'b', 'c'],
      (x) => x,
      (): Promise<CallResult> =>
        Promise.resolve(
          n++ === 0
            ? { kind: 'error', error: new Error('x') }
            : n > 2
              ? { kind: 'abandoned' }
              : { kind: 'done', value: undefined },
        ),
      { stopAtFailure: false },
    );
    expect(r).toMatchObject({ abandoned: true });
    expect(texts(r.outcomes)).toEqual(['ok']);
  });
});
