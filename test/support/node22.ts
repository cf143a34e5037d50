/**
 * Node 22, Lambda's `nodejs22.x`, for tests that run the built bundles as Lambda would: the npm
 * registry's `node` package (`npx -y node@22`), which npx keeps in its cache (~/.npm/_npx), so a
 * machine downloads it once; CI fetches it before the tests (.ci/run). Not a devDependency: its
 * `node` binary would shadow the project's Node 20 in every npm script.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BundleChildReady, BundleChildZstdUse } from './bundle-child.js';
import type { ZstdUse } from './zstd-probe.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** What npx runs; .ci/run warms its cache with the same spec. */
export const NODE22_SPEC = 'node@22';
/** The first Node 22 with zstd in `node:zlib`. */
const MIN_MINOR = 15;
/** Where the binary's path is remembered, so later runs skip npx (~1.5 s even when cached). */
const REMEMBERED = join(REPO, 'node_modules', '.cache', 'sluice', 'node22-path');
/** A cold npx cache downloads ~30 MB. */
const FETCH_TIMEOUT_MS = 180_000;

const hasZlibZstd = (version: string): boolean => {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number) as [number, number];
  return major === 22 && minor >= MIN_MINOR;
};

/**
 * The path of a Node 22 binary (22.15 or later), from npx's cache, downloaded on first use.
 * Throws, saying how to get one, when npx cannot provide it: a test that needs it fails rather
 * than skips.
 */
export async function node22(): Promise<string> {
  if (existsSync(REMEMBERED)) {
    const path = readFileSync(REMEMBERED, 'utf8').trim();
    if (existsSync(path)) return path;
  }
  const command = `npx -y --prefer-offline ${NODE22_SPEC}`;
  let stdout: string;
  try {
    // --prefer-offline: a cached node@22 is used without asking the registry again.
    ({ stdout } = await promisify(execFile)(
      'npx',
      ['-y', '--prefer-offline', NODE22_SPEC, '-p', 'process.execPath + " " + process.version'],
      { cwd: REPO, timeout: FETCH_TIMEOUT_MS },
    ));
  } catch (e) {
    const err = e as { stderr?: string; message: string; killed?: boolean };
    // npm's first lines name the cause (e.g. `npm error code ECONNREFUSED`); a stack follows.
    const why = err.stderr?.trim() ? err.stderr.trim().split('\n').slice(0, 6).join('\n') : err.message;
    throw new Error(
      `Node 22 (Lambda's nodejs22.x) is needed to run the bundles as Lambda does, and \`${command}\` ` +
        `${err.killed ? `did not finish in ${FETCH_TIMEOUT_MS / 1000} s` : 'failed'}:\n${why}\n` +
        `Run \`${command} --version\` once with access to the npm registry (.ci/run does on CI).`,
    );
  }
  const [path, version] = stdout.trim().split(' ') as [string, string | undefined];
  if (!version || !hasZlibZstd(version))
    throw new Error(`\`${command}\` ran ${version ?? stdout.trim()}, not Node 22.${MIN_MINOR} or later`);
  mkdirSync(dirname(REMEMBERED), { recursive: true });
  // Written beside and renamed: concurrent test files never read half a path.
  const partial = `${REMEMBERED}.${process.pid}`;
  writeFileSync(partial, `${path}\n`);
  renameSync(partial, REMEMBERED);
  return path;
}

/** The bundles served by a Node 22 child process (test/support/bundle-child.ts). */
export interface BundleChild {
  /** The simulated gateway's base URL. */
  url: string;
  /** The child's `process.version`. */
  node: string;
  /** What server/codec/zstd.ts picks in the child. */
  codec: BundleChildReady['ready']['codec'];
  /** What the bundles' zstd calls were so far. */
  zstdUse(): Promise<ZstdUse>;
  stop(): Promise<void>;
}

/** How long the child may take to load the bundles and listen. */
const START_TIMEOUT_MS = 60_000;

/**
 * test/support/bundle-child.ts as one plain ES module (~0.2 s), written beside the assembly, so
 * inside the repository: packages resolve from its node_modules. Not run through tsx: its
 * loader would also transform every bundle the child imports (~1 s each for their 1.4 MB).
 */
async function buildBundleChild(outdir: string): Promise<string> {
  const outfile = join(dirname(outdir), `${basename(outdir)}-child.mjs`);
  await build({
    absWorkingDir: REPO,
    entryPoints: [join(REPO, 'test', 'support', 'bundle-child.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    packages: 'external',
    logLevel: 'error',
  });
  return outfile;
}

/**
 * Builds and starts test/support/bundle-child.ts on Node 22: the assembly's bundles (`outdir`,
 * inside the repository) behind the simulated gateway, in the environment given (`NODE_OPTIONS`
 * dropped: a parent's loader flags are not the child's).
 * Resolves once it listens; rejects with the child's stderr if it exits first.
 *
 * @example
 * ```ts
 * const child = await startBundleChild('cdk.out/bundle-test', 'SluiceBundleTest', { ...process.env });
 * await fetch(`${child.url}/health`);
 * (await child.zstdUse()).codec; // 'node:zlib'
 * await child.stop();
 * ```
 */
export async function startBundleChild(outdir: string, stack: string, env: NodeJS.ProcessEnv): Promise<BundleChild> {
  const { NODE_OPTIONS: _dropped, ...childEnv } = env;
  const [binary, script] = await Promise.all([node22(), buildBundleChild(outdir)]);
  const child = spawn(binary, [script, outdir, stack], {
    cwd: REPO,
    env: childEnv,
    // stdout carries the bundles' EMF and log lines, which no test here reads.
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  // Kept short: only the end says why it stopped.
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-16_384)));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) =>
      reject(new Error(`the Node 22 bundle child exited (${signal ?? code}):\n${stderr}`)),
    ),
  );
  exited.catch(() => {});
  const next = <T>(pick: (m: unknown) => T | undefined, what: string, ms: number): Promise<T> =>
    Promise.race([
      exited,
      new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.off('message', onMessage);
          reject(new Error(`the Node 22 bundle child sent no ${what} in ${ms / 1000} s:\n${stderr}`));
        }, ms);
        const onMessage = (m: unknown): void => {
          const picked = pick(m);
          if (picked === undefined) return;
          clearTimeout(timer);
          child.off('message', onMessage);
          resolve(picked);
        };
        child.on('message', onMessage);
      }),
    ]);
  let ready: BundleChildReady['ready'];
  try {
    ready = await next((m) => (m as Partial<BundleChildReady>).ready, 'ready message', START_TIMEOUT_MS);
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  return {
    ...ready,
    zstdUse: () => {
      const answer = next((m) => (m as Partial<BundleChildZstdUse>).zstdUse, 'zstd-use answer', 10_000);
      child.send('zstd-use');
      return answer;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
