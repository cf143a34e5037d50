// One concept past 500 lines: the port's items on DynamoDB (reads, guarded writes, transactions, bounded takes, retries).
/**
 * The AWS item store: the port's items over DynamoDB, one table per logical table (see
 * `schema.ts`), items marshalled by `marshal.ts`.
 *
 * Every guarded write asks for `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`, so a failed
 * guard reports the item as found without a second read (and without its race). A failed
 * guard with no item in the answer means the key is absent, except for a put-if-absent: then an
 * emulator ignored the option, and the item is read back.
 * Throttling past the retries, 5xx answers and lost connections surface as the port's
 * `StoreUnavailableError` (`retry.ts`).
 */
import {
  BatchGetItemCommand,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type CancellationReason,
  type DynamoDBClient,
  type QueryCommandInput,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import {
  ConditionFailedError,
  ContentionError,
  MAX_GET_MANY,
  MAX_TRANSACT_OPS,
  StoreUnavailableError,
  TABLES,
  type Condition,
  type Item,
  type ItemKey,
  type ItemStore,
  type Attrs,
  type QueryOptions,
  TakeRefusedError,
  TakeWriteError,
  assertRefuseIf,
  type QueryPage,
  type TakeOptions,
  type Taken,
  type TableName,
  type WriteOp,
  type WriteResult,
} from '../port.js';
import { randomBytes } from 'node:crypto';
import { decodeItem, encodeItem, encodeKey, guard, sameItem, type AvMap } from './marshal.js';
import { SET_ATTRIBUTE_PREFIX, TAKE_TOKEN_ATTRIBUTE } from './schema.js';
import {
  attemptsOf,
  backoff,
  BATCH_GET_STALLS,
  CONTENTION_RETRIES,
  errorName,
  sleep,
  throttled,
  THROTTLED_RETRY_AFTER_S,
} from './retry.js';

/** Compares as DynamoDB orders string keys: by UTF-8 bytes (JS `<` compares UTF-16 units). */
function cmp(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The key of an encoded item. */
const keyOf = (av: AvMap): ItemKey => ({ pk: av['pk']?.S ?? '', sk: av['sk']?.S ?? '' });

/** Above every key that starts with a prefix (but for keys continuing with U+10FFFF itself). */
const PREFIX_END = '\u{10FFFF}';

/**
 * The port's {@link ItemStore} over DynamoDB. `tables` maps each logical table to its physical
 * name; `writeConcurrency` bounds the single-item writes one `writeEach` keeps in flight.
 *
 * @example
 * ```ts
 * const items = new DynamoItemStore(new DynamoDBClient({}), { log: 'sluice-log', ... }, 32);
 * await items.put('meta', { pk: 'queue#q', sk: 'config', ver: 1, attrs: {} }, { kind: 'absent' });
 * ```
 */
export class DynamoItemStore implements ItemStore {
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
    return decodeItem(await this.getRaw(table, key));
  }

  /** The item under `key` as stored (strongly consistent). */
  private async getRaw(table: TableName, key: ItemKey): Promise<AvMap | undefined> {
    const out = await throttled('GetItem', () =>
      this.ddb.send(
        new GetItemCommand({ TableName: this.tableName(table), Key: encodeKey(key), ConsistentRead: true }),
      ),
    );
    return out.Item;
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
      const out = await throttled('BatchGetItem', () =>
        this.ddb.send(new BatchGetItemCommand({ RequestItems: { [name]: { Keys: pending, ConsistentRead: true } } })),
      );
      for (const av of out.Responses?.[name] ?? []) {
        const item = decodeItem(av);
        if (item) found.set(id(item), item);
      }
      const left = out.UnprocessedKeys?.[name]?.Keys ?? [];
      // Unprocessed keys mean throttling or the 16 MB response cap: back off, then ask again.
      stalls = left.length < pending.length ? 0 : stalls + 1;
      if (stalls > BATCH_GET_STALLS) {
        throw new StoreUnavailableError(
          'throttled',
          THROTTLED_RETRY_AFTER_S,
          `BatchGetItem on ${name} made no progress: ${left.length} keys left unprocessed`,
        );
      }
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
    const out = await throttled('Query', () => this.ddb.send(new QueryCommand(input)));
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

    // The SDK does not retry a cancelled transaction; one cancelled only by conflicts (another
    // transaction on the same items in flight) wrote nothing and may be sent again.
    let sends = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        await throttled('TransactWriteItems', () => {
          sends++;
          return this.ddb.send(new TransactWriteItemsCommand({ TransactItems: items }));
        });
        return;
      } catch (err) {
        const name = errorName(err);
        // The SDK's retry of a send whose answer was lost, while that send still runs: its
        // outcome shows once it ends, so wait and send again (a guard then tells, below).
        if (name === 'TransactionInProgressException' && attempt < CONTENTION_RETRIES) {
          await sleep(50 + backoff(attempt, 50, 1_000));
          continue;
        }
        if (name !== 'TransactionCanceledException') throw err;
        const reasons = (err as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [];
        if (reasons.some((r) => r.Code === 'ConditionalCheckFailed')) {
          const found = await Promise.all(
            reasons.map(async (r, i) =>
              r.Code !== 'ConditionalCheckFailed' ? undefined : (r.Item ?? this.missingItem(ops[i] as WriteOp)),
            ),
          );
          if ((sends > 1 || attemptsOf(err) > 1) && appliedBefore(ops, items, found)) return;
          throw new ConditionFailedError(
            reasons.flatMap((r, index) =>
              r.Code === 'ConditionalCheckFailed' ? [{ index, current: decodeItem(found[index]) }] : [],
            ),
          );
        }
        // Only conflicts (or throttling) with nothing else wrong: the whole set can be retried.
        const transient = reasons.filter((r) => r.Code !== 'None' && r.Code !== undefined);
        const conflicts = transient.some((r) => r.Code === 'TransactionConflict');
        const retryable =
          transient.length > 0 &&
          transient.every(
            (r) =>
              r.Code === 'TransactionConflict' ||
              r.Code === 'ThrottlingError' ||
              r.Code === 'ProvisionedThroughputExceeded',
          );
        // A validation error or a full item collection: sending it again cannot help.
        if (!retryable) throw err;
        if (attempt >= CONTENTION_RETRIES) {
          if (conflicts) {
            throw new ContentionError(
              `transaction conflicted ${attempt + 1} times with other writes on the same items`,
              { cause: err },
            );
          }
          throw new StoreUnavailableError(
            'throttled',
            THROTTLED_RETRY_AFTER_S,
            `TransactWriteItems was throttled ${attempt + 1} times`,
            { cause: err },
          );
        }
      }
      await sleep(10 + backoff(attempt, 20, 1_000));
    }
  }

  async take(
    table: TableName,
    key: ItemKey,
    count: number,
    then?: (t: Taken) => WriteOp[],
    opts?: TakeOptions,
  ): Promise<Taken> {
    if (!Number.isInteger(count) || count < 1) throw new Error(`take needs a whole count of 1 or more, got ${count}`);
    if (opts?.refuseIf) assertRefuseIf(opts.refuseIf);
    const taken = await this.takeOnce(table, key, count, opts ?? {});
    if (!then) return taken;
    try {
      const ops = then(taken);
      for (const op of ops) {
        const k = op.op === 'put' ? op.item : op.key;
        if (op.table === table && k.pk === key.pk && k.sk === key.sk)
          throw new Error('the writes after a take must not touch its counter');
      }
      await this.transact(ops);
    } catch (e) {
      throw new TakeWriteError(taken.first, count, true, e);
    }
    return taken;
  }

  /**
   * One UpdateItem raising the counter. Each take stamps the item with a token of its own (`lt`)
   * and is guarded by "the stamp is not mine": if DynamoDB's answer is lost and the SDK sends the
   * take again, the guard fails on our own first attempt and its old image says what we took.
   * Attributes it sets go to top-level attributes of their own (see {@link SET_ATTRIBUTE_PREFIX}),
   * since `a` is one JSON string that an update cannot change a key of; `setFirst` is a number
   * there, the counter's value before. `refuseIf` compares those attributes' JSON text, which
   * for the strings it allows sorts as the strings do (a closing quote sorts below them).
   * With `atMost` the guard also says "the counter stays within the bound"; a failure whose item
   * carries another take's stamp and is past the bound is the bound.
   */
  private async takeOnce(table: TableName, key: ItemKey, count: number, opts: TakeOptions): Promise<Taken> {
    const token = randomBytes(12).toString('base64url');
    const atMost = opts.atMost;
    if (atMost !== undefined && count > atMost) {
      const current = await this.getRaw(table, key);
      throw new ConditionFailedError([{ index: 0, current: decodeItem(current) }]);
    }
    const set: Attrs = opts.set ?? {};
    const setKeys = Object.keys(set);
    const names: Record<string, string> = { '#v': 'v', '#a': 'a', '#lt': TAKE_TOKEN_ATTRIBUTE };
    const values: AvMap = {
      ':zero': { N: '0' },
      ':n': { N: String(count) },
      ':empty': { S: '{}' },
      ':token': { S: token },
    };
    let update = 'SET #v = if_not_exists(#v, :zero) + :n, #a = if_not_exists(#a, :empty), #lt = :token';
    setKeys.forEach((k, i) => {
      names[`#s${i}`] = `${SET_ATTRIBUTE_PREFIX}${k}`;
      values[`:s${i}`] = { S: JSON.stringify(set[k]) };
      update += `, #s${i} = :s${i}`;
    });
    if (opts.setFirst !== undefined) {
      names['#sf'] = `${SET_ATTRIBUTE_PREFIX}${opts.setFirst}`;
      update += ', #sf = if_not_exists(#v, :zero)';
      setKeys.push(opts.setFirst);
    }
    let condition = 'attribute_not_exists(#lt) OR #lt <> :token';
    if (opts.refuseIf) {
      values[':rAfter'] = { S: JSON.stringify(opts.refuseIf.after) };
      values[':rUpTo'] = { S: JSON.stringify(opts.refuseIf.upTo) };
      const refuse = opts.refuseIf.anyOf.map((k, i) => {
        names[`#r${i}`] = `${SET_ATTRIBUTE_PREFIX}${k}`;
        return `(#r${i} > :rAfter AND #r${i} <= :rUpTo)`;
      });
      // DynamoDB refuses redundant parentheses: one range needs no outer pair.
      if (refuse.length === 1) condition = `(${condition}) AND NOT ${refuse[0]}`;
      else if (refuse.length > 1) condition = `(${condition}) AND NOT (${refuse.join(' OR ')})`;
    }
    if (atMost !== undefined) {
      values[':max'] = { N: String(atMost - count) };
      condition = `(${condition}) AND (attribute_not_exists(#v) OR #v <= :max)`;
    }
    try {
      const out = await throttled('UpdateItem', () =>
        this.ddb.send(
          new UpdateItemCommand({
            TableName: this.tableName(table),
            Key: encodeKey(key),
            UpdateExpression: update,
            ConditionExpression: condition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_OLD',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      );
      const before = decodeItem(out.Attributes && Object.keys(out.Attributes).length > 0 ? out.Attributes : undefined);
      return { first: before?.ver ?? 0, before };
    } catch (err) {
      if (errorName(err) !== 'ConditionalCheckFailedException') throw err;
      const found = (err as { Item?: AvMap }).Item ?? (await this.getRaw(table, key));
      if (found?.[TAKE_TOKEN_ATTRIBUTE]?.S !== token) {
        // Not our own earlier attempt: past the bound (nothing taken), else refused by `refuseIf`.
        const current = decodeItem(found);
        if (atMost !== undefined && (current?.ver ?? 0) + count > atMost)
          throw new ConditionFailedError([{ index: 0, current }]);
        throw new TakeRefusedError(current);
      }
      // Our own earlier attempt applied: the item as found is the one just after it.
      const after = decodeItem(found) as Item;
      const first = after.ver - count;
      // What the keys it set held before is gone: report them unknown (absent), as the port says.
      for (const k of setKeys) delete after.attrs[k];
      return {
        first,
        before: first === 0 && Object.keys(after.attrs).length === 0 ? undefined : { ...after, ver: first },
      };
    }
  }

  /**
   * The item a failed guard found when the answer carried none: absent, unless the guard was
   * put-if-absent (DynamoDB returns any item it finds; an emulator may not), then read back.
   */
  private async missingItem(op: WriteOp): Promise<AvMap | undefined> {
    if (op.cond?.kind !== 'absent') return undefined;
    return this.getRaw(op.table, op.op === 'put' ? op.item : op.key);
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
    let sends = 0;
    try {
      await throttled('PutItem', (send) => {
        sends = send + 1;
        return this.ddb.send(
          new PutItemCommand({
            TableName: this.tableName(table),
            Item: av,
            ...guard(cond),
            ...(cond ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
          }),
        );
      });
      return { ok: true };
    } catch (err) {
      if (errorName(err) !== 'ConditionalCheckFailedException') throw err;
      const found =
        (err as { Item?: AvMap }).Item ?? (cond?.kind === 'absent' ? await this.getRaw(table, keyOf(av)) : undefined);
      // The SDK (after a lost response) or `throttled` (after throttled retries of one) sent it
      // again, and it trips over our own earlier send: the item as found is byte-for-byte what
      // we wrote, so the write did happen.
      if ((sends > 1 || attemptsOf(err) > 1) && sameItem(found, av)) return { ok: true };
      return { ok: false, current: decodeItem(found) };
    }
  }

  private async deleteOne(table: TableName, key: ItemKey, cond: Condition | undefined): Promise<WriteResult> {
    try {
      await throttled('DeleteItem', () =>
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
      // A delete guarded by 'absent' fails only on an item: one missing from the answer is read back.
      const found =
        (err as { Item?: AvMap }).Item ?? (cond?.kind === 'absent' ? await this.getRaw(table, key) : undefined);
      return { ok: false, current: decodeItem(found) };
    }
  }
}

/**
 * Whether a transaction cancelled on a repeat send was applied by an earlier send of ours: every
 * guarded put that a repeat must fail (put-if-absent, or a version change) failed on exactly the
 * item it writes. Only our own send writes all of them byte for byte (the segment and marker
 * of a push carry its id).
 */
function appliedBefore(ops: WriteOp[], items: TransactWriteItem[], found: (AvMap | undefined)[]): boolean {
  let proofs = 0;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as WriteOp;
    if (op.op !== 'put' || op.cond === undefined || op.cond.kind === 'exists') continue;
    if (op.cond.kind === 'version' && op.cond.ver === op.item.ver) continue; // a repeat passes its guard
    const sent = items[i]?.Put?.Item;
    if (sent === undefined || !sameItem(found[i], sent)) return false;
    proofs++;
  }
  return proofs > 0;
}
