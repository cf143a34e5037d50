/**
 * `npm run bench -- --only namespace`: what a pop by namespace costs on the AWS backend as the
 * number of idle queues it matches grows (docs/LEASES.md, "Pops by namespace and task").
 * DynamoDB Local, requests and units counted by the SDK middleware (`aws-meter.ts`); the
 * services' clock is moved by hand past the configures' settling, as a deployment's would be.
 */
import { loadConfig } from '../server/config.js';
import { PRICES } from '../server/core/prices.js';
import { QUEUE_MODE_GROUP } from '../server/core/names.js';
import { QueueOptionsInput, resolveQueueOptions } from '../server/core/queue-options.js';
import type { MatchingPopRequest } from '../server/service/leases/namespace-pop.js';
import { buildServices } from '../server/service/runtime.js';
import { startAwsEmulators } from '../test/support/aws-emulator.js';
import { meteredAwsStorage, type AwsMeter } from './aws-meter.js';

/** Idle queues ranked ahead of the one with work, per row. */
const IDLE = [10, 100, 1000];
/** Pops averaged per figure. */
const POPS = 5;

interface Row {
  idle: number;
  prepare: { pops: number; requests: number };
  withWork: Measured;
  empty: Measured;
}
interface Measured {
  requests: number;
  readUnits: number;
  writeUnits: number;
}

async function measure(meter: AwsMeter, n: number, call: () => Promise<unknown>): Promise<Measured> {
  meter.reset();
  for (let i = 0; i < n; i++) await call();
  return {
    requests: meter.dynamoRequests() / n,
    readUnits: meter.readUnits / n,
    writeUnits: meter.writeUnits / n,
  };
}

async function row(endpoints: Parameters<typeof meteredAwsStorage>[0], idle: number): Promise<Row> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  let now = Date.now();
  const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 1000 }, { clock: () => now });
  const ns = `bench${idle}`;
  const options = resolveQueueOptions(QueueOptionsInput.parse({ priority: 5 }));
  for (let k = 0; k < idle; k += 25)
    await Promise.all(
      Array.from({ length: Math.min(25, idle - k) }, (_, j) =>
        svc.queues.configure({ queue: `${ns}-idle-${k + j}`, namespace: ns, options }),
      ),
    );
  await svc.queues.configure({
    queue: `${ns}-work`,
    namespace: ns,
    options: resolveQueueOptions(QueueOptionsInput.parse({ priority: 1 })),
  });
  const total = 2 + Math.ceil((idle + 1) / 16) + 2 * POPS;
  await svc.pushes.push(
    Array.from({ length: total }, (_, i) => ({ queue: `${ns}-work`, payload: Buffer.from(`${i}`) })),
  );
  now += 60_000; // past the settling of every configure
  const req: MatchingPopRequest = {
    namespace: ns,
    group: QUEUE_MODE_GROUP,
    batch: 1,
    partitions: 1,
    autoAck: true,
    wait: false,
    timeoutMs: 0,
    allowed: () => true,
  };
  const pop = () => svc.matchingPops.answer(req);
  // The group's first pops prepare it on every matching queue (once).
  meter.reset();
  let prepPops = 0;
  let prepRequests = 0;
  for (;;) {
    meter.reset();
    await pop();
    prepPops++;
    const r = meter.dynamoRequests();
    prepRequests += r;
    if (r <= 8 || prepPops > 200) break;
  }
  const withWork = await measure(meter, POPS, pop);
  // Drain, then let the empty pops clear the work item and the selector item.
  while ((await pop()).result) {
    /* drain */
  }
  for (let i = 0; i < 3; i++) await pop();
  const empty = await measure(meter, POPS, pop);
  return { idle, prepare: { pops: prepPops, requests: prepRequests }, withWork, empty };
}

/** Dollars per million such pops: units at their price (per million units, so per million pops). */
const perMillion = (m: Measured): number =>
  m.writeUnits * PRICES.writeUnitPerMillion + m.readUnits * PRICES.readUnitPerMillion;

export async function namespaceBench(): Promise<string> {
  const emulator = await startAwsEmulators();
  try {
    const rows: Row[] = [];
    for (const idle of IDLE) rows.push(await row(emulator.endpoints, idle));
    const f = (x: number, d = 1): string => x.toFixed(d);
    return [
      '## Pops by namespace: cost against idle queues',
      '',
      'Command: `npm run bench -- --only namespace`.',
      '',
      'One namespace of `idle` empty queues (priority 5) and one with work (priority 1), on the AWS backend ' +
        '(DynamoDB Local), a pop of one message by namespace at a time; DynamoDB requests and units per pop, ' +
        'and what those units cost per million pops (API Gateway and Lambda are those of any pop). ' +
        '"Prepare" is the group’s first pops by the namespace, which register it on every matching queue (once per ' +
        'group, 16 queues a pop). "Empty" is a pop when no queue has work.',
      '',
      '| idle queues | prepare (once): pops, requests | pop with work: requests | read / write units | $ per M pops (DynamoDB) | empty pop: requests | read / write units | $ per M empty pops (DynamoDB) |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.idle} | ${r.prepare.pops}, ${r.prepare.requests} | ${f(r.withWork.requests)} | ` +
          `${f(r.withWork.readUnits)} / ${f(r.withWork.writeUnits)} | $${f(perMillion(r.withWork), 2)} | ` +
          `${f(r.empty.requests)} | ${f(r.empty.readUnits)} / ${f(r.empty.writeUnits)} | $${f(perMillion(r.empty), 3)} |`,
      ),
    ].join('\n');
  } finally {
    await emulator.stop();
  }
}
