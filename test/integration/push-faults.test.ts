// Pushes under storage faults, end to end over real adapters: on the AWS backend (DynamoDB Local,
// moto) with faults injected by SDK middleware inside the SDK's retry loop (a lost answer, then
// throttling), and on the embedded backend with a database that may not grow (a full disk).
// What must hold: a push answers what it did (its own write after a lost answer is `queued`,
// never `duplicate`, and stored once); a push that stored nothing answers the storage-failure
// status (503 with Retry-After, 507), never 201 with every item failed; `/health` and `/ready`
// tell the same story.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Grants } from '../../server/http/grants.js';
import { makeHandler } from '../../server/http/handler.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { startLocalServer, type LocalServer } from '../../server/local/server.js';
import type { PushItem } from '../../server/service/log/push.js';
import type { Services } from '../../server/service/runtime.js';
import { createAwsStorage, ensureBucket, ensureTables } from '../../server/storage/aws/index.js';
import { FileBlobStore } from '../../server/storage/embedded/blob-store.js';
import { SqliteItemStore } from '../../server/storage/embedded/item-store.js';
import { openDatabase } from '../../server/storage/embedded/schema.js';
import {
  StoreFullError,
  StoreUnavailableError,
  TABLES,
  type Storage,
  type TableName,
} from '../../server/storage/port.js';
import { emulatorClients } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { json, testServices, text, type TestClock } from '../support/services.js';

type Svc = Services & { testClock: TestClock };

interface Input {
  TableName?: string;
  Item?: { sk?: { S?: string } };
  TransactItems?: { Put?: { TableName?: string; Item?: { sk?: { S?: string } } } }[];
}

/** Fresh tables and bucket on the run's emulators, with the DynamoDB client a test instruments. */
async function awsRig(): Promise<{ storage: Storage; dynamodb: DynamoDBClient; tables: Record<TableName, string> }> {
  const suffix = randomUUID().slice(0, 8);
  const tables = Object.fromEntries(TABLES.map((t) => [t, `faults-${suffix}-${t}`])) as Record<TableName, string>;
  const bucket = `faults-${suffix}`;
  const { dynamodb, s3 } = emulatorClients(awsEndpoints());
  await ensureTables(dynamodb, tables);
  await ensureBucket(s3, bucket);
  return { storage: createAwsStorage({ tables, bucket, dynamodb, s3 }), dynamodb, tables };
}

const throttle = (): Error =>
  Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ThrottlingException',
    $metadata: { httpStatusCode: 400 },
  });

/**
 * Inside the SDK's retry loop, on the first request `matches` picks: its first attempt reaches
 * the emulator and is applied, then its answer is lost; with `thenThrottle`, every further
 * attempt of that request is throttled (so the SDK gives up and the adapter sends it again).
 */
function loseFirstAnswer(
  client: DynamoDBClient,
  matches: (command: string, input: Input) => boolean,
  opts: { thenThrottle: boolean },
): { lost: () => number; throttled: () => number } {
  let victim: object | undefined;
  let lost = 0;
  let throttled = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input: Input }).input;
      if (victim === undefined && matches(context.commandName ?? '', input)) {
        victim = input;
        await next(args);
        lost++;
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} });
      }
      if (input === victim && opts.thenThrottle) {
        throttled++;
        throw throttle();
      }
      return next(args);
    },
    { step: 'deserialize', name: `loseFirstAnswer-${randomUUID()}` },
  );
  return { lost: () => lost, throttled: () => throttled };
}

/** Every segment commit (a put of `S#…` alone or in a transaction) is throttled before it is sent, while `on()`. */
function throttleCommits(client: DynamoDBClient, on: () => boolean): { count: () => number } {
  let count = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input: Input }).input;
      if (on() && commitsSegment(context.commandName ?? '', input)) {
        count++;
        throw throttle();
      }
      return next(args);
    },
    { step: 'initialize', name: `throttleCommits-${randomUUID()}` },
  );
  return { count: () => count };
}

const isSegment = (sk: string | undefined): boolean => sk?.startsWith('S#') ?? false;
const commitsSegment = (command: string, input: Input): boolean =>
  (command === 'PutItemCommand' && isSegment(input.Item?.sk?.S)) ||
  (command === 'TransactWriteItemsCommand' && (input.TransactItems ?? []).some((t) => isSegment(t.Put?.Item?.sk?.S)));

const items = (queue: string, n: number, txids: boolean): PushItem[] =>
  Array.from({ length: n }, (_, i) => ({
    queue,
    payload: json({ i }),
    ...(txids ? { transactionId: `${queue}-tx-${i}` } : {}),
  }));

/** Every message stored in the queue's default partition, as payload texts. */
async function stored(svc: Svc, queue: string): Promise<string[]> {
  const part = await svc.queues.getPartition(queue, 'Default');
  if (!part) return [];
  return (await svc.segments.read(part.id, 0, { maxCount: 1000 })).map((m) => text(m.payload));
}

async function serve(svc: Svc): Promise<LocalServer> {
  const handler = makeHandler(ALL_ROUTES, { services: async () => svc, grants: Grants.open() });
  return startLocalServer({ handler, host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 22 });
}

async function call(server: LocalServer, method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
}

describe('push faults on AWS: a lost answer inside one request', () => {
  it('on a dedup reservation (the SDK retries): fresh items come back queued, stored once', async () => {
    const r = await awsRig();
    const svc = testServices(r.storage);
    const fault = loseFirstAnswer(
      r.dynamodb,
      (cmd, input) => cmd === 'PutItemCommand' && input.TableName === r.tables.dedup,
      { thenThrottle: false },
    );
    const res = await svc.pushes.push(items('resv', 3, true));
    expect(fault.lost()).toBe(1);
    expect(res.map((x) => [x.status, x.offset])).toEqual([
      ['queued', 0],
      ['queued', 1],
      ['queued', 2],
    ]);
    expect(await stored(svc, 'resv')).toEqual(['{"i":0}', '{"i":1}', '{"i":2}']);
    // The client's own retry is a duplicate of the original, with its message ids (Queen's rule).
    const again = await svc.pushes.push(items('resv', 3, true));
    expect(again.map((x) => [x.status, x.messageId])).toEqual(res.map((x) => ['duplicate', x.messageId]));
    await r.storage.close();
  });

  it('on a dedup reservation, then throttled past the SDK (the adapter sends it again): queued', async () => {
    const r = await awsRig();
    const svc = testServices(r.storage);
    const fault = loseFirstAnswer(
      r.dynamodb,
      (cmd, input) => cmd === 'PutItemCommand' && input.TableName === r.tables.dedup,
      { thenThrottle: true },
    );
    const res = await svc.pushes.push(items('resv2', 2, true));
    expect([fault.lost(), fault.throttled() > 0]).toEqual([1, true]);
    expect(res.map((x) => x.status)).toEqual(['queued', 'queued']);
    expect(await stored(svc, 'resv2')).toEqual(['{"i":0}', '{"i":1}']);
    await r.storage.close();
  });

  it('on the segment commit transaction (the SDK retries): queued, stored once', async () => {
    const r = await awsRig();
    const svc = testServices(r.storage);
    const fault = loseFirstAnswer(r.dynamodb, commitsSegment, { thenThrottle: false });
    const res = await svc.pushes.push(items('seg', 3, true));
    expect(fault.lost()).toBe(1);
    expect(res.map((x) => [x.status, x.offset])).toEqual([
      ['queued', 0],
      ['queued', 1],
      ['queued', 2],
    ]);
    expect(await stored(svc, 'seg')).toEqual(['{"i":0}', '{"i":1}', '{"i":2}']);
    await r.storage.close();
  });

  it('on the segment commit transaction, then throttled past the SDK: queued, never duplicate', async () => {
    const r = await awsRig();
    const svc = testServices(r.storage);
    const fault = loseFirstAnswer(r.dynamodb, commitsSegment, { thenThrottle: true });
    const res = await svc.pushes.push(items('seg2', 3, true));
    expect([fault.lost(), fault.throttled() > 0]).toEqual([1, true]);
    expect(res.map((x) => [x.status, x.offset])).toEqual([
      ['queued', 0],
      ['queued', 1],
      ['queued', 2],
    ]);
    expect(await stored(svc, 'seg2')).toEqual(['{"i":0}', '{"i":1}', '{"i":2}']);
    await r.storage.close();
  });

  it('on a lone segment put (no transactionIds), then throttled past the SDK: queued once, not again further on', async () => {
    const r = await awsRig();
    const svc = testServices(r.storage);
    await svc.queues.ensurePartition(await svc.queues.ensureQueue('lone'), 'Default');
    const fault = loseFirstAnswer(r.dynamodb, commitsSegment, { thenThrottle: true });
    const res = await svc.pushes.push(items('lone', 2, false));
    expect([fault.lost(), fault.throttled() > 0]).toEqual([1, true]);
    expect(res.map((x) => [x.status, x.offset])).toEqual([
      ['queued', 0],
      ['queued', 1],
    ]);
    expect(await stored(svc, 'lone')).toEqual(['{"i":0}', '{"i":1}']);
    await r.storage.close();
  });
});

describe('push faults on AWS: throttled past every retry', () => {
  let r: Awaited<ReturnType<typeof awsRig>>;
  let svc: Svc;
  let server: LocalServer;
  let throttling = false;
  let commits: { count: () => number };
  beforeAll(async () => {
    r = await awsRig();
    svc = testServices(r.storage);
    commits = throttleCommits(r.dynamodb, () => throttling);
    server = await serve(svc);
  });
  afterAll(async () => {
    await server.close();
    await r.storage.close();
  });

  it('a push that stored nothing answers 503 with Retry-After (not 201 with every item failed); nothing is half-written', async () => {
    expect((await call(server, 'GET', '/health')).body).toMatchObject({ status: 'healthy' });
    throttling = true;
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const pushed = await call(server, 'POST', '/api/v1/push', {
      items: [
        { queue: 'busy', payload: { a: 1 }, transactionId: 'busy-1' },
        { queue: 'busy', payload: { a: 2 } },
      ],
    });
    log.mockRestore();
    throttling = false;
    expect(commits.count()).toBeGreaterThan(1);
    expect(pushed.status).toBe(503);
    expect(pushed.retryAfter).toBe('2');
    expect(pushed.body).toMatchObject({ code: 'unavailable', retryAfterSeconds: 2 });
    expect(await stored(svc, 'busy')).toEqual([]);
    // The instance saw its writes fail: /health stays 200 (the store answers) but says so.
    const health = await call(server, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({
      status: 'degraded',
      lastWriteFailure: { kind: 'unavailable' },
    });
    // The segment write, and the write that would have closed the offsets it took.
    expect((health.body as { writeFailures: number }).writeFailures).toBeGreaterThanOrEqual(1);
    // The client's retry of the whole batch is stored once, with the transactionId free again.
    const retried = await call(server, 'POST', '/api/v1/push', {
      items: [
        { queue: 'busy', payload: { a: 1 }, transactionId: 'busy-1' },
        { queue: 'busy', payload: { a: 2 } },
      ],
    });
    expect(retried.status).toBe(201);
    expect((retried.body as { status: string }[]).map((x) => x.status)).toEqual(['queued', 'queued']);
    // The failed push's offsets stayed taken and its closing write failed too: readers wait for
    // them until the gap timeout, then close the range and read on.
    expect(await stored(svc, 'busy')).toEqual([]);
    svc.testClock.advance(61_000);
    expect(await stored(svc, 'busy')).toEqual(['{"a":1}', '{"a":2}']);
    expect((await call(server, 'GET', '/ready')).status).toBe(200);
    svc.testClock.advance(61_000);
    expect((await call(server, 'GET', '/health')).body).toMatchObject({ status: 'healthy' });
  });

  it('the store errors surface typed at the service: StoreUnavailableError', async () => {
    throttling = true;
    const err = await svc.pushes.push(items('typed', 1, false)).catch((e: unknown) => e);
    throttling = false;
    expect(err).toBeInstanceOf(StoreUnavailableError);
  });
});

describe('push faults on the embedded backend: a full disk', () => {
  let dir: string;
  let db: ReturnType<typeof openDatabase>;
  let storage: Storage;
  let svc: Svc;
  let server: LocalServer;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-full-'));
    await mkdir(join(dir, 'blobs'));
    await mkdir(join(dir, 'tmp'));
    const { default: Sqlite } = await import('better-sqlite3');
    db = openDatabase(Sqlite, join(dir, 'sluice.db'), 'normal');
    storage = {
      kind: 'embedded',
      items: new SqliteItemStore(db),
      blobs: new FileBlobStore(join(dir, 'blobs'), join(dir, 'tmp'), false),
      close: () => {
        db.close();
        return Promise.resolve();
      },
    };
    // Segments inline in SQLite, so a push needs new database pages.
    svc = testServices(storage, { config: { inlineMaxBytes: 350_000 } });
    server = await serve(svc);
  });
  afterAll(async () => {
    await server.close();
    await svc.storage.close();
    await rm(dir, { recursive: true, force: true });
  });

  const noGrowth = (): void =>
    void db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
  const growth = (): void => void db.pragma('max_page_count = 1073741823');

  it('a write that finds the disk full fails its whole group commit: no other write of it lands', async () => {
    await storage.items.put('meta', { pk: 'G', sk: 'seed', ver: 1, attrs: {} });
    noGrowth();
    // Written in one event-loop turn, so in one group commit: the big one needs new pages, and
    // SQLite rolls the transaction back; the small one would fit, but must not land on its own.
    const [bigPut, smallPut] = await Promise.allSettled([
      storage.items.put('meta', { pk: 'G', sk: 'big', ver: 1, attrs: {}, bin: randomBytes(100_000) }),
      storage.items.put('meta', { pk: 'G', sk: 'small', ver: 1, attrs: {} }),
    ]);
    growth();
    expect(await storage.items.get('meta', { pk: 'G', sk: 'small' })).toBeUndefined();
    expect(bigPut).toMatchObject({ status: 'rejected', reason: expect.any(StoreFullError) as unknown });
    expect(smallPut).toMatchObject({ status: 'rejected', reason: expect.any(StoreFullError) as unknown });
  });

  const big = (n: number) => ({
    items: [{ queue: 'full', payload: { n, pad: randomBytes(60_000).toString('base64') } }],
  });

  it('answers 507 (not 201 with every item failed), writes nothing, reports degraded, and recovers', async () => {
    expect((await call(server, 'POST', '/api/v1/push', big(0))).status).toBe(201);
    // The disk is full: the database may not grow by a page.
    noGrowth();
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const full = await call(server, 'POST', '/api/v1/push', big(1));
    log.mockRestore();
    expect(full.status).toBe(507);
    expect(full.body).toMatchObject({ code: 'storage_full' });
    expect(
      await svc.pushes
        .push([{ queue: 'full', payload: json({ pad: randomBytes(60_000).toString('base64') }) }])
        .catch((e: unknown) => e),
    ).toBeInstanceOf(StoreFullError);
    expect((await stored(svc, 'full')).length).toBe(1);
    // And the free space left in its pages is taken, so even /ready's tiny probe finds no room.
    let refused: unknown;
    for (let i = 0; refused === undefined; i++) {
      const filler = { pk: 'FILL', sk: String(i).padStart(6, '0'), ver: 1, attrs: { pad: 'x'.repeat(40) } };
      refused = await svc.storage.items.put('meta', filler).then(
        () => undefined,
        (e: unknown) => e,
      );
    }
    expect(refused).toBeInstanceOf(StoreFullError);

    // Reads still work, so /health answers 200, degraded with the reason; /ready's probe write fails.
    const health = await call(server, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({
      status: 'degraded',
      database: 'connected',
      reason: 'storage is full: writes are failing',
    });
    const ready = await call(server, 'GET', '/ready');
    expect(ready).toMatchObject({ status: 503, body: { status: 'not_ready', reason: 'storage is full' } });

    // Space freed: the same push is stored, at the next offset, and the probe passes.
    growth();
    const again = await call(server, 'POST', '/api/v1/push', big(1));
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject([{ status: 'queued', offset: 1 }]);
    expect((await call(server, 'GET', '/ready')).status).toBe(200);
    svc.testClock.advance(61_000);
    expect((await call(server, 'GET', '/health')).body).toMatchObject({ status: 'healthy' });
  });
});
