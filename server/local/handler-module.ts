// One concept past 500 lines: a handler module run like a Lambda function (bundle, worker pool, timeouts, crashes), with the worker's own code as a string.
/**
 * A local target's consumer as a handler module (docs/TARGETS.md): a `.ts`, `.mjs` or `.js`
 * file exporting `handler(event, context)`, as a Lambda Node.js function does, run by the
 * local server without AWS. The module runs in worker threads, never on the server's event
 * loop: a handler that busy-loops, runs out of memory, calls `process.exit` or throws from a
 * callback costs one worker, which is replaced, and never the server.
 *
 * The module is bundled once with esbuild (TypeScript compiled, its own files inlined, its
 * packages left to Node). The bundle is written beside the module, under `.sluice/` (a
 * `.gitignore` in it keeps it out of the user's git): Node resolves a bundle's package imports
 * from the bundle's own folder upward, so from there they find the module's `node_modules`
 * (and a monorepo's hoisted ones above) exactly as the module itself would, which a bundle in
 * a temporary folder cannot (esbuild's `nodePaths` and `absWorkingDir` steer esbuild's
 * resolution, and external packages are resolved by Node, at run time). What differs:
 * `import.meta.url` names the bundle, one folder below the module. Bundled once: an edit to
 * the module takes effect when the invoker is made again (the server restarted).
 *
 * The worker's code is an inline string (`new Worker(code, { eval: true })`): it is plain
 * JavaScript, so it runs the same under tsx, vitest and the esbuild build of the local server
 * (scripts/build-server.ts bundles this file into `.sluice-build/server/` with the string in
 * it), and needs no entry point of its own in that build. It imports the bundle, which is
 * plain JavaScript too: no TypeScript loader in the handler's thread.
 *
 * Threads share the process: a native addon's crash, or a signal the handler sends its own
 * process (`process.kill(process.pid)`), still ends the server (a child process per worker
 * would contain those too, at a process's cost each).
 *
 * What a handler prints (stdout and stderr) is piped, not inherited: each line goes to the
 * server's stderr as `[target <file>] <line>`, so it is told apart from the server's own log
 * lines (JSON on stdout and stderr) and never mixes into them.
 *
 * @example
 * ```ts
 * const invoker = await moduleInvoker({ path: './consumer.ts', concurrency: 5 });
 * const r = await invoker.invoke(JSON.stringify(event), { timeoutMs: 60_000 });
 * // { kind: 'answered', value: { batchItemFailures: [] } }
 * await invoker.close();
 * ```
 */
import { build, type BuildFailure, type Message } from 'esbuild';
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { InvokeResult, Invoker } from '../core/targets/invoke-result.js';

/**
 * How long a worker may take to import the module: Lambda's init phase limit. Buys: a module
 * whose top-level await never settles fails `moduleInvoker` (or the invoke that needed a new
 * worker) instead of hanging it.
 */
const INIT_TIMEOUT_MS = 10_000;
/** The folder beside the module that holds its bundles (one per running invoker). */
const BUNDLE_DIR = '.sluice';
/**
 * The server's own settings (SLUICE_ENCRYPTION_KEY, tokens, storage) are not the function's:
 * the handler gets the rest of the server's environment (it is the user's code on the user's
 * machine: AWS_PROFILE, PATH) plus what `env` sets.
 */
const SERVER_ONLY_ENV = /^SLUICE_/;

/** What {@link moduleInvoker} runs, and how. */
export interface ModuleInvokerOptions {
  /** The handler module: a `.ts`, `.mts`, `.mjs`, `.js` (or `.cjs`) file exporting `handler`. */
  path: string;
  /** Workers at most, each running one invocation at a time (the target's `maximumConcurrency`). */
  concurrency: number;
  /** Each worker's V8 old-generation cap (`resourceLimits.maxOldGenerationSizeMb`), Lambda's memory setting; 512 by default. */
  memoryMb?: number | undefined;
  /** Environment variables for the handler, over the server's own (less its SLUICE_* settings). */
  env?: Record<string, string> | undefined;
  /** Where the handler's output lines go, already prefixed with `[target <file>]`; the server's stderr by default. */
  log?: ((line: string) => void) | undefined;
}

/**
 * Bundles the handler module, starts its first worker (the module is imported and its
 * `handler` export checked there), and answers with an {@link Invoker} running it in up to
 * `concurrency` worker threads. Rejects with a message naming the file when it is missing,
 * does not compile, throws when imported, or exports no `handler` function.
 *
 * An invocation's answer is the handler's returned value (`answered`); a throw or rejection,
 * a timeout (the worker is terminated: a busy loop does not survive it), a worker's death
 * (`process.exit`, out of memory, an uncaught exception) and a value that cannot be sent back
 * (structured clone) are `function-error`s. A dead worker is replaced by a fresh one, which
 * imports the module again: a module that now throws when imported fails each invocation
 * that needed a new worker with that error.
 *
 * @example
 * ```ts
 * const invoker = await moduleInvoker({ path: 'consumer.ts', concurrency: 2, memoryMb: 256, env: { STAGE: 'dev' } });
 * await invoker.invoke(eventJson, { timeoutMs: 30_000, signal }); // { kind: 'function-error', error: 'TypeError: …' }
 * ```
 */
export async function moduleInvoker(options: ModuleInvokerOptions): Promise<Required<Invoker>> {
  const { concurrency, memoryMb = 512 } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new RangeError(`concurrency must be a positive integer, not ${concurrency}`);
  if (!Number.isInteger(memoryMb) || memoryMb < 1)
    throw new RangeError(`memoryMb must be a positive integer, not ${memoryMb}`);
  const path = resolve(options.path);
  if (!existsSync(path)) throw new Error(`handler module ${path} does not exist`);
  if (!statSync(path).isFile()) throw new Error(`handler module ${path} is not a file`);
  const bundlePath = await writeBundle(path);
  const file = basename(path);
  const pool = new WorkerPool(
    {
      bundleUrl: pathToFileURL(bundlePath).href,
      modulePath: path,
      functionName: basename(path, extname(path)),
      memoryMb,
      env: handlerEnv(options.env),
      log: prefixed(file, options.log ?? ((line) => process.stderr.write(`${line}\n`))),
    },
    concurrency,
  );
  try {
    await pool.start();
  } catch (e) {
    await pool.close();
    await rm(bundlePath, { force: true });
    throw new Error(`handler module ${path} ${(e as Error).message}`);
  }
  return {
    invoke: (eventJson, opts) => pool.invoke(eventJson, opts),
    close: async () => {
      await pool.close();
      await rm(bundlePath, { force: true });
    },
  };
}

/** Bundles the module beside itself (see the module header); answers the bundle's path. */
async function writeBundle(path: string): Promise<string> {
  const dir = join(dirname(path), BUNDLE_DIR);
  const bundlePath = join(dir, `${basename(path, extname(path))}.${process.pid}-${randomBytes(4).toString('hex')}.mjs`);
  let code: Uint8Array;
  try {
    const out = await build({
      entryPoints: [path],
      absWorkingDir: dirname(path),
      outfile: bundlePath,
      write: false,
      bundle: true,
      platform: 'node',
      format: 'esm',
      // The Node that runs it: the module's syntax passes as written.
      target: `node${process.versions.node}`,
      packages: 'external',
      // Stack traces in the handler's log lines name the module's own lines.
      sourcemap: 'inline',
      logLevel: 'silent',
    });
    code = out.outputFiles[0]!.contents;
  } catch (e) {
    const errors = (e as Partial<BuildFailure>).errors;
    throw new Error(`handler module ${path} does not compile:\n${errors ? formatErrors(errors) : String(e)}`);
  }
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, '.gitignore'), '# Bundles of handler modules the local Sluice server runs.\n*\n', {
      flag: 'wx',
    }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
    await writeFile(bundlePath, code);
  } catch (e) {
    throw new Error(
      `cannot write the bundle of handler module ${path} beside it (${bundlePath}): ${(e as Error).message}`,
    );
  }
  return bundlePath;
}

/** esbuild's errors as `file:line:column: text` lines. */
function formatErrors(errors: Message[]): string {
  return errors
    .map((m) => (m.location ? `${m.location.file}:${m.location.line}:${m.location.column}: ${m.text}` : m.text))
    .join('\n');
}

/** The handler's environment: the server's, less its own settings, with `env` over it. */
function handlerEnv(env: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !SERVER_ONLY_ENV.test(k)) out[k] = v;
  return { ...out, ...env };
}

/** A log sink that prefixes each line (of a text of several too) with the module's file name. */
function prefixed(file: string, log: (line: string) => void): (line: string) => void {
  return (text) => {
    for (const line of text.split('\n')) log(`[target ${file}] ${line}`);
  };
}

/**
 * A stack frame below the module's own: this file's worker code, Node's loader and timers.
 * Stacks in the handler's log end at the module's last frame; the rest is noise to its reader.
 */
const NOT_THE_MODULE = /^\s+at .*(\[worker eval\]|node:internal\/|\(<anonymous>\)$)/;

/** An error's stack without the frames below the module's ({@link NOT_THE_MODULE}). */
function moduleStack(e: Error): string {
  const lines = (e.stack ?? `${e.name}: ${e.message}`).split('\n');
  while (lines.length > 1 && NOT_THE_MODULE.test(lines.at(-1)!)) lines.pop();
  return lines.join('\n');
}

/** What every worker of one invoker is started with. */
interface WorkerSpec {
  bundleUrl: string;
  modulePath: string;
  functionName: string;
  memoryMb: number;
  env: Record<string, string>;
  log: (line: string) => void;
}

/** An invocation waiting for a worker. */
interface Waiter {
  give: (worker: HandlerWorker) => void;
  fail: (error: Error) => void;
}

/** Why an invocation found no worker to run on (it did not run: not an attempt). */
class NoWorker extends Error {}

/**
 * Up to `concurrency` {@link HandlerWorker}s, started as invocations need them and reused;
 * an invocation that finds all busy waits for one to free (the dispatcher asks for no more
 * than `concurrency` at once, but the pool does not rely on it). A worker that dies is
 * replaced at once, so the next invocation finds a warm one.
 */
class WorkerPool {
  /** Every live worker, loading, idle or busy: never more than `concurrency`. */
  private readonly live = new Set<HandlerWorker>();
  private readonly idle: HandlerWorker[] = [];
  private readonly waiting: Waiter[] = [];
  /** Every worker not yet exited (the dead ones still terminating too): what `close` waits for. */
  private readonly exiting = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly spec: WorkerSpec,
    private readonly concurrency: number,
  ) {}

  /** Starts the first worker; rejects with why it could not load the module. */
  async start(): Promise<void> {
    this.release(await this.spawn());
  }

  async invoke(
    eventJson: string,
    opts: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<InvokeResult> {
    let worker: HandlerWorker;
    try {
      worker = await this.acquire(opts.signal);
    } catch (e) {
      // Closed or aborted before a worker was free: the handler never ran.
      if (e instanceof NoWorker) return { kind: 'unreachable', error: e.message };
      if (this.closed) return { kind: 'unreachable', error: 'the invoker was closed' };
      // A new worker could not import the module (it throws when imported now).
      return { kind: 'function-error', error: `the handler module ${(e as Error).message}` };
    }
    try {
      if (opts.signal?.aborted) return { kind: 'unreachable', error: 'aborted before the handler ran' };
      return await worker.run(eventJson, opts.timeoutMs, opts.signal);
    } finally {
      this.release(worker);
    }
  }

  /** Terminates every worker; running invocations end as function errors, waiting ones as unreachable. */
  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.fail(new NoWorker('the invoker was closed'));
    for (const w of [...this.live]) w.kill('the invoker was closed while the handler ran');
    await Promise.all(this.exiting);
  }

  /** An idle worker, a new one while there is room, or the next to free. */
  private acquire(signal: AbortSignal | undefined): Promise<HandlerWorker> {
    if (this.closed) return Promise.reject(new NoWorker('the invoker was closed'));
    const idle = this.idle.pop();
    if (idle) return Promise.resolve(idle);
    if (this.live.size < this.concurrency) return this.spawn();
    return new Promise((give, fail) => {
      const waiter: Waiter = {
        give: (w) => {
          signal?.removeEventListener('abort', onAbort);
          give(w);
        },
        fail: (e) => {
          signal?.removeEventListener('abort', onAbort);
          fail(e);
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        // Already handed a worker that is loading: the invocation sees the abort before it runs.
        if (i < 0) return;
        this.waiting.splice(i, 1);
        fail(new NoWorker('aborted before a worker was free'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Hands a worker that finished an invocation to the next waiting one, else back to the idle list. */
  private release(worker: HandlerWorker): void {
    if (this.closed || worker.dead) return;
    const next = this.waiting.shift();
    if (next) next.give(worker);
    else this.idle.push(worker);
  }

  /** A new worker, once it has imported the module; rejects with why it could not. */
  private spawn(): Promise<HandlerWorker> {
    let worker: HandlerWorker;
    try {
      worker = new HandlerWorker(this.spec, (w, wasLoaded) => this.buried(w, wasLoaded));
    } catch (e) {
      // No thread at all (the process is out of them): a load failure like any other.
      return Promise.reject(new Error(`failed to start a worker: ${(e as Error).message}`));
    }
    this.live.add(worker);
    const exited = worker.exited.then(() => void this.exiting.delete(exited));
    this.exiting.add(exited);
    return worker.loaded.then(() => worker);
  }

  /** A worker died (or was killed): out of the pool, and a fresh one in its place. */
  private buried(worker: HandlerWorker, wasLoaded: boolean): void {
    this.live.delete(worker);
    const i = this.idle.indexOf(worker);
    if (i >= 0) this.idle.splice(i, 1);
    if (this.closed) return;
    // Waiting invocations get the room it left; else a loaded worker's place is filled now
    // (one that could not load is not retried until an invocation needs it).
    if (this.waiting.length > 0) this.serveWaiting();
    else if (wasLoaded)
      this.spawn().then(
        (w) => this.release(w),
        () => undefined, // the next invocation starts its own, and gets the error
      );
  }

  /** Starts workers for waiting invocations while there is room (each gets its worker, or why it could not load). */
  private serveWaiting(): void {
    while (this.waiting.length > 0 && this.live.size < this.concurrency) {
      const waiter = this.waiting.shift()!;
      this.spawn().then(waiter.give, waiter.fail);
    }
  }
}

/** A message from the worker's code ({@link WORKER_CODE}). */
type FromWorker =
  | { type: 'loaded' }
  | { type: 'load-failed'; error: string }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; error: string };

/** One worker thread that imports the module and runs one invocation at a time. */
class HandlerWorker {
  /** Settles when the module is imported and its `handler` found; rejects with why not. */
  readonly loaded: Promise<void>;
  /** Settles when the thread has stopped. */
  readonly exited: Promise<void>;
  dead = false;
  private readonly worker: Worker;
  private isLoaded = false;
  private loadFailed!: (e: Error) => void;
  /** The running invocation's settle, and its id. */
  private running: { id: number; settle: (r: InvokeResult) => void } | undefined;
  private nextId = 1;

  constructor(
    private readonly spec: WorkerSpec,
    private readonly onDeath: (w: HandlerWorker, wasLoaded: boolean) => void,
  ) {
    this.worker = new Worker(WORKER_CODE, {
      eval: true,
      name: `target ${spec.functionName}`,
      workerData: {
        bundleUrl: spec.bundleUrl,
        modulePath: spec.modulePath,
        functionName: spec.functionName,
        memoryMb: spec.memoryMb,
        notTheModule: NOT_THE_MODULE.source,
      },
      env: spec.env,
      // No loader of the server's (tsx, a test runner's) in the handler's thread: it runs
      // plain JavaScript, with source maps for its stack traces.
      execArgv: ['--enable-source-maps'],
      resourceLimits: { maxOldGenerationSizeMb: spec.memoryMb },
      stdout: true,
      stderr: true,
    });
    this.pipe(this.worker.stdout);
    this.pipe(this.worker.stderr);
    this.exited = new Promise((done) => this.worker.once('exit', () => done()));
    const initTimer = setTimeout(
      () => this.die(`did not load the module within ${INIT_TIMEOUT_MS / 1000} s`),
      INIT_TIMEOUT_MS,
    );
    this.loaded = new Promise<void>((ok, fail) => {
      this.loadFailed = fail;
      this.worker.on('message', (m: FromWorker) => {
        if (m.type === 'loaded') {
          clearTimeout(initTimer);
          this.isLoaded = true;
          ok();
        } else if (m.type === 'load-failed') this.die(m.error);
        else if (this.running?.id === m.id)
          this.running.settle(m.ok ? { kind: 'answered', value: m.value } : { kind: 'function-error', error: m.error });
      });
    });
    this.loaded.catch(() => clearTimeout(initTimer));
    // Deaths nobody asked for: said in the handler's log too (an idle worker's has no invocation to fail).
    this.worker.on('error', (e: unknown) => {
      if (this.dead) return;
      if (!(e instanceof Error)) {
        // A thrown non-Error, as the worker threw it.
        spec.log(`ERROR the worker died: uncaught ${typeof e}: ${String(e)}`);
        return this.die(`died of an uncaught ${typeof e}: ${String(e)}`);
      }
      const oom = (e as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY';
      spec.log(`ERROR the worker ${oom ? 'ran out of memory' : 'died'}: ${oom ? e.message : moduleStack(e)}`);
      this.die(
        oom
          ? `ran out of memory (memoryMb ${spec.memoryMb}): ${e.message}`
          : `died of an uncaught ${e.name}: ${e.message}`,
      );
    });
    this.worker.on('exit', (code) => {
      if (this.dead) return;
      spec.log(`ERROR the worker exited with code ${code}`);
      this.die(`exited with code ${code}`);
    });
  }

  /** Runs one invocation: the handler's answer, or the function error that ended it. */
  run(eventJson: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<InvokeResult> {
    if (this.dead) return Promise.resolve({ kind: 'function-error', error: 'the handler worker had died' });
    const id = this.nextId++;
    const started = performance.now();
    return new Promise<InvokeResult>((done) => {
      const timer = setTimeout(() => this.kill(`timed out after ${timeoutMs} ms`), timeoutMs);
      const onAbort = () => this.kill(`aborted after ${Math.round(performance.now() - started)} ms`);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.running = {
        id,
        settle: (r) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          this.running = undefined;
          done(r);
        },
      };
      this.worker.postMessage({ id, eventJson, timeoutMs });
    });
  }

  /** Ends the running invocation (if any) with `error` and terminates the thread (a busy loop included). */
  kill(error: string): void {
    this.running?.settle({ kind: 'function-error', error });
    this.die(error);
  }

  /** The thread is gone or going: the running invocation (or the load) fails with why, and the pool replaces it. */
  private die(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    void this.worker.terminate();
    if (!this.isLoaded) this.loadFailed(new Error(this.describeLoadFailure(reason)));
    this.running?.settle({ kind: 'function-error', error: `the handler's worker ${reason}` });
    this.onDeath(this, this.isLoaded);
  }

  private describeLoadFailure(reason: string): string {
    return reason.startsWith('exports no') ? reason : `failed to load: ${reason}`;
  }

  /** Each line the handler prints, to the log sink. */
  private pipe(stream: Readable): void {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', this.spec.log);
  }
}

/**
 * The worker thread's code (CommonJS, as `eval` workers run): imports the bundle, checks its
 * `handler`, then runs one event per message and posts back the answer or the error. Plain
 * JavaScript on purpose (see the module header); no template literals inside.
 */
const WORKER_CODE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { randomUUID } = require('node:crypto');
const { createRequire } = require('node:module');
const { dirname } = require('node:path');
const { bundleUrl, modulePath, functionName, memoryMb, notTheModule } = workerData;

// What CommonJS code in the module expects: esbuild's ESM output calls the global require.
globalThis.require = createRequire(modulePath);
globalThis.__filename = modulePath;
globalThis.__dirname = dirname(modulePath);

// Lambda's errorType and errorMessage: a thrown non-Error is named by its type.
const describe = (e) =>
  e !== null && typeof e === 'object' && 'message' in e
    ? String(e.name || 'Error') + ': ' + String(e.message)
    : typeof e + ': ' + String(e);

// A stack as far as the module's own frames (NOT_THE_MODULE, above).
const below = new RegExp(notTheModule);
const stackOf = (e) => {
  if (e === null || typeof e !== 'object' || typeof e.stack !== 'string') return String(e);
  const lines = e.stack.split('\n');
  while (lines.length > 1 && below.test(lines[lines.length - 1])) lines.pop();
  return lines.join('\n');
};

const context = (timeoutMs) => {
  const deadline = Date.now() + timeoutMs;
  return {
    awsRequestId: randomUUID(),
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:' + functionName,
    memoryLimitInMB: String(memoryMb),
    logGroupName: '/aws/lambda/' + functionName,
    logStreamName: 'local',
    // Present for handlers that set it; a worker is reused without waiting for its event loop.
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
};

// An async handler's promise, or the callback of a callback-style one (three parameters).
const call = (handler, event, ctx) =>
  new Promise((resolve, reject) => {
    const r = handler(event, ctx, (err, value) => (err != null ? reject(err) : resolve(value)));
    if (r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function')
      r.then(resolve, reject);
    else if (handler.length < 3) resolve(r);
  });

(async () => {
  let handler;
  try {
    const mod = await import(bundleUrl);
    handler = typeof mod.handler === 'function' ? mod.handler
      : mod.default != null && typeof mod.default.handler === 'function' ? mod.default.handler
      : undefined;
    if (handler === undefined) {
      const names = Object.keys(mod).join(', ') || 'none';
      parentPort.postMessage({ type: 'load-failed', error: 'exports no handler function (its exports: ' + names + ')' });
      return;
    }
  } catch (e) {
    console.error('ERROR Init Error', stackOf(e));
    parentPort.postMessage({ type: 'load-failed', error: describe(e) });
    return;
  }
  parentPort.on('message', async ({ id, eventJson, timeoutMs }) => {
    let answer;
    try {
      const value = await call(handler, JSON.parse(eventJson), context(timeoutMs));
      answer = { type: 'result', id, ok: true, value };
    } catch (e) {
      console.error('ERROR Invoke Error', stackOf(e));
      answer = { type: 'result', id, ok: false, error: describe(e) };
    }
    try {
      parentPort.postMessage(answer);
    } catch (e) {
      parentPort.postMessage({
        type: 'result', id, ok: false,
        error: 'the handler returned a value that cannot be sent back (structured clone): ' + describe(e),
      });
    }
  });
  parentPort.postMessage({ type: 'loaded' });
})();
`;
