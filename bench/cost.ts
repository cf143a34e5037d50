/**
 * `npm run bench -- --only cost`: the cost table of docs/DEPLOYING.md and docs/cost.json, from
 * the workloads of bench/cost-model.ts run on the AWS backend (DynamoDB Local + moto S3).
 */
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../lambdas/config.js';
import { buildServices } from '../lambdas/service/runtime.js';
import { startAwsEmulators, type AwsEndpoints } from '../test/support/aws-emulator.js';
import { meteredAwsStorage } from './aws-meter.js';
import {
  LAMBDA_GB,
  PRICES,
  ROUND_TRIP_MS,
  price,
  runWorkload,
  sqsPerMillion,
  type Counted,
  type Workload,
} from './cost-model.js';

interface Row extends Workload {
  /** The goal in dollars per million messages (issue 16), when there is one. */
  goal?: number;
}

const ROWS: Row[] = [
  { batch: 1, groups: 1, dedup: false, consumerBatch: 1000, messages: 400 },
  { batch: 1, groups: 1, dedup: true, consumerBatch: 1000, messages: 400 },
  { batch: 10, groups: 1, dedup: false, consumerBatch: 1000, messages: 2000, goal: 0.45 },
  { batch: 10, groups: 3, dedup: false, consumerBatch: 1000, messages: 2000, goal: 0.55 },
  { batch: 100, groups: 1, dedup: false, consumerBatch: 1000, messages: 5000, goal: 0.09 },
  { batch: 100, groups: 1, dedup: true, consumerBatch: 1000, messages: 5000 },
  { batch: 100, groups: 3, dedup: false, consumerBatch: 1000, messages: 5000, goal: 0.12 },
  { batch: 100, groups: 10, dedup: false, consumerBatch: 1000, messages: 5000, goal: 0.2 },
  { batch: 1000, groups: 3, dedup: false, consumerBatch: 1000, messages: 10000, goal: 0.04 },
  { batch: 100, groups: 1, dedup: false, incompressible: true, consumerBatch: 1000, messages: 5000 },
];

/** The idle-consumer goal, dollars per month. */
const IDLE_GOAL = 0.25;

const usd = (n: number): string => `$${n < 0.1 ? n.toFixed(3) : n.toFixed(2)}`;

/**
 * A consumer that long-polls all month and never gets a message: back-to-back waits of
 * `maxPopWaitMs`, each billed for its whole wait, plus the wait slot's writes (measured).
 */
async function idleConsumerPerMonth(endpoints: AwsEndpoints): Promise<{ usd: number; waits: number; note: string }> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  try {
    const config = { ...loadConfig({}), queueCacheMs: 3_600_000, maxWaiters: 100 };
    const svc = buildServices(storage, config);
    await svc.pushes.push([{ queue: 'idle', payload: Buffer.from('{}') }]);
    const req = {
      queue: 'idle',
      partition: 'Default',
      group: 'g',
      batch: 1000,
      partitions: 1,
      autoAck: true,
      wait: true,
      timeoutMs: 300,
    } as const;
    await svc.leasePops.pop(req); // registers the group, takes the one message
    meter.reset();
    await svc.leasePops.pop(req);
    const waitS = config.maxPopWaitMs / 1000;
    const waits = (30 * 86_400) / waitS;
    const perWait =
      (PRICES.apiGatewayPerMillion + PRICES.lambdaPerMillion) / 1e6 +
      waitS * LAMBDA_GB * PRICES.lambdaPerGbSecond +
      (meter.writeUnits * PRICES.writeUnitPerMillion + meter.readUnits * PRICES.readUnitPerMillion) / 1e6;
    return {
      usd: waits * perWait,
      waits,
      note:
        `${Math.round(waits).toLocaleString('en-US')} waits of ${waitS} s, each one request and ` +
        `${waitS} s of a ${LAMBDA_GB} GB function, plus ${meter.writeUnits} write and ${meter.readUnits} read units for its wait slot`,
    };
  } finally {
    await storage.close();
  }
}

export interface CostFigures {
  rows: { row: Row; counted: Counted; usdPerMillion: number; sqsUsdPerMillion: number }[];
  idleConsumerUsdPerMonth: number;
}

/** Runs every row (see ROWS) and the idle consumer. */
export async function costFigures(endpoints: AwsEndpoints): Promise<CostFigures & { idleNote: string }> {
  const rows: CostFigures['rows'] = [];
  for (const row of ROWS) {
    const counted = await runWorkload(endpoints, row);
    rows.push({
      row,
      counted,
      usdPerMillion: price(counted).total,
      sqsUsdPerMillion: sqsPerMillion(row.batch, row.groups),
    });
  }
  const idle = await idleConsumerPerMonth(endpoints);
  return { rows, idleConsumerUsdPerMonth: idle.usd, idleNote: idle.note };
}

/** The section for docs/DEPLOYING.md; also writes docs/cost.json. */
export async function costBench(): Promise<string> {
  const emulator = await startAwsEmulators();
  let figures: Awaited<ReturnType<typeof costFigures>>;
  try {
    figures = await costFigures(emulator.endpoints);
  } finally {
    await emulator.stop();
  }
  writeFileSync(
    'docs/cost.json',
    `${JSON.stringify(
      [
        ...figures.rows.map(({ row, usdPerMillion, sqsUsdPerMillion }) => ({
          batch: row.batch,
          groups: row.groups,
          dedup: row.dedup,
          ...(row.incompressible ? { incompressible: true } : {}),
          consumerBatch: row.consumerBatch,
          usdPerMillion: Number(usdPerMillion.toFixed(4)),
          sqsUsdPerMillion: Number(sqsUsdPerMillion.toFixed(4)),
        })),
        { idleConsumerUsdPerMonth: Number(figures.idleConsumerUsdPerMonth.toFixed(2)) },
      ],
      null,
      2,
    )}\n`,
  );
  const lines = figures.rows.map(({ row, counted, usdPerMillion, sqsUsdPerMillion }) => {
    const p = price(counted);
    const perM = 1e6 / counted.messages;
    const met =
      row.goal === undefined ? '' : usdPerMillion <= row.goal ? ' ✓' : ` ✗ (${(usdPerMillion / row.goal).toFixed(1)}×)`;
    return (
      `| ${row.batch} | ${row.groups} | ${row.dedup ? 'on' : 'off'}${row.incompressible ? ', incompressible' : ''} | ` +
      `${row.consumerBatch} | ${Math.round(counted.apiRequests * perM).toLocaleString('en-US')} | ` +
      `${((counted.writeUnits / counted.messages) * 1000).toFixed(0)} | ${counted.bookkeepingWruPerPush.toFixed(2)} | ` +
      `${usd(p.api)} | ${usd(p.lambda)} | ${usd(p.dynamodb)} | ${usd(p.s3)} | **${usd(usdPerMillion)}** | ` +
      `${usd(sqsUsdPerMillion)} | ${row.goal === undefined ? '' : `≤ ${usd(row.goal)}${met}`} |`
    );
  });
  const idle = figures.idleConsumerUsdPerMonth;
  return [
    '## Costs per million messages',
    '',
    'Command: `npm run bench -- --only cost` (also writes `docs/cost.json`). Generated, so it only ever holds measured figures.',
    '',
    "Each row pushes 1 KiB messages (the bench's JSON, which zstd compresses about 5×, or random " +
      'bytes where it says incompressible) in batches of `batch` into one partition, then each of ' +
      '`G` lease groups pops up to 1,000 per request, each batch acked in the request that pops the next (`ack-and-pop`, as our client does), all through ' +
      "the services the API's Lambda handlers call, on the AWS backend (DynamoDB Local and moto " +
      'S3) from a warm instance. Storage requests, write and read units and S3 operations are ' +
      'counted by an SDK middleware (`bench/aws-meter.ts`: units as DynamoDB bills them, 1 KB per ' +
      'written item and twice inside a transaction, failed conditions included). **Lambda ' +
      'duration** is measured per call: the CPU time the call took in this process plus the round ' +
      `trips it waited for, at ${ROUND_TRIP_MS.dynamodb} ms per DynamoDB request, ` +
      `${ROUND_TRIP_MS.dynamodbTransaction} ms per transaction, ${ROUND_TRIP_MS.s3Put} ms per S3 PUT and ` +
      `${ROUND_TRIP_MS.s3Get} ms per GET (typical same-region figures; the emulators here are slower), ` +
      `rounded up to the millisecond, at ${LAMBDA_GB} GB arm64. Prices: us-east-1 list prices ` +
      '(API Gateway HTTP $1.00 per million requests, Lambda $0.20 per million plus $0.0000133334 ' +
      'per GB-s, DynamoDB $0.625 per million write and $0.125 per million read units, S3 PUT $5 ' +
      'and GET $0.40 per million). SQS: one queue (send in batches of up to 10, receive 10, ' +
      'delete 10); SNS + SQS for more than one group (publish batches of up to 10, a queue per ' +
      'group). "Bookkeeping" is write units per push beyond the segment\'s own ⌈KB⌉ and the ' +
      "dedup reservations (sequencer, markers, group indexes, a transaction's doubling, failed " +
      'conditional writes).',
    '',
    '| producer batch | G | dedup | consumer batch | API requests per million | write units per 1,000 msgs | bookkeeping units per push | API Gateway | Lambda | DynamoDB | S3 | **Sluice** | SQS / SNS+SQS | goal |',
    '|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...lines,
    '',
    `**An idle consumer** costs ${usd(idle)} a month (goal ≤ ${usd(IDLE_GOAL)}${idle <= IDLE_GOAL ? ' ✓' : `: ✗, ${Math.round(idle / IDLE_GOAL)}×`}): ${figures.idleNote}. ` +
      'SQS long polling costs about $0.05 a month (one request per 20 s).',
  ].join('\n');
}
