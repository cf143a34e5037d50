/**
 * Counts what the AWS adapter's requests are billed, with an SDK middleware on its clients
 * (the system reports its own cost, docs/DEPLOYING.md, "Operations"; the bench's meter is
 * built on this one).
 */
import type { AttributeValue, ConsumedCapacity, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { readUnitsFor, writeUnitsFor, type StorageUsage } from '../usage.js';

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

const wru = (item: Item | undefined): number => writeUnitsFor(dynamoItemSize(item ?? {}));

/** One item written or read, for meters that break the units down (the bench: by key, segments, dedup). */
export interface MeteredItem {
  /** The physical table name. */
  table: string;
  /** The item written (a put), or the key (a delete, a check, an update, a read). */
  item: Item | undefined;
  /** Units estimated for it (a transaction's doubling included). */
  units: number;
  /** A put of a whole item (its size is known). */
  put: boolean;
}

export interface UsageMeterOptions {
  /**
   * `reported` (default, for production): DynamoDB's ConsumedCapacity (every request asks for
   * TOTAL), falling back to the estimate where a response has none (a refused conditional write
   * is billed but reports nothing). `estimated`: item sizes only, the bench's deterministic model
   * (DynamoDB Local reports transactions unlike DynamoDB).
   */
  units?: 'reported' | 'estimated';
  /** Each request, by service and command name (`PutItemCommand`). */
  onRequest?: (service: 'dynamodb' | 's3', command: string) => void;
  onWrite?: (w: MeteredItem) => void;
  onRead?: (r: MeteredItem) => void;
}

/** The units a request is estimated to cost from its input (writes) and output (reads). */
function estimateWrites(cmd: string, input: Record<string, unknown>, each: (w: MeteredItem) => void): void {
  const table = String(input['TableName']);
  if (cmd === 'PutItemCommand')
    each({ table, item: input['Item'] as Item, units: wru(input['Item'] as Item), put: true });
  // Deletes: one unit each (updates are estimated from what they answer: see estimateUpdate).
  if (cmd === 'DeleteItemCommand') each({ table, item: input['Key'] as Item, units: 1, put: false });
  if (cmd === 'TransactWriteItemsCommand') {
    for (const op of input['TransactItems'] as {
      Put?: { TableName: string; Item: Item };
      Delete?: { TableName: string; Key: Item };
      ConditionCheck?: { TableName: string; Key: Item };
    }[]) {
      if (op.Put) each({ table: op.Put.TableName, item: op.Put.Item, units: 2 * wru(op.Put.Item), put: true });
      else {
        const k = op.Delete ?? op.ConditionCheck;
        each({ table: String(k?.TableName), item: k?.Key, units: 2, put: false });
      }
    }
  }
}

/**
 * An UpdateItem is billed on the larger of the item before and after it. The before image is
 * what it answers (ALL_OLD; a refused one's is on the error); the after image applies its
 * `SET #name = :value` assignments to it (counters and `if_not_exists` keep their size).
 */
function estimateUpdate(input: Record<string, unknown>, old: Item | undefined, applied: boolean): MeteredItem {
  const before = old ?? {};
  let size = dynamoItemSize(before);
  if (applied) {
    const names = (input['ExpressionAttributeNames'] ?? {}) as Record<string, string>;
    const values = (input['ExpressionAttributeValues'] ?? {}) as Item;
    const after: Item = { ...before };
    const expr = ((input['UpdateExpression'] as string | undefined) ?? '').replace(/^\s*SET\s+/i, '');
    for (const m of expr.matchAll(/(#\w+)\s*=\s*(:\w+)\s*(?:,|$)/g)) {
      const name = names[m[1] ?? ''];
      const value = values[m[2] ?? ''];
      if (name !== undefined && value !== undefined) after[name] = value;
    }
    size = Math.max(size, dynamoItemSize(after));
  }
  const units = Math.max(1, Math.ceil(size / 1024));
  return { table: String(input['TableName']), item: input['Key'] as Item, units, put: false };
}

function estimateReads(
  cmd: string,
  input: Record<string, unknown>,
  output: { Item?: Item; Items?: Item[]; Responses?: Record<string, Item[]> },
  each: (r: MeteredItem) => void,
): void {
  const table = String(input['TableName']);
  if (cmd === 'GetItemCommand')
    each({
      table,
      item: input['Key'] as Item,
      units: readUnitsFor(output.Item ? dynamoItemSize(output.Item) : 0),
      put: false,
    });
  if (cmd === 'QueryCommand') {
    const pk = (input['ExpressionAttributeValues'] as Record<string, AttributeValue> | undefined)?.[':pk'];
    const bytes = (output.Items ?? []).reduce((a, i) => a + dynamoItemSize(i), 0);
    each({ table, item: pk && { pk }, units: readUnitsFor(bytes), put: false });
  }
  if (cmd === 'BatchGetItemCommand')
    for (const [t, items] of Object.entries(output.Responses ?? {}))
      for (const i of items) each({ table: t, item: i, units: readUnitsFor(dynamoItemSize(i)), put: false });
}

const reportedUnits = (c: ConsumedCapacity[] | ConsumedCapacity | undefined): number | undefined =>
  c === undefined ? undefined : [c].flat().reduce((n, x) => n + (x.CapacityUnits ?? 0), 0);

const WRITES = new Set([
  'PutItemCommand',
  'DeleteItemCommand',
  'UpdateItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);

/**
 * Adds the counting middleware to the adapter's clients: every DynamoDB request and its write
 * or read units, every S3 PUT, GET, LIST and DELETE, into `usage`.
 *
 * @example
 * ```ts
 * const usage = newStorageUsage();
 * meterAwsClients(dynamodb, s3, usage);
 * await dynamodb.send(new PutItemCommand({ ... })); // usage.writeUnits grows by what DynamoDB reports
 * ```
 */
export function meterAwsClients(
  dynamodb: DynamoDBClient,
  s3: S3Client,
  usage: StorageUsage,
  opts: UsageMeterOptions = {},
): void {
  const reported = (opts.units ?? 'reported') === 'reported';
  dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      const cmd = String(context.commandName ?? 'unknown');
      usage.dynamodbRequests++;
      opts.onRequest?.('dynamodb', cmd);
      const input = args.input as Record<string, unknown>;
      if (reported && cmd !== 'DescribeTableCommand' && cmd !== 'CreateTableCommand')
        args = { ...args, input: { ...input, ReturnConsumedCapacity: 'TOTAL' } };
      let estimated = 0;
      estimateWrites(cmd, input, (w) => {
        estimated += w.units;
        opts.onWrite?.(w);
      });
      let out: Awaited<ReturnType<typeof next>>;
      try {
        out = await next(args);
      } catch (e) {
        const name = (e as { name?: string }).name;
        if (cmd === 'UpdateItemCommand') {
          const w = estimateUpdate(input, (e as { Item?: Item }).Item, false);
          estimated += w.units;
          opts.onWrite?.(w);
        }
        if (name === 'ConditionalCheckFailedException' || name === 'TransactionCanceledException') {
          usage.failedWrites++;
          usage.writeUnits += estimated;
        }
        throw e;
      }
      const o = out.output as {
        Item?: Item;
        Items?: Item[];
        Attributes?: Item;
        Responses?: Record<string, Item[]>;
        ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[];
      };
      if (cmd === 'UpdateItemCommand') {
        const w = estimateUpdate(input, o.Attributes, true);
        estimated += w.units;
        opts.onWrite?.(w);
      }
      let reads = 0;
      estimateReads(cmd, input, o, (r) => {
        reads += r.units;
        opts.onRead?.(r);
      });
      const fromAws = reported ? reportedUnits(o.ConsumedCapacity) : undefined;
      if (WRITES.has(cmd)) usage.writeUnits += fromAws ?? estimated;
      else usage.readUnits += fromAws ?? reads;
      return out;
    },
    { step: 'initialize', name: 'sluiceUsageMeter' },
  );
  s3.middlewareStack.add(
    (next, context) => (args) => {
      const cmd = String(context.commandName ?? 'unknown');
      opts.onRequest?.('s3', cmd);
      if (cmd === 'PutObjectCommand' || cmd === 'CopyObjectCommand') usage.s3Puts++;
      else if (cmd === 'GetObjectCommand' || cmd === 'HeadObjectCommand') usage.s3Gets++;
      else if (cmd === 'ListObjectsV2Command' || cmd === 'ListObjectsCommand') usage.s3Lists++;
      else if (cmd === 'DeleteObjectCommand' || cmd === 'DeleteObjectsCommand') usage.s3Deletes++;
      return next(args);
    },
    { step: 'initialize', name: 'sluiceUsageMeter' },
  );
}
