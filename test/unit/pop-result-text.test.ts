import { describe, expect, it } from 'vitest';
import { toJson } from '../../server/codec/json-writer.js';
import { popResultJson, popResultText } from '../../server/http/answers/lease-results.js';
import type { PopResult } from '../../server/service/leases/pop.js';
import { randomSource, stringifyWithSplices } from './json-random.js';

const payloads = ['{"order":1}', ' [ 1.50 , "é" ] ', '"\\u00e9\\""', 'null', '{"a" : {"b":[true,false]}}', '1E3'];

/** A random pop answer, and each message's payload text in order. */
function randomPop(seed: number): { pop: PopResult; texts: string[] } {
  const random = randomSource(seed);
  const partitions = Array.from({ length: random.below(4) }, () => ({ id: random.string(), name: random.string() }));
  const texts: string[] = [];
  const messages = Array.from({ length: random.below(7) }, (_, k) => {
    const text = random.pick(payloads);
    texts.push(text);
    const home = partitions.length > 0 && random.below(4) > 0 ? random.pick(partitions) : undefined;
    return {
      offset: k + random.below(1000),
      id: random.string(),
      transactionId: random.string(),
      traceId: random.below(2) === 0 ? null : random.string(),
      // Several messages of one push share a timestamp; the writer formats each run once.
      createdAt: random.pick([0, 1_764_459_000_123, 1_764_459_000_124, 8.64e15]),
      // A view into a larger buffer, as payloads sliced from a segment are.
      payload: Buffer.from(`xx${text}yy`).subarray(2, 2 + Buffer.byteLength(text)),
      partitionId: home?.id ?? random.string(),
      partition: home ? random.pick([home.name, random.string()]) : random.string(),
    };
  });
  return {
    pop: { queue: random.string(), group: random.string(), leaseId: random.string(), partitions, messages },
    texts,
  };
}

describe('unit: pop answers as JSON text', () => {
  it('writes the documented shape', () => {
    const pop: PopResult = {
      queue: 'orders',
      group: 'billing',
      leaseId: 'lease-1',
      partitions: [{ id: 'p-1', name: 'eu' }],
      messages: [
        {
          offset: 0,
          id: 'm-1',
          transactionId: 'tx-1',
          traceId: null,
          createdAt: Date.UTC(2026, 10, 1),
          payload: Buffer.from('{"order":1}'),
          partitionId: 'p-1',
          partition: 'eu',
        },
      ],
    };
    expect(popResultText(pop)).toBe(
      '{"success":true,"queue":"orders","partition":"eu","partitionId":"p-1","leaseId":"lease-1","consumerGroup":"billing","partitionsClaimed":1,' +
        '"messages":[{"id":"m-1","transactionId":"tx-1","traceId":null,"data":{"order":1},"producerSub":null,"createdAt":"2026-11-01T00:00:00.000Z",' +
        '"partitionId":"p-1","partition":"eu","leaseId":"lease-1","consumerGroup":"billing","queue":"orders","offset":0}]}',
    );
  });
  it('over 500 random pops: the generic writer’s text, JSON.stringify’s outside the payloads, parsing back to the value', () => {
    for (let seed = 0; seed < 500; seed++) {
      const { pop, texts } = randomPop(seed);
      const text = popResultText(pop);
      const shape = popResultJson(pop);
      expect(text).toBe(toJson(shape));
      const messages = shape.messages as Record<string, unknown>[];
      const withMarks = { ...shape, messages: messages.map((m, i) => ({ ...m, data: `@@splice-${i}@@` })) };
      expect(text).toBe(stringifyWithSplices(withMarks, texts));
      const parsed = {
        ...shape,
        messages: messages.map((m, i) => ({ ...m, data: JSON.parse(texts[i] as string) as unknown })),
      };
      expect(JSON.parse(text)).toEqual(parsed);
    }
  });
  it('answers a pop without partitions with null partition fields', () => {
    const text = popResultText({ queue: 'q', group: '__QUEUE_MODE__', leaseId: '', partitions: [], messages: [] });
    expect(JSON.parse(text)).toEqual({
      success: true,
      queue: 'q',
      partition: null,
      partitionId: null,
      leaseId: '',
      consumerGroup: '__QUEUE_MODE__',
      partitionsClaimed: 0,
      messages: [],
    });
  });
});
