/**
 * The AWS emulators the tests and benchmarks run the AWS backend on: DynamoDB Local (AWS's own
 * DynamoDB emulator, whose conditional writes and transactions are atomic under concurrency)
 * and `moto_server` for S3 (it enforces `If-None-Match`) and KMS. Or, when `AWS_ENDPOINT_URL`
 * is set, that one external endpoint (LocalStack) for every service.
 *
 * A test run starts one of each in vitest's global setup (`aws-global-setup.ts`); test files
 * get the endpoints with `awsEndpoints()` and make throwaway tables and a bucket per test with
 * {@link newAwsTestStorage}. Benchmarks start their own with {@link startAwsEmulators}.
 *
 * @example
 * ```ts
 * const emulator = await startAwsEmulators();
 * const { storage, cleanup } = await newAwsTestStorage(emulator.endpoints);
 * // ... use storage ...
 * await cleanup();
 * await emulator.stop();
 * ```
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { createAwsStorage, ensureBucket, ensureTables } from '../../server/storage/aws/index.js';
import type { UsageMeterOptions } from '../../server/storage/aws/usage-meter.js';
import { TABLES, type Storage, type TableName } from '../../server/storage/port.js';
import { checkingAttrsJson } from './attrs-json-check.js';
import { freePort, startWatched, type WatchedProcess } from './watched-process.js';

/** Where each AWS service the backend and its tests use is served. */
export interface AwsEndpoints {
  /** DynamoDB Local, or the external endpoint. */
  dynamodb: string;
  /** moto_server, or the external endpoint. */
  s3: string;
  /** moto_server, or the external endpoint. */
  kms: string;
}

export interface AwsEmulator {
  endpoints: AwsEndpoints;
  /** Stops the emulators this call started (nothing for an external endpoint). */
  stop(): Promise<void>;
}

/** Region and dummy credentials every test client uses: emulators accept anything. */
export const TEST_REGION = 'us-east-1';
const TEST_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

/** Tries at a free port: another process can take the one picked before the server binds it. */
const PORT_ATTEMPTS = 3;

/**
 * Starts DynamoDB Local and moto_server side by side on free loopback ports and waits until
 * both answer, or uses `AWS_ENDPOINT_URL` for all services when set (LocalStack on a machine
 * with Docker; `stop` is then a no-op). Both processes die with this one, even on SIGKILL.
 *
 * @example
 * ```ts
 * const emulator = await startAwsEmulators();
 * const { dynamodb, s3 } = emulatorClients(emulator.endpoints);
 * await emulator.stop();
 * ```
 */
export async function startAwsEmulators(): Promise<AwsEmulator> {
  const external = process.env['AWS_ENDPOINT_URL'];
  if (external) return { endpoints: { dynamodb: external, s3: external, kms: external }, stop: async () => {} };

  const [dynamodb, moto] = await Promise.allSettled([withFreePort(startDynamoDbLocal), withFreePort(startMoto)]);
  if (dynamodb.status === 'rejected' || moto.status === 'rejected') {
    await Promise.all(
      [dynamodb, moto].map((r) => (r.status === 'fulfilled' ? r.value.process.stop() : Promise.resolve())),
    );
    throw dynamodb.status === 'rejected' ? dynamodb.reason : (moto as PromiseRejectedResult).reason;
  }
  return {
    endpoints: { dynamodb: dynamodb.value.endpoint, s3: moto.value.endpoint, kms: moto.value.endpoint },
    async stop() {
      await Promise.all([dynamodb.value.process.stop(), moto.value.process.stop()]);
    },
  };
}

interface Started {
  endpoint: string;
  process: WatchedProcess;
}

async function withFreePort(start: (port: number) => Promise<WatchedProcess>): Promise<Started> {
  let lastError: unknown;
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = await freePort();
    try {
      return { endpoint: `http://127.0.0.1:${port}`, process: await start(port) };
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

/** The DynamoDB Local jar and native libraries the `amplify-dynamodb-simulator` package ships. */
function dynamoDbLocalDir(): string {
  const pkg = createRequire(import.meta.url).resolve('amplify-dynamodb-simulator/package.json');
  return join(dirname(pkg), 'emulator');
}

function startDynamoDbLocal(port: number): Promise<WatchedProcess> {
  const dir = dynamoDbLocalDir();
  return startWatched({
    name: 'DynamoDB Local',
    command: 'java',
    args: [
      // C1 only and the serial collector: half the start time (~3 s instead of ~6 s on a busy
      // 2-core machine), and no slower on the suite's short requests.
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
      // Nothing to keep after the run, and no disk I/O on the way.
      '-inMemory',
      // One namespace whatever region or access key a client uses (servers under test bring their own).
      '-sharedDb',
      '-port',
      String(port),
      // The machine has no network: telemetry would only fail (and has nothing to tell).
      '-disableTelemetry',
    ],
    port,
    cwd: dir,
  });
}

/**
 * moto single-threaded: `moto_server` as shipped serves requests on threads, and its conditional
 * checks are not atomic with the write, so two racing `If-None-Match` PUTs of one key could both
 * win (the conformance race saw it). One request at a time makes each check-and-write atomic.
 */
const MOTO_SINGLE_THREADED = (port: number): string =>
  'from werkzeug.serving import run_simple; ' +
  'from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app; ' +
  `run_simple('127.0.0.1', ${port}, DomainDispatcherApplication(create_backend_app), threaded=False)`;

function startMoto(port: number): Promise<WatchedProcess> {
  return startWatched({
    name: 'moto_server',
    command: 'python3',
    args: ['-c', MOTO_SINGLE_THREADED(port)],
    port,
  });
}

/**
 * The environment a child process (a server or Lambda bundle under test) needs to reach the
 * emulators with the SDK's own endpoint resolution: `AWS_ENDPOINT_URL_<SERVICE>` per service,
 * a region and dummy credentials.
 *
 * @example
 * ```ts
 * const server = await startServerProcess({ ...emulatorEnv(awsEndpoints()), SLUICE_BUCKET: bucket, ... });
 * ```
 */
export function emulatorEnv(endpoints: AwsEndpoints): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_S3: endpoints.s3,
    AWS_ENDPOINT_URL_KMS: endpoints.kms,
    AWS_REGION: TEST_REGION,
    AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
  };
}

/**
 * SDK clients pointed at the emulators, with a fixed region and dummy credentials, so tests
 * never read (or need) real AWS configuration.
 *
 * @example
 * ```ts
 * const { dynamodb, s3 } = emulatorClients(awsEndpoints());
 * ```
 */
export function emulatorClients(endpoints: AwsEndpoints): { dynamodb: DynamoDBClient; s3: S3Client } {
  const common = { region: TEST_REGION, credentials: TEST_CREDENTIALS };
  return {
    dynamodb: new DynamoDBClient({ ...common, endpoint: endpoints.dynamodb }),
    s3: new S3Client({
      ...common,
      endpoint: endpoints.s3,
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }),
  };
}

/** A short random suffix: every call gets its own tables and bucket. */
const uniqueSuffix = (): string => `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;

/**
 * A fresh AWS storage on the emulators: new tables and bucket with unique names (returned, for a
 * child process to open the same ones), removed again (best effort) by `cleanup`. Every write is checked for a stale `attrsJson`.
 *
 * @example
 * ```ts
 * const { storage, cleanup } = await newAwsTestStorage(awsEndpoints());
 * afterAll(cleanup);
 * ```
 */
export async function newAwsTestStorage(
  endpoints: AwsEndpoints,
  opts: {
    usageMeter?: UsageMeterOptions;
    /** Called with the storage's clients once its tables and bucket exist (the IAM proof instruments them). */
    instrument?: (clients: { dynamodb: DynamoDBClient; s3: S3Client }) => void;
  } = {},
): Promise<{ storage: Storage; cleanup: () => Promise<void>; tables: Record<TableName, string>; bucket: string }> {
  const suffix = uniqueSuffix();
  // Table names end in `-<logical name>`: the IAM proof maps them back by that (iam/recorder.ts).
  const tables = Object.fromEntries(TABLES.map((t) => [t, `sluice-test-${suffix}-${t}`])) as Record<TableName, string>;
  const bucket = `sluice-test-${suffix}`;
  const { dynamodb, s3 } = emulatorClients(endpoints);
  await Promise.all([ensureTables(dynamodb, tables), ensureBucket(s3, bucket)]);
  opts.instrument?.({ dynamodb, s3 });
  const storage = checkingAttrsJson(createAwsStorage({ tables, bucket, dynamodb, s3, usageMeter: opts.usageMeter }));

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
  // The names too: a child process under test opens the same tables.
  return { storage, cleanup, tables, bucket };
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
