/**
 * Test servers (emulators) as child processes that cannot outlive the process that started
 * them, and that are known to be the ones listening on their port.
 *
 * Each server runs under a tiny shell watchdog that kills it when our end of the watchdog's
 * stdin closes. That happens however this process ends, SIGKILL included, so no emulator is
 * left behind by a killed test run. Ownership of the port is read from /proc (Linux), so a
 * server that lost a race for its port is never mistaken for the one that won it.
 *
 * @example
 * ```ts
 * const port = await freePort();
 * const server = await startWatched({ name: 'moto_server', command: 'moto_server', args: ['-p', String(port)], port });
 * // ... http://127.0.0.1:${port} ...
 * await server.stop();
 * ```
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';

/** How long a server may take to listen and answer HTTP. A JVM on a busy 2-core machine needs several seconds. */
export const START_TIMEOUT_MS = 60_000;
/** How long `stop` waits for a server to exit after SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 5_000;
/** Output kept for error messages. */
const OUTPUT_TAIL = 8_192;

/**
 * The watchdog (POSIX sh): starts the command in the background and reports its pid on fd 3;
 * a reader kills it when the watchdog's stdin (our pipe) closes, and so does SIGTERM/SIGINT.
 * The watchdog exits when the command has, with its exit status.
 */
const WATCHDOG = [
  'exec 4<&0',
  '"$@" 3>&- 4<&- & m=$!',
  'echo "$m" >&3',
  'exec 3>&-',
  // A background list's stdin is /dev/null: the reader reads our pipe through fd 4.
  '{ read _ignored <&4; kill $m 2>/dev/null; } &',
  'r=$!',
  'exec 4<&-',
  "trap 'kill $m 2>/dev/null' TERM INT",
  'wait $m; code=$?',
  // A trapped signal interrupts `wait`: wait again until the command has really exited.
  'while kill -0 $m 2>/dev/null; do wait $m; code=$?; done',
  'kill $r 2>/dev/null',
  'exit $code',
].join('\n');

export interface WatchedProcess {
  /** The server's own pid (not the watchdog's). */
  pid: number;
  /** The tail of what it printed (stdout and stderr). */
  output(): string;
  /** Stops it and waits until it has exited; safe to call twice. */
  stop(): Promise<void>;
}

export interface WatchedOptions {
  /** For error messages. */
  name: string;
  command: string;
  args: string[];
  /** The loopback port the server was told to listen on. */
  port: number;
  cwd?: string | undefined;
}

/**
 * A loopback port that was free a moment ago. Another process can take it before the server
 * binds it: {@link startWatched} notices (the port is not the server's) and the caller retries.
 *
 * @example
 * ```ts
 * const port = await freePort();
 * ```
 */
export async function freePort(): Promise<number> {
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

/**
 * Starts `command` under the watchdog and resolves once it listens on `port` and answers HTTP
 * there. Rejects (having stopped it) if it exits first, if another process holds the port, or
 * after {@link START_TIMEOUT_MS}.
 *
 * @example
 * ```ts
 * const java = await startWatched({ name: 'DynamoDB Local', command: 'java', args: [...], port });
 * ```
 */
export async function startWatched(opts: WatchedOptions): Promise<WatchedProcess> {
  const child = spawn('sh', ['-c', WATCHDOG, 'sh', opts.command, ...opts.args], {
    cwd: opts.cwd,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
  // Synchronous on purpose: 'exit' listeners cannot await. The watchdog's trap kills the server.
  const killOnExit = (): void => void child.kill('SIGTERM');
  process.once('exit', killOnExit);
  let output = '';
  // Keep draining: a server whose pipe fills up stalls (moto logs every request).
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exitPromise = new Promise<void>((resolve) => {
    const done = (code: number | null, signal: NodeJS.Signals | null): void => {
      exited ??= { code, signal };
      process.removeListener('exit', killOnExit);
      resolve();
    };
    child.once('exit', done);
    // The watchdog itself could not be spawned: there is nothing to stop.
    child.once('error', (err) => {
      keep(Buffer.from(String(err)));
      done(null, null);
    });
  });
  const pidPromise = new Promise<number>((resolve, reject) => {
    let text = '';
    const fd3 = child.stdio[3] as NodeJS.ReadableStream;
    fd3.setEncoding('utf8');
    fd3.on('data', (chunk: string) => (text += chunk));
    fd3.once('close', () => {
      const pid = Number(text.trim());
      if (Number.isInteger(pid) && pid > 0) resolve(pid);
      else reject(new Error(`${opts.name}: the watchdog did not report a pid`));
    });
  });

  let pid: number | undefined;
  const stop = async (): Promise<void> => {
    process.removeListener('exit', killOnExit);
    if (exited) return;
    child.stdin?.end();
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }, STOP_GRACE_MS);
    await exitPromise;
    clearTimeout(timer);
  };
  const fail = async (why: string): Promise<never> => {
    await stop();
    throw new Error(`${opts.name} ${why}; output:\n${output}`);
  };

  try {
    pid = await pidPromise;
  } catch (err) {
    return fail(`did not start (${String(err)})`);
  }
  const endpoint = `http://127.0.0.1:${opts.port}`;
  const started = Date.now();
  for (;;) {
    if (exited) return fail(`exited before answering (code ${exited.code}, signal ${exited.signal})`);
    const owner = await portOwner(opts.port, pid);
    if (owner === 'other') return fail(`could not have port ${opts.port}: another process listens there`);
    if (owner !== 'none' && (await answers(endpoint))) break;
    if (Date.now() - started > START_TIMEOUT_MS) return fail(`did not answer on ${endpoint} in ${START_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const serverPid = pid;
  return { pid: serverPid, output: () => output, stop };
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
 * Who listens on `port`: the process `pid` (or one of its descendants), another process, or
 * nobody yet. Read from Linux's /proc; where there is none, a listener is taken to be ours.
 */
async function portOwner(port: number, pid: number): Promise<'ours' | 'other' | 'none' | 'unknown'> {
  if (!existsSync('/proc/net/tcp')) return 'unknown';
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      // Columns: sl, local_address, rem_address, st (0A = LISTEN), ..., inode (10th).
      const cols = line.trim().split(/\s+/);
      if (cols[1]?.endsWith(hexPort) && cols[3] === '0A' && cols[9] !== undefined) inodes.add(cols[9]);
    }
  }
  if (inodes.size === 0) return 'none';
  for (const p of await withDescendants(pid)) {
    for (const fd of await readdir(`/proc/${p}/fd`).catch(() => [])) {
      const link = await readlink(`/proc/${p}/fd/${fd}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode !== undefined && inodes.has(inode)) return 'ours';
    }
  }
  return 'other';
}

/** `pid` and every process below it (a launcher script may fork the real server). */
async function withDescendants(pid: number): Promise<number[]> {
  const all = [pid];
  for (let i = 0; i < all.length; i++) {
    const p = all[i] as number;
    for (const task of await readdir(`/proc/${p}/task`).catch(() => [])) {
      const children = await readFile(`/proc/${p}/task/${task}/children`, 'utf8').catch(() => '');
      for (const c of children.split(/\s+/).filter(Boolean)) all.push(Number(c));
    }
  }
  return all;
}
