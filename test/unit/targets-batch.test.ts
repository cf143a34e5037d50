import { describe, expect, it } from 'vitest';
import {
  RECORD_SEPARATOR_BYTES,
  cutClaimBatches,
  cutLeaseBatch,
  eventBytes,
  type CutLimits,
  type CutRecord,
} from '../../server/core/targets/index.js';
import { TARGET_EVENT_VERSION, TargetEvent } from '../../contract/targets.js';
import { randomSource } from './json-random.js';

const NOW = 1_800_000_000_000;
const MIN = 60_000;

/** Records from a compact spec: each is its size in bytes, `old` (5 minutes old) or `fresh`. */
const recs = (...spec: [bytes: number, age?: 'old' | 'fresh'][]): CutRecord[] =>
  spec.map(([bytes, age], offset) => ({ offset, bytes, createdAt: age === 'old' ? NOW - 5 * MIN : NOW - 1_000 }));
const limits = (over: Partial<CutLimits> = {}): CutLimits => ({
  batchSize: 100,
  maxEventBytes: 1_000,
  maxRecordAgeMs: MIN,
  ...over,
});

describe('targets: eventBytes is the exact size of JSON.stringify(event)', () => {
  const record = (offset: number, payload: unknown) => ({
    queue: 'orders',
    partition: 'p-ü',
    partitionId: '0190',
    offset,
    id: `id-${offset}`,
    transactionId: `tx-${offset}`,
    payload,
    createdAt: new Date(NOW).toISOString(),
    attempt: 1,
  });
  const payloads: unknown[][] = [[], [{ a: 1 }], [{ a: 'é✓\u2028"' }, null, [1, 2, 3]], ['x'.repeat(500), 42]];

  it.each(payloads.map((p) => [p.length, p] as const))('%i records', (_n, ps) => {
    const event = TargetEvent.parse({
      version: TARGET_EVENT_VERSION,
      queue: 'orders',
      group: 'billing',
      mode: 'leases',
      batchId: 'b-1',
      records: ps.map((p, i) => record(i, p)),
    });
    const envelope = Buffer.byteLength(JSON.stringify({ ...event, records: [] }));
    const sizes = event.records.map((r) => Buffer.byteLength(JSON.stringify(r)));
    expect(eventBytes(envelope, sizes)).toBe(Buffer.byteLength(JSON.stringify(event)));
  });

  it('counts one separator between records, none around one', () => {
    expect(RECORD_SEPARATOR_BYTES).toBe(1);
    expect(eventBytes(30, [])).toBe(30);
    expect(eventBytes(30, [10])).toBe(40);
    expect(eventBytes(30, [10, 10, 10])).toBe(62);
  });
});

describe('targets: cutting a lease batch (one partition, offset order)', () => {
  const cases: { name: string; records: CutRecord[]; limits: CutLimits; file: [number, string][]; send: number }[] = [
    { name: 'nothing to cut', records: [], limits: limits(), file: [], send: 0 },
    { name: 'all fit', records: recs([10], [10], [10]), limits: limits(), file: [], send: 3 },
    {
      name: 'cut at batchSize',
      records: recs([10], [10], [10], [10]),
      limits: limits({ batchSize: 3 }),
      file: [],
      send: 3,
    },
    // 10 + 1 + 10 + 1 + 10 = 32 bytes for three records.
    {
      name: 'bytes: exactly full',
      records: recs([10], [10], [10], [10]),
      limits: limits({ maxEventBytes: 32 }),
      file: [],
      send: 3,
    },
    {
      name: 'bytes: one short',
      records: recs([10], [10], [10], [10]),
      limits: limits({ maxEventBytes: 31 }),
      file: [],
      send: 2,
    },
    {
      name: 'bytes: the envelope counts',
      records: recs([10], [10], [10], [10]),
      limits: limits({ maxEventBytes: 32, envelopeBytes: 12 }),
      file: [],
      send: 1,
    },
    {
      name: 'a too-large head is filed, cutting goes on after it',
      records: recs([60], [10], [10]),
      limits: limits({ maxEventBytes: 50 }),
      file: [[0, 'too-large']],
      send: 2,
    },
    {
      name: 'a record too large with the envelope is too large',
      records: recs([45], [10]),
      limits: limits({ maxEventBytes: 50, envelopeBytes: 6 }),
      file: [[0, 'too-large']],
      send: 1,
    },
    {
      name: 'a record exactly the limit is sent alone',
      records: recs([50], [10]),
      limits: limits({ maxEventBytes: 50 }),
      file: [],
      send: 1,
    },
    {
      name: 'a too-large record past the head ends the event, unfiled',
      records: recs([10], [60], [10]),
      limits: limits({ maxEventBytes: 50 }),
      file: [],
      send: 1,
    },
    {
      name: 'expired head records are filed, in order',
      records: recs([10, 'old'], [10, 'old'], [10], [10]),
      limits: limits(),
      file: [
        [0, 'record-age'],
        [1, 'record-age'],
      ],
      send: 2,
    },
    {
      name: 'an expired record past the head ends the event, unfiled',
      records: recs([10], [10], [10, 'old'], [10]),
      limits: limits(),
      file: [],
      send: 2,
    },
    {
      name: 'expired and too-large heads, in any mix; age is named first',
      records: recs([10, 'old'], [60], [60, 'old'], [10], [10, 'old']),
      limits: limits({ maxEventBytes: 50 }),
      file: [
        [0, 'record-age'],
        [1, 'too-large'],
        [2, 'record-age'],
      ],
      send: 1,
    },
    {
      name: 'everything filed leaves nothing to send',
      records: recs([10, 'old'], [10, 'old']),
      limits: limits(),
      file: [
        [0, 'record-age'],
        [1, 'record-age'],
      ],
      send: 0,
    },
    {
      name: 'maxRecordAgeMs -1: no record is too old',
      records: [{ offset: 0, bytes: 10, createdAt: 0 }],
      limits: limits({ maxRecordAgeMs: -1 }),
      file: [],
      send: 1,
    },
    {
      name: 'a record exactly maxRecordAgeMs old is not expired',
      records: [
        { offset: 0, bytes: 10, createdAt: NOW - MIN },
        { offset: 1, bytes: 10, createdAt: NOW - MIN - 1 },
      ],
      limits: limits(),
      file: [],
      send: 1,
    },
  ];

  it.each(cases)('$name', ({ records, limits: l, file, send }) => {
    const cut = cutLeaseBatch(records, l, NOW);
    expect(cut.file.map((f) => [f.index, f.reason])).toEqual(file);
    expect(cut.send).toBe(send);
  });

  it('a record left past the head is filed once it heads the next cut', () => {
    const records = recs([10], [60], [10, 'old'], [10]);
    const l = limits({ maxEventBytes: 50 });
    expect(cutLeaseBatch(records, l, NOW)).toEqual({ file: [], send: 1 });
    expect(cutLeaseBatch(records.slice(1), l, NOW)).toEqual({
      file: [
        { index: 0, reason: 'too-large' },
        { index: 1, reason: 'record-age' },
      ],
      send: 1,
    });
  });

  it('holds its invariants on random partitions: head-only filing, a fitting prefix, ≥ 1 sent when any is left', () => {
    const rnd = randomSource(26);
    for (let round = 0; round < 500; round++) {
      const n = rnd.below(30);
      const records: CutRecord[] = Array.from({ length: n }, (_, offset) => ({
        offset,
        bytes: 1 + rnd.below(80),
        createdAt: NOW - rnd.below(2 * MIN),
      }));
      const l = limits({
        batchSize: 1 + rnd.below(10),
        maxEventBytes: 40 + rnd.below(200),
        envelopeBytes: rnd.below(30),
      });
      const { file, send } = cutLeaseBatch(records, l, NOW);
      expect(file.map((f) => f.index)).toEqual(file.map((_, i) => i));
      expect(file.length === n || send >= 1).toBe(true);
      const bytes = (rs: CutRecord[]) =>
        eventBytes(
          l.envelopeBytes ?? 0,
          rs.map((r) => r.bytes),
        );
      const sent = records.slice(file.length, file.length + send);
      expect(sent.length).toBeLessThanOrEqual(l.batchSize);
      expect(bytes(sent)).toBeLessThanOrEqual(l.maxEventBytes);
      expect(sent.every((r) => NOW - r.createdAt <= l.maxRecordAgeMs)).toBe(true);
      // The prefix is the longest: the next record would break a limit, or is unsendable.
      const next = records[file.length + send];
      const stops = (r: CutRecord) =>
        send === l.batchSize || bytes([...sent, r]) > l.maxEventBytes || NOW - r.createdAt > l.maxRecordAgeMs;
      expect(next === undefined || stops(next)).toBe(true);
    }
  });
});

describe('targets: cutting claim batches (any order)', () => {
  const cases: {
    name: string;
    records: CutRecord[];
    limits: CutLimits;
    file: [number, string][];
    batches: number[][];
  }[] = [
    { name: 'nothing to cut', records: [], limits: limits(), file: [], batches: [] },
    {
      name: 'packed at batchSize',
      records: recs([10], [10], [10], [10], [10]),
      limits: limits({ batchSize: 2 }),
      file: [],
      batches: [[0, 1], [2, 3], [4]],
    },
    {
      name: 'packed at bytes (32 holds three records of 10)',
      records: recs([10], [10], [10], [10], [20]),
      limits: limits({ maxEventBytes: 32 }),
      file: [],
      batches: [
        [0, 1, 2],
        [3, 4],
      ],
    },
    {
      name: 'expired and too-large records are filed wherever they are',
      records: recs([10], [10, 'old'], [60], [10], [10, 'old']),
      limits: limits({ maxEventBytes: 50 }),
      file: [
        [1, 'record-age'],
        [2, 'too-large'],
        [4, 'record-age'],
      ],
      batches: [[0, 3]],
    },
    {
      name: 'the envelope counts in every event',
      records: recs([10], [10], [10]),
      limits: limits({ maxEventBytes: 31, envelopeBytes: 10 }),
      file: [],
      batches: [[0, 1], [2]],
    },
  ];

  it.each(cases)('$name', ({ records, limits: l, file, batches }) => {
    const cut = cutClaimBatches(records, l, NOW);
    expect(cut.file.map((f) => [f.index, f.reason])).toEqual(file);
    expect(cut.batches).toEqual(batches);
  });

  it('places every record once, each event within its limits (random records)', () => {
    const rnd = randomSource(2600);
    for (let round = 0; round < 300; round++) {
      const n = rnd.below(40);
      const records: CutRecord[] = Array.from({ length: n }, (_, offset) => ({
        offset,
        bytes: 1 + rnd.below(80),
        createdAt: NOW - rnd.below(2 * MIN),
      }));
      const l = limits({
        batchSize: 1 + rnd.below(8),
        maxEventBytes: 40 + rnd.below(200),
        envelopeBytes: rnd.below(30),
      });
      const { file, batches } = cutClaimBatches(records, l, NOW);
      const placed = [...file.map((f) => f.index), ...batches.flat()].sort((a, b) => a - b);
      expect(placed).toEqual(records.map((_, i) => i));
      expect(batches.flat()).toEqual([...batches.flat()].sort((a, b) => a - b));
      for (const b of batches) {
        expect(b.length).toBeGreaterThanOrEqual(1);
        expect(b.length).toBeLessThanOrEqual(l.batchSize);
        expect(
          eventBytes(
            l.envelopeBytes ?? 0,
            b.map((i) => records[i]!.bytes),
          ),
        ).toBeLessThanOrEqual(l.maxEventBytes);
      }
      for (const f of file) {
        const r = records[f.index]!;
        expect(NOW - r.createdAt > l.maxRecordAgeMs || (l.envelopeBytes ?? 0) + r.bytes > l.maxEventBytes).toBe(true);
      }
    }
  });
});
