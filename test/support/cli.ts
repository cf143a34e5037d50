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
