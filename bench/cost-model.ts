/**
 * The cost model (docs/DEPLOYING.md, "Costs per million messages"): runs a workload on the AWS
 * backend (DynamoDB Local + moto S3) through the services, as the API's Lambda handlers call them,
 * counts every API request and every storage request and unit with the SDK meter, times each call,
 * and prices it all per million messages next to what SQS (one group) or SNS + SQS (fan-out) would
 * cost.
 *
 * Used by `npm run bench -- --only cost` (which writes the table) and by the ceiling tests.
 */
import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { loadConfig } from '../server/config.js';
import { PRICES, sqsPerMillion } from '../server/core/prices.js';
import { handler as notificationsHandler } from '../server/entry/notifications.js';
import { ackAndPopText, popResultText } from '../server/http/answers/lease-results.js';
import { endApiInvocation } from '../server/http/handler.js';
import type { AckAndPopResult } from '../server/service/leases/ack-and-pop.js';
import type { PopResult } from '../server/service/leases/pop.js';
import { PowertoolsTelemetry } from '../server/service/adapters/powertools-telemetry.js';
import { logKeys } from '../server/service/log/log-store.js';
import { UsageLedger } from '../server/service/usage.js';
import { NOTIFIER_MEMORY_MB } from '../lib/access.js';
import { buildServices, useServices, type Services } from '../server/service/runtime.js';
import type { AwsEndpoints } from '../test/support/aws-emulator.js';
import { meteredAwsStorage, type AwsMeter } from './aws-meter.js';
import { ackAll, completedAcks } from './leases.js';
import {
  LOG_SETUPS,
  accessLogFormat,
  accessLogLine,
  bytesOf,
  captureOutput,
  noLogBytes,
  platformLines,
  type AccessLogRequest,
  type LogBytes,
} from './log-bytes.js';
import { oneKiBPayload } from './push.js';

// The one price table, shared with `sluice cost`.
export { PRICES, sqsPerMillion };

/** The notifications function's memory, in GB (lib/access.ts). */
export const NOTIFIER_GB = NOTIFIER_MEMORY_MB / 1024;

/** The API functions' memory (the stack's default), in GB. */
export const LAMBDA_GB = 1;

/** The maintenance function's memory (the stack's default), in GB: retention runs there. */
export const MAINTENANCE_GB = 0.5;

/**
 * How long retention keeps consumed messages in the rows (`completedRetentionSeconds`), and how
 * much later the measured maintenance pass runs: every segment but each partition's newest has
 * expired by then.
 */
const RETENTION_S = 60;
const RETENTION_PASS_AFTER_MS = 3_600_000;

/** The metrics service name of the default stack (`<stack>-<construct id>`), as the EMF lines carry it. */
const SERVICE_NAME = 'Sluice-Sluice';

/**
 * Round trips a handler waits for, by request kind, in ms: DynamoDB single-item requests and
 * queries ~5 ms, transactions ~10 ms, S3 small-object PUT ~25 ms and GET ~15 ms ("tens of ms").
 * Typical same-region figures, not measured here: the emulators on this machine are slower.
 */
export const ROUND_TRIP_MS = { dynamodb: 5, dynamodbTransaction: 10, s3Put: 25, s3Get: 15 } as const;

export interface Workload {
  /** Messages per push request. */
  batch: number;
  /** Lease groups reading every message. */
  groups: number;
  /** A transactionId per message (dedup on). */
  dedup: boolean;
  /** Random (incompressible) 1 KiB payloads instead of the bench's JSON. */
  incompressible?: boolean;
  /**
   * Producer stamps (docs/DELIVERY.md), as our client sends them: `'stamped'` on every push,
   * `'retried'` also sending every push a second time under its stamp (a lost answer, retried).
   */
  stamps?: 'stamped' | 'retried';
  /** Most messages a pop asks for. */
  consumerBatch: number;
  /**
   * The consumers keep up: after every push each group pops it (a wildcard pop) and acks it with
   * the pop that finds the partition drained, so every push flips the partition's has-work item
   * and a consumer clears it (docs/STORAGE.md, "The work index").
   */
  drained?: boolean;
  /** Messages pushed (the figures are scaled to a million). */
  messages: number;
}

/** What a workload cost, counted. */
export interface Counted {
  messages: number;
  apiRequests: number;
  pushRequests: number;
  writeUnits: number;
  readUnits: number;
  s3Puts: number;
  s3Gets: number;
  dynamoRequests: number;
  /** Lambda GB-seconds billed: per call, measured CPU time plus the round trips it waited for, rounded up to 1 ms. */
  lambdaGbSeconds: number;
  /**
   * Notifier invocations (DynamoDB Streams → the notifications function; lib/notifications.ts):
   * one per push, the most there can be (Lambda hands a shard's records over up to 4 times a
   * second, so busy partitions share invocations). Its GB-seconds and read units are in
   * `lambdaGbSeconds` and `readUnits`.
   */
  notifierInvocations: number;
  /**
   * Write units per push beyond the segment's own ⌈KB⌉ and the dedup reservations: sequencer,
   * markers, indexes, a transaction's doubling, failed conditional writes.
   */
  bookkeepingWruPerPush: number;
  /**
   * CloudWatch Logs ingestion of the whole workload, bytes: what the API calls and the notifier
   * wrote, Lambda's platform lines and the API's access log lines (bench/log-bytes.ts), in
   * Lambda's text format (`text`, system logs at INFO) and in this stack's (`json`).
   */
  logBytes: LogBytes;
  /** Of {@link logBytes}: the API calls' own lines (EMF, Powertools), the same in both setups. */
  appLogBytes: number;
  /** Of {@link logBytes}: the access log lines. */
  accessLogBytes: number;
  /** What one notifier invocation logs, its platform lines included. */
  notifierLogBytes: LogBytes;
  /** Bytes of the pops' answers (their results as JSON): what consumers download. */
  popResponseBytes: number;
  /**
   * The maintenance pass that deletes the workload's segments once retention has expired them
   * (`server/service/maintenance/retention.ts`): billed deletes, not TTL. Each segment goes with
   * its commit marker; a deleted item is billed at its size, so an inline segment costs its ⌈KB⌉.
   */
  retention: { segmentsDeleted: number; writeUnits: number; readUnits: number; gbSeconds: number };
}

export interface Priced {
  api: number;
  lambda: number;
  dynamodb: number;
  s3: number;
  /** CloudWatch Logs ingestion, in this stack's log setup (`json`). */
  logs: number;
  /** The maintenance pass's deletes and its Lambda time: for queues with retention enabled. */
  retention: number;
  /** Everything but `retention`. */
  total: number;
}

/** Dollars of CloudWatch Logs ingestion for `bytes`. */
export const logDollars = (bytes: number): number => (bytes / 1e9) * PRICES.logsIngestPerGb;

/** Dollars per million messages, from counts over `c.messages` messages. */
export function price(c: Counted): Priced {
  const perM = 1e6 / c.messages;
  const logs = logDollars(c.logBytes.json) * perM;
  const r = c.retention;
  const retention =
    ((r.writeUnits * PRICES.writeUnitPerMillion + r.readUnits * PRICES.readUnitPerMillion) / 1e6 +
      r.gbSeconds * PRICES.lambdaPerGbSecond) *
    perM;
  const api = (c.apiRequests * perM * PRICES.apiGatewayPerMillion) / 1e6;
  const lambda =
    ((c.apiRequests + c.notifierInvocations) * perM * PRICES.lambdaPerMillion) / 1e6 +
    c.lambdaGbSeconds * perM * PRICES.lambdaPerGbSecond;
  const dynamodb =
    (c.writeUnits * perM * PRICES.writeUnitPerMillion + c.readUnits * perM * PRICES.readUnitPerMillion) / 1e6;
  const s3 = (c.s3Puts * perM * PRICES.s3PutPerMillion + c.s3Gets * perM * PRICES.s3GetPerMillion) / 1e6;
  return { api, lambda, dynamodb, s3, logs, retention, total: api + lambda + dynamodb + s3 + logs };
}

/** Counts storage requests by kind, for the round trips a call waited for. */
function roundTripsMs(meter: AwsMeter): number {
  let ms = 0;
  for (const [k, n] of meter.requests) {
    if (k === 'dynamodb:TransactWriteItemsCommand') ms += n * ROUND_TRIP_MS.dynamodbTransaction;
    else if (k.startsWith('dynamodb:')) ms += n * ROUND_TRIP_MS.dynamodb;
    else if (k === 's3:PutObjectCommand') ms += n * ROUND_TRIP_MS.s3Put;
    else if (k === 's3:GetObjectCommand') ms += n * ROUND_TRIP_MS.s3Get;
  }
  return ms;
}

/** One metered call: its billed duration (CPU time plus round trips, ≥ 1 ms) and units. */
export async function measureCall<T>(
  meter: AwsMeter,
  fn: () => Promise<T>,
): Promise<{ out: T; ms: number; writeUnits: number; readUnits: number }> {
  meter.reset();
  const cpu0 = process.cpuUsage();
  const out = await fn();
  const cpu = process.cpuUsage(cpu0);
  const ms = Math.max(1, Math.ceil((cpu.user + cpu.system) / 1000 + roundTripsMs(meter)));
  return { out, ms, writeUnits: meter.writeUnits, readUnits: meter.readUnits };
}

/** What one API call looks like in the access log, by the service call it made. */
const ROUTES = {
  push: { method: 'POST', route: '/api/v1/push', status: 201 },
  pop: { method: 'GET', route: '/api/v1/pop/queue/{queue}/partition/{partition}', status: 200 },
  wildcardPop: { method: 'GET', route: '/api/v1/pop/queue/{queue}', status: 200 },
  ackAndPop: { method: 'POST', route: '/api/v1/queues/{queue}/ack-and-pop', status: 200 },
} as const satisfies Record<string, Omit<AccessLogRequest, 'responseBytes' | 'latencyMs'>>;

/**
 * Metered API calls, each as the API's handler runs it: the service call, then the handler's
 * end (`endApiInvocation`: cost counters, the EMF line), with what it logged captured. Its CPU
 * time and round trips make its billed duration.
 */
class Calls {
  apiRequests = 0;
  gbSeconds = 0;
  writeUnits = 0;
  readUnits = 0;
  s3Puts = 0;
  s3Gets = 0;
  dynamoRequests = 0;
  logBytes = noLogBytes();
  appLogBytes = 0;
  accessLogBytes = 0;
  popResponseBytes = 0;
  /** Of the last call's write units: segments (once each) and dedup reservations. */
  lastSegmentUnits = 0;
  lastDedupUnits = 0;
  lastWriteUnits = 0;
  private readonly format = accessLogFormat();

  constructor(
    private readonly meter: AwsMeter,
    /** The services as the handler ends its invocations with them (the ledger prices Lambda time). */
    private readonly runtime: Services,
  ) {}

  async call<T>(kind: keyof typeof ROUTES, fn: () => Promise<T>): Promise<T> {
    this.meter.reset();
    const cpu0 = process.cpuUsage();
    const { out, lines } = await captureOutput(async () => {
      const result = await fn();
      const cpu = process.cpuUsage(cpu0);
      const ms = Math.max(1, Math.ceil((cpu.user + cpu.system) / 1000 + roundTripsMs(this.meter)));
      endApiInvocation(this.runtime, ms);
      return { result, ms };
    });
    const { result, ms } = out;
    this.apiRequests++;
    this.gbSeconds += (ms / 1000) * LAMBDA_GB;
    this.writeUnits += this.meter.writeUnits;
    this.readUnits += this.meter.readUnits;
    this.s3Puts += this.meter.s3Puts;
    this.s3Gets += this.meter.s3Gets;
    this.dynamoRequests += this.meter.dynamoRequests();
    this.lastSegmentUnits = this.meter.segmentUnits;
    this.lastDedupUnits = this.meter.dedupUnits;
    this.lastWriteUnits = this.meter.writeUnits;
    // The answer's size, for the access log and data transfer, as the route writes it (a pop
    // with nothing to deliver is a 204 without a body; a push's answer is its results as JSON).
    const text =
      kind === 'push'
        ? JSON.stringify(result)
        : kind === 'ackAndPop'
          ? ackAndPopText(result as unknown as AckAndPopResult)
          : result
            ? popResultText(result as unknown as PopResult)
            : '';
    const body = Buffer.byteLength(text);
    if (kind !== 'push') this.popResponseBytes += body;
    const route = ROUTES[kind];
    const access = accessLogLine(this.format, {
      ...route,
      status: text === '' ? 204 : route.status,
      responseBytes: body,
      latencyMs: ms + 5,
    });
    const app = bytesOf(lines);
    this.appLogBytes += app;
    this.accessLogBytes += Buffer.byteLength(access);
    for (const setup of LOG_SETUPS)
      this.logBytes[setup] += app + Buffer.byteLength(access) + bytesOf(platformLines(setup, ms, LAMBDA_GB * 1024));
    return result;
  }
}

const randomKiB = (): string => `"${randomBytes(766).toString('base64')}"`; // 1,024 bytes of JSON text

/** Runs one workload on fresh tables and counts it (see the module doc). */
export async function runWorkload(endpoints: AwsEndpoints, w: Workload): Promise<Counted> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  try {
    // A warm instance, as a busy deployment's Lambdas are: queue, partition and groups cached;
    // logging as on Lambda (Powertools at INFO, EMF metrics). The clock can jump, for retention.
    let skewMs = 0;
    const logger = new Logger({ serviceName: SERVICE_NAME, logLevel: 'INFO' });
    const telemetry = new PowertoolsTelemetry({
      logger,
      metrics: new Metrics({ namespace: 'Sluice', serviceName: SERVICE_NAME }),
    });
    const svc: Services = buildServices(
      storage,
      { ...loadConfig({}), queueCacheMs: 3_600_000 },
      { telemetry, clock: () => Date.now() + skewMs },
    );
    // The ledger as on Lambda, where it knows the function's memory (LambdaGbSeconds in the EMF line).
    const runtime: Services = { ...svc, usage: new UsageLedger(storage.usage, LAMBDA_GB) };
    const queue = 'cost';
    const groups = Array.from({ length: w.groups }, (_, g) => `g${g}`);
    const popReq = (group: string) =>
      ({
        queue,
        ...(w.drained ? {} : { partition: 'Default' }),
        group,
        batch: w.consumerBatch,
        partitions: 1,
        autoAck: false,
        wait: false,
        timeoutMs: 0,
      }) as const;
    // Setup, not counted: the queue, its partition, the groups registered (a pop each).
    await svc.pushes.push([{ queue, payload: Buffer.from('{}') }]);
    for (const g of groups) {
      const r = await svc.leasePops.pop(popReq(g));
      if (r) await ackAll(svc, r);
    }
    const calls = new Calls(meter, runtime);
    // As our client's consume loop: a first pop, then each batch's acks ride with the next pop
    // (ack-and-pop), one request per batch; the last one finds nothing.
    const pop = w.drained ? 'wildcardPop' : 'pop';
    const consume = async (): Promise<void> => {
      for (const g of groups) {
        let r = await calls.call(pop, () => svc.leasePops.pop(popReq(g)));
        while (r) {
          const done = r;
          const next = await calls.call('ackAndPop', () => svc.ackAndPop.run(completedAcks(done), popReq(g)));
          if (!next.acks.every((a) => a.success)) throw new Error('cost workload: an ack failed');
          r = next.pop?.result ?? null;
        }
      }
    };
    let n = 0;
    let pushes = 0;
    let bookkeeping = 0;
    let segmentUnits = 0;
    for (let sent = 0; sent < w.messages; sent += w.batch) {
      const items = Array.from({ length: Math.min(w.batch, w.messages - sent) }, () => {
        const i = n++;
        const text = w.incompressible ? randomKiB() : oneKiBPayload(i);
        return { queue, payload: Buffer.from(text), transactionId: w.dedup ? `tx-${i}` : undefined };
      });
      const stamp = w.stamps ? { producerId: 'cost.0', sequence: pushes } : undefined;
      const res = await calls.call('push', () => svc.pushes.push(items, { stamp }));
      if (res.some((x) => x.status !== 'queued')) throw new Error('cost workload: a push was not queued');
      pushes++;
      segmentUnits += calls.lastSegmentUnits;
      bookkeeping += calls.lastWriteUnits - calls.lastSegmentUnits - calls.lastDedupUnits;
      if (w.stamps === 'retried') {
        const again = await calls.call('push', () => svc.pushes.push(items, { stamp }));
        if (again.some((x, i) => x.status !== 'queued' || x.offset !== res[i]?.offset))
          throw new Error('cost workload: a retried push was not answered as its first attempt');
        bookkeeping += calls.lastWriteUnits;
      }
      if (w.drained) await consume();
    }
    if (!w.drained) await consume();
    const segmentUnitsPerPush = segmentUnits / pushes;
    // The notifier, once per push at most: its Lambda entry on a warm instance (partition → queue
    // cached) finding no waiter. `before`: its line as it logged it with system logs at INFO
    // (docs/DEPLOYING.md, "Logs, and what they cost").
    const partitionId = (await svc.queues.listPartitions(queue))[0]!.id;
    const seq = logKeys.sequencer(partitionId).pk;
    useServices(svc);
    const streamEvent = { Records: [{ dynamodb: { Keys: { pk: { S: seq } } } }] } as DynamoDBStreamEvent;
    await notificationsHandler(streamEvent);
    const notifier = await captureOutput(() => measureCall(meter, () => notificationsHandler(streamEvent)));
    logger.setLogLevel('DEBUG');
    const notifierBefore = await captureOutput(() => notificationsHandler(streamEvent));
    logger.setLogLevel('INFO');
    const notifierBytes: LogBytes = {
      text: bytesOf(notifierBefore.lines) + bytesOf(platformLines('text', notifier.out.ms, NOTIFIER_MEMORY_MB)),
      json: bytesOf(notifier.lines) + bytesOf(platformLines('json', notifier.out.ms, NOTIFIER_MEMORY_MB)),
    };
    // Retention: the groups have consumed everything; a queue keeping consumed messages
    // RETENTION_S, and a maintenance pass once they have expired.
    await svc.queues.patch(queue, { options: { retentionEnabled: true, completedRetentionSeconds: RETENTION_S } });
    skewMs += RETENTION_PASS_AFTER_MS;
    const pass = await measureCall(meter, () => svc.retention.run());
    const deleted = pass.out.segmentsDeleted;
    // What a pass costs whatever it deletes (listing queues, partitions, cursors): a second one,
    // which finds nothing left to delete, is taken off; a real pass spreads it over every queue.
    const idlePass = await measureCall(meter, () => svc.retention.run());
    return {
      messages: w.messages,
      apiRequests: calls.apiRequests,
      pushRequests: pushes,
      writeUnits: calls.writeUnits,
      s3Puts: calls.s3Puts,
      s3Gets: calls.s3Gets,
      dynamoRequests: calls.dynamoRequests,
      lambdaGbSeconds: calls.gbSeconds + (pushes * notifier.out.ms * NOTIFIER_GB) / 1000,
      notifierInvocations: pushes,
      readUnits: calls.readUnits + pushes * notifier.out.readUnits,
      bookkeepingWruPerPush: bookkeeping / pushes,
      logBytes: {
        text: calls.logBytes.text + pushes * notifierBytes.text,
        json: calls.logBytes.json + pushes * notifierBytes.json,
      },
      appLogBytes: calls.appLogBytes,
      accessLogBytes: calls.accessLogBytes,
      notifierLogBytes: notifierBytes,
      popResponseBytes: calls.popResponseBytes,
      retention: {
        segmentsDeleted: deleted,
        // The meter bills a delete 1 unit; DynamoDB bills the deleted item's size.
        writeUnits: pass.writeUnits - idlePass.writeUnits + deleted * Math.max(0, Math.ceil(segmentUnitsPerPush) - 1),
        readUnits: Math.max(0, pass.readUnits - idlePass.readUnits),
        gbSeconds: (Math.max(0, pass.ms - idlePass.ms) / 1000) * MAINTENANCE_GB,
      },
    };
  } finally {
    await storage.close();
  }
}
