// Cost ceilings (issue 16): small runs of the cost model's workloads on DynamoDB Local, checked
// against ceilings on requests, write units and dollars, so a change that adds a write per push
// or per pop fails here. Lambda duration is left out of the dollar checks (it is measured time,
// which varies); docs/DEPLOYING.md has the full figures from `npm run bench -- --only cost`.
// The ceilings are today's figures with a little room; lower them as the costs come down.
import { describe, expect, it } from 'vitest';
import { idleChannelConsumerPerMonth } from '../../bench/cost.js';
import { price, runWorkload, type Counted, type Workload } from '../../bench/cost-model.js';
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

describe('cost ceiling of an idle consumer on the notification channel', () => {
  it('costs at most $0.25 a month (safety polls, wait registrations, reconnects, connection minutes)', async () => {
    const idle = await idleChannelConsumerPerMonth(awsEndpoints());
    expect(idle.usd).toBeLessThanOrEqual(0.25);
    // The connection itself is the smallest part; a safety poll's requests are the rest.
    expect(idle.parts['connectionMinutes']).toBeLessThan(0.02);
    expect(idle.parts['pops']! + idle.parts['waits']!).toBeGreaterThan(idle.usd / 2);
  });
});
