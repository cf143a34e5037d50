/**
 * Bundles are what runs. `npx cdk synth` (the CLI, offline, as a user runs it) writes the
 * cloud assembly; this test loads each function's esbuild bundle from it, configures it with
 * the environment the template gives it (tables and bucket pointed at moto_server), serves the
 * bundles behind a stand-in for API Gateway built from the template's routes and authorizers,
 * and runs the black-box suites against that.
 *
 * The bundles run here on Node 20, which has no zstd in node:zlib: they fall back to the
 * external `@mongodb-js/zstd`, which Node resolves from the repository's node_modules because
 * the assembly is written inside the repository (cdk.out/). On Lambda (nodejs22.x) the
 * same code takes node:zlib and never loads it. The last part serves the same bundles from a
 * Node 22 child process (test/support/node22.ts, bundle-child.ts) to see them take that path.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAG_TASK_EVENT } from '../../server/entry/maintenance-event.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { startLocalServer, type LocalServer } from '../../server/local/server.js';
import { ensureBucket, ensureTables } from '../../server/storage/aws/index.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { callTarget, type HttpTarget } from '../support/http.js';
import { startBundleChild, type BundleChild } from '../support/node22.js';
import type { AckReply, LogPageReply, PopReply } from '../support/replies.js';
import { emulatorClients, emulatorEnv } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import {
  loadBundle,
  PRINCIPAL_HEADER,
  readAssembly,
  simulatedGateway,
  type AssemblyFunction,
} from '../support/gateway.js';
import { defineGrantsSuite, grantsFor, type Role } from '../http/suites/grants.suite.js';
import { defineLogRoutesSuite } from '../http/suites/log.suite.js';
import { defineQueueSmokeSuite } from '../http/suites/smoke.suite.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// Inside the repository on purpose: externals resolve from its node_modules (see above).
const OUT = join(REPO, 'cdk.out', 'bundle-test');
const STACK = 'SluiceBundleTest';
const arn = (role: Role): string => `arn:aws:iam::111122223333:user/${role}`;
const limits = { maxBodyBytes: 64 * 1024, maxMessageBytes: 8 * 1024 };

let synthMs = 0;
let server: LocalServer;
let functions: Map<string, AssemblyFunction>;
let functionEnv: Record<string, unknown>;
const handlers = new Map<string, (event: unknown, context: unknown) => Promise<unknown>>();
const savedEnv = { ...process.env };
const stdoutWrite = process.stdout.write.bind(process.stdout);
let emfTap: ((line: string) => void) | undefined;

beforeAll(async () => {
  // 1. The CLI synth, offline: notices and telemetry are off in cdk.json, the version check here.
  await rm(OUT, { recursive: true, force: true });
  await mkdir(OUT, { recursive: true });
  const grantsFile = join(OUT, '..', 'bundle-test-grants.json');
  await writeFile(grantsFile, JSON.stringify({ grants: grantsFor(arn) }));
  const started = Date.now();
  try {
    await promisify(execFile)(
      'npx',
      ['cdk', 'synth', '--quiet', '--output', OUT, '-c', `stackName=${STACK}`, '-c', `grantsFile=${grantsFile}`],
      {
        cwd: REPO,
        env: { ...process.env, CDK_DISABLE_VERSION_CHECK: '1', CDK_DISABLE_CLI_TELEMETRY: 'true' },
        timeout: 240_000,
        maxBuffer: 64 << 20,
      },
    );
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`cdk synth failed: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
  }
  synthMs = Date.now() - started;

  // 2. Storage the bundles will use: fresh tables and bucket on the run's emulators.
  const assembly = readAssembly(OUT, STACK);
  functions = assembly.functions;
  const endpoints = awsEndpoints();
  const suffix = Date.now().toString(36);
  const tables = Object.fromEntries(TABLES.map((t) => [t, `bundle-${suffix}-${t}`])) as Record<TableName, string>;
  const bucket = `bundle-${suffix}`;
  const { dynamodb, s3 } = emulatorClients(endpoints);
  await Promise.all([ensureTables(dynamodb, tables), ensureBucket(s3, bucket)]);
  dynamodb.destroy();
  s3.destroy();

  // 3. The functions' environment as the template sets it, references resolved to the test resources.
  const resources = assembly.template.Resources;
  const physical = (v: unknown): string => {
    if (typeof v === 'string') return v;
    const id = (v as { Ref?: string }).Ref;
    const r = id ? resources[id] : undefined;
    if (r?.Type === 'AWS::S3::Bucket') return bucket;
    if (r?.Type === 'AWS::DynamoDB::Table') {
      const t = TABLES.find((name) => id!.toLowerCase().includes(`${name}table`));
      if (t) return tables[t];
    }
    throw new Error(`cannot resolve ${JSON.stringify(v)} in a function's environment`);
  };
  const anyFunction = [...functions.keys()][0]!;
  functionEnv = (resources[anyFunction]!.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables;
  // Without the WebSocket URLs consumers long-poll here (the channel: test/integration/notifications.test.ts).
  for (const [k, v] of Object.entries(functionEnv))
    if (k !== 'NODE_OPTIONS' && !k.startsWith('SLUICE_NOTIFY_')) process.env[k] = physical(v);
  Object.assign(process.env, {
    ...emulatorEnv(endpoints),
    AWS_LAMBDA_FUNCTION_NAME: 'sluice-bundle-test',
    // Each bundle keeps its own cache of queues, as separate Lambdas do: a queue deleted through
    // the admin function is seen by the others once their copy lapses. 0 lets the shared suites
    // check the effect of a delete at once.
    SLUICE_QUEUE_CACHE_MS: '0',
    POWERTOOLS_LOG_LEVEL: 'ERROR',
    SLUICE_MAX_BODY_BYTES: String(limits.maxBodyBytes),
    SLUICE_MAX_MESSAGE_BYTES: String(limits.maxMessageBytes),
  });

  // EMF lines (one per request) would drown the test output; the operations test reads them.
  process.stdout.write = (chunk: string | Uint8Array, ...rest: unknown[]) => {
    emfTap?.(String(chunk));
    if (String(chunk).startsWith('{"_aws"')) return true;
    return (stdoutWrite as (c: unknown, ...r: unknown[]) => boolean)(chunk, ...rest);
  };

  // 4. Load every bundle and serve them behind the template's routes.
  for (const fn of functions.values()) handlers.set(fn.logicalId, await loadBundle(fn));
  server = await startLocalServer({
    handler: simulatedGateway(assembly.routes, handlers),
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 10 << 20,
  });
}, 300_000);

afterAll(async () => {
  process.stdout.write = stdoutWrite;
  await server?.close();
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
});

const as = (role: Role | 'anonymous'): HttpTarget => ({
  url: server.url,
  headers: role === 'anonymous' ? {} : { [PRINCIPAL_HEADER]: arn(role) },
});

describe('bundles: the assembly', () => {
  it('`cdk synth` runs offline in well under a minute or two', () => {
    console.warn(`cdk synth (CLI, ${functions.size} bundles, cdk-nag) took ${(synthMs / 1000).toFixed(1)} s`);
    expect(synthMs).toBeLessThan(120_000);
  });

  it('each bundle is one ES module: no native module, externals only loaded lazily where Node 22 never goes', () => {
    for (const fn of functions.values()) {
      const files = readdirSync(fn.assetDir);
      expect(files.filter((f) => f.endsWith('.node'))).toEqual([]);
      expect(files.sort()).toEqual(['index.mjs', 'index.mjs.map']);
      const code = readFileSync(fn.bundle, 'utf8');
      expect(code.startsWith('import{createRequire as __sluiceCreateRequire}')).toBe(true);
      const staticImports = [
        ...code.matchAll(/(?:^|[;\n}])import\s*(?:[\w$*{}\s,]+?\s*from\s*)?["']([^"']+)["']/g),
      ].map((m) => m[1]);
      expect(
        staticImports.filter((s) => !s!.startsWith('node:')),
        `${fn.logicalId} imports at load time`,
      ).toEqual([]);
      const dynamic = new Set(
        [...code.matchAll(/import\(["']([^"']+)["']\)/g)].map((m) => m[1]).filter((s) => !s!.startsWith('node:')),
      );
      expect([...dynamic].filter((d) => !['@mongodb-js/zstd', 'better-sqlite3'].includes(d!))).toEqual([]);
      expect(statSync(fn.bundle).size, `${fn.logicalId} size`).toBeLessThan(5 << 20);
    }
  });

  it('the template routes every route in the table, and the bundles are what the functions run', () => {
    const assembly = readAssembly(OUT, STACK);
    expect(assembly.routes.map((r) => `${r.method} ${r.path}`).sort()).toEqual(
      ALL_ROUTES.map((r) => `${r.method} ${r.path}`).sort(),
    );
    for (const r of assembly.routes) expect(r.authorization).toBe('AWS_IAM');
    expect(existsSync(join(OUT, `${STACK}.template.json`))).toBe(true);
  });
});

describe('bundles: log routes', () => {
  defineLogRoutesSuite(() => as('admin'), { ...limits, backend: 'aws', behindGateway: true });
});

describe('bundles: consuming', () => {
  defineQueueSmokeSuite(() => as('admin'), { prefix: 'b-' });
});

describe('bundles: grants from the stack', () => {
  defineGrantsSuite(as, { unauthenticatedStatus: 403 });
});

describe('bundles: operations', () => {
  it('emit EMF metrics in the namespace and service the alarms read', async () => {
    const lines: string[] = [];
    emfTap = (l) => lines.push(l);
    try {
      expect(
        (await callTarget(as('admin'), 'POST', '/api/v1/push', { items: [{ queue: 'emf', payload: 1 }] })).status,
      ).toBe(201);
    } finally {
      emfTap = undefined;
    }
    const emf = lines
      .flatMap((l) => l.split('\n'))
      .filter((l) => l.includes('"_aws"'))
      .map(
        (l) =>
          JSON.parse(l) as {
            _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
            service: string;
            MessagesPushed?: number;
          },
      );
    const pushed = emf.find((e) => e.MessagesPushed !== undefined);
    expect(pushed, 'an EMF line with MessagesPushed').toBeDefined();
    expect(pushed!._aws.CloudWatchMetrics[0]!.Namespace).toBe(functionEnv['POWERTOOLS_METRICS_NAMESPACE']);
    expect(pushed!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service']]);
    expect(pushed!.service).toBe(functionEnv['POWERTOOLS_SERVICE_NAME']);
    expect(pushed!.MessagesPushed).toBe(1);
  });

  it('the maintenance bundle runs a pass: orphan-blob sweep, retention, lag', async () => {
    // A queue whose messages expire after a second, pushed to twice (two segments: retention
    // always keeps a partition's newest one).
    const admin = as('admin');
    expect(
      (
        await callTarget(admin, 'POST', '/api/v1/configure', {
          queue: 'retained',
          options: { retentionEnabled: true, retentionSeconds: 1 },
        })
      ).status,
    ).toBe(200);
    for (const n of [1, 2])
      expect(
        (
          await callTarget(admin, 'POST', '/api/v1/push', {
            items: [{ queue: 'retained', partition: 'p', payload: { n } }],
          })
        ).status,
      ).toBe(201);
    // And a segment past the inline limit (incompressible messages, 13.5 KiB of zstd): a blob in
    // S3, which the sweep must count and, younger than its grace period and committed, keep.
    const big = [1, 2, 3].map(() => randomBytes(4608).toString('base64'));
    expect(
      (await callTarget(admin, 'POST', '/api/v1/push', { items: big.map((b) => ({ queue: 'swept', payload: b })) }))
        .status,
    ).toBe(201);
    await new Promise((r) => setTimeout(r, 1500));
    const maintenance = [...functions.values()].find((f) => f.logicalId.includes('Maintenance'))!;
    const report = (await handlers.get(maintenance.logicalId)!({}, {})) as {
      blobs: { scanned: number; deleted: number; kept: number };
      retention?: { queues: number; partitions: number; segmentsDeleted: number };
      lag?: { groups: number };
    };
    // The sweep's first page over a fresh bucket: the one segment blob of the run (the suites'
    // segments are all inline), committed and young, so kept.
    expect(report.blobs).toMatchObject({ scanned: 1, deleted: 0, kept: 1 });
    const read = await callTarget<LogPageReply<string>>(
      admin,
      'GET',
      '/api/v1/queues/swept/partitions/Default/messages?from=0&limit=10',
    );
    expect(read.body.messages.map((m) => m.data)).toEqual(big);
    // Retention ran over the queue that enables it, on the stack's tables.
    expect(report.retention?.queues).toBeGreaterThanOrEqual(1);
    expect(report.retention?.partitions).toBeGreaterThanOrEqual(1);
    expect(report.retention?.segmentsDeleted).toBeGreaterThanOrEqual(1);
    // The smoke suite left a lease group behind: its lag is measured and published.
    expect(report.lag?.groups).toBeGreaterThanOrEqual(1);
  });

  it("the maintenance bundle reports lag alone on the lag schedule's event", async () => {
    const maintenance = [...functions.values()].find((f) => f.logicalId.includes('Maintenance'))!;
    const lines: string[] = [];
    emfTap = (l) => lines.push(l);
    let report: Record<string, unknown>;
    try {
      report = (await handlers.get(maintenance.logicalId)!(LAG_TASK_EVENT, {})) as Record<string, unknown>;
    } finally {
      emfTap = undefined;
    }
    // No pass ran (no sweep, no retention): only lag, measured and published.
    expect(Object.keys(report)).toEqual(['lag']);
    expect((report['lag'] as { groups: number }).groups).toBeGreaterThanOrEqual(1);
    expect(lines.some((l) => l.includes('"OldestUnconsumedAgeSeconds"'))).toBe(true);
  });
});

describe("bundles: on Node 22, Lambda's runtime", () => {
  // The same bundles, tables and bucket, served by a Node 22 child behind the same simulated
  // gateway: there the codec takes node:zlib's zstd, as on Lambda, where the in-process bundles
  // above (Node 20) take the fallback library.
  let child: BundleChild;
  let startMs = 0;
  beforeAll(async () => {
    const started = Date.now();
    // The time-out covers a first download of node@22 where .ci/run has not fetched it.
    child = await startBundleChild(OUT, STACK, process.env);
    startMs = Date.now() - started;
  }, 240_000);
  afterAll(async () => {
    await child?.stop();
  });
  const on22 = (): HttpTarget => ({ url: child.url, headers: { [PRINCIPAL_HEADER]: arn('admin') } });

  it('the child runs Node 22.15 or later, where the codec module picks node:zlib', () => {
    console.warn(
      `the Node 22 child (${child.node}) loaded the bundles and listened in ${(startMs / 1000).toFixed(1)} s`,
    );
    expect(child.node).toMatch(/^v22\.(1[5-9]|[2-9]\d)\./);
    expect(child.codec).toBe('node:zlib');
  });

  it("push compresses with node:zlib's zstd and pop decompresses with it; the fallback is never loaded", async () => {
    const queue = 'node22';
    const small = [1, 2, 3].map((n) => ({ n }));
    // Incompressible and past the inline limit: this segment goes to S3.
    const big = { big: randomBytes(4608).toString('base64') };
    const before = await child.zstdUse();
    for (const payloads of [small, [big]])
      expect(
        (await callTarget(on22(), 'POST', '/api/v1/push', { items: payloads.map((payload) => ({ queue, payload })) }))
          .status,
      ).toBe(201);
    const pushed = await child.zstdUse();
    // On the AWS backend every segment is compressed (defaultCompressMinBytes), none stored raw.
    expect(pushed.zlibCompressCalls - before.zlibCompressCalls).toBeGreaterThanOrEqual(2);

    const popped = await callTarget<PopReply>(on22(), 'GET', `/api/v1/pop/queue/${queue}?batch=10&wait=false`);
    expect(popped.status).toBe(200);
    expect(popped.body.messages.map((m) => m.data)).toEqual([...small, big]);
    for (const m of popped.body.messages) {
      const acked = await callTarget<AckReply>(on22(), 'POST', '/api/v1/ack', {
        transactionId: m.transactionId,
        partitionId: m.partitionId,
        status: 'completed',
        error: null,
        consumerGroup: null,
        leaseId: m.leaseId,
      });
      expect(acked.body[0]).toMatchObject({ success: true });
    }
    const used = await child.zstdUse();
    expect(used.zlibDecompressCalls - pushed.zlibDecompressCalls).toBeGreaterThanOrEqual(2);
    expect(used).toMatchObject({ codec: 'node:zlib', fallbackImports: 0 });
  });
});
