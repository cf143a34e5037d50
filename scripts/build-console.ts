/**
 * Builds the console (console/: TypeScript and CSS) with esbuild into a handful of files:
 * `index.html`, `app-<hash>.js`, `style-<hash>.css`. `npm start` writes them beside the built
 * server (scripts/build-server.ts); `sluice console` and the browser tests build them in memory
 * (~0.1 s). Nothing is fetched at run time: the page loads only these files.
 *
 * @example
 * ```ts
 * const files = await buildConsole(); // Map { 'index.html' => <Buffer …>, 'app-3KQ2.js' => … }
 * ```
 */
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ConsoleFiles } from '../server/local/console-assets.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The console's files, built in memory. */
export async function buildConsole(): Promise<ConsoleFiles> {
  const out = await build({
    absWorkingDir: root,
    entryPoints: { app: 'console/src/main.ts', style: 'console/style.css' },
    outdir: 'console-out',
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    write: false,
    logLevel: 'error',
  });
  const files = new Map<string, Buffer>();
  for (const f of out.outputFiles) files.set(basename(f.path), Buffer.from(f.contents));
  const named = (prefix: string, ext: string): string => {
    const name = [...files.keys()].find((n) => n.startsWith(prefix) && n.endsWith(ext));
    if (!name) throw new Error(`console build wrote no ${prefix}*${ext}`);
    return name;
  };
  const page = readFileSync(join(root, 'console', 'index.html'), 'utf8')
    .replace('{{SCRIPT}}', named('app-', '.js'))
    .replace('{{STYLE}}', named('style-', '.css'));
  files.set('index.html', Buffer.from(page));
  return files;
}

/** Builds the console into `dir` (created). */
export async function writeConsole(dir: string): Promise<void> {
  const files = await buildConsole();
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of files) writeFileSync(join(dir, name), bytes);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1])
  await writeConsole(process.argv[2] ?? join(root, '.sluice-build', 'console'));
