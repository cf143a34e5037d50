/**
 * `npm run bench -- --only cost`: the cost table of docs/DEPLOYING.md and docs/cost.json, from
 * the workloads of bench/cost-model.ts run on the AWS backend (DynamoDB Local + moto S3).
 */
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../server/config.js';
import { buildServices } from '../server/service/runtime.js';
import { startAwsEmulators, type AwsEndpoints } from '../test/support/aws-emulator.js';
import { bytesOf, platformLines } from './log-bytes.js';
import { meteredAwsStorage } from './aws-meter.js';
import { workRepairPerMonth, type WorkRepairCost } from './work-repair-cost.js';
import { activityRollupCost, type ActivityRollupCost } from './activity-rollup-cost.js';
import { DEFAULT_SAFETY_POLL_MS } from '../client/wake-channel.js';
import { CONNECTION_MAX_MS } from '../server/core/notifications.js';
import {
  LAMBDA_GB,
  MAINTENANCE_GB,
  NOTIFIER_GB,
  PRICES,
  ROUND_TRIP_MS,
  logDollars,
  measureCall,
  price,
  runWorkload,
  sqsPerMillion,
  type Counted,
  type Workload,
} from './cost-model.js';

interface Row extends Workload {
  /**
   * The goal in dollars per million messages, when there is one (docs/DEPLOYING.md, "Costs per
   * million messages").
   */
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
  // Consumers that keep up: every push finds the partition drained (the has-work flip and clear).
  { batch: 1, groups: 1, dedup: false, drained: true, consumerBatch: 1000, messages: 400 },
  { batch: 10, groups: 1, dedup: false, drained: true, consumerBatch: 1000, messages: 2000 },
];

/** The workload column: dedup, and what else the row does differently. */
const workloadNote = (row: Row): string =>
  `${row.dedup ? 'on' : 'off'}${row.incompressible ? ', incompressible' : ''}` +
  `${row.stamps === 'retried' ? ', producer stamps, every push retried once' : row.stamps ? ', producer stamps' : ''}` +
  `${row.drained ? ', drained between pushes' : ''}`;

type FigureRow = CostFigures['rows'][number];

/**
 * The log figures: bytes per API call and dollars per million messages in Lambda's text format
 * (system logs at INFO, as the stack once deployed) and in the stack's JSON format with system logs
 * at WARN (docs/DEPLOYING.md, "Logs, and what they cost"); what consumers download (data transfer);
 * what retention deletes.
 */
function logSection(rows: FigureRow[]): string[] {
  const kb = (b: number): string => `${(b / 1000).toFixed(2)} KB`;
  const table = rows.map(({ row, counted: c, usdPerMillion }) => {
    const perM = 1e6 / c.messages;
    const before = logDollars(c.logBytes.text) * perM;
    const after = logDollars(c.logBytes.json) * perM;
    // Per API call: the notifier's invocations are priced in, not counted here.
    const perCall = (setup: 'text' | 'json'): number =>
      (c.logBytes[setup] - c.notifierInvocations * c.notifierLogBytes[setup]) / c.apiRequests;
    return (
      `| ${row.batch} | ${row.groups} | ${workloadNote(row)} | ${kb(perCall('text'))} | ` +
      `${kb(perCall('json'))} | ${kb(c.appLogBytes / c.apiRequests)} | ${kb(c.accessLogBytes / c.apiRequests)} | ` +
      `${usd(before)} → ${usd(after)} | ${usd(usdPerMillion - after + before)} → **${usd(usdPerMillion)}** |`
    );
  });
  const first = rows[0]!.counted;
  const platform = bytesOf(platformLines('text', 12.34, LAMBDA_GB * 1024));
  const consumed = rows.find((r) => r.row.batch === 100 && r.row.groups === 1 && !r.row.incompressible)!;
  const perMessage = consumed.counted.popResponseBytes / (consumed.counted.messages * consumed.row.groups);
  const transfer = (perMessage * 1e6 * PRICES.dataTransferOutPerGb) / 1e9;
  const retained = rows.find((r) => r.row.batch === 10 && r.row.groups === 1 && !r.row.drained)!;
  return [
    '**CloudWatch Logs**, per API call and per million messages, before and after this stack logged JSON with ' +
      "system logs at WARN (`lib/function-logging.ts`). Measured by `bench/log-bytes.ts`: each call's own output " +
      '(the EMF metrics line its handler writes, Powertools lines) captured as it runs, the HTTP API access log ' +
      "line rendered from the stage's format in the synthesized template, and Lambda's START, END and REPORT " +
      `lines in their documented text form (${platform} bytes per invocation; none at system level WARN). ` +
      `The notifier (an invocation per push, at most) wrote ${first.notifierLogBytes.text} bytes per invocation before ` +
      `(its platform lines and an INFO line, now DEBUG), ${first.notifierLogBytes.json} now; they are in the ` +
      'per-million figures, not in the per-call ones. ' +
      `Priced at $${PRICES.logsIngestPerGb.toFixed(2)} per GB ingested; storage ($0.03 per GB-month, compressed) is left out.`,
    '',
    '| producer batch | G | dedup | text format: bytes per API call | JSON, system WARN | of which EMF and app lines | of which access log | CloudWatch Logs per million msgs | **Sluice** per million msgs |',
    '|---:|---:|---|---:|---:|---:|---:|---:|---:|',
    ...table,
    '',
    `**Retention** deletes what it expires: \`server/service/maintenance/retention.ts\` deletes each segment item and its ` +
      'commit marker (a page at a time, after writing the skip that covers them) and the blob when the segment has one. ' +
      "DynamoDB bills a delete like a write, at the deleted item's size; S3 DELETE is free. TTL deletes would be free, " +
      'but TTL runs "typically within two days" with no bound, and a segment must go with its marker and behind its skip. ' +
      `Measured by one maintenance pass (${MAINTENANCE_GB * 1024} MB) after every message was consumed and had passed ` +
      `\`completedRetentionSeconds\`: at batch 10 it deleted ${retained.counted.retention.segmentsDeleted} segments with ` +
      `${(retained.counted.retention.writeUnits / retained.counted.retention.segmentsDeleted).toFixed(2)} write units each.`,
    '',
    `**Data transfer** is not in the table. Pushes are free (data in); what consumers download is billed when they are ` +
      `outside AWS: a pop's answer carried ${Math.round(perMessage).toLocaleString('en-US')} bytes per 1 KiB message at batch 100, ` +
      `so each consuming group downloads ${((perMessage * 1e6) / 1e9).toFixed(2)} GB per million messages, ` +
      `$${transfer.toFixed(2)} at $${PRICES.dataTransferOutPerGb.toFixed(2)} per GB out to the internet (after the ` +
      'first 100 GB a month). Consumers inside AWS pay its data transfer rates between services and regions instead.',
  ];
}

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
  /** The maintenance pass's activity roll-up, and what it saves the series requests. */
  activityRollup: ActivityRollupCost;
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
  const activityRollup = await activityRollupCost(endpoints);
  return {
    rows,
    workRepair,
    activityRollup,
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
        ...figures.rows.map(({ row, counted, usdPerMillion, sqsUsdPerMillion }) => ({
          batch: row.batch,
          groups: row.groups,
          dedup: row.dedup,
          ...(row.incompressible ? { incompressible: true } : {}),
          ...(row.stamps ? { producerStamps: row.stamps } : {}),
          ...(row.drained ? { drainedBetweenPushes: true } : {}),
          consumerBatch: row.consumerBatch,
          usdPerMillion: Number(usdPerMillion.toFixed(4)),
          logsUsdPerMillion: Number(price(counted).logs.toFixed(4)),
          logBytesPerApiCall: Math.round(counted.logBytes.json / counted.apiRequests),
          retentionUsdPerMillion: Number(price(counted).retention.toFixed(4)),
          sqsUsdPerMillion: Number(sqsUsdPerMillion.toFixed(4)),
        })),
        {
          idleConsumerUsdPerMonth: Number(figures.idleConsumerUsdPerMonth.toFixed(3)),
          longPollIdleConsumerUsdPerMonth: Number(figures.longPollIdleUsdPerMonth.toFixed(2)),
          workRepairUsdPerThousandPartitionsPerMonth: {
            idle: Number(figures.workRepair.idle.usdPerMonth.toFixed(3)),
            busy: Number(figures.workRepair.busy.usdPerMonth.toFixed(3)),
          },
          activityRollupUsdPerHundredBusyProcessesPerMonth: Number(figures.activityRollup.pass.usdPerMonth.toFixed(3)),
          status24hUsdPerRequestAt500Processes: {
            rolledUp: Number(figures.activityRollup.statusUsd.rolled.toFixed(6)),
            raw: Number(figures.activityRollup.statusUsd.raw.toFixed(6)),
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
      `| ${row.batch} | ${row.groups} | ${workloadNote(row)} | ` +
      `${row.consumerBatch} | ${Math.round(counted.apiRequests * perM).toLocaleString('en-US')} | ` +
      `${((counted.writeUnits / counted.messages) * 1000).toFixed(0)} | ${counted.bookkeepingWruPerPush.toFixed(2)} | ` +
      `${usd(p.api)} | ${usd(p.lambda)} | ${usd(p.dynamodb)} | ${usd(p.s3)} | ${usd(p.logs)} | ` +
      `**${usd(usdPerMillion)}** | ${usd(p.retention)} | ${usd(sqsUsdPerMillion)} | ${row.goal === undefined ? '' : `≤ ${usd(row.goal)}${met}`} |`
    );
  });
  const missed = figures.rows.flatMap(({ row, counted, usdPerMillion }) => {
    if (row.goal === undefined || usdPerMillion <= row.goal) return [];
    const p = price(counted);
    return [
      `- batch ${row.batch}, G ${row.groups}: ${usd(usdPerMillion)} against ${usd(row.goal)} ` +
        `(${usd(usdPerMillion - row.goal)} over). S3 is ${usd(p.s3)} of it (one PUT per push, each ` +
        `$5 per million), API Gateway and Lambda ${usd(p.api + p.lambda)}, DynamoDB ${usd(p.dynamodb)} ` +
        `(${counted.bookkeepingWruPerPush.toFixed(2)} units of bookkeeping per push), CloudWatch Logs ` +
        `${usd(p.logs)}.`,
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
      'frequent pushes share invocations); reading the stream is free. ' +
      "**CloudWatch Logs** is the ingestion of what the functions and the API log (below), in the stack's JSON " +
      'format. **+ retention** is what a queue with retention enabled pays on top: the maintenance pass that deletes ' +
      `the segments once consumed messages passed \`completedRetentionSeconds\` (below). The rows drained between pushes have a consumer that keeps up: ` +
      'after every push, a wildcard pop takes it and the ack-and-pop that acks it finds the partition drained and ' +
      'clears its has-work item, so every push flips the item back (docs/STORAGE.md, "The work index").',
    '',
    '| producer batch | G | dedup | consumer batch | API requests per million | write units per 1,000 msgs | bookkeeping units per push | API Gateway | Lambda | DynamoDB | S3 | CloudWatch Logs | **Sluice** | + retention | SQS / SNS+SQS | goal |',
    '|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...lines,
    '',
    ...logSection(figures.rows),
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
    '',
    "**The activity roll-up** (each maintenance pass sums every process's one-minute activity items into one per " +
      'minute and per block of 5, 15, 60 and 360 minutes, which the status and analytics series read instead; ' +
      `docs/QUEEN-COMPAT.md, "Series") costs ${figures.activityRollup.note}.`,
  ].join('\n');
}
