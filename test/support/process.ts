import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { SERVER_ENTRY } from '../../scripts/build-server.js';

/**
 * Arguments that run the built local server, as `npm start` does (`node .sluice-build/server/main.js`).
 * The build is made once per test run by `test/support/global-setup.ts` (and by `npm run bench`).
 */
export function serverCommand(): string[] {
  if (!existsSync(SERVER_ENTRY))
    throw new Error(
      `${SERVER_ENTRY} is missing: build it with \`npx tsx scripts/build-server.ts\` (npm start and npm test do)`,
    );
  return [SERVER_ENTRY];
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts the local server the way `npm start` does (the built `server/local/main.ts`), in a
 * child process, and waits until /health answers.
 */
export async function startServerProcess(
  env: Record<string, string>,
  args: string[] = [],
  opts: { healthHeaders?: Record<string, string>; entry?: string } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  // `entry`: another build of the server (the A/B bench runs two revisions side by side).
  const command = opts.entry ? [opts.entry] : serverCommand();
  const child = spawn(process.execPath, [...command, '--port', String(port), ...args], {
    // Quiet by default (no line per request): benches and long runs would buffer every line here.
    env: { ...process.env, SLUICE_MAINTENANCE_INTERVAL_MS: '0', SLUICE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}): ${out}`);
    try {
      const r = await fetch(`${url}/health`, { headers: opts.healthHeaders ?? {} });
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    output: () => out,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Whether a process with this pid exists (a zombie counts until it is reaped). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Every process descending from `pid`, read from /proc (Linux). */
export async function descendants(pid: number): Promise<number[]> {
  const parentOf = new Map<number, number>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so read after the last ')'.
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(name), ppid);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const next = [...parentOf].filter(([, ppid]) => frontier.includes(ppid)).map(([p]) => p);
    out.push(...next);
    frontier = next;
  }
  return out;
}
