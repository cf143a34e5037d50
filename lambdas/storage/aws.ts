/**
 * The AWS adapter: the storage port over DynamoDB (items) and S3 (blobs).
 *
 * Each logical table is its own DynamoDB table with the same shape ({@link ITEM_TABLE_SCHEMA}):
 * `pk`/`sk` strings as the key, `v` the caller's version, `a` the attributes as one JSON string
 * (so attribute names never collide with DynamoDB reserved words and an item round-trips
 * exactly), `b` the optional bytes and `ttl` the optional expiry for DynamoDB TTL.
 *
 * Every guarded write asks for `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`, so a failed
 * guard reports the item as found without a second read (and without its race).
 */
import {
  BatchGetItemCommand,
  CreateTableCommand,
  DeleteItemCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type AttributeValue,
  type BillingMode,
  type CancellationReason,
  type KeyType,
  type QueryCommandInput,
  type ScalarAttributeType,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  type BucketLocationConstraint,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import {
  ConditionFailedError,
  ContentionError,
  MAX_GET_MANY,
  MAX_TRANSACT_OPS,
  TABLES,
  type Attrs,
  type BlobInfo,
  type BlobStore,
  type Condition,
  type Item,
  type ItemKey,
  type ItemStore,
  type QueryOptions,
  type QueryPage,
  type Storage,
  type TableName,
  type WriteOp,
  type WriteResult,
} from './port.js';
import { BUCKET_ENV, TABLE_ENV } from './aws-env.js';
import { serializeWrites } from './serialize-writes.js';
import { assertItemSize, attrsJson } from './size.js';

/** Name of the DynamoDB TTL attribute (epoch seconds, {@link Item.expiresAt}). */
export const TTL_ATTRIBUTE = 'ttl';

/**
 * The one table shape every logical table shares. Tests (via {@link ensureTables}) and the CDK
 * stack both build tables from this, so they cannot drift. Type codes are DynamoDB's (`S`, `N`,
 * `B`), which are also the values of CDK's `AttributeType` enum.
 */
export const ITEM_TABLE_SCHEMA = {
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  /** Non-key attributes (not declared to DynamoDB; listed for readers and tests). */
  attributes: {
    version: { name: 'v', type: 'N' },
    attrs: { name: 'a', type: 'S' },
    bin: { name: 'b', type: 'B' },
    expiresAt: { name: TTL_ATTRIBUTE, type: 'N' },
  },
  timeToLiveAttribute: TTL_ATTRIBUTE,
  billingMode: 'PAY_PER_REQUEST',
} as const;

export interface AwsStorageOptions {
  /** Physical DynamoDB table name for each logical table. */
  tables: Record<TableName, string>;
  /** S3 bucket holding the blobs. */
  bucket: string;
  /** A client to use (and not destroy on close). Created from the environment when omitted. */
  dynamodb?: DynamoDBClient | undefined;
  /** A client to use (and not destroy on close). Created from the environment when omitted. */
  s3?: S3Client | undefined;
  /** Region for the clients this adapter creates; the SDK's own resolution when omitted. */
  region?: string | undefined;
  /** Most single-item writes {@link ItemStore.writeEach} keeps in flight (default 32). */
  writeConcurrency?: number | undefined;
  /**
   * Run writes one at a time (see `serialize-writes.ts`): a workaround for moto_server, whose
   * conditional writes and transactions are not atomic under concurrency. Never needed
   * against real DynamoDB. Also turned on by `SLUICE_EMULATOR_SERIALIZE_WRITES=1`.
   */
  serializeWrites?: boolean | undefined;
}

/**
 * Reads the adapter's table and bucket names from the environment (set by the CDK stack on
 * each function). Returns `undefined` when none is set (run embedded); throws when only some are.
 *
 * @example
 * ```ts
 * const config = awsStorageConfigFromEnv();
 * const storage = config ? createAwsStorage(config) : await openEmbeddedStorage({ dataDir });
 * ```
 */
export function awsStorageConfigFromEnv(env: NodeJS.ProcessEnv = process.env): AwsStorageOptions | undefined {
  const names = [...Object.values(TABLE_ENV), BUCKET_ENV];
  const value = (name: string): string | undefined => (env[name] ? env[name] : undefined);
  const missing = names.filter((n) => value(n) === undefined);
  if (missing.length === names.length) return undefined;
  if (missing.length > 0) {
    throw new Error(
      `AWS storage is partly configured: missing ${missing.join(', ')} (set all of ${names.join(', ')} or none)`,
    );
  }
  const tables = Object.fromEntries(TABLES.map((t) => [t, value(TABLE_ENV[t]) as string])) as Record<TableName, string>;
  return { tables, bucket: value(BUCKET_ENV) as string };
}

/**
 * Opens the AWS adapter. Clients not passed in are created once here (honouring
 * `AWS_ENDPOINT_URL*`, so the same code targets moto or LocalStack) and destroyed by `close()`.
 *
 * @example
 * ```ts
 * const storage = createAwsStorage({ tables: { log: 'sluice-log', ... }, bucket: 'sluice-data' });
 * await storage.items.put('meta', { pk: 'queue#q', sk: 'config', ver: 1, attrs: {} }, { kind: 'absent' });
 * ```
 */
export function createAwsStorage(opts: AwsStorageOptions): Storage {
  const ownDynamo = opts.dynamodb === undefined;
  const ownS3 = opts.s3 === undefined;
  const ddb = opts.dynamodb ?? new DynamoDBClient(opts.region ? { region: opts.region } : {});
  const s3 = opts.s3 ?? createS3Client(opts.region);
  const store = new DynamoItemStore(ddb, opts.tables, opts.writeConcurrency ?? 32);
  const isolate = opts.serializeWrites ?? process.env['SLUICE_EMULATOR_SERIALIZE_WRITES'] === '1';
  let closed = false;
  return {
    kind: 'aws',
    items: isolate ? serializeWrites(store) : store,
    blobs: new S3BlobStore(s3, opts.bucket),
    async close() {
      if (closed) return;
      closed = true;
      // Requests are awaited by their callers, so nothing is pending here; just free sockets.
      if (ownDynamo) ddb.destroy();
      if (ownS3) s3.destroy();
    },
  };
}

function createS3Client(region: string | undefined): S3Client {
  const emulated = Boolean(process.env['AWS_ENDPOINT_URL'] || process.env['AWS_ENDPOINT_URL_S3']);
  return new S3Client({
    ...(region ? { region } : {}),
    // Emulators serve buckets by path, not by virtual-host DNS names.
    ...(emulated ? { forcePathStyle: true } : {}),
    // Otherwise stream bodies go out `aws-chunked` and emulators store the framing as data.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

// ---------------------------------------------------------------------------------------------
// Marshalling

type AvMap = Record<string, AttributeValue>;

function encodeKey(key: ItemKey): AvMap {
  return { pk: { S: key.pk }, sk: { S: key.sk } };
}

/**
 * The item as DynamoDB attributes, refused (ItemTooLargeError) over the size limit: the
 * attributes are serialised once, for the check and for the write.
 */
function encodeItem(item: Item): AvMap {
  const json = attrsJson(item);
  assertItemSize(item, json);
  const av: AvMap = {
    pk: { S: item.pk },
    sk: { S: item.sk },
    v: { N: String(item.ver) },
    a: { S: json },
  };
  if (item.bin !== undefined) av['b'] = { B: item.bin };
  if (item.expiresAt !== undefined) av[TTL_ATTRIBUTE] = { N: String(item.expiresAt) };
  return av;
}

function decodeItem(av: AvMap | undefined): Item | undefined {
  if (av === undefined) return undefined;
  const pk = av['pk']?.S;
  const sk = av['sk']?.S;
  const v = av['v']?.N;
  const a = av['a']?.S;
  if (pk === undefined || sk === undefined || v === undefined || a === undefined) {
    throw new Error(`malformed item in DynamoDB (attributes: ${Object.keys(av).join(', ')})`);
  }
  const item: Item = { pk, sk, ver: Number(v), attrs: JSON.parse(a) as Attrs };
  const b = av['b']?.B;
  // Copy: the SDK hands out views into a shared decode buffer.
  if (b !== undefined) item.bin = new Uint8Array(b);
  const ttl = av[TTL_ATTRIBUTE]?.N;
  if (ttl !== undefined) item.expiresAt = Number(ttl);
  return item;
}

/** True when a stored item (as returned on a failed guard) is exactly what `sent` wrote. */
function sameItem(found: AvMap | undefined, sent: AvMap): boolean {
  if (found === undefined) return false;
  const keys = new Set([...Object.keys(found), ...Object.keys(sent)]);
  for (const k of keys) {
    const x = found[k];
    const y = sent[k];
    if (x === undefined || y === undefined) return false;
    if (x.S !== y.S || x.N !== y.N) return false;
    if ((x.B === undefined) !== (y.B === undefined)) return false;
    if (x.B !== undefined && y.B !== undefined && Buffer.compare(x.B, y.B) !== 0) return false;
  }
  return true;
}

interface Guard {
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: AvMap;
}

function guard(cond: Condition): Guard & { ConditionExpression: string };
function guard(cond: Condition | undefined): Guard;
function guard(cond: Condition | undefined): Guard {
  // Names go through placeholders so no attribute ever trips DynamoDB's reserved words.
  switch (cond?.kind) {
    case undefined:
      return {};
    case 'absent':
      return { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };
    case 'exists':
      return { ConditionExpression: 'attribute_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };
    case 'version':
      return {
        ConditionExpression: '#v = :v',
        ExpressionAttributeNames: { '#v': 'v' },
        ExpressionAttributeValues: { ':v': { N: String(cond.ver) } },
      };
  }
}

/** Compares as DynamoDB orders string keys: by UTF-8 bytes (JS `<` compares UTF-16 units). */
function cmp(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Above every key that starts with a prefix (but for keys continuing with U+10FFFF itself). */
const PREFIX_END = '\u{10FFFF}';

// ---------------------------------------------------------------------------------------------
// Retries

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Full-jitter exponential backoff. */
const backoff = (attempt: number, baseMs: number, capMs: number): number =>
  Math.random() * Math.min(capMs, baseMs * 2 ** attempt);

const THROTTLED = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'SlowDown',
  'ServiceUnavailable',
]);

const errorName = (err: unknown): string | undefined =>
  typeof err === 'object' && err !== null && 'name' in err && typeof err.name === 'string' ? err.name : undefined;

/**
 * Retries throttling past the SDK's own (3) attempts: a throttled request was not applied, so
 * repeating it is safe even for a conditional write.
 */
async function throttled<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= 4 || !THROTTLED.has(errorName(err) ?? '')) throw err;
      await sleep(100 + backoff(attempt, 100, 2_000));
    }
  }
}

/** The SDK's attempt count on a failed call (>1 means an earlier attempt may have applied). */
function attemptsOf(err: unknown): number {
  if (typeof err === 'object' && err !== null && '$metadata' in err) {
    const meta = (err as { $metadata?: { attempts?: number } }).$metadata;
    return meta?.attempts ?? 1;
  }
  return 1;
}

const CONTENTION_RETRIES = 5;

// ---------------------------------------------------------------------------------------------
// Items

class DynamoItemStore implements ItemStore {
  constructor(
    private readonly ddb: DynamoDBClient,
    private readonly tables: Record<TableName, string>,
    private readonly writeConcurrency: number,
  ) {
    if (!Number.isInteger(writeConcurrency) || writeConcurrency < 1) {
      throw new Error(`writeConcurrency must be a positive integer, got ${writeConcurrency}`);
    }
    const missing = TABLES.filter((t) => !tables[t]);
    if (missing.length > 0) throw new Error(`no DynamoDB table name for: ${missing.join(', ')}`);
  }

  private tableName(table: TableName): string {
    const name = this.tables[table];
    if (!name) throw new Error(`no DynamoDB table configured for '${table}'`);
    return name;
  }

  async get(table: TableName, key: ItemKey): Promise<Item | undefined> {
    const out = await throttled(() =>
      this.ddb.send(
        new GetItemCommand({ TableName: this.tableName(table), Key: encodeKey(key), ConsistentRead: true }),
      ),
    );
    return decodeItem(out.Item);
  }

  async getMany(table: TableName, keys: ItemKey[]): Promise<(Item | undefined)[]> {
    if (keys.length > MAX_GET_MANY) throw new Error(`getMany takes at most ${MAX_GET_MANY} keys, got ${keys.length}`);
    if (keys.length === 0) return [];
    const name = this.tableName(table);
    const id = (k: ItemKey): string => JSON.stringify([k.pk, k.sk]);
    // BatchGetItem rejects duplicate keys, so ask once per distinct key and fan back out.
    const distinct = new Map<string, ItemKey>();
    for (const k of keys) distinct.set(id(k), k);
    const found = new Map<string, Item>();
    let pending: AvMap[] = [...distinct.values()].map(encodeKey);
    for (let stalls = 0; pending.length > 0;) {
      const out = await throttled(() =>
        this.ddb.send(new BatchGetItemCommand({ RequestItems: { [name]: { Keys: pending, ConsistentRead: true } } })),
      );
      for (const av of out.Responses?.[name] ?? []) {
        const item = decodeItem(av);
        if (item) found.set(id(item), item);
      }
      const left = out.UnprocessedKeys?.[name]?.Keys ?? [];
      // Unprocessed keys mean throttling or the 16 MB response cap: back off, then ask again.
      stalls = left.length < pending.length ? 0 : stalls + 1;
      if (stalls > 8) throw new Error(`BatchGetItem on ${name} made no progress: ${left.length} keys left unprocessed`);
      pending = left;
      if (pending.length > 0) await sleep(backoff(stalls, 50, 2_000));
    }
    return keys.map((k) => found.get(id(k)));
  }

  async query(table: TableName, pk: string, opts: QueryOptions = {}): Promise<QueryPage> {
    const { limit, reverse = false } = opts;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
      throw new Error(`query limit must be a positive integer, got ${limit}`);
    }
    const empty: QueryPage = { items: [] };
    // Empty strings: DynamoDB stores no empty key, and refuses them as condition operands.
    const prefix = opts.prefix || undefined;
    let lo = opts.gte || undefined;
    let hi = opts.lte;
    if (hi === '') return empty;
    // One sort-key condition only: fold prefix and bounds into a single [lo, hi] range.
    if (prefix !== undefined) {
      if (lo === undefined || cmp(prefix, lo) > 0) lo = prefix;
      const end = prefix + PREFIX_END;
      if (hi === undefined || cmp(end, hi) < 0) hi = end;
    }
    if (lo !== undefined && hi !== undefined && cmp(lo, hi) > 0) return empty;

    // DynamoDB rejects a start key outside the key condition's range; settle those here.
    let after = opts.after;
    if (after !== undefined) {
      if (!reverse) {
        if (hi !== undefined && cmp(after, hi) >= 0) return empty;
        if (lo !== undefined && cmp(after, lo) < 0) after = undefined;
      } else {
        if (lo !== undefined && cmp(after, lo) <= 0) return empty;
        if (hi !== undefined && cmp(after, hi) > 0) after = undefined;
      }
      if (after === '') after = undefined;
    }

    const names: Record<string, string> = { '#pk': 'pk' };
    const values: AvMap = { ':pk': { S: pk } };
    let keyCond = '#pk = :pk';
    if (prefix !== undefined && lo === prefix && hi === prefix + PREFIX_END) {
      // The bounds did not narrow the prefix: begins_with is exact (no U+10FFFF corner).
      keyCond += ' AND begins_with(#sk, :p)';
      values[':p'] = { S: prefix };
    } else if (lo !== undefined && hi !== undefined) {
      keyCond += ' AND #sk BETWEEN :lo AND :hi';
      values[':lo'] = { S: lo };
      values[':hi'] = { S: hi };
    } else if (lo !== undefined) {
      keyCond += ' AND #sk >= :lo';
      values[':lo'] = { S: lo };
    } else if (hi !== undefined) {
      keyCond += ' AND #sk <= :hi';
      values[':hi'] = { S: hi };
    }
    if (keyCond.includes('#sk')) names['#sk'] = 'sk';

    const input: QueryCommandInput = {
      TableName: this.tableName(table),
      KeyConditionExpression: keyCond,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ConsistentRead: true,
      ScanIndexForward: !reverse,
      ...(limit !== undefined ? { Limit: limit } : {}),
      ...(after !== undefined ? { ExclusiveStartKey: { pk: { S: pk }, sk: { S: after } } } : {}),
    };
    const out = await throttled(() => this.ddb.send(new QueryCommand(input)));
    const items = (out.Items ?? []).map((av) => decodeItem(av) as Item);
    // LastEvaluatedKey can come with an exactly-full page: `next` only promises "more MAY follow".
    if (out.LastEvaluatedKey === undefined) return { items };
    return { items, next: items.at(-1)?.sk ?? out.LastEvaluatedKey['sk']?.S };
  }

  async put(table: TableName, item: Item, cond?: Condition): Promise<void> {
    const outcome = await this.putOne(table, encodeItem(item), cond);
    if (!outcome.ok) throw new ConditionFailedError([{ index: 0, current: outcome.current }]);
  }

  async delete(table: TableName, key: ItemKey, cond?: Condition): Promise<void> {
    const outcome = await this.deleteOne(table, key, cond);
    if (!outcome.ok) throw new ConditionFailedError([{ index: 0, current: outcome.current }]);
  }

  async writeEach(ops: WriteOp[]): Promise<WriteResult[]> {
    // Encoded (and size-checked) before any write starts, so a bad op writes nothing.
    const encoded = ops.map((op) => {
      if (op.op === 'check') throw new Error("writeEach does not take 'check' ops (transactions only)");
      return op.op === 'put' ? encodeItem(op.item) : undefined;
    });
    const results: WriteResult[] = new Array<WriteResult>(ops.length);
    let next = 0;
    let failure: { err: unknown } | undefined;
    // A small worker pool; on an unexpected error, stop starting new writes but let the ones in
    // flight settle, so nothing is still writing after this call rejects.
    const worker = async (): Promise<void> => {
      while (failure === undefined && next < ops.length) {
        const i = next++;
        const op = ops[i] as WriteOp;
        try {
          if (op.op === 'put') results[i] = await this.putOne(op.table, encoded[i] as AvMap, op.cond);
          else if (op.op === 'delete') results[i] = await this.deleteOne(op.table, op.key, op.cond);
        } catch (err) {
          failure ??= { err };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.writeConcurrency, ops.length) }, worker));
    if (failure !== undefined) throw failure.err;
    return results;
  }

  async transact(ops: WriteOp[]): Promise<void> {
    if (ops.length > MAX_TRANSACT_OPS)
      throw new Error(`transact takes at most ${MAX_TRANSACT_OPS} ops, got ${ops.length}`);
    const seen = new Set<string>();
    const items = ops.map((op) => {
      const key = op.op === 'put' ? op.item : op.key;
      const id = JSON.stringify([op.table, key.pk, key.sk]);
      if (seen.has(id)) throw new Error(`transact has more than one op on ${op.table} ${key.pk} ${key.sk}`);
      seen.add(id);
      return this.transactItem(op);
    });
    if (ops.length === 0) return;
    const only = ops.length === 1 ? ops[0] : undefined;
    // A lone put or delete is atomic by itself, at half a transaction's write units.
    if (only?.op === 'put') {
      const outcome = await this.putOne(only.table, items[0]?.Put?.Item as AvMap, only.cond);
      if (!outcome.ok) throw new ConditionFailedError([{ index: 0, current: outcome.current }]);
      return;
    }
    if (only?.op === 'delete') return this.delete(only.table, only.key, only.cond);

    for (let attempt = 0; ; attempt++) {
      try {
        await throttled(() => this.ddb.send(new TransactWriteItemsCommand({ TransactItems: items })));
        return;
      } catch (err) {
        if (errorName(err) !== 'TransactionCanceledException') throw err;
        const reasons = (err as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [];
        const failed = reasons.flatMap((r, index) =>
          r.Code === 'ConditionalCheckFailed' ? [{ index, current: decodeItem(r.Item) }] : [],
        );
        if (failed.length > 0) throw new ConditionFailedError(failed);
        // Only conflicts (or throttling) with nothing else wrong: the whole set can be retried.
        const transient = reasons.filter((r) => r.Code !== 'None' && r.Code !== undefined);
        const retryable =
          transient.length > 0 &&
          transient.every(
            (r) =>
              r.Code === 'TransactionConflict' ||
              r.Code === 'ThrottlingError' ||
              r.Code === 'ProvisionedThroughputExceeded',
          );
        if (!retryable) throw err;
        if (attempt >= CONTENTION_RETRIES) {
          if (transient.some((r) => r.Code === 'TransactionConflict')) {
            throw new ContentionError(
              `transaction conflicted ${attempt + 1} times with other writes on the same items`,
              { cause: err },
            );
          }
          throw err;
        }
      }
      await sleep(10 + backoff(attempt, 20, 1_000));
    }
  }

  private transactItem(op: WriteOp): TransactWriteItem {
    const TableName = this.tableName(op.table);
    const g = guard(op.cond);
    const onFail = op.cond ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {};
    switch (op.op) {
      case 'put':
        return { Put: { TableName, Item: encodeItem(op.item), ...g, ...onFail } };
      case 'delete':
        return { Delete: { TableName, Key: encodeKey(op.key), ...g, ...onFail } };
      case 'check':
        return { ConditionCheck: { TableName, Key: encodeKey(op.key), ...guard(op.cond), ...onFail } };
    }
  }

  private async putOne(table: TableName, av: AvMap, cond: Condition | undefined): Promise<WriteResult> {
    try {
      await throttled(() =>
        this.ddb.send(
          new PutItemCommand({
            TableName: this.tableName(table),
            Item: av,
            ...guard(cond),
            ...(cond ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
          }),
        ),
      );
      return { ok: true };
    } catch (err) {
      if (errorName(err) !== 'ConditionalCheckFailedException') throw err;
      const found = (err as { Item?: AvMap }).Item;
      // The SDK retried after a lost response and now trips over our own first attempt: the
      // item as found is byte-for-byte what we wrote, so the write did happen.
      if (attemptsOf(err) > 1 && sameItem(found, av)) return { ok: true };
      return { ok: false, current: decodeItem(found) };
    }
  }

  private async deleteOne(table: TableName, key: ItemKey, cond: Condition | undefined): Promise<WriteResult> {
    try {
      await throttled(() =>
        this.ddb.send(
          new DeleteItemCommand({
            TableName: this.tableName(table),
            Key: encodeKey(key),
            ...guard(cond),
            ...(cond ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
          }),
        ),
      );
      return { ok: true };
    } catch (err) {
      if (errorName(err) !== 'ConditionalCheckFailedException') throw err;
      return { ok: false, current: decodeItem((err as { Item?: AvMap }).Item) };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Blobs

class S3BlobStore implements BlobStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  async put(key: string, bytes: Uint8Array, opts: { ifAbsent?: boolean } = {}): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await throttled(() =>
          this.s3.send(
            new PutObjectCommand({
              Bucket: this.bucket,
              Key: key,
              Body: bytes,
              ...(opts.ifAbsent ? { IfNoneMatch: '*' } : {}),
            }),
          ),
        );
        return;
      } catch (err) {
        const name = errorName(err);
        if (name === 'PreconditionFailed' || statusOf(err) === 412) {
          throw new ConditionFailedError([{ index: 0, current: undefined }]);
        }
        // S3 answers 409 when a concurrent conditional write to the key is in progress; the
        // retry then sees the winner's object (412) or succeeds.
        if ((name === 'ConditionalRequestConflict' || statusOf(err) === 409) && attempt < 5) {
          await sleep(backoff(attempt, 50, 1_000));
          continue;
        }
        throw err;
      }
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      const out = await throttled(() => this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key })));
      if (out.Body === undefined) return new Uint8Array(0);
      return await out.Body.transformToByteArray();
    } catch (err) {
      if (errorName(err) === 'NoSuchKey' || statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    // S3 deletes are idempotent: a missing key answers 204 like a present one.
    await throttled(() => this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })));
  }

  async list(
    prefix: string,
    opts: { after?: string | undefined; limit?: number | undefined } = {},
  ): Promise<{ blobs: BlobInfo[]; next?: string | undefined }> {
    const { after, limit } = opts;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
      throw new Error(`list limit must be a positive integer, got ${limit}`);
    }
    const out = await throttled(() =>
      this.s3.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(after ? { StartAfter: after } : {}),
          ...(limit !== undefined ? { MaxKeys: limit } : {}),
        }),
      ),
    );
    const blobs: BlobInfo[] = (out.Contents ?? []).map((o) => ({
      key: o.Key ?? '',
      size: o.Size ?? 0,
      modifiedAt: o.LastModified?.getTime() ?? 0,
    }));
    const last = blobs.at(-1)?.key;
    return out.IsTruncated && last !== undefined ? { blobs, next: last } : { blobs };
  }
}

function statusOf(err: unknown): number | undefined {
  if (typeof err === 'object' && err !== null && '$metadata' in err) {
    return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Provisioning for tests and local development (production tables come from the CDK stack)

/**
 * Creates any missing table (on-demand, TTL on {@link TTL_ATTRIBUTE}) and waits for it to be
 * active. For emulators and local development only; the CDK stack owns real tables.
 *
 * @example
 * ```ts
 * await ensureTables(new DynamoDBClient({ endpoint }), { log: 't-log', meta: 't-meta', ... });
 * ```
 */
export async function ensureTables(client: DynamoDBClient, tables: Record<TableName, string>): Promise<void> {
  const s = ITEM_TABLE_SCHEMA;
  await Promise.all(
    Object.values(tables).map(async (TableName) => {
      try {
        await client.send(
          new CreateTableCommand({
            TableName,
            AttributeDefinitions: [
              { AttributeName: s.partitionKey.name, AttributeType: s.partitionKey.type as ScalarAttributeType },
              { AttributeName: s.sortKey.name, AttributeType: s.sortKey.type as ScalarAttributeType },
            ],
            KeySchema: [
              { AttributeName: s.partitionKey.name, KeyType: 'HASH' as KeyType },
              { AttributeName: s.sortKey.name, KeyType: 'RANGE' as KeyType },
            ],
            BillingMode: s.billingMode as BillingMode,
          }),
        );
      } catch (err) {
        if (errorName(err) !== 'ResourceInUseException') throw err;
      }
      await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName });
      const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName }));
      const status = ttl.TimeToLiveDescription?.TimeToLiveStatus;
      if (status !== 'ENABLED' && status !== 'ENABLING') {
        await client.send(
          new UpdateTimeToLiveCommand({
            TableName,
            TimeToLiveSpecification: { AttributeName: s.timeToLiveAttribute, Enabled: true },
          }),
        );
      }
    }),
  );
}

/**
 * Creates the bucket if it is missing. For emulators and local development only.
 *
 * @example
 * ```ts
 * await ensureBucket(new S3Client({ endpoint, forcePathStyle: true }), 'sluice-test-1a2b');
 * ```
 */
export async function ensureBucket(s3: S3Client, bucket: string): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    return;
  } catch (err) {
    if (errorName(err) !== 'NotFound' && errorName(err) !== 'NoSuchBucket' && statusOf(err) !== 404) throw err;
  }
  const region = await s3.config.region();
  try {
    await s3.send(
      new CreateBucketCommand({
        Bucket: bucket,
        // us-east-1 is the one region that refuses an explicit location constraint.
        ...(region && region !== 'us-east-1'
          ? { CreateBucketConfiguration: { LocationConstraint: region as BucketLocationConstraint } }
          : {}),
      }),
    );
  } catch (err) {
    if (errorName(err) !== 'BucketAlreadyOwnedByYou') throw err;
  }
}
