// AWS-adapter specifics the shared conformance suite cannot reach: table provisioning and item
// layout, retries (transaction conflicts, unprocessed keys, lost responses), query edge cases
// DynamoDB itself would reject, client ownership, and the emulator harness. Faults are injected
// with SDK middleware on clients pointed at the run's emulators (DynamoDB Local, moto for S3).
import {
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  GetItemCommand,
  TransactionCanceledException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand, S3ServiceException, type S3Client } from '@aws-sdk/client-s3';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  createAwsStorage,
  ensureBucket,
  ensureTables,
  ITEM_TABLE_SCHEMA,
  TTL_ATTRIBUTE,
} from '../../server/storage/aws/index.js';
import {
  ConditionFailedError,
  ContentionError,
  TABLES,
  type Item,
  type Storage,
  type TableName,
} from '../../server/storage/port.js';
import { checkingAttrsJson } from '../support/attrs-json-check.js';
import { emulatorClients, emulatorEnv, startAwsEmulators } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';

const endpoints = awsEndpoints();

interface Rig {
  storage: Storage;
  dynamodb: DynamoDBClient;
  s3: S3Client;
  tables: Record<TableName, string>;
  bucket: string;
  /** Command names in the order they were sent (one entry per call, not per SDK attempt). */
  calls: string[];
}

/** Fresh tables, bucket and clients (which the test may instrument) for one test. */
async function rig(opts: { writeConcurrency?: number } = {}): Promise<Rig> {
  const suffix = randomUUID().slice(0, 8);
  const tables = Object.fromEntries(TABLES.map((t) => [t, `adapter-${suffix}-${t}`])) as Record<TableName, string>;
  const bucket = `adapter-${suffix}`;
  const { dynamodb, s3 } = emulatorClients(endpoints);
  await ensureTables(dynamodb, tables);
  await ensureBucket(s3, bucket);
  const calls: string[] = [];
  dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name: 'recordCalls' },
  );
  const storage = checkingAttrsJson(
    createAwsStorage({ tables, bucket, dynamodb, s3, writeConcurrency: opts.writeConcurrency }),
  );
  return { storage, dynamodb, s3, tables, bucket, calls };
}

const item = (pk: string, sk: string, ver = 1, attrs: Item['attrs'] = {}, extra: Partial<Item> = {}): Item => ({
  pk,
  sk,
  ver,
  attrs,
  ...extra,
});

function cancelled(
  codes: { Code: string; Item?: Record<string, { S?: string; N?: string }> }[],
): TransactionCanceledException {
  return new TransactionCanceledException({
    message: `Transaction cancelled [${codes.map((c) => c.Code).join(', ')}]`,
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: codes.map((c) => ({ Code: c.Code, ...(c.Item ? { Item: c.Item as never } : {}) })),
  });
}

/** Makes the next `times` TransactWriteItems calls fail with `error` before reaching the emulator. */
function failTransactions(client: DynamoDBClient, times: number, error: () => Error): { count: () => number } {
  let seen = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand') {
        seen++;
        if (seen <= times) throw error();
      }
      return next(args);
    },
    { step: 'initialize', name: `failTransactions-${randomUUID()}` },
  );
  return { count: () => seen };
}

describe('provisioning', () => {
  it('creates on-demand tables keyed pk/sk with TTL on `ttl`, idempotently', async () => {
    const r = await rig();
    await ensureTables(r.dynamodb, r.tables);
    await ensureBucket(r.s3, r.bucket);
    for (const name of Object.values(r.tables)) {
      const { Table } = await r.dynamodb.send(new DescribeTableCommand({ TableName: name }));
      expect(Table?.TableStatus).toBe('ACTIVE');
      expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      expect(Table?.KeySchema).toEqual([
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ]);
      const ttl = await r.dynamodb.send(new DescribeTimeToLiveCommand({ TableName: name }));
      expect(ttl.TimeToLiveDescription).toEqual({ TimeToLiveStatus: 'ENABLED', AttributeName: TTL_ATTRIBUTE });
    }
    await r.s3.send(new HeadBucketCommand({ Bucket: r.bucket }));
    expect(ITEM_TABLE_SCHEMA.timeToLiveAttribute).toBe('ttl');
    await r.storage.close();
  });

  it('stores items as pk, sk, v (N), a (JSON S), b (B) and ttl (N)', async () => {
    const r = await rig();
    await r.storage.items.put(
      'log',
      item('p', 's', 3, { x: [1, 'y'] }, { bin: new Uint8Array([1, 2]), expiresAt: 1_900_000_000 }),
    );
    const raw = await r.dynamodb.send(
      new GetItemCommand({ TableName: r.tables.log, Key: { pk: { S: 'p' }, sk: { S: 's' } } }),
    );
    expect(raw.Item).toEqual({
      pk: { S: 'p' },
      sk: { S: 's' },
      v: { N: '3' },
      a: { S: '{"x":[1,"y"]}' },
      b: { B: new Uint8Array([1, 2]) },
      ttl: { N: '1900000000' },
    });
    await r.storage.close();
  });
});

describe('transact', () => {
  it('retries TransactionConflict with backoff and then succeeds', async () => {
    const r = await rig();
    const faults = failTransactions(r.dynamodb, 2, () =>
      cancelled([{ Code: 'None' }, { Code: 'TransactionConflict' }]),
    );
    await r.storage.items.transact([
      { op: 'put', table: 'meta', item: item('p', 'a'), cond: { kind: 'absent' } },
      { op: 'put', table: 'meta', item: item('p', 'b'), cond: { kind: 'absent' } },
    ]);
    expect(faults.count()).toBe(3);
    expect((await r.storage.items.query('meta', 'p')).items.map((i) => i.sk)).toEqual(['a', 'b']);
    await r.storage.close();
  });

  it('gives up with ContentionError after its retries, having written nothing', async () => {
    const r = await rig();
    const faults = failTransactions(r.dynamodb, 1_000, () =>
      cancelled([{ Code: 'TransactionConflict' }, { Code: 'None' }]),
    );
    const err = await r.storage.items
      .transact([
        { op: 'put', table: 'meta', item: item('p', 'a') },
        { op: 'delete', table: 'meta', key: { pk: 'p', sk: 'b' } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContentionError);
    expect(faults.count()).toBe(6);
    expect(await r.storage.items.get('meta', { pk: 'p', sk: 'a' })).toBeUndefined();
    await r.storage.close();
  });

  it('maps every ConditionalCheckFailed reason (with its Item) even when others conflicted', async () => {
    const r = await rig();
    const current = { pk: { S: 'p' }, sk: { S: 'b' }, v: { N: '7' }, a: { S: '{"k":1}' } };
    failTransactions(r.dynamodb, 1, () =>
      cancelled([
        { Code: 'None' },
        { Code: 'ConditionalCheckFailed', Item: current },
        { Code: 'TransactionConflict' },
        { Code: 'ConditionalCheckFailed' },
      ]),
    );
    const err = await r.storage.items
      .transact([
        { op: 'put', table: 'meta', item: item('p', 'a') },
        { op: 'put', table: 'meta', item: item('p', 'b'), cond: { kind: 'absent' } },
        { op: 'put', table: 'meta', item: item('p', 'c') },
        { op: 'check', table: 'meta', key: { pk: 'p', sk: 'd' }, cond: { kind: 'exists' } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConditionFailedError);
    expect((err as ConditionFailedError).failed).toEqual([
      { index: 1, current: { pk: 'p', sk: 'b', ver: 7, attrs: { k: 1 } } },
      { index: 3, current: undefined },
    ]);
    await r.storage.close();
  });

  it('rethrows cancellations that are neither guards nor conflicts', async () => {
    const r = await rig();
    failTransactions(r.dynamodb, 1, () => cancelled([{ Code: 'ValidationError' }, { Code: 'None' }]));
    const err = await r.storage.items
      .transact([
        { op: 'put', table: 'meta', item: item('p', 'a') },
        { op: 'put', table: 'meta', item: item('p', 'b') },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionCanceledException);
    await r.storage.close();
  });

  it('sends a lone put or delete as a single-item write, a lone check as a transaction', async () => {
    const r = await rig();
    await r.storage.items.transact([{ op: 'put', table: 'meta', item: item('p', 'a'), cond: { kind: 'absent' } }]);
    await r.storage.items.transact([
      { op: 'delete', table: 'meta', key: { pk: 'p', sk: 'a' }, cond: { kind: 'version', ver: 1 } },
    ]);
    const err = await r.storage.items
      .transact([{ op: 'check', table: 'meta', key: { pk: 'p', sk: 'a' }, cond: { kind: 'exists' } }])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConditionFailedError);
    expect(r.calls.filter((c) => c !== 'DescribeTableCommand')).toEqual([
      'PutItemCommand',
      'DeleteItemCommand',
      'TransactWriteItemsCommand',
    ]);
    await r.storage.close();
  });
});

describe('take', () => {
  it('recognises its own lost-then-retried take, reporting the keys it set as unknown', async () => {
    const r = await rig();
    const key = { pk: 'SEQ#p', sk: 'seq' };
    await r.storage.items.put('log', item(key.pk, key.sk, 5, { w: false, keep: 1 }));
    let dropped = 0;
    r.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === 'UpdateItemCommand' && dropped++ === 0) {
          throw Object.assign(new Error('response lost'), { name: 'TimeoutError', $metadata: {} });
        }
        return out;
      },
      { step: 'deserialize', name: 'loseFirstTakeResponse' },
    );
    const t = await r.storage.items.take('log', key, 3, undefined, { set: { w: true } });
    expect(dropped).toBe(2);
    expect(t.first).toBe(5);
    // Whether `w` was set before is unknown after the retry: absent, not the value the take wrote.
    expect(t.before?.attrs).toEqual({ keep: 1 });
    expect((await r.storage.items.get('log', key))?.ver).toBe(8);
    await r.storage.close();
  });
});

describe('single writes', () => {
  it('treats a guard tripped by its own lost-then-retried write as success', async () => {
    const r = await rig();
    let dropped = 0;
    // Inside the SDK's retry loop: the first PutItem reaches the emulator, then its response is "lost".
    r.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === 'PutItemCommand' && dropped++ === 0) {
          throw Object.assign(new Error('response lost'), { name: 'TimeoutError', $metadata: {} });
        }
        return out;
      },
      { step: 'deserialize', name: 'loseFirstResponse' },
    );
    await r.storage.items.put('claims', item('p', 'k', 1, { me: true }), { kind: 'absent' });
    expect(dropped).toBe(2);
    expect((await r.storage.items.get('claims', { pk: 'p', sk: 'k' }))?.attrs).toEqual({ me: true });

    // Without a retry, an identical item already there is still a failed guard.
    const again = await r.storage.items
      .put('claims', item('p', 'k', 1, { me: true }), { kind: 'absent' })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ConditionFailedError);
    await r.storage.close();
  });

  it('writeEach keeps at most writeConcurrency writes in flight', async () => {
    const r = await rig({ writeConcurrency: 3 });
    let inFlight = 0;
    let peak = 0;
    r.dynamodb.middlewareStack.add(
      (next) => async (args) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        try {
          return await next(args);
        } finally {
          inFlight--;
        }
      },
      { step: 'initialize', name: 'countInFlight' },
    );
    const results = await r.storage.items.writeEach(
      Array.from({ length: 12 }, (_, i) => ({
        op: 'put' as const,
        table: 'dedup' as const,
        item: item('p', `k${i}`),
        cond: { kind: 'absent' as const },
      })),
    );
    expect(results.every((x) => x.ok)).toBe(true);
    expect(peak).toBe(3);
    await r.storage.close();
  });
});

describe('getMany', () => {
  it('retries UnprocessedKeys and answers duplicate keys', async () => {
    const r = await rig();
    await r.storage.items.transact([
      { op: 'put', table: 'meta', item: item('p', 'a', 1) },
      { op: 'put', table: 'meta', item: item('p', 'b', 2) },
      { op: 'put', table: 'meta', item: item('p', 'c', 3) },
    ]);
    let batches = 0;
    // The first BatchGetItem only serves its first key and hands the rest back as unprocessed.
    r.dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'BatchGetItemCommand' || batches++ > 0) return next(args);
        const input = args.input as { RequestItems: Record<string, { Keys: unknown[]; ConsistentRead?: boolean }> };
        const [table, request] = Object.entries(input.RequestItems)[0] ?? [];
        if (table === undefined || request === undefined) return next(args);
        const [first, ...rest] = request.Keys;
        const result = await next({ ...args, input: { RequestItems: { [table]: { ...request, Keys: [first] } } } });
        (result.output as { UnprocessedKeys?: unknown }).UnprocessedKeys = { [table]: { ...request, Keys: rest } };
        return result;
      },
      { step: 'initialize', name: 'partialBatch' },
    );
    const got = await r.storage.items.getMany('meta', [
      { pk: 'p', sk: 'c' },
      { pk: 'p', sk: 'a' },
      { pk: 'p', sk: 'x' },
      { pk: 'p', sk: 'c' },
      { pk: 'p', sk: 'b' },
    ]);
    expect(got.map((i) => i?.ver)).toEqual([3, 1, undefined, 3, 2]);
    expect(batches).toBeGreaterThanOrEqual(2);
    await r.storage.close();
  });
});

describe('query edge cases', () => {
  const sks = ['a', 'a#1', 'a#2', 'b', 'c'];
  async function seeded(): Promise<Rig> {
    const r = await rig();
    await r.storage.items.transact(
      sks.map((sk) => ({ op: 'put' as const, table: 'log' as const, item: item('p', sk) })),
    );
    return r;
  }

  it('accepts an `after` outside the range (DynamoDB would reject that start key)', async () => {
    const r = await seeded();
    const q = async (opts: Parameters<Storage['items']['query']>[2]): Promise<string[]> =>
      (await r.storage.items.query('log', 'p', opts)).items.map((i) => i.sk);
    expect(await q({ gte: 'a#1', lte: 'b', after: '0' })).toEqual(['a#1', 'a#2', 'b']);
    expect(await q({ gte: 'a#1', lte: 'b', after: 'b' })).toEqual([]);
    expect(await q({ gte: 'a#1', lte: 'b', after: 'zz' })).toEqual([]);
    expect(await q({ gte: 'a#1', lte: 'b', after: 'a#1' })).toEqual(['a#2', 'b']);
    expect(await q({ gte: 'a#1', lte: 'b', reverse: true, after: 'zz' })).toEqual(['b', 'a#2', 'a#1']);
    expect(await q({ gte: 'a#1', lte: 'b', reverse: true, after: 'a#1' })).toEqual([]);
    expect(await q({ gte: 'a#1', lte: 'b', reverse: true, after: '0' })).toEqual([]);
    expect(await q({ prefix: 'a#', after: 'a#' })).toEqual(['a#1', 'a#2']);
    expect(await q({ prefix: 'a#', reverse: true, after: 'a#2' })).toEqual(['a#1']);
    expect(await q({ after: 'a#2' })).toEqual(['b', 'c']);
    await r.storage.close();
  });

  it('treats empty bounds and prefixes as absent, and an empty lte as matching nothing', async () => {
    const r = await seeded();
    const q = async (opts: Parameters<Storage['items']['query']>[2]): Promise<string[]> =>
      (await r.storage.items.query('log', 'p', opts)).items.map((i) => i.sk);
    expect(await q({ gte: '', prefix: '' })).toEqual(sks);
    expect(await q({ after: '' })).toEqual(sks);
    expect(await q({ lte: '' })).toEqual([]);
    expect(await q({ prefix: 'a', lte: 'a#1' })).toEqual(['a', 'a#1']);
    expect(await q({ prefix: 'a', gte: 'a#2', lte: 'zzz' })).toEqual(['a#2']);
    await expect(r.storage.items.query('log', 'p', { limit: 0 })).rejects.toThrow(/limit/);
    await r.storage.close();
  });
});

describe('blobs', () => {
  it('retries a 409 ConditionalRequestConflict from S3', async () => {
    const r = await rig();
    let conflicts = 0;
    r.s3.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'PutObjectCommand' && conflicts++ < 2) {
          throw new S3ServiceException({
            name: 'ConditionalRequestConflict',
            $fault: 'client',
            $metadata: { httpStatusCode: 409 },
            message: 'conflict',
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'conflictTwice' },
    );
    await r.storage.blobs.put('k', new Uint8Array([1]), { ifAbsent: true });
    expect(conflicts).toBe(3);
    expect(await r.storage.blobs.get('k')).toEqual(new Uint8Array([1]));
    await r.storage.close();
  });
});

describe('clients', () => {
  it('close() leaves clients it was given usable', async () => {
    const r = await rig();
    await r.storage.close();
    const again = createAwsStorage({ tables: r.tables, bucket: r.bucket, dynamodb: r.dynamodb, s3: r.s3 });
    await again.items.put('meta', item('p', 'k'));
    await again.blobs.put('b', new Uint8Array([2]));
    expect(await again.blobs.get('b')).toEqual(new Uint8Array([2]));
    await again.close();
  });

  it('creates its own clients from AWS_ENDPOINT_URL_DYNAMODB / _S3 (path-style S3) and destroys them on close', async () => {
    const r = await rig();
    const saved = { ...process.env };
    Object.assign(process.env, emulatorEnv(endpoints));
    try {
      const own = createAwsStorage({ tables: r.tables, bucket: r.bucket });
      await own.items.put('meta', item('p', 'env', 4));
      expect((await r.storage.items.get('meta', { pk: 'p', sk: 'env' }))?.ver).toBe(4);
      await own.blobs.put('via-env', new Uint8Array([9]), { ifAbsent: true });
      expect((await own.blobs.list('via')).blobs.map((b) => b.key)).toEqual(['via-env']);
      await own.close();
      await own.close();
    } finally {
      process.env = saved;
    }
    await r.storage.close();
  });
});

describe('clients from AWS_ENDPOINT_URL', () => {
  it('one endpoint for every service (LocalStack style) gets path-style S3', async () => {
    const r = await rig();
    const saved = { ...process.env };
    // moto alone serves S3 here; only the blob store is used, so no tables are needed there.
    Object.assign(process.env, emulatorEnv(endpoints));
    for (const k of ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL_KMS']) delete process.env[k];
    process.env['AWS_ENDPOINT_URL'] = endpoints.s3;
    try {
      const own = createAwsStorage({ tables: r.tables, bucket: r.bucket });
      await own.blobs.put('single-endpoint', new Uint8Array([7]), { ifAbsent: true });
      expect(await r.storage.blobs.get('single-endpoint')).toEqual(new Uint8Array([7]));
      await own.close();
    } finally {
      process.env = saved;
    }
    await r.storage.close();
  });
});

describe('emulator harness', () => {
  it('uses AWS_ENDPOINT_URL when set, without starting anything', async () => {
    const saved = process.env['AWS_ENDPOINT_URL'];
    process.env['AWS_ENDPOINT_URL'] = 'http://localhost:4566';
    try {
      const external = await startAwsEmulators();
      expect(external.endpoints).toEqual({
        dynamodb: 'http://localhost:4566',
        s3: 'http://localhost:4566',
        kms: 'http://localhost:4566',
      });
      await external.stop();
    } finally {
      if (saved === undefined) delete process.env['AWS_ENDPOINT_URL'];
      else process.env['AWS_ENDPOINT_URL'] = saved;
    }
  });

  it('stop() shuts DynamoDB Local and moto down', async () => {
    const saved = process.env['AWS_ENDPOINT_URL'];
    delete process.env['AWS_ENDPOINT_URL'];
    try {
      const own = await startAwsEmulators();
      expect(own.endpoints.dynamodb).not.toBe(own.endpoints.s3);
      expect((await fetch(own.endpoints.s3)).ok).toBe(true);
      // DynamoDB Local answers a bare GET with 400 (no operation named): it is up.
      expect((await fetch(own.endpoints.dynamodb)).status).toBe(400);
      await own.stop();
      await expect(fetch(own.endpoints.s3)).rejects.toThrow();
      await expect(fetch(own.endpoints.dynamodb)).rejects.toThrow();
      await own.stop();
    } finally {
      if (saved !== undefined) process.env['AWS_ENDPOINT_URL'] = saved;
    }
  });

  it('a server dies with the process that started it, even on SIGKILL (the watchdog)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-watchdog-'));
    try {
      const script = join(dir, 'parent.mts');
      // The parent starts a tiny HTTP server under the watchdog, prints its pid, then idles.
      await writeFile(
        script,
        `import { freePort, startWatched } from ${JSON.stringify(watchedModule)};
const port = await freePort();
const code = "require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.argv[1]), '127.0.0.1')";
const server = await startWatched({ name: 'probe', command: process.execPath, args: ['-e', code, String(port)], port });
console.log(server.pid);
setInterval(() => {}, 60_000);
`,
      );
      const parent = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const pid = await new Promise<number>((resolve, reject) => {
        let out = '';
        parent.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(Number(out.trim()));
        });
        parent.once('exit', (c) => reject(new Error(`parent exited (${c}) before starting the server`)));
      });
      expect(alive(pid)).toBe(true);
      parent.kill('SIGKILL');
      const deadline = Date.now() + 10_000;
      while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(alive(pid)).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

const watchedModule = fileURLToPath(new URL('../support/watched-process.ts', import.meta.url));

/** Whether a process exists (signal 0 checks without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
