/**
 * AWS emulator harness for tests: a private `moto_server` per test file, or the LocalStack
 * (or any endpoint) named by `AWS_ENDPOINT_URL`, plus throwaway tables and buckets per test.
 *
 * @example
 * ```ts
 * const emulator = await startAwsEmulator();
 * const { storage, cleanup } = await newAwsTestStorage(emulator.endpoint);
 * // ... use storage ...
 * await cleanup();
 * await emulator.stop();
 * ```
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { createAwsStorage, ensureBucket, ensureTables } from '../../lambdas/storage/aws/index.js';
import { TABLES, type Storage, type TableName } from '../../lambdas/storage/port.js';
import { checkingAttrsJson } from './attrs-json-check.js';

export interface AwsEmulator {
  endpoint: string;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 20_000;
const STDERR_TAIL = 8_192;

/** Region and dummy credentials every test client uses: emulators accept anything. */
export const TEST_REGION = 'us-east-1';
const TEST_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

/**
 * Starts `moto_server` on a free loopback port and waits until it answers HTTP, or uses
 * `AWS_ENDPOINT_URL` when set (LocalStack on a machine with Docker; `stop` is then a no-op).
 *
 * @example
 * ```ts
 * let emulator: AwsEmulator;
 * beforeAll(async () => { emulator = await startAwsEmulator(); });
 * afterAll(() => emulator.stop());
 * ```
 */
export async function startAwsEmulator(): Promise<AwsEmulator> {
  const external = process.env['AWS_ENDPOINT_URL'];
  if (external) return { endpoint: external, stop: async () => {} };

  // A free port can be taken between probing and binding: try a few times.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startMoto(await freePort());
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not pick a free port'))));
    });
  });
}

async function startMoto(port: number): Promise<AwsEmulator> {
  const endpoint = `http://127.0.0.1:${port}`;
  // moto runs under a tiny shell watchdog that kills it when our end of its stdin closes: that
  // happens however this process ends (even SIGKILL), so no moto outlives the test run.
  const child = spawn(
    'sh',
    [
      '-c',
      'moto_server -H 127.0.0.1 -p "$1" & m=$!; trap \'kill $m 2>/dev/null\' TERM INT; read _ignored; kill $m 2>/dev/null; wait $m',
      'sh',
      String(port),
    ],
    {
      stdio: ['pipe', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  // moto logs every request to stderr: keep draining it (a full pipe would stall moto).
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL);
  });
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exitPromise = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
  });
  const killOnExit = (): void => {
    // Synchronous on purpose: 'exit' listeners cannot await.
    child.kill('SIGTERM');
  };
  process.once('exit', killOnExit);

  const stop = async (): Promise<void> => {
    process.removeListener('exit', killOnExit);
    if (exited) return;
    child.stdin?.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exitPromise;
    clearTimeout(timer);
  };

  const started = Date.now();
  let answeredAt: number | undefined;
  for (;;) {
    if (exited) {
      throw new Error(
        `moto_server exited before answering (code ${exited.code}, signal ${exited.signal}); stderr:\n${stderr}`,
      );
    }
    if (answeredAt !== undefined || (await answers(endpoint))) {
      answeredAt ??= Date.now();
      // Make sure the server answering is ours, not another worker's that raced us to the port:
      // ours logs "Running on http://127.0.0.1:PORT" once bound. (Should a moto version not log
      // that, a child still alive a few seconds after the port answered is taken as ours.)
      if (stderr.includes(`127.0.0.1:${port}`) || Date.now() - answeredAt > 3_000) break;
    }
    if (Date.now() - started > START_TIMEOUT_MS) {
      await stop();
      throw new Error(`moto_server did not answer on ${endpoint} within ${START_TIMEOUT_MS} ms; stderr:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { endpoint, stop };
}

async function answers(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(endpoint, { signal: AbortSignal.timeout(1_000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/**
 * SDK clients pointed at an emulator, with a fixed region and dummy credentials, so tests never
 * read (or need) real AWS configuration.
 *
 * @example
 * ```ts
 * const { dynamodb, s3 } = emulatorClients(emulator.endpoint);
 * ```
 */
export function emulatorClients(endpoint: string): { dynamodb: DynamoDBClient; s3: S3Client } {
  const common = { endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS };
  return {
    dynamodb: new DynamoDBClient(common),
    s3: new S3Client({
      ...common,
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }),
  };
}

/** A short random suffix: every call gets its own tables and bucket. */
const uniqueSuffix = (): string => `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;

/**
 * A fresh AWS storage on the emulator: new tables and bucket with unique names, removed again
 * (best effort) by `cleanup`.
 *
 * @example
 * ```ts
 * const { storage, cleanup } = await newAwsTestStorage(emulator.endpoint);
 * afterAll(cleanup);
 * ```
 */
export async function newAwsTestStorage(endpoint: string): Promise<{ storage: Storage; cleanup(): Promise<void> }> {
  const suffix = uniqueSuffix();
  const tables = Object.fromEntries(TABLES.map((t) => [t, `sluice-test-${suffix}-${t}`])) as Record<TableName, string>;
  const bucket = `sluice-test-${suffix}`;
  const { dynamodb, s3 } = emulatorClients(endpoint);
  await Promise.all([ensureTables(dynamodb, tables), ensureBucket(s3, bucket)]);
  // moto's conditional writes are not atomic under concurrency (see lambdas/storage/serialize-writes.ts); LocalStack's are.
  const storage = checkingAttrsJson(
    createAwsStorage({ tables, bucket, dynamodb, s3, serializeWrites: !process.env['AWS_ENDPOINT_URL'] }),
  );

  let cleaned = false;
  const cleanup = async (): Promise<void> => {
    if (cleaned) return;
    cleaned = true;
    await storage.close();
    await Promise.allSettled([
      ...Object.values(tables).map((TableName) => dynamodb.send(new DeleteTableCommand({ TableName }))),
      emptyAndDeleteBucket(s3, bucket),
    ]);
    dynamodb.destroy();
    s3.destroy();
  };
  return { storage, cleanup };
}

async function emptyAndDeleteBucket(s3: S3Client, bucket: string): Promise<void> {
  for (;;) {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
    if (keys.length > 0)
      await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
    if (!page.IsTruncated) break;
  }
  await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
}
