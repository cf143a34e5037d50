// Cost ceilings: small runs of the cost model's workloads on DynamoDB Local, checked against
// ceilings on requests, write units and dollars, so a change that adds a write per push or per pop
// fails here. Lambda duration is left out of the dollar checks (it is measured time, which varies);
// docs/DEPLOYING.md has the full figures from `npm run bench -- --only cost`. The ceilings are
// today's figures with a little room; lower them as the costs come down.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { meteredAwsStorage } from '../../bench/aws-meter.js';
import { idleChannelConsumerPerMonth } from '../../bench/cost.js';
import { price, runWorkload, type Counted, type Workload } from '../../bench/cost-model.js';
import { ackAll } from '../../bench/leases.js';
import { workRepairPerMonth } from '../../bench/work-repair-cost.js';
import { activityRollupCost } from '../../bench/activity-rollup-cost.js';
import { loadConfig } from '../../server/config.js';
import { PRODUCER_SLOTS } from '../../server/core/producer-sequence.js';
import { buildServices } from '../../server/service/runtime.js';
import { awsEndpoints } from '../support/aws-endpoints.js';

const run = (w: Omit<Workload, 'consumerBatch'>): Promise<Counted> =>
  runWorkload(awsEndpoints(), { consumerBatch: 1000, ...w });

/**
 * Dollars per million messages without Lambda duration (API requests, invocations, storage).
 * Log ingestion is left out as well: it has its own ceiling, on bytes per API call.
 */
const requestDollars = (c: Counted): number => {
  const p = price({ ...c, lambdaGbSeconds: 0 });
  return p.total - p.logs;
};

describe('cost ceilings on the AWS backend', () => {
  it('a single-message push on a queue with 3 lease groups: requests and bookkeeping units', async () => {
    const c = await run({ batch: 1, groups: 3, dedup: false, messages: 20 });
    // Per push: the sequencer take (1 unit, setting the has-work flag) and the segment as a plain
    // put; no index write, whatever the number of groups (the partition has work already).
    expect(c.bookkeepingWruPerPush).toBeLessThanOrEqual(1);
    // Two storage requests per push (take, put), plus the three groups' pops and acks spread
    // over these 20 pushes.
    expect(c.dynamoRequests / c.pushRequests).toBeLessThanOrEqual(3.2);
  });

  it('the push that finds a drained partition writes its has-work item; the consumer that drains it clears once', async () => {
    const { storage, meter } = await meteredAwsStorage(awsEndpoints());
    try {
      const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 3_600_000 });
      const pop = (group: string) =>
        svc.leasePops.pop({
          queue: 'flip',
          group,
          batch: 100,
          partitions: 1,
          autoAck: false,
          wait: false,
          timeoutMs: 0,
        });
      const drain = async (): Promise<void> => {
        for (const g of ['g0', 'g1', 'g2']) for (let r = await pop(g); r; r = await pop(g)) await ackAll(svc, r);
      };
      await svc.pushes.push([{ queue: 'flip', payload: Buffer.from('{}') }]);
      await drain(); // registers the groups and clears the partition's has-work item
      meter.reset();
      await svc.pushes.push([{ queue: 'flip', payload: Buffer.from('{}') }]);
      // Take (1) and, in one transaction, the segment and the has-work item (each doubled): the
      // segment's doubling and the item are bookkeeping. Once per drained-to-work turn.
      expect(meter.writeUnits - meter.segmentUnits).toBeLessThanOrEqual(4);
      meter.reset();
      await svc.pushes.push([{ queue: 'flip', payload: Buffer.from('{}') }]);
      expect(meter.writeUnits - meter.segmentUnits).toBeLessThanOrEqual(1);
      meter.reset();
      await drain();
      // The clear (sequencer written back, item deleted, group list checked) is one transaction
      // of three small items; the acks write one cursor row each per group.
      const clearUnits = [...meter.keyWriteUnits].reduce((n, [k, u]) => (k.startsWith('leases WORK#') ? n + u : n), 0);
      expect(clearUnits).toBeGreaterThan(0);
      expect(clearUnits).toBeLessThanOrEqual(2);
    } finally {
      await storage.close();
    }
  });

  it('log bytes per API call at batch 10 (EMF line and access log line; no platform lines at system level WARN)', async () => {
    const c = await run({ batch: 10, groups: 1, dedup: false, messages: 100 });
    // Measured 0.79 KB (docs/DEPLOYING.md): 0.46 KB of EMF, 0.33 KB of access log.
    expect(c.logBytes.json / c.apiRequests).toBeLessThanOrEqual(900);
    expect(c.notifierLogBytes.json).toBe(0);
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
    // Goal (docs/DEPLOYING.md, "Costs per million messages"): $0.01. A group adds no write per push
    // any more: what is left is its pops and acks, one request per 1,000 messages (the Lambda time
    // of those requests is in the bench).
    const perGroup = (requestDollars(three) - requestDollars(one)) / 2;
    expect(perGroup).toBeLessThanOrEqual(0.01);
  });
});

describe('idempotent producers on the AWS backend (docs/DELIVERY.md)', () => {
  it('a stamp adds no write unit to a batch-100 push, even with every slot held; a retry costs ≤ 0.02 units a message', async () => {
    const { storage, meter } = await meteredAwsStorage(awsEndpoints());
    try {
      const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 3_600_000 });
      const queue = 'stamps';
      let n = 0;
      // Incompressible 1 KiB payloads: every batch's segment is a blob whatever ids it carries
      // (stamped pushes derive their ids, which compress better and could fall under the inline size).
      const noise = (k: number): Buffer =>
        Buffer.concat(Array.from({ length: 16 }, (_, j) => createHash('sha512').update(`${k}.${j}`).digest()));
      const batch = () => Array.from({ length: 100 }, () => ({ queue, payload: noise(n++) }));
      await svc.pushes.push(batch());
      const units = async (p: () => Promise<unknown>): Promise<number> => {
        meter.reset();
        await p();
        return meter.writeUnits;
      };
      const plain = await units(() => svc.pushes.push(batch()));
      // 48-character producer ids in every slot (our client's are 15): the sequencer item, which
      // also holds the has-work flag, stays under 1 KB (8 ids of 64 characters pass it: 2 units).
      const id = (k: number) => `${'p'.repeat(44)}.${k.toString().padStart(3, '0')}`;
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

describe('cost ceiling of an idle consumer on the notification channel', () => {
  it('costs at most $0.25 a month (safety polls, wait registrations, reconnects, connection minutes)', async () => {
    const idle = await idleChannelConsumerPerMonth(awsEndpoints());
    expect(idle.usd).toBeLessThanOrEqual(0.25);
    // The connection itself is the smallest part; a safety poll's requests are the rest.
    expect(idle.parts['connectionMinutes']).toBeLessThan(0.02);
    expect(idle.parts['pops']! + idle.parts['waits']!).toBeGreaterThan(idle.usd / 2);
  });
});

describe('cost ceiling of the work-index repair pass (maintenance)', () => {
  it('reads about one unit per idle partition and two per partition with work', async () => {
    const c = await workRepairPerMonth(awsEndpoints());
    // Per 1,000 partitions a pass: the sequencers (1,000), the partition names and the pass's own bookkeeping.
    expect(c.idle.readUnits).toBeLessThanOrEqual(1_100);
    expect(c.busy.readUnits).toBeLessThanOrEqual(2_100);
    expect(c.idle.requests).toBeLessThanOrEqual(60);
    expect(c.idle.usdPerMonth).toBeLessThanOrEqual(0.45);
  });
});

describe('cost ceiling of the activity roll-up (maintenance) and of the series it serves', () => {
  it('a pass reads each raw item once and writes roll-ups whatever the processes; a 24-hour /status reads ~100 items', async () => {
    const c = await activityRollupCost(awsEndpoints());
    // 100 busy processes' 15 minutes (1,500 raw items of 10 queues, ~0.23 units each), in a few requests.
    expect(c.pass.readUnits).toBeLessThanOrEqual(400);
    // The interval's 15 minute roll-ups and its blocks, twice inside transactions (measured 78).
    expect(c.pass.writeUnits).toBeLessThanOrEqual(100);
    expect(c.pass.requests).toBeLessThanOrEqual(10);
    // 96 buckets: one block each, the watermark and the partly rolled last bucket's few.
    expect(c.status.rolledItems).toBeLessThanOrEqual(110);
    expect(c.status.rolledReadUnits).toBeLessThanOrEqual(40);
    expect(c.statusUsd.rolled * 50).toBeLessThan(c.statusUsd.raw);
  });
});
