// Faults moto and DynamoDB Local cannot produce, injected with aws-sdk-client-mock (no emulator):
// throttling that outlasts every retry, 5xx answers, S3 SlowDown, cancellations with reasons that
// no retry helps, guards failing without the item, our own write found after a resend, and the
// exact inputs of the guarded writes. Mocked clients skip the SDK's middleware (its retries), so
// an SDK retry shows only as `$metadata.attempts` on the error the mock throws.
import {
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  ProvisionedThroughputExceededException,
  PutItemCommand,
  QueryCommand,
  RequestLimitExceeded,
  ThrottlingException,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { errorResponse } from '../../server/http/errors.js';
import { createAwsStorage } from '../../server/storage/aws/index.js';
import { encodeItem } from '../../server/storage/aws/marshal.js';
import { CONTENTION_RETRIES, THROTTLE_RETRIES } from '../../server/storage/aws/retry.js';
import {
  ConditionFailedError,
  ContentionError,
  StoreUnavailableError,
  TABLES,
  type Item,
  type Storage,
  type TableName,
} from '../../server/storage/port.js';

const TABLE_NAMES = Object.fromEntries(TABLES.map((t) => [t, `t-${t}`])) as Record<TableName, string>;
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

function rig() {
  const dynamodb = new DynamoDBClient({ region: 'us-east-1', credentials });
  const s3 = new S3Client({ region: 'us-east-1', credentials });
  const ddb = mockClient(dynamodb);
  const s3m = mockClient(s3);
  const storage: Storage = createAwsStorage({ tables: TABLE_NAMES, bucket: 'b', dynamodb, s3 });
  return { storage, ddb, s3m };
}

const item = (sk: string, attrs: Item['attrs'] = { n: 1 }, ver = 1): Item => ({ pk: 'p', sk, ver, attrs });
const meta = (httpStatusCode: number, attempts = 3) => ({ httpStatusCode, attempts });

/** Settles `p`, running the adapter's backoff timers (fake) as they come. */
async function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  let done = false;
  const out = p.then(
    (value) => ((done = true), { ok: true as const, value }),
    (error: unknown) => ((done = true), { ok: false as const, error }),
  );
  for (let i = 0; !done && i < 1000; i++) await vi.advanceTimersByTimeAsync(1_000);
  return out;
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  const r = await settle(p);
  if (r.ok) throw new Error('expected a rejection');
  return r.error;
}

function cancelled(reasons: { Code: string; Item?: Record<string, AttributeValue> }[], attempts = 1) {
  return new TransactionCanceledException({
    message: `Transaction cancelled [${reasons.map((r) => r.Code).join(', ')}]`,
    $metadata: meta(400, attempts),
    CancellationReasons: reasons,
  });
}

const ccf = (found?: Record<string, AttributeValue>, attempts = 1) =>
  new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: meta(400, attempts),
    ...(found ? { Item: found } : {}),
  });

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('aws faults: throttling that outlasts the retries', () => {
  const throttles = {
    ProvisionedThroughputExceededException: () =>
      new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: meta(400) }),
    ThrottlingException: () => new ThrottlingException({ message: 'slow down', $metadata: meta(400) }),
    RequestLimitExceeded: () => new RequestLimitExceeded({ message: 'account limit', $metadata: meta(400) }),
  };

  it.each(Object.keys(throttles))(
    '%s on a guarded put: StoreUnavailableError, then 503 with Retry-After',
    async (n) => {
      const { storage, ddb } = rig();
      ddb.on(PutItemCommand).rejects(throttles[n as keyof typeof throttles]());
      const err = await failure(storage.items.put('meta', item('a'), { kind: 'absent' }));
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(err).toMatchObject({ reason: 'throttled', retryAfterSeconds: 2 });
      // The SDK's attempts, then the adapter's own, each a fresh send: nothing else was tried.
      expect(ddb.commandCalls(PutItemCommand)).toHaveLength(1 + THROTTLE_RETRIES);
      expect(ddb.calls()).toHaveLength(1 + THROTTLE_RETRIES);
      const res = errorResponse(err, { error: () => undefined });
      expect(res.statusCode).toBe(503);
      expect(res.headers).toEqual({ 'retry-after': '2' });
      expect(res.body).toMatchObject({ code: 'unavailable', retryAfterSeconds: 2 });
      expect(JSON.stringify(res.body)).not.toContain('t-meta');
    },
  );

  it('on reads and queries too, and a BatchGetItem that never makes progress', async () => {
    const { storage, ddb } = rig();
    ddb.on(GetItemCommand).rejects(throttles.ThrottlingException());
    ddb.on(QueryCommand).rejects(throttles.ProvisionedThroughputExceededException());
    ddb
      .on(BatchGetItemCommand)
      .resolves({ UnprocessedKeys: { 't-log': { Keys: [{ pk: { S: 'p' }, sk: { S: 'a' } }] } } });
    expect(await failure(storage.items.get('meta', { pk: 'p', sk: 'a' }))).toBeInstanceOf(StoreUnavailableError);
    expect(await failure(storage.items.query('meta', 'p'))).toBeInstanceOf(StoreUnavailableError);
    const batch = await failure(storage.items.getMany('log', [{ pk: 'p', sk: 'a' }]));
    expect(batch).toBeInstanceOf(StoreUnavailableError);
    expect(batch).toMatchObject({ reason: 'throttled' });
  });

  it('a writeEach with one write throttled past the retries rejects with StoreUnavailableError', async () => {
    const { storage, ddb } = rig();
    // General behaviour first: aws-sdk-client-mock lets the later, narrower one win.
    ddb.on(PutItemCommand).resolves({});
    ddb.on(PutItemCommand, { Item: encodeItem(item('b')) }).rejects(throttles.ThrottlingException());
    const err = await failure(
      storage.items.writeEach(
        ['a', 'b', 'c'].map((sk) => ({ op: 'put' as const, table: 'dedup' as const, item: item(sk) })),
      ),
    );
    expect(err).toBeInstanceOf(StoreUnavailableError);
  });

  it('a transaction cancelled only by throttling, past its retries: StoreUnavailableError, never a 500', async () => {
    const { storage, ddb } = rig();
    ddb.on(TransactWriteItemsCommand).rejects(cancelled([{ Code: 'ThrottlingError' }, { Code: 'None' }]));
    const err = await failure(
      storage.items.transact([
        { op: 'put', table: 'log', item: item('a'), cond: { kind: 'absent' } },
        { op: 'put', table: 'log', item: item('b'), cond: { kind: 'absent' } },
      ]),
    );
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(ddb.commandCalls(TransactWriteItemsCommand)).toHaveLength(1 + CONTENTION_RETRIES);
    expect(errorResponse(err, { error: () => undefined }).statusCode).toBe(503);
  });

  it('a transaction that keeps conflicting is a ContentionError, answered 503', async () => {
    const { storage, ddb } = rig();
    ddb.on(TransactWriteItemsCommand).rejects(cancelled([{ Code: 'TransactionConflict' }, { Code: 'None' }]));
    const err = await failure(
      storage.items.transact([
        { op: 'put', table: 'log', item: item('a') },
        { op: 'put', table: 'log', item: item('b') },
      ]),
    );
    expect(err).toBeInstanceOf(ContentionError);
    const res = errorResponse(err);
    expect(res).toMatchObject({ statusCode: 503, headers: { 'retry-after': '1' }, body: { code: 'unavailable' } });
  });
});

describe('aws faults: 5xx and no answer', () => {
  it('DynamoDB 500 InternalServerError after the SDK retries: failing, 503', async () => {
    const { storage, ddb } = rig();
    ddb
      .on(PutItemCommand)
      .rejects(
        Object.assign(new Error('Internal server error'), { name: 'InternalServerError', $metadata: meta(500) }),
      );
    const err = await failure(storage.items.put('meta', item('a')));
    expect(err).toMatchObject({ name: 'StoreUnavailableError', reason: 'failing', retryAfterSeconds: 5 });
    // Not throttling: the outcome is unknown, so the adapter does not send it again itself.
    expect(ddb.commandCalls(PutItemCommand)).toHaveLength(1);
    expect(errorResponse(err, { error: () => undefined })).toMatchObject({
      statusCode: 503,
      headers: { 'retry-after': '5' },
    });
  });

  it('a timeout or a refused connection: unreachable, 503', async () => {
    const { storage, ddb } = rig();
    ddb.on(GetItemCommand).rejects(Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} }));
    ddb
      .on(QueryCommand)
      .rejects(Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:443'), { code: 'ECONNREFUSED' }));
    expect(await failure(storage.items.get('meta', { pk: 'p', sk: 'a' }))).toMatchObject({ reason: 'unreachable' });
    const err = await failure(storage.items.query('meta', 'p'));
    expect(err).toMatchObject({ reason: 'unreachable' });
    expect(JSON.stringify(errorResponse(err, { error: () => undefined }).body)).not.toContain('10.0.0.7');
  });
});

describe('aws faults: S3 SlowDown and 503', () => {
  const slowDown = () =>
    new S3ServiceException({
      name: 'SlowDown',
      $fault: 'server',
      message: 'Please reduce your request rate.',
      $metadata: meta(503),
    });
  const unavailable503 = () =>
    new S3ServiceException({
      name: 'ServiceUnavailable',
      $fault: 'server',
      message: 'Service Unavailable',
      $metadata: meta(503),
    });

  it('SlowDown on PUT past the retries: StoreUnavailableError (throttled), 503', async () => {
    const { storage, s3m } = rig();
    s3m.on(PutObjectCommand).rejects(slowDown());
    const err = await failure(storage.blobs.put('segments/x', new Uint8Array([1])));
    expect(err).toMatchObject({ name: 'StoreUnavailableError', reason: 'throttled' });
    expect(s3m.commandCalls(PutObjectCommand)).toHaveLength(1 + THROTTLE_RETRIES);
    expect(errorResponse(err, { error: () => undefined }).statusCode).toBe(503);
  });

  it('503 on GET past the retries: StoreUnavailableError, not "no such blob"', async () => {
    const { storage, s3m } = rig();
    s3m.on(GetObjectCommand).rejects(unavailable503());
    const err = await failure(storage.blobs.get('segments/x'));
    expect(err).toBeInstanceOf(StoreUnavailableError);
  });

  it('a SlowDown that clears within the retries is invisible', async () => {
    const { storage, s3m } = rig();
    s3m.on(PutObjectCommand).rejectsOnce(slowDown()).resolves({});
    expect(await settle(storage.blobs.put('segments/x', new Uint8Array([1])))).toEqual({ ok: true, value: undefined });
  });
});

describe('aws faults: cancellations no retry helps', () => {
  it.each(['ValidationError', 'ItemCollectionSizeLimitExceeded'])(
    '%s mixed with None: sent once, surfaced as it is (neither a guard, nor contention, nor unavailable)',
    async (code) => {
      const { storage, ddb } = rig();
      ddb.on(TransactWriteItemsCommand).rejects(cancelled([{ Code: 'None' }, { Code: code }, { Code: 'None' }]));
      const err = await failure(
        storage.items.transact([
          { op: 'put', table: 'log', item: item('a'), cond: { kind: 'absent' } },
          { op: 'put', table: 'log', item: item('b'), cond: { kind: 'absent' } },
          { op: 'check', table: 'meta', key: { pk: 'p', sk: 'q' }, cond: { kind: 'exists' } },
        ]),
      );
      expect(err).toBeInstanceOf(TransactionCanceledException);
      expect(ddb.commandCalls(TransactWriteItemsCommand)).toHaveLength(1);
      expect(ddb.commandCalls(GetItemCommand)).toHaveLength(0);
    },
  );
});

describe('aws faults: a guard failing without the item', () => {
  it('put-if-absent: the item is read back (consistently), so the caller learns what is there', async () => {
    const { storage, ddb } = rig();
    const there = encodeItem(item('a', { holder: 'other' }, 4));
    ddb.on(PutItemCommand).rejects(ccf());
    ddb.on(GetItemCommand).resolves({ Item: there });
    const err = await failure(storage.items.put('dedup', item('a'), { kind: 'absent' }));
    expect(err).toBeInstanceOf(ConditionFailedError);
    expect((err as ConditionFailedError).failed).toEqual([{ index: 0, current: item('a', { holder: 'other' }, 4) }]);
    expect(ddb.commandCalls(GetItemCommand)[0]?.args[0].input).toEqual({
      TableName: 't-dedup',
      Key: { pk: { S: 'p' }, sk: { S: 'a' } },
      ConsistentRead: true,
    });
  });

  it('a version guard: the key is absent (DynamoDB returns any item it finds), no read', async () => {
    const { storage, ddb } = rig();
    ddb.on(PutItemCommand).rejects(ccf());
    const err = await failure(storage.items.put('leases', item('a', {}, 3), { kind: 'version', ver: 2 }));
    expect((err as ConditionFailedError).failed).toEqual([{ index: 0, current: undefined }]);
    expect(ddb.commandCalls(GetItemCommand)).toHaveLength(0);
  });

  it('in a transaction: put-if-absent reasons without an item are read back, the others stay absent', async () => {
    const { storage, ddb } = rig();
    const there = encodeItem(item('a', { other: true }));
    ddb
      .on(TransactWriteItemsCommand)
      .rejects(cancelled([{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }, { Code: 'ConditionalCheckFailed' }]));
    ddb.on(GetItemCommand).resolves({ Item: there });
    const err = await failure(
      storage.items.transact([
        { op: 'put', table: 'log', item: item('a'), cond: { kind: 'absent' } },
        { op: 'put', table: 'log', item: item('b') },
        { op: 'delete', table: 'leases', key: { pk: 'p', sk: 'c' }, cond: { kind: 'version', ver: 1 } },
      ]),
    );
    expect((err as ConditionFailedError).failed).toEqual([
      { index: 0, current: item('a', { other: true }) },
      { index: 2, current: undefined },
    ]);
    expect(ddb.commandCalls(GetItemCommand)).toHaveLength(1);
  });
});

describe('aws faults: our own write, found after a resend', () => {
  const throttle = () => new ThrottlingException({ message: 'slow down', $metadata: meta(400) });

  it('a put applied, its answer lost, then throttled past the SDK: the adapter resend finds it and succeeds', async () => {
    const { storage, ddb } = rig();
    const mine = item('a', { push: 'p1' });
    // The SDK's last attempt was throttled; our resend trips over the first attempt's item.
    ddb
      .on(PutItemCommand)
      .rejectsOnce(throttle())
      .rejects(ccf(encodeItem(mine)));
    expect(await settle(storage.items.put('dedup', mine, { kind: 'absent' }))).toEqual({ ok: true, value: undefined });
    expect(ddb.commandCalls(PutItemCommand)).toHaveLength(2);
  });

  it('the SDK retry of a lost answer (attempts > 1) finds our item: success', async () => {
    const { storage, ddb } = rig();
    const mine = item('a', { push: 'p1' });
    ddb.on(PutItemCommand).rejects(ccf(encodeItem(mine), 2));
    const r = await settle(
      storage.items.writeEach([{ op: 'put', table: 'dedup', item: mine, cond: { kind: 'absent' } }]),
    );
    expect(r).toEqual({ ok: true, value: [{ ok: true }] });
  });

  it('a first send that finds an identical item is still a failed guard (someone else wrote it)', async () => {
    const { storage, ddb } = rig();
    const mine = item('a', { push: 'p1' });
    ddb.on(PutItemCommand).rejects(ccf(encodeItem(mine)));
    expect(await failure(storage.items.put('dedup', mine, { kind: 'absent' }))).toBeInstanceOf(ConditionFailedError);
  });

  const segmentOps = (marker: Item) =>
    [
      { op: 'put', table: 'log', item: item('S#0', { push: 'p1' }), cond: { kind: 'absent' } },
      { op: 'put', table: 'log', item: marker, cond: { kind: 'absent' } },
      { op: 'put', table: 'leases', item: item('READY', { at: 1 }, 3), cond: { kind: 'version', ver: 2 } },
      { op: 'check', table: 'meta', key: { pk: 'p', sk: 'Q' }, cond: { kind: 'exists' } },
    ] as const;

  it('a transaction applied, then resent by the adapter: every guarded put finds its own item, so it succeeded', async () => {
    const { storage, ddb } = rig();
    const ops = segmentOps(item('M#p1', { state: 'committed' }));
    const found = ops.map((op) => (op.op === 'put' ? encodeItem(op.item) : undefined));
    ddb
      .on(TransactWriteItemsCommand)
      .rejectsOnce(throttle())
      .rejects(
        cancelled([
          { Code: 'ConditionalCheckFailed', Item: found[0] },
          { Code: 'ConditionalCheckFailed', Item: found[1] },
          { Code: 'ConditionalCheckFailed', Item: found[2] },
          { Code: 'None' },
        ]),
      );
    expect(await settle(storage.items.transact([...ops]))).toEqual({ ok: true, value: undefined });
  });

  it('a resent transaction whose guards find someone else’s item is a failed guard', async () => {
    const { storage, ddb } = rig();
    const ops = segmentOps(item('M#p1', { state: 'committed' }));
    ddb
      .on(TransactWriteItemsCommand)
      .rejectsOnce(throttle())
      .rejects(
        cancelled([
          { Code: 'ConditionalCheckFailed', Item: encodeItem(item('S#0', { push: 'p2' })) },
          { Code: 'None' },
          { Code: 'None' },
          { Code: 'None' },
        ]),
      );
    const err = await failure(storage.items.transact([...ops]));
    expect(err).toBeInstanceOf(ConditionFailedError);
    expect((err as ConditionFailedError).failed.map((f) => f.index)).toEqual([0]);
  });

  it('TransactionInProgressException (the SDK retried a send still running): waits, resends, recognises it', async () => {
    const { storage, ddb } = rig();
    const ops = segmentOps(item('M#p1', { state: 'committed' }));
    const found = ops.map((op) => (op.op === 'put' ? encodeItem(op.item) : undefined));
    ddb
      .on(TransactWriteItemsCommand)
      .rejectsOnce(
        Object.assign(new Error('in progress'), { name: 'TransactionInProgressException', $metadata: meta(400) }),
      )
      .rejects(
        cancelled(
          found.map((f) => (f ? { Code: 'ConditionalCheckFailed', Item: f } : { Code: 'None' })),
          1,
        ),
      );
    expect(await settle(storage.items.transact([...ops]))).toEqual({ ok: true, value: undefined });
  });
});

describe('aws faults: the exact inputs of guarded writes and reads', () => {
  it('puts, deletes and transactions carry their guard and ask for the item on failure; reads are consistent', async () => {
    const { storage, ddb } = rig();
    ddb.onAnyCommand().resolves({});
    await settle(storage.items.put('meta', item('a'), { kind: 'absent' }));
    await settle(storage.items.put('meta', item('a', {}, 2), { kind: 'version', ver: 1 }));
    await settle(storage.items.put('meta', item('a', {}, 3)));
    await settle(storage.items.delete('meta', { pk: 'p', sk: 'a' }, { kind: 'exists' }));
    await settle(storage.items.get('meta', { pk: 'p', sk: 'a' }));
    await settle(storage.items.getMany('meta', [{ pk: 'p', sk: 'a' }]));
    await settle(storage.items.query('meta', 'p', { prefix: 'a' }));
    await settle(
      storage.items.transact([
        { op: 'put', table: 'log', item: item('b'), cond: { kind: 'absent' } },
        { op: 'check', table: 'meta', key: { pk: 'p', sk: 'a' }, cond: { kind: 'version', ver: 3 } },
        { op: 'delete', table: 'leases', key: { pk: 'p', sk: 'c' } },
      ]),
    );
    const puts = ddb.commandCalls(PutItemCommand).map((c) => c.args[0].input);
    expect(puts[0]).toEqual({
      TableName: 't-meta',
      Item: encodeItem(item('a')),
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': 'pk' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    expect(puts[1]).toEqual({
      TableName: 't-meta',
      Item: encodeItem(item('a', {}, 2)),
      ConditionExpression: '#v = :v',
      ExpressionAttributeNames: { '#v': 'v' },
      ExpressionAttributeValues: { ':v': { N: '1' } },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    // Unconditional: nothing to report on failure.
    expect(puts[2]).toEqual({ TableName: 't-meta', Item: encodeItem(item('a', {}, 3)) });
    expect(ddb.commandCalls(DeleteItemCommand)[0]?.args[0].input).toEqual({
      TableName: 't-meta',
      Key: { pk: { S: 'p' }, sk: { S: 'a' } },
      ConditionExpression: 'attribute_exists(#pk)',
      ExpressionAttributeNames: { '#pk': 'pk' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    expect(ddb.commandCalls(GetItemCommand)[0]?.args[0].input).toMatchObject({ ConsistentRead: true });
    expect(ddb.commandCalls(BatchGetItemCommand)[0]?.args[0].input).toEqual({
      RequestItems: { 't-meta': { Keys: [{ pk: { S: 'p' }, sk: { S: 'a' } }], ConsistentRead: true } },
    });
    expect(ddb.commandCalls(QueryCommand)[0]?.args[0].input).toMatchObject({ ConsistentRead: true });
    expect(ddb.commandCalls(TransactWriteItemsCommand)[0]?.args[0].input).toEqual({
      TransactItems: [
        {
          Put: {
            TableName: 't-log',
            Item: encodeItem(item('b')),
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#pk': 'pk' },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        {
          ConditionCheck: {
            TableName: 't-meta',
            Key: { pk: { S: 'p' }, sk: { S: 'a' } },
            ConditionExpression: '#v = :v',
            ExpressionAttributeNames: { '#v': 'v' },
            ExpressionAttributeValues: { ':v': { N: '3' } },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        { Delete: { TableName: 't-leases', Key: { pk: { S: 'p' }, sk: { S: 'c' } } } },
      ],
    });
  });
});
