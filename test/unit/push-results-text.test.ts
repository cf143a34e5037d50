import { describe, expect, it } from 'vitest';
import { toJson } from '../../server/codec/json-writer.js';
import { pushResultJson, pushResultsText } from '../../server/http/answers/push-results.js';
import type { PushResult } from '../../server/service/log/push.js';
import { randomSource } from './json-random.js';

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
  it('over 500 random pushes: JSON.stringify’s text and the generic writer’s, parsing back to the results', () => {
    const random = randomSource(53);
    for (let n = 0; n < 500; n++) {
      // Runs of one queue and partition, as a push groups them, and odd text anywhere.
      const queues = [random.string(), random.string()];
      const results = Array.from({ length: random.below(8) }, (_, index) =>
        r({
          index,
          status: random.pick(['queued', 'duplicate', 'failed'] as const),
          queue: random.pick(queues),
          partition: random.pick([queues[0] as string, random.string()]),
          partitionId: random.pick(['pid-1', random.string()]),
          transactionId: random.string(),
          messageId: random.string(),
          traceId: random.below(2) === 0 ? null : random.string(),
          offset: random.below(3) === 0 ? undefined : random.number(),
          error: random.below(3) === 0 ? random.string() : undefined,
        }),
      );
      const text = pushResultsText(results);
      expect(text).toBe(JSON.stringify(results.map(pushResultJson)));
      expect(text).toBe(toJson(results.map(pushResultJson)));
      expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(results.map(pushResultJson))));
    }
  });
});
