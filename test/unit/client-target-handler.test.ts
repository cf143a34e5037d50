import { describe, expect, it } from 'vitest';
import { processTargetEvent, type TargetRecordOf } from '../../client/target-handler.js';
import type { TargetEvent } from '../../client/wire.js';

const event = (mode: 'leases' | 'claims', n: number): TargetEvent => ({
  version: 'sluice.target.v1',
  queue: 'orders',
  group: 'billing',
  mode,
  batchId: 'b1',
  records: Array.from({ length: n }, (_, i) => ({
    queue: 'orders',
    partition: 'Default',
    partitionId: 'p',
    offset: i,
    id: `id-${i}`,
    transactionId: `t-${i}`,
    payload: { n: i },
    createdAt: '2026-12-04T10:00:00.000Z',
    attempt: 1,
  })),
});

describe('processTargetEvent', () => {
  it('leases: runs records in order and stops at the first failure, naming it and every record after it', async () => {
    const seen: number[] = [];
    const r = await processTargetEvent<{ n: number }>(event('leases', 5), (rec) => {
      seen.push(rec.payload.n);
      if (rec.payload.n === 2) throw new Error('card declined');
    });
    expect(seen).toEqual([0, 1, 2]);
    expect(r.batchItemFailures).toEqual([
      { itemIdentifier: 't-2', error: 'card declined' },
      { itemIdentifier: 't-3', error: 'card declined' },
      { itemIdentifier: 't-4', error: 'card declined' },
    ]);
  });

  it('leases: all succeed → no failures', async () => {
    expect(await processTargetEvent(event('leases', 3), () => undefined)).toEqual({ batchItemFailures: [] });
  });

  it('claims: runs every record, up to the concurrency at once, and names only the failed ones', async () => {
    let running = 0;
    let peak = 0;
    const handle = async (rec: TargetRecordOf<{ n: number }>): Promise<void> => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      if (rec.payload.n % 3 === 0) throw new Error(`bad ${rec.payload.n}`);
    };
    const r = await processTargetEvent(event('claims', 10), handle, { concurrency: 3 });
    expect(peak).toBe(3);
    expect(r.batchItemFailures).toEqual([0, 3, 6, 9].map((n) => ({ itemIdentifier: `t-${n}`, error: `bad ${n}` })));
  });
});
