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
  /**
   * Write units per partition key (`<table> <pk>`, the logical table): DynamoDB serves one key
   * at most 1,000 write units a second, so these show which key a workload runs hot on.
   */
  keyWriteUnits: Map<string, number>;
  /** Read units per partition key, as {@link keyWriteUnits} (3,000 a second per key). */
  keyReadUnits: Map<string, number>;
  /** Writes refused by their condition (PutItem, DeleteItem) and cancelled transactions: billed all the same. */
  failedWrites: number;
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
  const logical = new Map<string, TableName>(Object.entries(tables).map(([t, name]) => [name, t as TableName]));
  const meter: AwsMeter = {
    requests: new Map(),
    writeUnits: 0,
    readUnits: 0,
    s3Puts: 0,
    s3Gets: 0,
    keyWriteUnits: new Map(),
    keyReadUnits: new Map(),
    failedWrites: 0,
    segmentUnits: 0,
    dedupUnits: 0,
    reset() {
      this.requests.clear();
      this.keyWriteUnits.clear();
      this.keyReadUnits.clear();
      this.writeUnits = this.readUnits = this.s3Puts = this.s3Gets = this.failedWrites = 0;
      this.segmentUnits = this.dedupUnits = 0;
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
  const add = (into: Map<string, number>, table: unknown, key: Item | undefined, units: number): void => {
    const k = `${logical.get(String(table)) ?? String(table)} ${key?.['pk']?.S ?? '?'}`;
    into.set(k, (into.get(k) ?? 0) + units);
  };
  dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      const cmd = String(context.commandName ?? 'unknown');
      meter.requests.set(`dynamodb:${cmd}`, (meter.requests.get(`dynamodb:${cmd}`) ?? 0) + 1);
      const input = args.input as Record<string, unknown>;
      const write = (table: unknown, key: Item | undefined, units: number, put = false): void => {
        meter.writeUnits += units;
        add(meter.keyWriteUnits, table, key, units);
        if (table === tables.dedup) meter.dedupUnits += units;
        else if (put && table === tables.log && key?.sk?.S?.startsWith('S#')) meter.segmentUnits += wru(key);
      };
      if (cmd === 'PutItemCommand') write(input.TableName, input.Item as Item, wru(input.Item as Item), true);
      if (cmd === 'DeleteItemCommand') write(input.TableName, input.Key as Item, 1);
      if (cmd === 'TransactWriteItemsCommand') {
        for (const op of input.TransactItems as {
          Put?: { TableName: string; Item: Item };
          Delete?: { TableName: string; Key: Item };
          ConditionCheck?: { TableName: string; Key: Item };
        }[]) {
          if (op.Put) write(op.Put.TableName, op.Put.Item, 2 * wru(op.Put.Item), true);
          else {
            const k = op.Delete ?? op.ConditionCheck;
            write(k?.TableName, k?.Key, 2);
          }
        }
      }
      // A sequencer take (UpdateItem) is billed on the larger of the item before and after: the
      // old image it returns (ALL_OLD), plus at most the values it sets when it applied; a refused
      // one on the item as it stands.
      const update = (old: Item | undefined, applied: boolean): void => {
        if (cmd !== 'UpdateItemCommand') return;
        const after: Item = { ...(input.Key as Item), ...old };
        if (applied) {
          // The item after: each `#name = :value` of the SET clause, and numbers (`v`, `if_not_exists`) as 8 digits.
          const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
          const values = (input.ExpressionAttributeValues ?? {}) as Item;
          const set = (typeof input.UpdateExpression === 'string' ? input.UpdateExpression : '').replace(/^SET /, '');
          for (const part of set.split(/,\s*/)) {
            const [, placeholder = '', value = ''] = /^(#\w+) = (.*)$/.exec(part) ?? [];
            const name = names[placeholder];
            if (name === undefined) continue;
            after[name] = values[value] ?? { N: '12345678' };
          }
        }
        const size = Math.max(dynamoItemSize(old ?? {}), dynamoItemSize(after));
        write(input.TableName, input.Key as Item, Math.max(1, Math.ceil(size / 1024)));
      };
      let out: Awaited<ReturnType<typeof next>>;
      try {
        out = await next(args);
      } catch (e) {
        const name = (e as { name?: string }).name;
        if (name === 'ConditionalCheckFailedException' || name === 'TransactionCanceledException') meter.failedWrites++;
        update((e as { Item?: Item }).Item, false);
        throw e;
      }
      update((out.output as { Attributes?: Item }).Attributes, true);
      const o = out.output as { Item?: Item; Items?: Item[]; Responses?: Record<string, Item[]> };
      const read = (table: unknown, key: Item | undefined, units: number): void => {
        meter.readUnits += units;
        add(meter.keyReadUnits, table, key, units);
      };
      if (cmd === 'GetItemCommand') read(input.TableName, input.Key as Item, rru(o.Item ? dynamoItemSize(o.Item) : 0));
      if (cmd === 'QueryCommand') {
        const pk = (input.ExpressionAttributeValues as Record<string, AttributeValue> | undefined)?.[':pk'];
        read(input.TableName, pk && { pk }, rru((o.Items ?? []).reduce((a, i) => a + dynamoItemSize(i), 0)));
      }
      if (cmd === 'BatchGetItemCommand')
        for (const [table, items] of Object.entries(o.Responses ?? {}))
          for (const i of items) read(table, i, rru(dynamoItemSize(i)));
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
