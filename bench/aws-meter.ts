import { randomBytes } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { createAwsStorage, ensureBucket, ensureTables } from '../lambdas/storage/aws/index.js';
import { TABLES, type Storage, type TableName } from '../lambdas/storage/port.js';
import { emulatorClients, type AwsEndpoints } from '../test/support/aws-emulator.js';

/** What the AWS backend asked of DynamoDB and S3, counted by an SDK middleware. */
export interface AwsMeter {
  requests: Map<string, number>;
  /** DynamoDB write request units as AWS bills them (1 KB per unit per item; ×2 inside transactions). */
  writeUnits: number;
  /** DynamoDB read request units (strongly consistent: 4 KB per unit), from the returned items. */
  readUnits: number;
  s3Puts: number;
  s3Gets: number;
  /** Of `writeUnits`: segment items (`S#…` keys) counted once each, at ⌈size / 1 KB⌉ even inside a transaction. */
  segmentUnits: number;
  /** Of `writeUnits`: items written to the dedup table (transactionId reservations). */
  dedupUnits: number;
  reset(): void;
  dynamoRequests(): number;
  totalRequests(): number;
}

type Item = Record<string, AttributeValue>;

/** DynamoDB's item size: attribute names plus values (UTF-8 strings, bytes, numbers ~ digits/2 + 1). */
export function dynamoItemSize(item: Item): number {
  let n = 0;
  for (const [k, v] of Object.entries(item)) {
    n += Buffer.byteLength(k);
    if (v.S !== undefined) n += Buffer.byteLength(v.S);
    else if (v.N !== undefined) n += Math.ceil(v.N.replace(/^-/, '').replace('.', '').length / 2) + 1;
    else if (v.B !== undefined) n += v.B.byteLength;
    else n += 1;
  }
  return n;
}
const wru = (item: Item | undefined): number => Math.max(1, Math.ceil(dynamoItemSize(item ?? {}) / 1024));
const rru = (bytes: number): number => Math.max(1, Math.ceil(bytes / 4096));

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
  const meter: AwsMeter = {
    requests: new Map(),
    writeUnits: 0,
    readUnits: 0,
    s3Puts: 0,
    s3Gets: 0,
    segmentUnits: 0,
    dedupUnits: 0,
    reset() {
      this.requests.clear();
      this.writeUnits = this.readUnits = this.s3Puts = this.s3Gets = this.segmentUnits = this.dedupUnits = 0;
    },
    dynamoRequests() {
      let n = 0;
      for (const [k, v] of this.requests) if (k.startsWith('dynamodb:')) n += v;
      return n;
    },
    totalRequests() {
      let n = 0;
      for (const v of this.requests.values()) n += v;
      return n;
    },
  };
  dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      const cmd = String(context.commandName ?? 'unknown');
      meter.requests.set(`dynamodb:${cmd}`, (meter.requests.get(`dynamodb:${cmd}`) ?? 0) + 1);
      const input = args.input as Record<string, unknown>;
      const classify = (table: unknown, item: Item, units: number): void => {
        if (table === tables.dedup) meter.dedupUnits += units;
        else if (table === tables.log && item.sk?.S?.startsWith('S#')) meter.segmentUnits += wru(item);
      };
      if (cmd === 'PutItemCommand') {
        meter.writeUnits += wru(input.Item as Item);
        classify(input.TableName, input.Item as Item, wru(input.Item as Item));
      }
      // Sequencer takes and guarded updates: small items, one unit each.
      if (cmd === 'DeleteItemCommand' || cmd === 'UpdateItemCommand') meter.writeUnits += 1;
      if (cmd === 'TransactWriteItemsCommand') {
        for (const op of input.TransactItems as {
          Put?: { Item: Item; TableName: string };
          Delete?: unknown;
          ConditionCheck?: unknown;
        }[]) {
          meter.writeUnits += 2 * (op.Put ? wru(op.Put.Item) : 1);
          if (op.Put) classify(op.Put.TableName, op.Put.Item, 2 * wru(op.Put.Item));
        }
      }
      const out = await next(args);
      const o = out.output as { Item?: Item; Items?: Item[]; Responses?: Record<string, Item[]> };
      if (cmd === 'GetItemCommand') meter.readUnits += rru(o.Item ? dynamoItemSize(o.Item) : 0);
      if (cmd === 'QueryCommand') meter.readUnits += rru((o.Items ?? []).reduce((a, i) => a + dynamoItemSize(i), 0));
      if (cmd === 'BatchGetItemCommand')
        for (const items of Object.values(o.Responses ?? {}))
          for (const i of items) meter.readUnits += rru(dynamoItemSize(i));
      return out;
    },
    { step: 'initialize', name: 'sluiceMeter' },
  );
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      const cmd = String(context.commandName ?? 'unknown');
      meter.requests.set(`s3:${cmd}`, (meter.requests.get(`s3:${cmd}`) ?? 0) + 1);
      if (cmd === 'PutObjectCommand') meter.s3Puts++;
      if (cmd === 'GetObjectCommand') meter.s3Gets++;
      return next(args);
    },
    { step: 'initialize', name: 'sluiceMeter' },
  );
  return { storage: createAwsStorage({ tables, bucket, dynamodb, s3 }), meter };
}
