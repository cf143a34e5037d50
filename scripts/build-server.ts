/**
 * Builds the local server that `npm start` runs (`npm start` calls this first, as `prestart`):
 * our TypeScript bundled by esbuild into plain ES modules under `.sluice-build/server/`, and the
 * console (scripts/build-console.ts) under `.sluice-build/server/console/`.
 * Unlike the Lambda bundles, packages are left to Node's resolver (they are installed here),
 * and there is no source map (stack traces name lines of the built files, which are
 * unminified). Running built JavaScript instead of TypeScript through a loader keeps the
 * loader's thread and transform caches out of the server, which then needs less memory
 * (docs/BENCHMARKS.md, Local server and build). Lazy imports stay lazy (split chunks):
 * the AWS SDK is only loaded when the AWS backend is configured.
 *
 * @example
 * ```sh
 * npx tsx scripts/build-server.ts && node .sluice-build/server/main.js --port 6632
 * ```
 */
import { build } from 'esbuild';
import { renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeConsole } from './build-console.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The built server's entry point (absolute path). */
export const SERVER_ENTRY = join(root, '.sluice-build', 'server', 'main.js');

/** Writes {@link SERVER_ENTRY} and its chunks from `server/local/main.ts`, and the console (~0.3 s). */
export async function buildServer(): Promise<void> {
  const outdir = dirname(SERVER_ENTRY);
  // Built beside and swapped in, so a server starting from the old build meanwhile (tests and
  // the bench side by side) loses its files for an instant at most, not for a whole build.
  const staging = `${outdir}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: { main: 'server/local/main.ts' },
    outdir: staging,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'error',
  });
  // The console's page, script and style, which the server serves at /console/.
  await writeConsole(join(staging, 'console'));
  rmSync(outdir, { recursive: true, force: true });
  try {
    renameSync(staging, outdir);
  } catch (e) {
    // Another build swapped its output in first: the same sources, so keep that one.
    if ((e as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    rmSync(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildServer();
