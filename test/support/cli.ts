import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `sluice` binary (cli/sluice.js, what `npx sluice` starts) as a child process.
 *
 * @example
 * ```ts
 * const r = await sluiceCli(['--json', 'groups'], { env: { SLUICE_ENDPOINT: server.url } });
 * ```
 */
export function sluiceCli(
  args: string[],
  opts: { env?: Record<string, string>; stdin?: string; timeoutMs?: number; cwd?: string } = {},
): Promise<CliResult> {
  return runNode([join(REPO, 'cli', 'sluice.js'), ...args], opts);
}

/**
 * Runs the real `sluice` binary with its stdout read by a reader that goes away after `lines`
 * lines, as `sluice tail … | head -3` does: the read end is closed, so later writes get EPIPE.
 * `linesReceived` counts every whole line that reached the reader (a chunk may carry more than
 * it wanted). `onLines` sees the lines as they come (to act while the command runs).
 *
 * @example
 * ```ts
 * const r = await sluiceCliReader(['tail', 'orders', '--group', 'g'], { lines: 3, env });
 * ```
 */
export function sluiceCliReader(
  args: string[],
  opts: {
    lines: number;
    env?: Record<string, string>;
    timeoutMs?: number;
    onLines?: (received: string[]) => void;
  },
): Promise<CliResult & { linesReceived: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO, 'cli', 'sluice.js'), ...args], {
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let closed = false;
    child.stdout.on('data', (d: Buffer) => {
      if (closed) return;
      stdout += d.toString();
      const got = stdout.split('\n').slice(0, -1);
      opts.onLines?.(got);
      if (got.length >= opts.lines) {
        closed = true;
        child.stdout.destroy(); // the reader goes away, as head does
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sluice ${args.join(' ')} did not finish\nstdout: ${stdout.slice(-2000)}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, linesReceived: stdout.split('\n').length - 1 });
    });
  });
}

/** Runs a TypeScript file the way `npx tsx file.ts` does. */
export function runTs(
  file: string,
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliResult> {
  return runNode(['--import', 'tsx', file], opts);
}

function runNode(
  args: string[],
  opts: { env?: Record<string, string>; stdin?: string; timeoutMs?: number; cwd?: string },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `node ${args.join(' ')} did not finish within ${opts.timeoutMs ?? 60_000} ms\nstdout: ${stdout.slice(-2000)}\nstderr: ${stderr.slice(-2000)}`,
        ),
      );
    }, opts.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.stdin ?? '');
  });
}
