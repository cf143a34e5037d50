/**
 * Runs one race: fresh emulator tables and bucket, the scenario's setup, its worker processes
 * (tsx, `worker.ts`), a kill when the scenario has one, the wait until the run is complete (or
 * its time budget is spent), then the checks over every worker's event log and the end state.
 *
 * @example
 * ```ts
 * const report = await runRace('pops', { endpoints: awsEndpoints(), scale: 1 });
 * expect(report.violations).toEqual([]);
 * ```
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DeleteBucketCommand, DeleteObjectsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { loadConfig } from '../../server/config.js';
import { buildServices } from '../../server/service/runtime.js';
import { createAwsStorage, ensureBucket, ensureTables } from '../../server/storage/aws/index.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { emulatorClients, type AwsEndpoints } from '../support/aws-emulator.js';
import type { RaceEnv, RaceEvent, ScenarioName, WorkerMessage, WorkerSpec } from './protocol.js';
import { SCENARIOS } from './scenarios.js';

const workerScript = fileURLToPath(new URL('./worker.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** How long workers may take to start (tsx compiles the service graph) and to stop. */
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

export interface RaceReport {
  scenario: ScenarioName;
  scale: number;
  procs: number;
  instances: number;
  ops: number;
  lost: number;
  duplicated: number;
  /** Pushes answered 503 `too contended` (retried; a later issue removes them). */
  unavailable: number;
  violations: string[];
  /** Unexpected errors the roles noted (calls that threw, roles that died). */
  errors: string[];
  /** How much of the race happened (see ScenarioResult). */
  exercised: Record<string, number>;
  /** Wall time of the run (workers started to checks done). */
  ms: number;
  /** Kept when something failed. */
  logDir?: string;
}

/** One line per race: what `npm run soak:aws` prints. */
export function summaryLine(r: RaceReport): string {
  return (
    `${r.scenario.padEnd(8)} ops=${r.ops} processes=${r.procs} instances=${r.procs * r.instances} ` +
    `lost=${r.lost} duplicated=${r.duplicated} violations=${r.violations.length} 503s=${r.unavailable} ` +
    `errors=${r.errors.length} time=${(r.ms / 1000).toFixed(1)}s ` +
    Object.entries(r.exercised)
      .map(([k, n]) => `${k}=${n}`)
      .join(' ')
  );
}

interface Worker {
  proc: number;
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number | null>;
  stderr(): string;
}

function startWorker(spec: WorkerSpec, onMessage: (m: WorkerMessage) => void): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', workerScript, JSON.stringify(spec)], {
    cwd: repoRoot,
    stdio: 'pipe',
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8_000)));
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      onMessage(JSON.parse(line) as WorkerMessage);
    } catch {
      stderr = `${stderr}\n${line}`.slice(-8_000);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { proc: spec.proc, child, exited, stderr: () => stderr };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} timed out`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Calls that failed unexpectedly. Expected: a push answered 503 (counted apart), and a nack
 * refused as `stale_claim` (its claim lapsed and the record went out again).
 */
function callErrors(events: readonly RaceEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    if (e.k === 'push' ? e.outcome !== 'error' : !('error' in e) || e.error === undefined) continue;
    if (e.k === 'nack' && e.error === 'stale_claim') continue;
    const error = 'error' in e ? e.error : undefined;
    if (out.length < 20) out.push(`${e.inst}#${e.seq} ${e.k}: ${error}`);
  }
  return out;
}

/** Parses the workers' logs; a line a SIGKILL cut in half is dropped. */
async function readEvents(paths: readonly string[]): Promise<RaceEvent[]> {
  const events: RaceEvent[] = [];
  for (const p of paths) {
    let text: string;
    try {
      text = await readFile(p, 'utf8');
    } catch {
      continue; // a worker that never started
    }
    for (const line of text.split('\n')) {
      if (line === '') continue;
      try {
        events.push(JSON.parse(line) as RaceEvent);
      } catch {
        // the last line of a killed worker
      }
    }
  }
  return events;
}

/**
 * Runs a race on the given emulators and checks it.
 *
 * @example
 * ```ts
 * const report = await runRace('claims', { endpoints, scale: 10 });
 * ```
 */
export async function runRace(
  name: ScenarioName,
  opts: { endpoints: AwsEndpoints; scale: number },
): Promise<RaceReport> {
  const scenario = SCENARIOS[name];
  const suffix = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const env: RaceEnv = {
    endpoints: opts.endpoints,
    tables: Object.fromEntries(TABLES.map((t) => [t, `race-${suffix}-${t}`])) as Record<TableName, string>,
    bucket: `race-${suffix}`,
  };
  const clients = emulatorClients(opts.endpoints);
  await Promise.all([ensureTables(clients.dynamodb, env.tables), ensureBucket(clients.s3, env.bucket)]);
  const storage = createAwsStorage({ tables: env.tables, bucket: env.bucket, ...clients });
  // The parent reads the truth: no cache, and maintenance with no grace period.
  const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 0, sweepGraceMs: 0 });
  const logDir = await mkdtemp(join(tmpdir(), `race-${name}-`));
  const params = scenario.params(opts.scale);
  const workers: Worker[] = [];
  const killed = new Set<string>();
  const started = Date.now();
  let keep = false;
  try {
    await scenario.setup?.(svc, params);
    const deadline = Date.now() + START_TIMEOUT_MS + scenario.budgetMs * opts.scale;
    const specs: WorkerSpec[] = Array.from({ length: scenario.procs }, (_, proc) => ({
      scenario: name,
      proc,
      instances: scenario.instances,
      procs: scenario.procs,
      env,
      params,
      logPath: join(logDir, `p${proc}.jsonl`),
      deadline,
    }));
    const selfEnding = specs
      .flatMap((s) =>
        Array.from({ length: s.instances }, (_, i) => scenario.role(s, s.proc * s.instances + i).selfEnding),
      )
      .filter(Boolean).length;
    let ready = 0;
    let rolesDone = 0;
    for (const spec of specs)
      workers.push(
        startWorker(spec, (m) => {
          if ('ready' in m) ready++;
          if ('roleDone' in m) rolesDone++;
        }),
      );
    await withTimeout(
      (async () => {
        while (ready < workers.length) {
          const gone = workers.find((w) => w.child.exitCode !== null);
          if (gone) throw new Error(`worker ${gone.proc} exited at start: ${gone.stderr()}`);
          await sleep(50);
        }
      })(),
      START_TIMEOUT_MS,
      'starting the workers',
    );
    const runStart = Date.now();
    const kill = scenario.kill;
    const killTimer = kill
      ? setTimeout(() => {
          const w = workers[kill.proc];
          if (w && w.child.exitCode === null) {
            w.child.kill('SIGKILL');
            for (let i = 0; i < scenario.instances; i++) killed.add(`p${kill.proc}i${i}`);
          }
        }, kill.afterMs)
      : undefined;
    const budgetEnd = runStart + scenario.budgetMs * opts.scale;
    let finished = false;
    while (Date.now() < budgetEnd) {
      if (rolesDone >= selfEnding && (!kill || killed.size > 0) && ((await scenario.done?.(svc, params)) ?? true)) {
        finished = true;
        break;
      }
      await sleep(250);
    }
    clearTimeout(killTimer);
    for (const w of workers) if (w.child.exitCode === null) w.child.stdin.write(`${JSON.stringify({ stop: true })}\n`);
    await Promise.all(
      workers.map(async (w) => {
        try {
          await withTimeout(w.exited, STOP_TIMEOUT_MS, `stopping worker ${w.proc}`);
        } catch {
          w.child.kill('SIGKILL');
          await w.exited;
        }
      }),
    );
    const events = await readEvents(specs.map((s) => s.logPath));
    const result = await scenario.check(events, svc, params, killed);
    const violations = [...result.tally.violations];
    if (!finished) violations.unshift(`did not finish within ${scenario.budgetMs * opts.scale} ms`);
    const errors = [
      ...events.flatMap((e) => (e.k === 'stats' ? e.errors.map((x) => `${e.inst} ${x}`) : [])),
      ...callErrors(events),
    ];
    for (const w of workers) {
      const code = w.child.exitCode;
      if (code !== 0 && !killed.has(`p${w.proc}i0`)) errors.push(`worker ${w.proc} exited ${code}: ${w.stderr()}`);
    }
    keep = violations.length > 0 || errors.length > 0 || process.env['SLUICE_RACE_KEEP_LOGS'] === '1';
    return {
      scenario: name,
      scale: opts.scale,
      procs: scenario.procs,
      instances: scenario.instances,
      ops: result.ops,
      lost: result.tally.lost,
      duplicated: result.tally.duplicated,
      unavailable: result.unavailable,
      violations,
      errors,
      exercised: result.exercised,
      ms: Date.now() - started,
      ...(keep ? { logDir } : {}),
    };
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    if (!keep) await rm(logDir, { recursive: true, force: true });
    await storage.close();
    await Promise.allSettled([
      ...Object.values(env.tables).map((TableName) => clients.dynamodb.send(new DeleteTableCommand({ TableName }))),
      emptyBucket(clients, env.bucket),
    ]);
    clients.dynamodb.destroy();
    clients.s3.destroy();
  }
}

async function emptyBucket(clients: ReturnType<typeof emulatorClients>, bucket: string): Promise<void> {
  for (;;) {
    const page = await clients.s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
    if (keys.length > 0)
      await clients.s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
    if (!page.IsTruncated) break;
  }
  await clients.s3.send(new DeleteBucketCommand({ Bucket: bucket }));
}
