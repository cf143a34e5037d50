// Cost ceilings (issue 16): small runs of the cost model's workloads on DynamoDB Local, checked
// against ceilings on requests, write units and dollars, so a change that adds a write per push
// or per pop fails here. Lambda duration is left out of the dollar checks (it is measured time,
// which varies); docs/DEPLOYING.md has the full figures from `npm run bench -- --only cost`.
// The ceilings are today's figures with a little room; lower them as the costs come down.
import { describe, expect, it } from 'vitest';
import { meteredAwsStorage } from '../../bench/aws-meter.js';
import { price, runWorkload, type Counted, type Workload } from '../../bench/cost-model.js';
import { oneKiBPayload } from '../../bench/push.js';
import { loadConfig } from '../../lambdas/config.js';
import { PRODUCER_SLOTS } from '../../lambdas/core/producer-sequence.js';
import { buildServices } from '../../lambdas/service/runtime.js';
import { awsEndpoints } from '../support/aws-endpoints.js';

const run = (w: Omit<Workload, 'consumerBatch'>): Promise<Counted> =>
  runWorkload(awsEndpoints(), { consumerBatch: 1000, ...w });

/** Dollars per million messages without Lambda duration (API requests, invocations, storage). */
const requestDollars = (c: Counted): number => {
  const p = price({ ...c, lambdaGbSeconds: 0 });
  return p.total;
};

describe('cost ceilings on the AWS backend', () => {
  it('a single-message push on a queue with 3 lease groups: requests and bookkeeping units', async () => {
    const c = await run({ batch: 1, groups: 3, dedup: false, messages: 20 });
    // Per push: the sequencer take, and one transaction with the segment, the group-list
    // check and a READY mark per lease group (each doubled). Goal: 1 unit beyond the segment.
    expect(c.bookkeepingWruPerPush).toBeLessThanOrEqual(10);
    // Two storage requests per push (take, transaction), plus the three groups' pops and acks
    // spread over these 20 pushes.
    expect(c.dynamoRequests / c.pushRequests).toBeLessThanOrEqual(3.2);
  });

  it('batch 100, one group: dollars per million and units per 1,000 messages', async () => {
    const c = await run({ batch: 100, groups: 1, dedup: false, messages: 1000 });
    expect((c.writeUnits / c.messages) * 1000).toBeLessThanOrEqual(110);
    expect(c.s3Puts / c.pushRequests).toBeLessThanOrEqual(1);
    expect(requestDollars(c)).toBeLessThanOrEqual(0.14);
  });

  it('each further lease group at batch 100, consumers popping 1,000: dollars per million', async () => {
    const one = await run({ batch: 100, groups: 1, dedup: false, messages: 1000 });
    const three = await run({ batch: 100, groups: 3, dedup: false, messages: 1000 });
    // Goal: $0.01. Today a READY mark per group on every push (2 units in the transaction) and
    // the group's pops and acks.
    expect((requestDollars(three) - requestDollars(one)) / 2).toBeLessThanOrEqual(0.025);
  });
});

describe('idempotent producers on the AWS backend (docs/DELIVERY.md)', () => {
  it('a stamp adds no write unit to a batch-100 push, even with every slot held; a retry costs ≤ 0.02 units a message', async () => {
    const { storage, meter } = await meteredAwsStorage(awsEndpoints());
    try {
      const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 3_600_000 });
      const queue = 'stamps';
      let n = 0;
      const batch = () => Array.from({ length: 100 }, () => ({ queue, payload: Buffer.from(oneKiBPayload(n++)) }));
      await svc.pushes.push(batch());
      const units = async (p: () => Promise<unknown>): Promise<number> => {
        meter.reset();
        await p();
        return meter.writeUnits;
      };
      const plain = await units(() => svc.pushes.push(batch()));
      // The longest producer ids there are, in every slot: the sequencer item stays under 1 KB.
      const id = (k: number) => `${'p'.repeat(60)}.${k.toString().padStart(3, '0')}`;
      for (let k = 0; k < PRODUCER_SLOTS + 2; k++) {
        const stamped = await units(() =>
          svc.pushes.push(batch(), { stamp: { producerId: id(k), sequence: Number.MAX_SAFE_INTEGER - 1 } }),
        );
        expect(stamped).toBe(plain);
      }
      const stamp = { producerId: id(99), sequence: 5 };
      n = 0;
      const first = await svc.pushes.push(batch(), { stamp });
      n = 0;
      meter.reset();
      const again = await svc.pushes.push(batch(), { stamp });
      expect(again.map((r) => r.offset)).toEqual(first.map((r) => r.offset));
      // Its segment is a blob: the retry reads the sequencer before uploading, and writes nothing.
      expect(meter.writeUnits / 100).toBeLessThanOrEqual(0.02);
      expect([meter.s3Puts, meter.writeUnits]).toEqual([0, 0]);
      // A small (inline) push's retry: one refused take, billed as one write unit; nothing else.
      const small = [{ queue, payload: Buffer.from('{"n":1}') }];
      const smallStamp = { producerId: id(98), sequence: 0 };
      await svc.pushes.push(small, { stamp: smallStamp });
      meter.reset();
      await svc.pushes.push(small, { stamp: smallStamp });
      expect([meter.writeUnits, meter.failedWrites, meter.s3Puts]).toEqual([1, 1, 0]);
    } finally {
      await storage.close();
    }
  });
});
