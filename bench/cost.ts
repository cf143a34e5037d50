/**
 * `npm run bench -- --only cost`: the cost table of docs/DEPLOYING.md and docs/cost.json, from
 * the workloads of bench/cost-model.ts run on the AWS backend (DynamoDB Local + moto S3).
 */
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../lambdas/config.js';
import { buildServices } from '../lambdas/service/runtime.js';
import { startAwsEmulators, type AwsEndpoints } from '../test/support/aws-emulator.js';
import { meteredAwsStorage } from './aws-meter.js';
import { workRepairPerMonth, type WorkRepairCost } from './work-repair-cost.js';
import { DEFAULT_SAFETY_POLL_MS } from '../client/wake-channel.js';
import { CONNECTION_MAX_MS } from '../lambdas/core/notifications.js';
import {
  LAMBDA_GB,
  NOTIFIER_GB,
  PRICES,
  ROUND_TRIP_MS,
  measureCall,
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
  { batch: 100, groups: 1, dedup: false, stamps: 'retried', consumerBatch: 1000, messages: 5000 },
];

/** The idle-consumer goal, dollars per month. */
const IDLE_GOAL = 0.25;

const usd = (n: number): string => `$${n < 0.1 ? n.toFixed(3) : n.toFixed(2)}`;

const MONTH_S = 30 * 86_400;

/**
 * Our client's consumer on AWS that gets no message all month: it sleeps on the notification
 * channel (docs/DEPLOYING.md, "Idle consumers"). Every safety poll it pops with `wait=false`,
 * registers a wait over the WebSocket (a message each way and an invocation of the
 * notifications function), and pops once more; every 2 hours API Gateway closes the connection
 * and it takes a ticket and connects again. Each call is measured as the cost rows are (CPU
 * time plus round trips, units counted); no push means no notifier invocation.
 */
export async function idleChannelConsumerPerMonth(
  endpoints: AwsEndpoints,
): Promise<{ usd: number; note: string; parts: Record<string, number> }> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  try {
    const config = { ...loadConfig({}), queueCacheMs: 3_600_000, notifyUrl: 'wss://notify.example/live' };
    const svc = buildServices(storage, config, {
      poster: () => Promise.resolve({ post: () => Promise.resolve('sent' as const) }),
    });
    await svc.pushes.push([{ queue: 'idle', payload: Buffer.from('{}') }]);
    const req = idlePop(false, 0);
    await svc.leasePops.pop(req); // registers the group, takes the one message
    await svc.leasePops.pop(req);
    const pop = await measureCall(meter, () => svc.leasePops.pop(req));
    const ticket = await measureCall(meter, () => svc.notifications.issueTicket('consumer', ['idle']));
    if (!ticket.out.available) throw new Error('cost: expected a notification channel');
    const id = ticket.out.ticket;
    const connect = await measureCall(meter, () => svc.notifications.connect('conn-1', id));
    const wait = await measureCall(meter, () => svc.notifications.registerWait('conn-1', 'idle'));
    const disconnect = await measureCall(meter, () => svc.notifications.disconnect('conn-1'));

    const units = (c: { writeUnits: number; readUnits: number }): number =>
      (c.writeUnits * PRICES.writeUnitPerMillion + c.readUnits * PRICES.readUnitPerMillion) / 1e6;
    const apiCall = (c: { ms: number; writeUnits: number; readUnits: number }): number =>
      (PRICES.apiGatewayPerMillion + PRICES.lambdaPerMillion) / 1e6 +
      (c.ms / 1000) * LAMBDA_GB * PRICES.lambdaPerGbSecond +
      units(c);
    const socketCall = (c: { ms: number; writeUnits: number; readUnits: number }, messages: number): number =>
      (messages * PRICES.webSocketMessagePerMillion + PRICES.lambdaPerMillion) / 1e6 +
      (c.ms / 1000) * NOTIFIER_GB * PRICES.lambdaPerGbSecond +
      units(c);
    const pollS = DEFAULT_SAFETY_POLL_MS / 1000;
    const cycles = MONTH_S / pollS;
    const reconnects = MONTH_S / (CONNECTION_MAX_MS / 1000);
    const parts = {
      pops: cycles * 2 * apiCall(pop),
      waits: cycles * socketCall(wait, 2),
      reconnects: reconnects * (apiCall(ticket) + socketCall(connect, 0) + socketCall(disconnect, 0)),
      connectionMinutes: ((MONTH_S / 60) * PRICES.webSocketConnectionMinutePerMillion) / 1e6,
    };
    const total = Object.values(parts).reduce((a, b) => a + b, 0);
    const usdOf = (n: number): string => `$${n.toFixed(3)}`;
    return {
      usd: total,
      parts,
      note:
        `a safety poll every ${pollS} s (${Math.round(cycles).toLocaleString('en-US')} a month): two empty pops ` +
        `(${pop.ms} ms, ${pop.readUnits} read units each) ${usdOf(parts.pops)}, one wait registration over the ` +
        `WebSocket (a message each way, ${wait.ms} ms of the ${NOTIFIER_GB * 1024} MB notifications function, ` +
        `${wait.writeUnits} write and ${wait.readUnits} read units) ${usdOf(parts.waits)}; ` +
        `${Math.round(reconnects)} reconnects (ticket, $connect, $disconnect) ${usdOf(parts.reconnects)}; ` +
        `a month of connection minutes ${usdOf(parts.connectionMinutes)}`,
    };
  } finally {
    await storage.close();
  }
}

/** The pop an idle consumer makes on the one-message queue `idle` (a long poll when `wait`). */
const idlePop = (wait: boolean, timeoutMs: number) =>
  ({
    queue: 'idle',
    partition: 'Default',
    group: 'g',
    batch: 1000,
    partitions: 1,
    autoAck: true,
    wait,
    timeoutMs,
  }) as const;

/**
 * A consumer that long-polls all month and never gets a message: back-to-back waits of
 * `maxPopWaitMs`, each billed for its whole wait, plus the wait slot's writes (measured). What a
 * Queen client (or ours with `notifications: false`) pays.
 */
async function idleConsumerPerMonth(endpoints: AwsEndpoints): Promise<{ usd: number; waits: number; note: string }> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  try {
    const config = { ...loadConfig({}), queueCacheMs: 3_600_000, maxWaiters: 100 };
    const svc = buildServices(storage, config);
    await svc.pushes.push([{ queue: 'idle', payload: Buffer.from('{}') }]);
    const req = idlePop(true, 300);
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
  /** Our client's idle consumer, waiting on the notification channel. */
  idleConsumerUsdPerMonth: number;
  /** An idle consumer that long-polls over HTTP (Queen's clients). */
  longPollIdleUsdPerMonth: number;
  /** The maintenance pass's work-index repair, per 1,000 partitions a month. */
  workRepair: WorkRepairCost;
}

/** Runs every row (see ROWS) and the idle consumer. */
export async function costFigures(
  endpoints: AwsEndpoints,
): Promise<CostFigures & { idleNote: string; longPollNote: string }> {
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
  const longPoll = await idleConsumerPerMonth(endpoints);
  const idle = await idleChannelConsumerPerMonth(endpoints);
  const workRepair = await workRepairPerMonth(endpoints);
  return {
    rows,
    workRepair,
    idleConsumerUsdPerMonth: idle.usd,
    idleNote: idle.note,
    longPollIdleUsdPerMonth: longPoll.usd,
    longPollNote: longPoll.note,
  };
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
          ...(row.stamps ? { producerStamps: row.stamps } : {}),
          consumerBatch: row.consumerBatch,
          usdPerMillion: Number(usdPerMillion.toFixed(4)),
          sqsUsdPerMillion: Number(sqsUsdPerMillion.toFixed(4)),
        })),
        {
          idleConsumerUsdPerMonth: Number(figures.idleConsumerUsdPerMonth.toFixed(3)),
          longPollIdleConsumerUsdPerMonth: Number(figures.longPollIdleUsdPerMonth.toFixed(2)),
          workRepairUsdPerThousandPartitionsPerMonth: {
            idle: Number(figures.workRepair.idle.usdPerMonth.toFixed(3)),
            busy: Number(figures.workRepair.busy.usdPerMonth.toFixed(3)),
          },
        },
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
      `| ${row.batch} | ${row.groups} | ${row.dedup ? 'on' : 'off'}${row.incompressible ? ', incompressible' : ''}` +
      `${row.stamps === 'retried' ? ', producer stamps, every push retried once' : row.stamps ? ', producer stamps' : ''} | ` +
      `${row.consumerBatch} | ${Math.round(counted.apiRequests * perM).toLocaleString('en-US')} | ` +
      `${((counted.writeUnits / counted.messages) * 1000).toFixed(0)} | ${counted.bookkeepingWruPerPush.toFixed(2)} | ` +
      `${usd(p.api)} | ${usd(p.lambda)} | ${usd(p.dynamodb)} | ${usd(p.s3)} | **${usd(usdPerMillion)}** | ` +
      `${usd(sqsUsdPerMillion)} | ${row.goal === undefined ? '' : `≤ ${usd(row.goal)}${met}`} |`
    );
  });
  const missed = figures.rows.flatMap(({ row, counted, usdPerMillion }) => {
    if (row.goal === undefined || usdPerMillion <= row.goal) return [];
    const p = price(counted);
    return [
      `- batch ${row.batch}, G ${row.groups}: ${usd(usdPerMillion)} against ${usd(row.goal)} ` +
        `(${usd(usdPerMillion - row.goal)} over). S3 is ${usd(p.s3)} of it (one PUT per push, each ` +
        `$5 per million), API Gateway and Lambda ${usd(p.api + p.lambda)}, DynamoDB ${usd(p.dynamodb)} ` +
        `(${counted.bookkeepingWruPerPush.toFixed(2)} units of bookkeeping per push).`,
    ];
  });
  const why =
    missed.length === 0
      ? []
      : [
          '',
          '**Rows that miss their goal, and why.** At batch 100 and more a segment is an S3 object: ' +
            'its PUT alone is $0.05 per million messages at batch 100, and its commit writes a marker ' +
            'with the segment in one transaction (the crash-safety record the orphan-blob sweeper ' +
            'reads), which is most of the bookkeeping left. What would close the gap: segments in ' +
            'S3 Express One Zone (a PUT under a quarter of the price; single-zone durability, so an ' +
            'opt-in) and a commit without the marker (the sweeper would check the segment item ' +
            'instead); neither is built.',
          ...missed,
        ];
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
      'conditional writes). The producer-stamps row sends every push a second time under its stamp ' +
      '(a lost answer retried, as our client does: docs/DELIVERY.md); the repeat is answered from the ' +
      'sequencer and stores nothing. ' +
      'The Lambda column includes the **notifier** (lib/notifications.ts) at ' +
      `one invocation per push, the most there can be, each measured as a warm ${NOTIFIER_GB * 1024} MB ` +
      'call that finds no waiting consumer (Lambda polls a stream shard up to 4 times a second, so ' +
      'frequent pushes share invocations); reading the stream is free.',
    '',
    '| producer batch | G | dedup | consumer batch | API requests per million | write units per 1,000 msgs | bookkeeping units per push | API Gateway | Lambda | DynamoDB | S3 | **Sluice** | SQS / SNS+SQS | goal |',
    '|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...lines,
    ...why,
    '',
    `**An idle consumer** (our client's \`consume()\`, waiting on the notification channel) costs ${usd(idle)} a month ` +
      `(goal ≤ ${usd(IDLE_GOAL)}${idle <= IDLE_GOAL ? ' ✓' : `: ✗, ${Math.round(idle / IDLE_GOAL)}×`}): ${figures.idleNote}. ` +
      `A consumer that long-polls over HTTP instead (Queen's clients; ours with \`notifications: false\`) costs ` +
      `${usd(figures.longPollIdleUsdPerMonth)} a month: ${figures.longPollNote}. ` +
      'SQS long polling costs about $0.05 a month (one request per 20 s).',
    '',
    '**The work-index repair** (each maintenance pass looks for partitions a push killed between its take and its ' +
      `commit hid from wildcard pops; docs/STORAGE.md, "The work index") costs ${figures.workRepair.note}.`,
  ].join('\n');
}
