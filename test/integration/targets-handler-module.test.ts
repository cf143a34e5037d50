/**
 * The local server's handler modules (server/local/handler-module.ts): a Lambda-style
 * `handler(event, context)` in a .ts, .mjs or CommonJS .js file, bundled once and run in a
 * pool of worker threads. What it answers, throws or dies of becomes the invoke result; a
 * busy loop, `process.exit`, running out of memory or an uncaught exception costs one worker,
 * which is replaced, and never blocks or stops the main thread; close() stops every worker.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { InvokeResult } from '../../server/core/targets/invoke-result.js';
import { moduleInvoker } from '../../server/local/handler-module.js';

let dir: string;
const at = (name: string) => join(dir, name);
const marker = () => at('init-fails.marker');

/** The .ts consumer: a type annotation, a node built-in, a package from its own folder's node_modules. */
const OK_TS = `
import { createHash } from 'node:crypto';
import { greet } from 'fake-pkg';

interface Rec { transactionId: string; payload: { fail?: boolean } }
interface Ctx { awsRequestId: string; functionName: string; callbackWaitsForEmptyEventLoop: boolean; getRemainingTimeInMillis(): number }

export const handler = async (event: { records: Rec[] }, context: Ctx) => {
  console.log(greet('from ok.ts'), event.records.length);
  return {
    batchItemFailures: event.records
      .filter((r) => r.payload.fail === true)
      .map((r) => ({ itemIdentifier: r.transactionId })),
    digest: createHash('sha256').update('x').digest('hex').slice(0, 8),
    context: {
      awsRequestId: context.awsRequestId,
      functionName: context.functionName,
      remainingMs: context.getRemainingTimeInMillis(),
      callbackWaitsForEmptyEventLoop: context.callbackWaitsForEmptyEventLoop,
    },
    env: { STAGE: process.env.STAGE, sluiceSecret: 'SLUICE_HANDLER_TEST_SECRET' in process.env },
  };
};
`;

/** The .mjs consumer: the event's `act` says what it does. */
const ACTS_MJS = `
import { writeFileSync } from 'node:fs';
import { threadId } from 'node:worker_threads';

const later = (ms) => new Promise((r) => setTimeout(r, ms));

export function handler(event) {
  switch (event.act) {
    case 'echo': return { threadId, echo: event.value };
    case 'throw': throw new RangeError('bad batch');
    case 'reject': return Promise.reject(new TypeError('nope'));
    case 'throw-string': throw 'plain string';
    case 'sleep': return (async () => { const start = Date.now(); await later(event.ms); return { start, end: Date.now(), threadId }; })();
    case 'spin': { const start = Date.now(); while (Date.now() - start < event.ms); return { start, end: Date.now() }; }
    case 'busy-forever': { let last = 0; for (;;) { if (Date.now() - last >= 10) { last = Date.now(); writeFileSync(event.heartbeat, String(last)); } } }
    case 'interval': setInterval(() => writeFileSync(event.heartbeat, String(Date.now())), 10); return { threadId };
    case 'exit': process.exit(1);
    case 'oom': { const hog = []; for (;;) hog.push(new Array(100000).fill(Math.random())); }
    case 'uncaught': setTimeout(() => { throw new Error('late boom'); }, 10); return later(5000).then(() => 'too late');
    case 'unclonable': return { fn: () => 1 };
  }
}
`;

/** What the handlers print goes nowhere, but where a test reads it. */
const quiet = { log: () => undefined };

const event = (body: Record<string, unknown>) => JSON.stringify(body);

/** The answered value, failing the test on any other result. */
function answered<T = Record<string, unknown>>(r: InvokeResult): T {
  expect(r).toMatchObject({ kind: 'answered' });
  return (r as { value: T }).value;
}

/** The largest number of [start, end] intervals that overlap at one instant. */
function maxOverlap(spans: { start: number; end: number }[]): number {
  const edges = spans.flatMap((s) => [
    { t: s.start, d: 1 },
    { t: s.end, d: -1 },
  ]);
  // An end before a start at the same instant: touching spans do not overlap.
  edges.sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let max = 0;
  for (const e of edges) max = Math.max(max, (now += e.d));
  return max;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-handler-module-'));
  // A CommonJS package in the modules' own node_modules: resolved from there, not from Sluice's.
  await mkdir(at('node_modules/fake-pkg'), { recursive: true });
  await writeFile(at('node_modules/fake-pkg/package.json'), '{"name":"fake-pkg","main":"index.js"}');
  await writeFile(at('node_modules/fake-pkg/index.js'), 'exports.greet = (n) => "hello " + n;\n');
  await writeFile(at('ok.ts'), OK_TS);
  await writeFile(at('acts.mjs'), ACTS_MJS);
  await writeFile(
    at('cjs.js'),
    'const { greet } = require("fake-pkg");\nexports.handler = async (e) => ({ cjs: greet(e.who) });\n',
  );
  await writeFile(at('no-handler.mjs'), 'export const handle = async () => ({});\n');
  await writeFile(at('broken.ts'), 'export const handler = async (event: unknown) => {\n  return { a: ;\n};\n');
  await writeFile(at('throws-on-import.mjs'), "throw new Error('init failed');\nexport const handler = () => 1;\n");
  await writeFile(
    at('init-fails.mjs'),
    `import { existsSync } from 'node:fs';\nif (existsSync(${JSON.stringify(marker())})) throw new Error('init failed now');\n` +
      `export const handler = (e) => (e.act === 'exit' ? process.exit(1) : { ok: true });\n`,
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('integration: a handler module run in worker threads', () => {
  it('runs a .ts module (types, a node built-in, a package of its own folder) and answers its batchItemFailures', async () => {
    process.env.SLUICE_HANDLER_TEST_SECRET = 'the server only';
    const lines: string[] = [];
    const invoker = await moduleInvoker({
      ...quiet,
      path: at('ok.ts'),
      concurrency: 1,
      env: { STAGE: 'dev' },
      log: (l) => lines.push(l),
    });
    try {
      const records = [
        { transactionId: 't1', payload: {} },
        { transactionId: 't2', payload: { fail: true } },
      ];
      const first = answered(await invoker.invoke(event({ records }), { timeoutMs: 5_000 }));
      expect(first).toMatchObject({
        batchItemFailures: [{ itemIdentifier: 't2' }],
        digest: '2d711642',
        context: { functionName: 'ok', callbackWaitsForEmptyEventLoop: true },
        // The server's own settings (SLUICE_*) are not the handler's.
        env: { STAGE: 'dev', sluiceSecret: false },
      });
      const ctx = first.context as { awsRequestId: string; remainingMs: number };
      expect(ctx.awsRequestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(ctx.remainingMs).toBeGreaterThan(4_000);
      expect(ctx.remainingMs).toBeLessThanOrEqual(5_000);
      const second = answered(await invoker.invoke(event({ records: [] }), { timeoutMs: 5_000 }));
      expect((second.context as { awsRequestId: string }).awsRequestId).not.toBe(ctx.awsRequestId);
      // What it prints reaches the log sink, a line each, prefixed with the file.
      await vi.waitFor(() =>
        expect(lines).toEqual(
          expect.arrayContaining(['[target ok.ts] hello from ok.ts 2', '[target ok.ts] hello from ok.ts 0']),
        ),
      );
    } finally {
      await invoker.close();
      delete process.env.SLUICE_HANDLER_TEST_SECRET;
    }
    // The bundle beside the module is gone; its folder keeps itself out of git.
    expect(await readdir(at('.sluice'))).toEqual(['.gitignore']);
  });

  it('runs a CommonJS .js module (exports.handler, require of its own package)', async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('cjs.js'), concurrency: 1 });
    try {
      expect(await invoker.invoke(event({ who: 'cjs' }), { timeoutMs: 5_000 })).toEqual({
        kind: 'answered',
        value: { cjs: 'hello cjs' },
      });
    } finally {
      await invoker.close();
    }
  });

  it('answers a throw or a rejection as a function error named by the error, and logs its stack', async () => {
    const lines: string[] = [];
    const invoker = await moduleInvoker({ ...quiet, path: at('acts.mjs'), concurrency: 1, log: (l) => lines.push(l) });
    try {
      const opts = { timeoutMs: 5_000 };
      expect(await invoker.invoke(event({ act: 'throw' }), opts)).toEqual({
        kind: 'function-error',
        error: 'RangeError: bad batch',
      });
      expect(await invoker.invoke(event({ act: 'reject' }), opts)).toEqual({
        kind: 'function-error',
        error: 'TypeError: nope',
      });
      expect(await invoker.invoke(event({ act: 'throw-string' }), opts)).toEqual({
        kind: 'function-error',
        error: 'string: plain string',
      });
      expect(await invoker.invoke(event({ act: 'unclonable' }), opts)).toMatchObject({
        kind: 'function-error',
        error: expect.stringMatching(
          /^the handler returned a value that cannot be sent back \(structured clone\): /,
        ) as unknown,
      });
      // The worker survived all of them.
      answered(await invoker.invoke(event({ act: 'echo' }), opts));
      // The stack is logged, as far as the module's own line (source maps), not the worker's code.
      await vi.waitFor(() => {
        const at = lines.indexOf('[target acts.mjs] ERROR Invoke Error RangeError: bad batch');
        expect(at).toBeGreaterThanOrEqual(0);
        expect(lines[at + 1]).toMatch(/^\[target acts\.mjs\] {5}at handler \(.*acts\.mjs:\d+:\d+\)$/);
      });
      expect(lines.filter((l) => /\[worker eval\]|node:internal/.test(l))).toEqual([]);
    } finally {
      await invoker.close();
    }
  });

  it('terminates a worker stuck in a busy loop at the timeout, and the next invoke runs on a fresh one', async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('acts.mjs'), concurrency: 1 });
    const heartbeat = at('busy.heartbeat');
    try {
      const before = answered<{ threadId: number }>(await invoker.invoke(event({ act: 'echo' }), { timeoutMs: 5_000 }));
      const started = performance.now();
      expect(await invoker.invoke(event({ act: 'busy-forever', heartbeat }), { timeoutMs: 300 })).toEqual({
        kind: 'function-error',
        error: 'timed out after 300 ms',
      });
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(existsSync(heartbeat)).toBe(true);
      const after = answered<{ threadId: number }>(
        await invoker.invoke(event({ act: 'echo', value: 1 }), { timeoutMs: 5_000 }),
      );
      expect(after).toMatchObject({ echo: 1 });
      expect(after.threadId).not.toBe(before.threadId);
      // The busy loop did not survive: its heartbeat (every 10 ms) has stopped.
      const beat = readFileSync(heartbeat, 'utf8');
      await sleep(200);
      expect(readFileSync(heartbeat, 'utf8')).toBe(beat);
    } finally {
      await invoker.close();
    }
  });

  it('stops a running handler when the signal aborts, and one still waiting for a worker never runs', async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('acts.mjs'), concurrency: 1 });
    try {
      const ac = new AbortController();
      const running = invoker.invoke(event({ act: 'busy-forever', heartbeat: at('abort.heartbeat') }), {
        timeoutMs: 30_000,
        signal: ac.signal,
      });
      const queued = invoker.invoke(event({ act: 'echo' }), { timeoutMs: 30_000, signal: ac.signal });
      await vi.waitFor(() => expect(existsSync(at('abort.heartbeat'))).toBe(true));
      ac.abort();
      expect(await running).toMatchObject({
        kind: 'function-error',
        error: expect.stringMatching(/^aborted after \d+ ms$/) as unknown,
      });
      // It never ran: not an attempt.
      expect(await queued).toMatchObject({
        kind: 'unreachable',
        error: expect.stringMatching(/^aborted before /) as unknown,
      });
      answered(await invoker.invoke(event({ act: 'echo' }), { timeoutMs: 5_000 }));
    } finally {
      await invoker.close();
    }
  });

  it('answers process.exit in the handler as a function error, and the next invoke works', async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('acts.mjs'), concurrency: 1 });
    try {
      expect(await invoker.invoke(event({ act: 'exit' }), { timeoutMs: 5_000 })).toEqual({
        kind: 'function-error',
        error: "the handler's worker exited with code 1",
      });
      answered(await invoker.invoke(event({ act: 'echo' }), { timeoutMs: 5_000 }));
    } finally {
      await invoker.close();
    }
  });

  it('answers running out of memory (memoryMb 32) as a function error, and the next invoke works', async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('acts.mjs'), concurrency: 1, memoryMb: 32 });
    try {
      // A timeout would be a different error: the worker's heap cap is what ended it.
      expect(await invoker.invoke(event({ act: 'oom' }), { timeoutMs: 20_000 })).toMatchObject({
        kind: 'function-error',
        error: expect.stringMatching(/^the handler's worker ran out of memory \(memoryMb 32\): /) as unknown,
      });
      answered(await invoker.invoke(event({ act: 'echo' }), { timeoutMs: 5_000 }));
    } finally {
      await invoker.close();
    }
  }, 30_000);

  it('answers an uncaught exception in a callback as a function error, and the next invoke works', async () => {
    const lines: string[] = [];
    const invoker = await moduleInvoker({ path: at('acts.mjs'), concurrency: 1, log: (l) => lines.push(l) });
    try {
      expect(await invoker.invoke(event({ act: 'uncaught' }), { timeoutMs: 10_000 })).toEqual({
        kind: 'function-error',
        error: "the handler's worker died of an uncaught Error: late boom",
      });
      answered(await invoker.invoke(event({ act: 'echo' }), { timeoutMs: 5_000 }));
      // Its stack is in the handler's log, each line prefixed, down to the module's frame.
      expect(lines.slice(0, 2)).toEqual([
        '[target acts.mjs] ERROR the worker died: Error: late boom',
        expect.stringMatching(/^\[target acts\.mjs\] {5}at .*acts\.mjs:\d+:\d+\)$/),
      ]);
      expect(lines).toHaveLength(2);
    } finally {
      await invoker.close();
    }
  });

  it('refuses a missing file, a module without a handler, one that does not compile, one that throws when imported', async () => {
    await expect(moduleInvoker({ ...quiet, path: at('missing.ts'), concurrency: 1 })).rejects.toThrow(
      /^handler module .*missing\.ts does not exist$/,
    );
    await expect(moduleInvoker({ ...quiet, path: at('no-handler.mjs'), concurrency: 1 })).rejects.toThrow(
      /^handler module .*no-handler\.mjs exports no handler function \(its exports: handle\)$/,
    );
    await expect(moduleInvoker({ ...quiet, path: at('broken.ts'), concurrency: 1 })).rejects.toThrow(
      /^handler module .*broken\.ts does not compile:\nbroken\.ts:2:\d+: /,
    );
    await expect(moduleInvoker({ ...quiet, path: at('throws-on-import.mjs'), concurrency: 1 })).rejects.toThrow(
      /^handler module .*throws-on-import\.mjs failed to load: Error: init failed$/,
    );
    // None of them left a bundle behind.
    expect((await readdir(at('.sluice'))).filter((f) => f !== '.gitignore')).toEqual([]);
  });

  it('fails every invoke with the import error while a fresh worker cannot load the module, and recovers', async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('init-fails.mjs'), concurrency: 1 });
    try {
      await writeFile(marker(), '');
      // The loaded worker dies; the ones that replace it import the module again, and fail.
      expect(await invoker.invoke(event({ act: 'exit' }), { timeoutMs: 5_000 })).toMatchObject({
        kind: 'function-error',
      });
      for (let i = 0; i < 2; i++)
        expect(await invoker.invoke(event({}), { timeoutMs: 5_000 })).toEqual({
          kind: 'function-error',
          error: 'the handler module failed to load: Error: init failed now',
        });
      await rm(marker());
      expect(await invoker.invoke(event({}), { timeoutMs: 5_000 })).toEqual({ kind: 'answered', value: { ok: true } });
    } finally {
      await invoker.close();
    }
  });

  it('runs two invocations at once with concurrency 2, never more, on two reused workers', async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('acts.mjs'), concurrency: 2 });
    try {
      const results = await Promise.all(
        Array.from({ length: 6 }, () => invoker.invoke(event({ act: 'sleep', ms: 150 }), { timeoutMs: 10_000 })),
      );
      const spans = results.map((r) => answered<{ start: number; end: number; threadId: number }>(r));
      expect(maxOverlap(spans)).toBe(2);
      expect(new Set(spans.map((s) => s.threadId)).size).toBe(2);
    } finally {
      await invoker.close();
    }
  });

  it("keeps the main thread's event loop turning while a handler busy-loops", async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('acts.mjs'), concurrency: 1 });
    const ticks: number[] = [];
    const timer = setInterval(() => ticks.push(Date.now()), 10);
    try {
      const { start, end } = answered<{ start: number; end: number }>(
        await invoker.invoke(event({ act: 'spin', ms: 400 }), { timeoutMs: 5_000 }),
      );
      // About 40 ticks of 10 ms fit in the 400 ms it spun; on the main thread there would be none.
      expect(ticks.filter((t) => t > start && t < end).length).toBeGreaterThanOrEqual(10);
    } finally {
      clearInterval(timer);
      await invoker.close();
    }
  });

  it('close() stops every worker, busy and idle, and ends what was running', async () => {
    const invoker = await moduleInvoker({ ...quiet, path: at('acts.mjs'), concurrency: 2 });
    const busy = at('close-busy.heartbeat');
    const idle = at('close-idle.heartbeat');
    const running = invoker.invoke(event({ act: 'busy-forever', heartbeat: busy }), { timeoutMs: 60_000 });
    // The second invocation gets the second worker, which stays behind with a timer beating.
    answered(await invoker.invoke(event({ act: 'interval', heartbeat: idle }), { timeoutMs: 5_000 }));
    await vi.waitFor(() => expect(existsSync(busy) && existsSync(idle)).toBe(true));
    await invoker.close();
    expect(await running).toEqual({ kind: 'function-error', error: 'the invoker was closed while the handler ran' });
    const beats = [readFileSync(busy, 'utf8'), readFileSync(idle, 'utf8')];
    await sleep(200);
    expect([readFileSync(busy, 'utf8'), readFileSync(idle, 'utf8')]).toEqual(beats);
    expect(await invoker.invoke(event({ act: 'echo' }), { timeoutMs: 5_000 })).toEqual({
      kind: 'unreachable',
      error: 'the invoker was closed',
    });
  });
});
