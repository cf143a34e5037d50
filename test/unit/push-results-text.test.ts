import { describe, expect, it } from 'vitest';
import { pushResultJson, pushResultsText } from '../../lambdas/http/handlers/log.js';
import type { PushResult } from '../../lambdas/service/log/push.js';

const r = (over: Partial<PushResult>): PushResult => ({
  index: 0,
  status: 'queued',
  queue: 'orders',
  partition: 'Default',
  partitionId: '019ad0c4-1b2c-7d3e-8f40-123456789abc',
  transactionId: 'tx-1',
  messageId: '019ad0c4-1b2c-7d3e-8f40-cba987654321',
  traceId: null,
  offset: 7,
  ...over,
});

describe('unit: push results as JSON text', () => {
  it('is byte for byte JSON.stringify of the Queen-shaped results', () => {
    const results: PushResult[] = [
      r({}),
      r({ index: 1, status: 'duplicate', offset: undefined, transactionId: 'q"uote\\', traceId: 'tr\u0001ü' }),
      r({ index: 2, queue: 'other "q"', partition: 'p ü', partitionId: 'pid-2', offset: 0 }),
      r({ index: 3, status: 'failed', offset: undefined, messageId: '', error: 'push to a/b failed: "why"\n' }),
      r({ index: 4, queue: 'orders', transactionId: '\ud800', offset: 2 ** 40 }),
    ];
    expect(pushResultsText(results)).toBe(JSON.stringify(results.map(pushResultJson)));
    expect(JSON.parse(pushResultsText(results))).toEqual(results.map(pushResultJson));
  });
  it('answers an empty push with an empty array', () => {
    expect(pushResultsText([])).toBe('[]');
  });
});
