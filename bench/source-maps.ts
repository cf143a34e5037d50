/**
 * `npm run bench -- --only source-maps`: what Node's `--enable-source-maps` (the stack's
 * `sourceMaps` option, lib/function-logging.ts) costs a Lambda function. Two of the stack's
 * functions are bundled as `cdk synth` bundles them (its BUNDLING settings, given to esbuild the
 * way aws-lambda-nodejs gives them to its CLI) and each bundle is started on Node 22, Lambda's
 * runtime, in fresh processes with and without the flag, interleaved. A driver written beside
 * the bundles times the import, the first `.stack` of an error raised in the bundle's code
 * (when Node decodes the map), and 1,000 later ones, and prints them as JSON.
 *
 * The error has to come from the bundle: Node maps only the frames of files that have a map, so
 * a `new Error()` in the driver costs the same with the flag as without. The driver passes the
 * handler an event whose `requestContext.authorizer` is a getter; the handler reads it first
 * (principalOf in server/http/route.ts), the getter makes the error there, and the request
 * then ends as a 404 (no route `/probe`), which formats no stack of its own.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import { build, type BuildOptions } from 'esbuild';
import type { FunctionName } from '../lib/access.js';
import { nodeOptions } from '../lib/function-logging.js';
import { BUNDLING } from '../lib/service/functions.js';
import { node22 } from '../test/support/node22.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The functions measured: the busiest API function and the one with the most routes. */
const MEASURED: FunctionName[] = ['log', 'admin'];
/** Processes per function and setting (medians reported). */
const RUNS = 15;
/** `.stack` formats timed after the first, per process (their mean is reported). */
const LATER_STACKS = 1000;
/** What the driver prints its figures after, on a line of their own. */
const MARK = 'source-maps-bench ';
/** Lambda's memory for one vCPU's worth of CPU (AWS: CPU is allocated in proportion to memory). */
const FULL_VCPU_MB = 1769;
/** SluiceService's default `memorySize` for the API functions. */
const API_MEMORY_MB = 1024;

/** The Lambda entry the stack bundles for `name` (SluiceService's `entry`). */
function entryOf(name: FunctionName): string {
  const file = join(REPO, 'server', 'entry', `${name}.ts`);
  if (!existsSync(file)) throw new Error(`no Lambda entry for function ${name}: ${file}`);
  return file;
}

/**
 * The esbuild options NodejsFunction runs esbuild with for BUNDLING (aws-lambda-nodejs's
 * bundling.ts, buildEsbuildArgs: `--bundle <entry> --platform=node --outfile=<dir>/index.mjs`
 * plus one flag per option set). Throws on an option set in BUNDLING that this does not map,
 * so the bench cannot quietly measure other bundles than the stack's.
 */
export function bundlingOptions(entry: string, outdir: string): BuildOptions {
  const {
    format,
    target,
    minify,
    sourceMap,
    sourceMapMode,
    sourcesContent,
    banner,
    externalModules,
    mainFields,
    // Docker's options (DockerRunOptions.platform is an image platform): bundling is local.
    platform: _dockerPlatform,
    forceDockerBundling: _forceDocker,
    ...unmapped
  } = BUNDLING;
  const left = Object.keys(unmapped);
  if (left.length > 0) throw new Error(`bench/source-maps.ts does not map BUNDLING's ${left.join(', ')} to esbuild`);
  const mapEnabled = sourceMapMode !== undefined || sourceMap === true;
  return {
    absWorkingDir: REPO,
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    // nodejs22.x, the functions' runtime, where BUNDLING names no target.
    target: target ?? 'node22',
    ...(format ? { format: format === OutputFormat.ESM ? 'esm' : 'cjs' } : {}),
    outfile: join(outdir, format === OutputFormat.ESM ? 'index.mjs' : 'index.js'),
    minify: minify === true,
    // `--sourcemap` (a linked .map file) for the default mode, `--sourcemap=<mode>` otherwise.
    sourcemap: !mapEnabled
      ? false
      : sourceMapMode === undefined || sourceMapMode === SourceMapMode.DEFAULT
        ? 'linked'
        : sourceMapMode,
    sourcesContent: sourcesContent ?? true,
    // Without externalModules, nodejs22.x's default: the SDK the runtime provides.
    external: externalModules ?? ['@aws-sdk/*'],
    ...(banner ? { banner: { js: banner } } : {}),
    ...(mainFields ? { mainFields } : {}),
    logLevel: 'error',
  };
}

/**
 * The driver, run by Node 22 as `node driver.mjs <bundle>`: imports the bundle, makes an error
 * inside its handler (see the file's comment), times that error's first `.stack`, then
 * LATER_STACKS more errors' and prints the figures after MARK.
 */
const DRIVER = `
const importStart = performance.now();
const { handler } = await import(process.argv[2]);
const importMs = performance.now() - importStart;
let probe;
const event = () => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: '/probe',
  rawQueryString: '',
  headers: {},
  isBase64Encoded: false,
  requestContext: {
    http: { method: 'GET', path: '/probe' },
    get authorizer() {
      probe = new Error('probe');
      return undefined;
    },
  },
});
const context = { functionName: 'sluice-bench', awsRequestId: 'bench', getRemainingTimeInMillis: () => 30000 };
const raise = async () => {
  probe = undefined;
  const reply = await handler(event(), context);
  if (!probe) throw new Error('the handler never read requestContext.authorizer: ' + JSON.stringify(reply));
  if (reply.statusCode !== 404) throw new Error('expected a 404, got ' + JSON.stringify(reply));
  return probe;
};
let error = await raise();
let t = performance.now();
const stack = error.stack;
const firstStackMs = performance.now() - t;
// performance.now() counts from the process's start.
const coldMs = performance.now();
let laterMs = 0;
for (let i = 0; i < ${LATER_STACKS}; i++) {
  error = await raise();
  t = performance.now();
  void error.stack;
  laterMs += performance.now() - t;
}
const frame = stack.split('\\n')[2]?.trim() ?? '';
console.log('${MARK}' + JSON.stringify({ node: process.version, importMs, firstStackMs, coldMs, laterUs: (laterMs * 1000) / ${LATER_STACKS}, frame }));
`;

interface Run {
  node: string;
  /** Spawn to exit, from the parent. */
  wallMs: number;
  /** The process's start to its first stack formatted. */
  coldMs: number;
  importMs: number;
  firstStackMs: number;
  /** Mean of the later `.stack` formats. */
  laterUs: number;
  /** The stack's frame in the bundle's code, as formatted. */
  frame: string;
}

async function runOnce(node: string, driver: string, bundle: string, sourceMaps: boolean): Promise<Run> {
  const started = performance.now();
  // A clean environment, as Lambda's: the stack's NODE_OPTIONS is the only switch.
  const env = { PATH: process.env['PATH'] ?? '', AWS_REGION: 'eu-west-1', ...nodeOptions(sourceMaps) };
  const child = spawn(node, [driver, pathToFileURL(bundle).href], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (c) => resolve(c));
  });
  const wallMs = performance.now() - started;
  const line = stdout.split('\n').find((l) => l.startsWith(MARK));
  if (code !== 0 || !line)
    throw new Error(
      `the source-maps driver failed (${code}) on ${bundle}:\n${stderr.slice(-4000)}${stdout.slice(-2000)}`,
    );
  const run = JSON.parse(line.slice(MARK.length)) as Omit<Run, 'wallMs'>;
  // Paths as the repository and the function's asset name them, not as this machine does.
  const frame = run.frame
    .replace(pathToFileURL(dirname(bundle)).href + '/', '')
    .replaceAll(REPO + sep, '')
    .replaceAll(sep, '/');
  return { ...run, wallMs, frame };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

interface Measure {
  label: string;
  unit: 'ms' | 'µs';
  of: (r: Run) => number;
}
const MEASURES = {
  wall: { label: 'process, spawn to exit (with the 1,000 later stacks)', unit: 'ms', of: (r) => r.wallMs },
  cold: { label: 'start to first stack formatted', unit: 'ms', of: (r) => r.coldMs },
  import: { label: 'import of the bundle', unit: 'ms', of: (r) => r.importMs },
  first: { label: 'first `.stack`', unit: 'ms', of: (r) => r.firstStackMs },
  later: {
    label: `later \`.stack\`, mean of ${LATER_STACKS.toLocaleString('en-US')}`,
    unit: 'µs',
    of: (r) => r.laterUs,
  },
} satisfies Record<string, Measure>;
type MeasureName = keyof typeof MEASURES;

interface Measured {
  name: FunctionName;
  bundleBytes: number;
  mapBytes: number;
  off: Run[];
  on: Run[];
  /** Medians off and on, and on − off, per measure. */
  figures: Record<MeasureName, { off: number; on: number; diff: number }>;
}

const one = (x: number): string => x.toFixed(1);
const signed = (x: number): string => (one(x) === one(0) ? '±0.0' : x > 0 ? `+${one(x)}` : `−${one(-x)}`);
/** The spread of the functions' differences: `+3.1–4.2`, `+3.1`, or `−0.2 to +0.4`. */
const range = (xs: number[]): string => {
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  if (one(lo) === one(hi)) return signed(lo);
  if (lo >= 0 || hi <= 0) {
    const [a, b] = hi <= 0 ? [hi, lo] : [lo, hi];
    return `${signed(a)}–${one(Math.abs(b))}`;
  }
  return `${signed(lo)} to ${signed(hi)}`;
};
const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(2)} MB`;

export async function sourceMapsBench(): Promise<string> {
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'sluice-source-maps-'));
  try {
    const node = await node22();
    const driver = join(dir, 'driver.mjs');
    await writeFile(driver, DRIVER);
    const bundles = new Map<FunctionName, string>();
    for (const name of MEASURED) {
      const options = bundlingOptions(entryOf(name), join(dir, name));
      await build(options);
      const bundle = options.outfile as string;
      if (!existsSync(`${bundle}.map`)) throw new Error(`esbuild wrote no ${bundle}.map`);
      bundles.set(name, bundle);
    }
    const runs = new Map(MEASURED.map((n) => [n, { off: [] as Run[], on: [] as Run[] }]));
    // One untimed pair per function first (page cache), then the runs interleaved: each round
    // runs every function both ways, the order of off and on alternating from round to round.
    for (let round = -1; round < RUNS; round++)
      for (const name of MEASURED)
        for (const on of round % 2 === 0 ? [false, true] : [true, false]) {
          const r = await runOnce(node, driver, bundles.get(name)!, on);
          if (round >= 0) runs.get(name)![on ? 'on' : 'off'].push(r);
        }
    const measured: Measured[] = [];
    for (const name of MEASURED) {
      const bundle = bundles.get(name)!;
      const { off, on } = runs.get(name)!;
      const figures = Object.fromEntries(
        Object.entries(MEASURES).map(([k, m]) => {
          const [a, b] = [median(off.map(m.of)), median(on.map(m.of))];
          return [k, { off: a, on: b, diff: b - a }];
        }),
      ) as Measured['figures'];
      measured.push({
        name,
        bundleBytes: (await stat(bundle)).size,
        mapBytes: (await stat(`${bundle}.map`)).size,
        off,
        on,
        figures,
      });
    }
    console.error(`bench: source-maps took ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return report(measured);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function report(measured: Measured[]): string {
  const node = measured[0]!.on[0]!.node;
  const diffs = (k: MeasureName): number[] => measured.map((m) => m.figures[k].diff);
  const first = measured[0]!;
  const importDiffs = diffs('import');
  // What the import figures say of a cold start that formats no error.
  const importNote =
    Math.min(...importDiffs) >= 1
      ? 'Node reads the map as it loads the bundle, so even a cold start that formats no error pays the import part. '
      : Math.max(...importDiffs) < 1
        ? 'The import costs no more with the flag (within 1 ms): a cold start that formats no error pays nothing. '
        : '';
  const rows = measured.flatMap((m) =>
    (Object.keys(MEASURES) as MeasureName[]).map((k, i) => {
      const { label, unit } = MEASURES[k];
      const f = m.figures[k];
      const lead = i === 0 ? `| \`${m.name}\` | ${mb(m.bundleBytes)} | ${mb(m.mapBytes)} |` : '| | | |';
      return `${lead} ${label} | ${one(f.off)} ${unit} | ${one(f.on)} ${unit} | ${signed(f.diff)} ${unit} |`;
    }),
  );
  return [
    '## Source maps',
    '',
    'Command: `npm run bench -- --only source-maps`.',
    '',
    `What Node's \`--enable-source-maps\` (the stack's \`sourceMaps\` option, \`NODE_OPTIONS\` on every function) ` +
      `costs a function. The \`${MEASURED.join('` and `')}\` functions are bundled with the stack's esbuild ` +
      'settings (`BUNDLING` in lib/service/functions.ts: one minified ES module and its linked `index.mjs.map`, no ' +
      `sources inside) and each bundle is started ${RUNS} times each way on Node ${node} (Lambda's nodejs22.x), ` +
      'in fresh processes, with and without the flag, interleaved; medians. Each process imports the bundle, ' +
      "calls its handler with a request that makes an error in the handler's own code and ends as a 404, " +
      `times that error's first \`.stack\`, then the \`.stack\` of ${LATER_STACKS.toLocaleString('en-US')} more such errors ` +
      '(Node maps only the frames of files with a map: an error made outside the bundle costs the same either way). ' +
      '"Start to first stack" counts from the process\'s start; spawn to exit also covers Node\'s own start and ' +
      `the later stacks. The error's frame in \`${first.name}\`'s code, off: \`${first.off[0]!.frame}\`; on: ` +
      `\`${first.on[0]!.frame}\`.`,
    '',
    '| function | bundle | map | measure | off | on | difference |',
    '|---|---:|---:|---|---:|---:|---:|',
    ...rows,
    '',
    `With the flag: **${range(diffs('cold'))} ms per cold start that formats one error** (import ` +
      `${range(importDiffs)} ms, first stack ${range(diffs('first'))} ms), **${range(diffs('later'))} µs per later ` +
      `stack**. ${importNote}The first stack pays for decoding the map's mappings (${mb(Math.min(...measured.map((m) => m.mapBytes)))}` +
      `${measured.some((m) => mb(m.mapBytes) !== mb(measured[0]!.mapBytes)) ? ' or more' : ''}); later ones look ` +
      'their frames up in it. The times are those of one core of this machine; Lambda gives a function one ' +
      `vCPU's worth of CPU at ${FULL_VCPU_MB.toLocaleString('en-US')} MB and proportionally less below, so at the ` +
      `API functions' default ${API_MEMORY_MB.toLocaleString('en-US')} MB expect about ` +
      `${(FULL_VCPU_MB / API_MEMORY_MB).toFixed(1)} times as long.`,
    '',
    'The map ships in every bundle either way, so a stack trace from the logs can be mapped offline; ' +
      '`-c sourceMaps=true` (or `sourceMaps: true` on the construct) turns the flag on.',
  ].join('\n');
}
