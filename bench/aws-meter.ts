import { randomBytes } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { createAwsStorage, ensureBucket, ensureTables } from '../server/storage/aws/index.js';
import { dynamoItemSize, type UsageMeterOptions } from '../server/storage/aws/usage-meter.js';
import { TABLES, type Storage, type TableName } from '../server/storage/port.js';
import { writeUnitsFor, type StorageUsage } from '../server/storage/usage.js';
import { emulatorClients, type AwsEndpoints } from '../test/support/aws-emulator.js';

type Item = Record<string, AttributeValue>;

/** What the AWS backend asked of DynamoDB and S3, counted by the production SDK middleware (`server/storage/aws/usage-meter.ts`). */
export interface AwsMeter {
  requests: Map<string, number>;
  /** DynamoDB write request units as AWS bills them (1 KB per unit per item; ×2 inside transactions). */
  readonly writeUnits: number;
  /** DynamoDB read request units (strongly consistent: 4 KB per unit), from the returned items. */
  readonly readUnits: number;
  readonly s3Puts: number;
  readonly s3Gets: number;
  /**
   * Write units per partition key (`<table> <pk>`, the logical table): DynamoDB serves one key
   * at most 1,000 write units a second, so these show which key a workload runs hot on.
   */
  keyWriteUnits: Map<string, number>;
  /** Read units per partition key, as {@link keyWriteUnits} (3,000 a second per key). */
  keyReadUnits: Map<string, number>;
  /** Writes refused by their condition (PutItem, DeleteItem) and cancelled transactions: billed all the same. */
  readonly failedWrites: number;
  /** Of `writeUnits`: segment items (`S#…` keys) counted once each, at ⌈size / 1 KB⌉ even inside a transaction. */
  readonly segmentUnits: number;
  /** Of `writeUnits`: items written to the dedup table (transactionId reservations). */
  readonly dedupUnits: number;
  reset(): void;
  dynamoRequests(): number;
  totalRequests(): number;
}

/**
 * AWS storage on an emulator whose SDK clients count every request and the units it is
 * billed. Fresh, uniquely named tables and bucket.
 */
export async function meteredAwsStorage(endpoints: AwsEndpoints): Promise<{ storage: Storage; meter: AwsMeter }> {
  const { dynamodb, s3 } = emulatorClients(endpoints);
  const suffix = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const tables = Object.fromEntries(TABLES.map((t) => [t, `sluice-bench-${suffix}-${t}`])) as Record<TableName, string>;
  const bucket = `sluice-bench-${suffix}`;
  await Promise.all([ensureTables(dynamodb, tables), ensureBucket(s3, bucket)]);
  const logical = new Map<string, TableName>(Object.entries(tables).map(([t, name]) => [name, t as TableName]));
  const requests = new Map<string, number>();
  const keyWriteUnits = new Map<string, number>();
  const keyReadUnits = new Map<string, number>();
  let segmentUnits = 0;
  let dedupUnits = 0;
  const add = (into: Map<string, number>, table: string, key: Item | undefined, units: number): void => {
    const k = `${logical.get(table) ?? table} ${key?.['pk']?.S ?? '?'}`;
    into.set(k, (into.get(k) ?? 0) + units);
  };
  // The production meter, with estimated units (DynamoDB Local reports transactions unlike
  // DynamoDB) and hooks for what only the bench breaks down: per key, segments, dedup.
  const usageMeter: UsageMeterOptions = {
    units: 'estimated',
    onRequest: (service, cmd) => requests.set(`${service}:${cmd}`, (requests.get(`${service}:${cmd}`) ?? 0) + 1),
    onWrite: ({ table, item, units, put }) => {
      add(keyWriteUnits, table, item, units);
      if (table === tables.dedup) dedupUnits += units;
      else if (put && table === tables.log && item?.['sk']?.S?.startsWith('S#'))
        segmentUnits += writeUnitsFor(dynamoItemSize(item));
    },
    onRead: ({ table, item, units }) => add(keyReadUnits, table, item, units),
  };
  const storage = createAwsStorage({ tables, bucket, dynamodb, s3, usageMeter });
  const usage = storage.usage!;
  let base = { ...usage };
  const since = (k: keyof StorageUsage): number => usage[k] - base[k];
  const meter: AwsMeter = {
    requests,
    keyWriteUnits,
    keyReadUnits,
    get writeUnits() {
      return since('writeUnits');
    },
    get readUnits() {
      return since('readUnits');
    },
    get s3Puts() {
      return since('s3Puts');
    },
    get s3Gets() {
      return since('s3Gets');
    },
    get failedWrites() {
      return since('failedWrites');
    },
    get segmentUnits() {
      return segmentUnits;
    },
    get dedupUnits() {
      return dedupUnits;
    },
    reset() {
      requests.clear();
      keyWriteUnits.clear();
      keyReadUnits.clear();
      segmentUnits = dedupUnits = 0;
      base = { ...usage };
    },
    dynamoRequests() {
      return since('dynamodbRequests');
    },
    totalRequests() {
      let n = 0;
      for (const v of requests.values()) n += v;
      return n;
    },
  };
  return { storage, meter };
}
