/**
 * What the work-index repair pass (server/service/maintenance/work-repair.ts) costs a month, per
 * 1,000 partitions, at the default maintenance interval: one pass over {@link PARTITIONS}
 * partitions of one queue on the AWS backend (DynamoDB Local), metered like the cost rows, once
 * with every partition idle (drained and cleared: the sequencer is read, nothing else) and once
 * with every partition holding work (its queue record and work item are read too), scaled to
 * 1,000 partitions and to a month of passes. A repair itself (a partition found hidden) is a
 * few requests once per crash and is priced on its own.
 *
 * @example
 * ```ts
 * const { idleUsd, busyUsd, note } = await workRepairPerMonth(endpoints);
 * ```
 */
import { loadConfig } from '../server/config.js';
import { leaseKeys } from '../server/service/leases/lease-store.js';
import { WORK_FLAG } from '../server/service/leases/work-index.js';
import { logKeys } from '../server/service/log/log-store.js';
import { buildServices } from '../server/service/runtime.js';
import type { AwsEndpoints } from '../test/support/aws-emulator.js';
import { meteredAwsStorage } from './aws-meter.js';
import { PRICES, ROUND_TRIP_MS, measureCall } from './cost-model.js';

/** Partitions the pass is measured over: enough for full pages, few enough to set up in seconds. */
const PARTITIONS = 100;
/** The maintenance schedule's default (lib/service/functions.ts): one pass, and one sweep, per interval. */
const INTERVAL_MIN = 15;
/** Passes in a 30-day month. */
const PASSES_PER_MONTH = (30 * 24 * 60) / INTERVAL_MIN;
/** The maintenance function's default memory (lib/service/functions.ts), in GB. */
const MAINTENANCE_GB = 0.5;

/** A pass's measured cost, per 1,000 partitions per month. */
interface PassCost {
  readUnits: number;
  requests: number;
  ms: number;
  usdPerMonth: number;
}

export interface WorkRepairCost {
  idle: PassCost;
  busy: PassCost;
  note: string;
}

/**
 * Measures the pass (see the module doc).
 *
 * @example
 * ```ts
 * const cost = await workRepairPerMonth(emulator.endpoints);
 * ```
 */
export async function workRepairPerMonth(endpoints: AwsEndpoints): Promise<WorkRepairCost> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  try {
    const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 3_600_000 });
    const queue = 'repair-cost';
    await svc.pushes.push(
      Array.from({ length: PARTITIONS }, (_, i) => ({ queue, partition: `p${i}`, payload: Buffer.from('{}') })),
    );
    const scale = 1000 / PARTITIONS;
    const perMonth = (c: { ms: number; readUnits: number; writeUnits: number }, requests: number): PassCost => {
      const units = c.readUnits * scale;
      const gbSeconds = ((c.ms * scale) / 1000) * MAINTENANCE_GB;
      return {
        readUnits: units,
        requests: requests * scale,
        ms: c.ms * scale,
        usdPerMonth:
          (PASSES_PER_MONTH * (units * PRICES.readUnitPerMillion + c.writeUnits * scale * PRICES.writeUnitPerMillion)) /
            1e6 +
          PASSES_PER_MONTH * gbSeconds * PRICES.lambdaPerGbSecond,
      };
    };
    // Every partition holds work: the sequencers, the queue record and the work items are read.
    const busy = await measureCall(meter, () => svc.workRepair.run(svc.clock()));
    if (busy.out.repaired !== 0 || busy.out.partitions !== PARTITIONS) throw new Error('repair cost: unexpected pass');
    const busyRequests = meter.dynamoRequests();
    // Idle: what a drained partition's clear leaves (flag unset, no item), set by hand for speed.
    const q = (await svc.queues.getQueue(queue))!;
    const parts = await svc.queues.listPartitions(queue);
    const seqs = await storage.items.getMany(
      'log',
      parts.map((p) => logKeys.sequencer(p.id)),
    );
    await storage.items.writeEach([
      ...seqs.map((seq) => ({
        op: 'put' as const,
        table: 'log' as const,
        item: { ...seq!, attrs: { ...seq!.attrs, [WORK_FLAG]: false } },
      })),
      ...parts.map((p) => ({ op: 'delete' as const, table: 'leases' as const, key: leaseKeys.work(q.queueId, p.id) })),
    ]);
    const idle = await measureCall(meter, () => svc.workRepair.run(svc.clock()));
    const idleRequests = meter.dynamoRequests();
    // A repair: one partition hidden (flag set, no item), the pass's units beyond the idle pass's.
    const p0 = (await svc.queues.getPartition(queue, 'p0'))!;
    const seq0 = (await storage.items.get('log', logKeys.sequencer(p0.id)))!;
    await storage.items.put('log', { ...seq0, attrs: { ...seq0.attrs, [WORK_FLAG]: true } });
    const repaired = await measureCall(meter, () => svc.workRepair.run(svc.clock()));
    if (repaired.out.repaired !== 1) throw new Error('repair cost: the hidden partition was not repaired');
    const repairUnits = {
      readUnits: repaired.readUnits - idle.readUnits,
      writeUnits: repaired.writeUnits - idle.writeUnits,
    };
    const costs = { idle: perMonth(idle, idleRequests), busy: perMonth(busy, busyRequests) };
    const usd = (n: number): string => `$${n.toFixed(2)}`;
    return {
      ...costs,
      note:
        `per 1,000 partitions, one pass every ${INTERVAL_MIN} minutes (${PASSES_PER_MONTH.toLocaleString('en-US')} a month): ` +
        `${usd(costs.idle.usdPerMonth)} a month when they are idle (${Math.round(costs.idle.readUnits)} read units and ` +
        `${Math.round(costs.idle.requests)} requests a pass: each sequencer, 100 to a \`BatchGetItem\`, and the partition ` +
        `names, 100 to a query), ${usd(costs.busy.usdPerMonth)} when every one holds work (${Math.round(costs.busy.readUnits)} ` +
        `read units: their work items and queue record too), Lambda time included (${Math.round(costs.busy.ms)} ms a pass ` +
        `at most, at ${ROUND_TRIP_MS.dynamodb} ms a request, ${MAINTENANCE_GB * 1024} MB); a repair (a partition found ` +
        `hidden) adds ${repairUnits.readUnits} read and ${repairUnits.writeUnits} write units once`,
    };
  } finally {
    await storage.close();
  }
}
