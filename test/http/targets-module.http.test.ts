// `npm start -- --target <queue>/<group>=<file>?<knobs>` (docs/TARGETS.md, "Develop a consumer
// locally"), against the built server: the handler module is the group's consumer, its records
// delivered in order, acked, the failing one dead-lettered after maximumRetryAttempts; reads
// list the flag's target as a module endpoint, every change to it is 409; a restart without
// the flag leaves nothing behind; a bad --target stops the start with one line.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { TargetView } from '../../contract/routes/targets.js';
import { call } from '../support/http.js';
import { freePort, serverCommand, startServerProcess, type ServerProcess } from '../support/process.js';
import { until } from '../support/targets.js';

/** A module (TypeScript, a type-only import of the client) that writes down each event and fails the records marked poison. */
const recorder = (file: string) => `
import { appendFileSync } from 'node:fs';
import type { TargetAnswerInput, TargetEvent } from '@sluice/client';

export const handler = async (event: TargetEvent): Promise<TargetAnswerInput> => {
  const records = event.records.map((r) => ({ offset: r.offset, attempt: r.attempt, poison: (r.payload as { poison?: boolean }).poison === true, id: r.transactionId }));
  appendFileSync(${JSON.stringify(file)}, JSON.stringify(records) + '\\n');
  console.log('got offsets', records.map((r) => r.offset).join(','));
  const poison = records.find((r) => r.poison);
  return { batchItemFailures: poison ? [{ itemIdentifier: poison.id, error: 'poison ' + poison.offset }] : [] };
};
`;

type View = z.output<typeof TargetView>;

interface Seen {
  offset: number;
  attempt: number;
  id: string;
}

interface DeadLetter {
  transactionId: string;
  consumerGroup: string;
  errorMessage: string;
  retryCount: number;
}

const events = (file: string): Seen[][] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Seen[])
    : [];

/** The lease group's lag on one queue (GET /api/v1/consumer-groups/{group}). */
async function lagOn(url: string, group: string, queue: string): Promise<number | undefined> {
  const r = await call<{ queues: { queue: string; lagMessages: number }[] }>(
    url,
    'GET',
    `/api/v1/consumer-groups/${group}`,
  );
  return r.status === 200 ? r.body.queues.find((q) => q.queue === queue)?.lagMessages : undefined;
}

const deadLetters = async (url: string, queue: string): Promise<DeadLetter[]> =>
  (await call<{ messages: DeadLetter[] }>(url, 'GET', `/api/v1/dlq?queue=${queue}`)).body.messages;

/** Runs the built server to its exit (it is expected not to start): its code and output. */
async function failedStart(args: string[], env: Record<string, string> = {}) {
  const port = await freePort();
  const child = spawn(process.execPath, [...serverCommand(), '--port', String(port), ...args], {
    env: { ...process.env, SLUICE_MAINTENANCE_INTERVAL_MS: '0', SLUICE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  clearTimeout(timer);
  return { code, stdout, stderr, lines: stderr.trim().split('\n') };
}

const EXAMPLE = resolve('examples/target-handler.ts');

describe('targets: npm start --target runs a handler module', () => {
  let dir: string;
  let proc: ServerProcess;
  const log = () => join(dir, 'events.jsonl');
  const module = () => join(dir, 'consumer', 'recorder.ts');
  // Two targets, two flags: the recorder, and the docs' example handler.
  const flags = () => [
    '--target',
    `rec/billing=${module()}?batchSize=4&maximumConcurrency=2&functionResponseTypes=ReportBatchItemFailures&maximumRetryAttempts=1`,
    '--target',
    `shop/billing=${EXAMPLE}?functionResponseTypes=ReportBatchItemFailures&maximumRetryAttempts=0`,
  ];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-targets-module-'));
    await mkdir(join(dir, 'consumer'));
    await writeFile(module(), recorder(log()));
    proc = await startServerProcess({ SLUICE_DATA_DIR: join(dir, 'data'), SLUICE_SYNC: 'normal' }, flags());
  });
  afterAll(async () => {
    await proc?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('delivers pushed records in order and acks them; the record it fails is dead-lettered after maximumRetryAttempts', async () => {
    const items = Array.from({ length: 12 }, (_, n) => ({
      queue: 'rec',
      transactionId: `r-${n}`,
      payload: { n, ...(n === 5 ? { poison: true } : {}) },
    }));
    expect((await call(proc.url, 'POST', '/api/v1/push', { items })).status).toBe(201);
    await until('the poison record dead-lettered', async () => (await deadLetters(proc.url, 'rec')).length === 1);
    await until('the group caught up', async () => (await lagOn(proc.url, 'billing', 'rec')) === 0);
    const settled = events(log());
    // A second look delivers nothing: every record was acked (or dead-lettered), none is pending.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(events(log())).toEqual(settled);

    const offsets = settled.map((e) => e.map((r) => r.offset));
    // Each event: one partition's records in order, at most batchSize of them.
    for (const o of offsets) {
      expect(o.length).toBeGreaterThan(0);
      expect(o.length).toBeLessThanOrEqual(4);
      expect(o).toEqual(o.map((_, i) => o[0]! + i));
    }
    // Every record came, first in offset order; those before the poison record once each.
    const flat = offsets.flat();
    expect([...new Set(flat)]).toEqual([...Array(12).keys()]);
    for (const n of [0, 1, 2, 3, 4]) expect(flat.filter((o) => o === n)).toHaveLength(1);
    // The poison record: its first delivery and one retry (maximumRetryAttempts 1), then the dead letters.
    const poisonTries = settled.flat().filter((r) => r.offset === 5);
    expect(poisonTries.map((r) => r.attempt)).toEqual([1, 2]);
    const dead = await deadLetters(proc.url, 'rec');
    expect(dead).toMatchObject([{ transactionId: 'r-5', consumerGroup: 'billing', errorMessage: 'poison 5' }]);
    // The module's output reaches the server's stderr, named by its file.
    expect(proc.output()).toContain('[target recorder.ts] got offsets 0,1,2,3');
    const view = await call<{ stats: { invocations: number } }>(proc.url, 'GET', '/api/v1/targets/rec/billing');
    expect(view.body.stats.invocations).toBe(settled.length);
  });

  it("runs the docs' example handler: every order billed, the one without an amount dead-lettered", async () => {
    const items = [1, 2, 3, 4].map((id) => ({ queue: 'shop', payload: id === 3 ? { id } : { id, amount: id * 10 } }));
    expect((await call(proc.url, 'POST', '/api/v1/push', { items })).status).toBe(201);
    await until('order 3 dead-lettered', async () => (await deadLetters(proc.url, 'shop')).length === 1);
    await until('the group caught up', async () => (await lagOn(proc.url, 'billing', 'shop')) === 0);
    expect((await deadLetters(proc.url, 'shop'))[0]).toMatchObject({
      errorMessage: 'order 3 has no amount (attempt 1)',
    });
    for (const id of [1, 2, 4])
      expect(proc.output()).toContain(`[target target-handler.ts] billed order ${id}: ${id * 10}`);
    expect(proc.output()).toContain('[target target-handler.ts] order 3 has no amount (attempt 1)');
  });

  it('lists the flag targets as module endpoints with their knobs, and refuses every change to one with 409', async () => {
    const list = await call<{ targets: View[] }>(proc.url, 'GET', '/api/v1/targets');
    expect(list.status).toBe(200);
    expect(list.body.targets.map((t) => [t.queue, t.group, t.settings.endpoint])).toEqual([
      ['rec', 'billing', { kind: 'module', path: module() }],
      ['shop', 'billing', { kind: 'module', path: EXAMPLE }],
    ]);
    const got = await call<View>(proc.url, 'GET', '/api/v1/targets/rec/billing');
    expect(got.status).toBe(200);
    // As the contract says a read answers: every default filled in, the flag's knobs over them.
    expect(TargetView.parse(got.body).settings).toEqual({
      endpoint: { kind: 'module', path: module() },
      mode: 'leases',
      batchSize: 4,
      maximumBatchingWindowInSeconds: 0,
      maximumConcurrency: 2,
      functionResponseTypes: ['ReportBatchItemFailures'],
      bisectBatchOnFunctionError: false,
      maximumRetryAttempts: 1,
      maximumRecordAgeInSeconds: -1,
      timeoutSeconds: 60,
      startingPosition: 'TRIM_HORIZON',
    });
    expect(got.body.signingSecretSetAt).toBeNull();
    const https = { endpoint: { kind: 'https', url: 'https://hooks.example.com/x' }, mode: 'leases' };
    for (const [method, path, body] of [
      ['PUT', '/api/v1/targets/rec/billing', https],
      ['DELETE', '/api/v1/targets/rec/billing', undefined],
      ['POST', '/api/v1/targets/rec/billing/pause', undefined],
      ['POST', '/api/v1/targets/rec/billing/resume', undefined],
      ['POST', '/api/v1/targets/rec/billing/rotate-secret', undefined],
    ] as const) {
      const r = await call<{ code: string; error: string }>(proc.url, method, path, body);
      expect([method, path, r.status, r.body.code]).toEqual([method, path, 409, 'conflict']);
      expect(r.body.error).toMatch(/set by --target/);
    }
    expect((await call<View>(proc.url, 'GET', '/api/v1/targets/rec/billing')).body.state).not.toBe('paused');
    // A module endpoint is the flag's only: PUT refuses it on any group, storing nothing.
    const put = await call<{ error: string }>(proc.url, 'PUT', '/api/v1/targets/rec/other', {
      endpoint: { kind: 'module', path: module() },
      mode: 'leases',
    });
    expect(put.status).toBe(400);
    expect(put.body.error).toMatch(/--target only/);
    expect((await call(proc.url, 'GET', '/api/v1/targets/rec/other')).status).toBe(404);
  });
});

describe("targets: a --target is the process's own", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-targets-module-restart-'));
    await writeFile(join(dir, 'h.mjs'), 'export const handler = async () => ({ batchItemFailures: [] });\n');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('is not stored: a restart without it leaves nothing; a stored target on its group stops the start', async () => {
    const env = { SLUICE_DATA_DIR: join(dir, 'data'), SLUICE_SYNC: 'normal' };
    // SLUICE_TARGETS, the flag's variable.
    const first = await startServerProcess({ ...env, SLUICE_TARGETS: `q/g=${join(dir, 'h.mjs')}?mode=claims` });
    const view = await call<View>(first.url, 'GET', '/api/v1/targets/q/g');
    expect([view.status, view.body.settings?.mode, view.body.settings?.endpoint.kind]).toEqual([
      200,
      'claims',
      'module',
    ]);
    expect(await first.stop()).toBe(0);
    // Closed at shutdown: the module's bundle is gone from beside it (the .gitignore stays).
    expect(await readdir(join(dir, '.sluice'))).toEqual(['.gitignore']);

    const second = await startServerProcess(env);
    try {
      expect((await call(second.url, 'GET', '/api/v1/targets/q/g')).status).toBe(404);
      expect((await call<{ targets: unknown[] }>(second.url, 'GET', '/api/v1/targets')).body.targets).toEqual([]);
      const put = await call(second.url, 'PUT', '/api/v1/targets/q/g', {
        endpoint: { kind: 'https', url: 'https://hooks.example.com/x' },
        mode: 'claims',
      });
      expect(put.status).toBe(201);
    } finally {
      await second.stop();
    }

    const third = await failedStart(['--target', `q/g=${join(dir, 'h.mjs')}?mode=claims`], env);
    expect(third.code).toBe(1);
    expect(third.lines).toEqual([
      'sluice: --target q/g: consumer group g on queue q already has a target set through the API; ' +
        'start the server without this --target and DELETE /api/v1/targets/q/g, or give --target another group',
    ]);
  });
});

describe('targets: a bad --target stops the start', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-targets-module-bad-'));
    await writeFile(join(dir, 'no-handler.mjs'), 'export const main = async () => undefined;\n');
    await writeFile(join(dir, 'broken.ts'), 'export const handler = async (event: { a: 1 }) => {\n');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const at = (f: string) => join(dir, f);
  it.each([
    ['no such file', () => `q/g=${at('missing.ts')}`, () => `handler module ${at('missing.ts')} does not exist`],
    [
      'a module without a handler',
      () => `q/g=${at('no-handler.mjs')}`,
      () => `handler module ${at('no-handler.mjs')} exports no handler function (its exports: main)`,
    ],
    [
      'a module that does not compile',
      () => `q/g=${at('broken.ts')}`,
      () => `handler module ${at('broken.ts')} does not compile: `,
    ],
    ['an unknown knob', () => `q/g=${at('no-handler.mjs')}?concurrency=2`, () => 'unknown knob concurrency'],
    ['a bad queue name', () => `q%2Fx/g=${at('no-handler.mjs')}`, () => 'queue name must not contain'],
  ])('%s: one line naming it, a non-zero exit, never listening', async (_what, value, problem) => {
    const r = await failedStart(['--target', value()], { SLUICE_DATA_DIR: join(dir, 'data') });
    expect(r.code).toBe(1);
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatch(/^sluice: --target q/);
    expect(r.lines[0]).toContain(problem());
    expect(r.stdout).not.toContain('sluice listening');
  });
});
