/**
 * The cost model (issue 16): runs a workload on the AWS backend (DynamoDB Local + moto S3)
 * through the services, as the API's Lambda handlers call them, counts every API request and
 * every storage request and unit with the SDK meter, times each call, and prices it all per
 * million messages next to what SQS (one group) or SNS + SQS (fan-out) would cost.
 *
 * Used by `npm run bench -- --only cost` (which writes the table) and by the ceiling tests.
 */
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../lambdas/config.js';
import { PRICES, sqsPerMillion } from '../lambdas/core/prices.js';
import { logKeys } from '../lambdas/service/log/log-store.js';
import { NOTIFIER_MEMORY_MB } from '../lib/access.js';
import { buildServices, type Services } from '../lambdas/service/runtime.js';
import type { AwsEndpoints } from '../test/support/aws-emulator.js';
import { meteredAwsStorage, type AwsMeter } from './aws-meter.js';
import { ackAll, completedAcks } from './leases.js';
import { oneKiBPayload } from './push.js';

// The one price table, shared with `sluice cost`.
export { PRICES, sqsPerMillion };

/** The notifications function's memory, in GB (lib/access.ts). */
export const NOTIFIER_GB = NOTIFIER_MEMORY_MB / 1024;

/** The API functions' memory (the stack's default), in GB. */
export const LAMBDA_GB = 1;

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
}

export interface Priced {
  api: number;
  lambda: number;
  dynamodb: number;
  s3: number;
  total: number;
}

/** Dollars per million messages, from counts over `c.messages` messages. */
export function price(c: Counted): Priced {
  const perM = 1e6 / c.messages;
  const api = (c.apiRequests * perM * PRICES.apiGatewayPerMillion) / 1e6;
  const lambda =
    ((c.apiRequests + c.notifierInvocations) * perM * PRICES.lambdaPerMillion) / 1e6 +
    c.lambdaGbSeconds * perM * PRICES.lambdaPerGbSecond;
  const dynamodb =
    (c.writeUnits * perM * PRICES.writeUnitPerMillion + c.readUnits * perM * PRICES.readUnitPerMillion) / 1e6;
  const s3 = (c.s3Puts * perM * PRICES.s3PutPerMillion + c.s3Gets * perM * PRICES.s3GetPerMillion) / 1e6;
  return { api, lambda, dynamodb, s3, total: api + lambda + dynamodb + s3 };
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

/** A metered call: its CPU time and round trips make its billed duration. */
class Calls {
  apiRequests = 0;
  gbSeconds = 0;
  writeUnits = 0;
  readUnits = 0;
  s3Puts = 0;
  s3Gets = 0;
  dynamoRequests = 0;
  /** Of the last call's write units: segments (once each) and dedup reservations. */
  lastSegmentUnits = 0;
  lastDedupUnits = 0;
  lastWriteUnits = 0;

  constructor(private readonly meter: AwsMeter) {}

  async call<T>(fn: () => Promise<T>): Promise<T> {
    this.meter.reset();
    const cpu0 = process.cpuUsage();
    const out = await fn();
    const cpu = process.cpuUsage(cpu0);
    const ms = Math.ceil((cpu.user + cpu.system) / 1000 + roundTripsMs(this.meter));
    this.apiRequests++;
    this.gbSeconds += (Math.max(1, ms) / 1000) * LAMBDA_GB;
    this.writeUnits += this.meter.writeUnits;
    this.readUnits += this.meter.readUnits;
    this.s3Puts += this.meter.s3Puts;
    this.s3Gets += this.meter.s3Gets;
    this.dynamoRequests += this.meter.dynamoRequests();
    this.lastSegmentUnits = this.meter.segmentUnits;
    this.lastDedupUnits = this.meter.dedupUnits;
    this.lastWriteUnits = this.meter.writeUnits;
    return out;
  }
}

const randomKiB = (): string => `"${randomBytes(766).toString('base64')}"`; // 1,024 bytes of JSON text

/** Runs one workload on fresh tables and counts it (see the module doc). */
export async function runWorkload(endpoints: AwsEndpoints, w: Workload): Promise<Counted> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  try {
    // A warm instance, as a busy deployment's Lambdas are: queue, partition and groups cached.
    const svc: Services = buildServices(storage, { ...loadConfig({}), queueCacheMs: 3_600_000 });
    const queue = 'cost';
    const groups = Array.from({ length: w.groups }, (_, g) => `g${g}`);
    const popReq = (group: string) =>
      ({
        queue,
        partition: 'Default',
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
    const calls = new Calls(meter);
    let n = 0;
    let pushes = 0;
    let bookkeeping = 0;
    for (let sent = 0; sent < w.messages; sent += w.batch) {
      const items = Array.from({ length: Math.min(w.batch, w.messages - sent) }, () => {
        const i = n++;
        const text = w.incompressible ? randomKiB() : oneKiBPayload(i);
        return { queue, payload: Buffer.from(text), transactionId: w.dedup ? `tx-${i}` : undefined };
      });
      const stamp = w.stamps ? { producerId: 'cost.0', sequence: pushes } : undefined;
      const res = await calls.call(() => svc.pushes.push(items, { stamp }));
      if (res.some((x) => x.status !== 'queued')) throw new Error('cost workload: a push was not queued');
      pushes++;
      bookkeeping += calls.lastWriteUnits - calls.lastSegmentUnits - calls.lastDedupUnits;
      if (w.stamps === 'retried') {
        const again = await calls.call(() => svc.pushes.push(items, { stamp }));
        if (again.some((x, i) => x.status !== 'queued' || x.offset !== res[i]?.offset))
          throw new Error('cost workload: a retried push was not answered as its first attempt');
        bookkeeping += calls.lastWriteUnits;
      }
    }
    // As our client's consume loop: a first pop, then each batch's acks ride with the next pop
    // (ack-and-pop), one request per batch; the last one finds nothing.
    for (const g of groups) {
      let r = await calls.call(() => svc.leasePops.pop(popReq(g)));
      while (r) {
        const done = r;
        const next = await calls.call(() => svc.ackAndPop.run(completedAcks(done), popReq(g)));
        if (!next.acks.every((a) => a.success)) throw new Error('cost workload: an ack failed');
        r = next.pop?.result ?? null;
      }
    }
    // The notifier, once per push at most: a warm instance (partition → queue cached) finding no waiter.
    const partitionId = (await svc.queues.listPartitions(queue))[0]!.id;
    const seq = logKeys.sequencer(partitionId).pk;
    await svc.notifications.onSequencerWrites([seq]);
    const notifier = await measureCall(meter, () => svc.notifications.onSequencerWrites([seq]));
    return {
      messages: w.messages,
      apiRequests: calls.apiRequests,
      pushRequests: pushes,
      writeUnits: calls.writeUnits,
      s3Puts: calls.s3Puts,
      s3Gets: calls.s3Gets,
      dynamoRequests: calls.dynamoRequests,
      lambdaGbSeconds: calls.gbSeconds + (pushes * notifier.ms * NOTIFIER_GB) / 1000,
      notifierInvocations: pushes,
      readUnits: calls.readUnits + pushes * notifier.readUnits,
      bookkeepingWruPerPush: bookkeeping / pushes,
    };
  } finally {
    await storage.close();
  }
}
