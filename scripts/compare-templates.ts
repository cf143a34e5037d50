/**
 * Says whether the working tree's CDK code synthesizes the same CloudFormation templates as a
 * git revision, for every deploy-option variant below: the check for a refactor of `lib/` that
 * must change nothing CloudFormation sees (a renamed logical id is a replaced resource, and a
 * replaced table is lost data).
 *
 * The revision is checked out into a temporary `git worktree` (removed afterwards) sharing this
 * tree's node_modules and synthesized; then the working tree's files (uncommitted changes too)
 * are copied to the same path and synthesized there, because with bundling skipped a
 * function's asset hash is made of bundling options that hold absolute paths. Each side runs in
 * its own process and synthesizes as test/support/cdk.ts does (bundling skipped): deploy
 * options through that side's own `lib/context.ts` (`-c key=value` pairs), and what context
 * cannot express (imported topics, keys and buckets, intervals, environment) as props. Per
 * variant it compares the template (key order aside), the synth's warnings and errors, and the
 * construct paths; a variant whose props are refused compares the error message instead.
 *
 * Exits 0 when every variant is identical, 1 when one differs (the differing logical ids and
 * properties are printed).
 *
 * @example
 * ```sh
 * npx tsx scripts/compare-templates.ts <rev>                 # e.g. main, HEAD~3, 5cfb167
 * npx tsx scripts/compare-templates.ts <rev> --keep /tmp/t   # also keeps both sides' JSON in /tmp/t/{rev,worktree}
 * npx tsx scripts/compare-templates.ts --synth . /tmp/before  # only synthesizes a tree, one JSON file per variant
 * ```
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { App, CfnWaitConditionHandle, Duration, Stack } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';

type Json = unknown;
/** What one variant synthesizes to (or the error it stops with). */
interface Synthesized {
  template?: Record<string, Json>;
  error?: string;
  /** `level path: text` of every warning, error and info the synth reported. */
  messages: string[];
  /** Every construct path under the stack, in creation order. */
  paths: string[];
}

// --------------------------------------------------------------------------------- variants

const KEY_ARN = 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:111122223333:ops-alerts';
const GRANTS = {
  grants: [
    { principal: 'arn:aws:iam::111122223333:role/orders-*', actions: ['push'], queues: ['orders-*'] },
    { principal: '*', actions: ['consume'], queues: ['orders-*', 'billing'] },
  ],
};

/**
 * `-c key=value` deploy options (lib/context.ts), each set read by the side's own
 * `stackOptionsFromContext`: test/cdk/aws-limits.test.ts's variants, then every other option.
 * `grantsFile` is replaced by a file holding {@link GRANTS}.
 */
const CONTEXT_VARIANTS: Record<string, Record<string, string>> = {
  default: {},
  'notifications=false': { notifications: 'false' },
  'auth=tokens': { auth: 'tokens' },
  'auth=jwt': { auth: 'jwt', jwtIssuer: 'https://login.example.com/tenants/orders/', jwtAudience: 'sluice,ops' },
  'kmsKey=create': { kmsKey: 'create' },
  kmsKeyArn: { kmsKeyArn: KEY_ARN },
  alarmEmail: { alarmEmail: 'ops@example.com' },
  alarmTopicArn: { alarmTopicArn: TOPIC_ARN },
  'alarmEmail alarmTopicArn': { alarmEmail: 'ops@example.com', alarmTopicArn: TOPIC_ARN },
  grantsFile: { grantsFile: 'grants.json' },
  'auth=jwt grantsFile': {
    auth: 'jwt',
    jwtIssuer: 'https://id.example.com/',
    jwtAudience: 'a',
    grantsFile: 'grants.json',
  },
  'auth=tokens grantsFile': { auth: 'tokens', grantsFile: 'grants.json' },
  'apiGatewayCloudWatchRole=false': { apiGatewayCloudWatchRole: 'false' },
  'notifications=false apiGatewayCloudWatchRole=false': { notifications: 'false', apiGatewayCloudWatchRole: 'false' },
  'tracing=true': { tracing: 'true' },
  'bucketVersioning=35': { bucketVersioning: '35' },
  'tracing=true bucketVersioning=35': { tracing: 'true', bucketVersioning: '35' },
  'sourceMaps=true': { sourceMaps: 'true' },
  'removalPolicy=destroy': { removalPolicy: 'destroy' },
  'removalPolicy=destroy kmsKey=create': { removalPolicy: 'destroy', kmsKey: 'create' },
  'memorySize=2048 logRetentionDays=7': { memorySize: '2048', logRetentionDays: '7' },
  'maintenanceReservedConcurrency=1': { maintenanceReservedConcurrency: '1' },
  'maintenanceReservedConcurrency=3': { maintenanceReservedConcurrency: '3' },
  'throttleRps=50 throttleBurst=20': { throttleRps: '50', throttleBurst: '20' },
  'maxBodyBytes=262144 maxPushItems=100': { maxBodyBytes: '262144', maxPushItems: '100' },
  'maxWaiters=0': { maxWaiters: '0' },
  'maxWaiters=500': { maxWaiters: '500' },
  'every option at once': {
    notifications: 'false',
    auth: 'tokens',
    grantsFile: 'grants.json',
    kmsKey: 'create',
    alarmEmail: 'ops@example.com',
    tracing: 'true',
    sourceMaps: 'true',
    bucketVersioning: '7',
    removalPolicy: 'destroy',
    memorySize: '1536',
    logRetentionDays: '14',
    maintenanceReservedConcurrency: '2',
    throttleRps: '200',
    maxBodyBytes: '500000',
    maxPushItems: '50',
    maxWaiters: '40',
  },
};

/** Props context cannot set, built in a second stack (`refs`) of the same app where they import something. */
type PropsVariant = (refs: Stack) => Record<string, unknown>;
const PROPS_VARIANTS: Record<string, PropsVariant> = {
  'props: intervals, memory, namespace, environment, expiration, access logs': (refs) => ({
    maintenanceInterval: Duration.minutes(10),
    lagInterval: Duration.minutes(1),
    maintenanceMemorySize: 768,
    metricsNamespace: 'Orders',
    environment: { SLUICE_MAX_POP_WAIT_MS: '20000', SLUICE_LOG_LEVEL: 'debug' },
    segmentExpiration: Duration.days(30),
    accessLogsBucket: s3.Bucket.fromBucketName(refs, 'AccessLogs', 'orders-access-logs'),
  }),
  'props: imported key and topic, alarm thresholds': (refs) => ({
    payloadKey: { key: kms.Key.fromKeyArn(refs, 'Key', KEY_ARN) },
    alarms: {
      topic: sns.Topic.fromTopicArn(refs, 'Topic', TOPIC_ARN),
      serverErrorsPer5Minutes: 9,
      oldestUnconsumedAgeSeconds: 600,
    },
  }),
  'props: SLUICE_KMS_KEY_ID in environment (a warning)': () => ({ environment: { SLUICE_KMS_KEY_ID: KEY_ARN } }),
  'props: notifications=false, tokens, every interval': () => ({
    notifications: false,
    auth: { type: 'tokens' },
    lagInterval: Duration.minutes(15),
    maintenanceInterval: Duration.hours(1),
  }),
  // Refused props: the message (and which check speaks first) must not change either.
  'refused: memorySize 64': () => ({ memorySize: 64 }),
  'refused: maintenanceMemorySize 20000': () => ({ maintenanceMemorySize: 20_000 }),
  'refused: maxWaiters -1': () => ({ maxWaiters: -1 }),
  'refused: lagInterval 20 min': () => ({ lagInterval: Duration.minutes(20) }),
  'refused: maintenanceReservedConcurrency 11': () => ({ maintenanceReservedConcurrency: 11 }),
  'refused: throttle burst 0': () => ({ throttle: { rateLimit: 10, burstLimit: 0 } }),
  'refused: maxBodyBytes 10 MB': () => ({ maxBodyBytes: 10_000_000 }),
  'refused: maxPushItems 0': () => ({ maxPushItems: 0 }),
  'refused: pop wait past the timeout': () => ({ environment: { SLUICE_MAX_POP_WAIT_MS: '29000' } }),
  'refused: payloadKey and SLUICE_KMS_KEY_ID': () => ({
    payloadKey: { create: true },
    environment: { SLUICE_KMS_KEY_ID: KEY_ARN },
  }),
  'refused: payloadKey alias ARN': () => ({ payloadKey: { keyArn: 'arn:aws:kms:eu-west-1:111122223333:alias/x' } }),
  'refused: alarm topic and topicArn': (refs) => ({
    alarms: { topic: sns.Topic.fromTopicArn(refs, 'Topic', TOPIC_ARN), topicArn: TOPIC_ARN },
  }),
  'refused: bucketVersioning 400 days': () => ({
    bucketVersioning: { noncurrentVersionExpiration: Duration.days(400) },
  }),
  'refused: grants too large': () => ({
    grants: Array.from({ length: 60 }, (_, i) => ({
      principal: `p-${i}-${'x'.repeat(40)}`,
      actions: ['push'],
      queues: ['*'],
    })),
  }),
  'refused: bad grant action': () => ({ grants: [{ principal: '*', actions: ['fly'], queues: ['*'] }] }),
};

/** Stack ids and environments each context variant is synthesized with (`default` gets every one). */
const STACKS = {
  envAgnostic: { id: 'Sluice' },
  inRegion: { id: 'Sluice', env: { account: '111122223333', region: 'eu-west-1' } },
  longName: { id: 'SluiceProductionOrdersEuCentral1' },
} as const;

// ------------------------------------------------------------------------------ synthesis

/** One variant's stack, synthesized as test/support/cdk.ts does (bundling skipped). */
function synthesize(
  SluiceStack: new (scope: App, id: string, props: Record<string, unknown>) => Stack,
  stackProps: { id: string; env?: { account: string; region: string } },
  props: (refs: Stack) => Record<string, unknown>,
): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'compare-templates-cdk.out-'));
  const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
  const refs = new Stack(app, 'Refs', stackProps.env ? { env: stackProps.env } : {});
  // A stack without resources draws a validation warning; this one only holds imports.
  new CfnWaitConditionHandle(refs, 'Placeholder');
  try {
    const stack = new SluiceStack(app, stackProps.id, {
      ...(stackProps.env ? { env: stackProps.env } : {}),
      ...props(refs),
    });
    const artifact = app.synth().getStackArtifact(stack.artifactId);
    return {
      template: artifact.template as Record<string, Json>,
      messages: artifact.messages.map(
        (m) => `${m.level} ${m.id}: ${typeof m.entry.data === 'string' ? m.entry.data : JSON.stringify(m.entry.data)}`,
      ),
      paths: stack.node.findAll().map((c) => c.node.path),
    };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e), messages: [], paths: [] };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** Writes one JSON file per variant of the tree at `root` into `out`. */
async function synthTree(root: string, out: string): Promise<void> {
  mkdirSync(out, { recursive: true });
  const grantsFile = join(out, '.grants.json');
  writeFileSync(grantsFile, JSON.stringify(GRANTS));
  const lib = (file: string): string => pathToFileURL(join(root, 'lib', file)).href;
  const { SluiceStack } = (await import(lib('sluice-stack.ts'))) as {
    SluiceStack: new (scope: App, id: string, props: Record<string, unknown>) => Stack;
  };
  const { stackOptionsFromContext } = (await import(lib('context.ts'))) as {
    stackOptionsFromContext: (ctx: (k: string) => string | undefined) => { props: Record<string, unknown> };
  };
  let n = 0;
  // Numbered, so a directory listing (and the comparison) follows the order above.
  const write = (name: string, s: Synthesized): void =>
    writeFileSync(
      join(out, `${String(++n).padStart(2, '0')}-${slug(name)}.json`),
      JSON.stringify({ name, ...s }, undefined, 1),
    );

  for (const [name, values] of Object.entries(CONTEXT_VARIANTS)) {
    const props = (): Record<string, unknown> =>
      stackOptionsFromContext((k) => (k === 'grantsFile' && values[k] ? grantsFile : values[k])).props;
    const stacks = name === 'default' ? Object.entries(STACKS) : [['envAgnostic', STACKS.envAgnostic] as const];
    for (const [kind, stackProps] of stacks)
      write(kind === 'envAgnostic' ? name : `${name} (${kind})`, synthesize(SluiceStack, stackProps, props));
  }
  for (const [name, props] of Object.entries(PROPS_VARIANTS))
    write(name, synthesize(SluiceStack, STACKS.envAgnostic, props));
}

const slug = (name: string): string =>
  name
    .replace(/[^A-Za-z0-9=]+/g, '-')
    .replace(/^-|-$/g, '')
    .toLowerCase();

// ----------------------------------------------------------------------------- comparison

/** JSON with object keys sorted, so key order does not count as a difference. */
function canonical(v: Json): Json {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, Json>)[k])]),
    );
  return v;
}

/** Up to `limit` paths at which `a` and `b` differ. */
function differences(a: Json, b: Json, path: string, out: string[], limit = 6): void {
  if (out.length >= limit) return;
  if (JSON.stringify(canonical(a)) === JSON.stringify(canonical(b))) return;
  const isObj = (v: Json): v is Record<string, Json> => v !== null && typeof v === 'object';
  if (isObj(a) && isObj(b) && Array.isArray(a) === Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)]))
      differences(a[k], b[k], Array.isArray(a) ? `${path}[${k}]` : `${path}.${k}`, out, limit);
    return;
  }
  const show = (v: Json): string => (v === undefined ? '(absent)' : JSON.stringify(v).slice(0, 160));
  out.push(`${path}: ${show(a)} → ${show(b)}`);
}

/** What differs between two sides of one variant; empty when nothing does. */
function compare(before: Synthesized, after: Synthesized): { findings: string[]; orderOnly: boolean } {
  const findings: string[] = [];
  if (before.error !== after.error)
    findings.push(`refused: ${before.error ?? '(synthesized)'} → ${after.error ?? '(synthesized)'}`);
  const resA = (before.template?.['Resources'] ?? {}) as Record<string, Json>;
  const resB = (after.template?.['Resources'] ?? {}) as Record<string, Json>;
  const gone = Object.keys(resA).filter((id) => !(id in resB));
  const added = Object.keys(resB).filter((id) => !(id in resA));
  if (gone.length) findings.push(`resources only at the revision: ${gone.join(', ')}`);
  if (added.length) findings.push(`resources only in the working tree: ${added.join(', ')}`);
  for (const id of Object.keys(resA).filter((i) => i in resB)) {
    const d: string[] = [];
    differences(resA[id], resB[id], id, d);
    findings.push(...d.map((x) => `changed ${x}`));
  }
  const sections = new Set([...Object.keys(before.template ?? {}), ...Object.keys(after.template ?? {})]);
  sections.delete('Resources');
  for (const s of sections) {
    const d: string[] = [];
    differences(before.template?.[s], after.template?.[s], s, d);
    findings.push(...d.map((x) => `changed ${x}`));
  }
  const setDiff = (what: string, a: string[], b: string[]): void => {
    const gone = a.filter((x) => !b.includes(x));
    const added = b.filter((x) => !a.includes(x));
    for (const x of gone.slice(0, 5)) findings.push(`${what} only at the revision: ${x}`);
    for (const x of added.slice(0, 5)) findings.push(`${what} only in the working tree: ${x}`);
    if (gone.length + added.length > 10) findings.push(`(${gone.length + added.length - 10} more ${what} differ)`);
  };
  setDiff('message', before.messages, after.messages);
  setDiff('construct', before.paths, after.paths);
  const orderOnly =
    findings.length === 0 &&
    (JSON.stringify(before.template) !== JSON.stringify(after.template) ||
      JSON.stringify(before.paths) !== JSON.stringify(after.paths) ||
      JSON.stringify(before.messages) !== JSON.stringify(after.messages));
  return { findings, orderOnly };
}

// ----------------------------------------------------------------------------------- main

const SCRIPT = fileURLToPath(import.meta.url);

/** Synthesizes the tree at `root` into `out` in a child process (its own aws-cdk-lib state). */
function synthInChild(root: string, out: string): void {
  const r = spawnSync(process.execPath, [...process.execArgv, SCRIPT, '--synth', root, out], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error(`synthesizing ${root} failed (exit ${r.status ?? r.signal})`);
}

const read = (dir: string): Map<string, Synthesized & { name: string }> =>
  new Map(
    readdirSync(dir)
      .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
      .sort()
      .map((f) => {
        const s = JSON.parse(readFileSync(join(dir, f), 'utf8')) as Synthesized & { name: string };
        return [s.name, s] as const;
      }),
  );

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { synth: { type: 'boolean' }, keep: { type: 'string' } },
  });
  if (values.synth) {
    const [root, out] = positionals;
    if (!root || !out) throw new Error('usage: compare-templates.ts --synth ROOT OUT');
    await synthTree(resolve(root), resolve(out));
    return 0;
  }
  const [rev] = positionals;
  if (!rev) throw new Error('usage: npx tsx scripts/compare-templates.ts <rev> [--keep DIR]');
  const root = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
  const commit = execFileSync('git', ['rev-parse', '--short', `${rev}^{commit}`], {
    cwd: root,
    encoding: 'utf8',
  }).trim();
  const tmp = mkdtempSync(join(tmpdir(), 'compare-templates-'));
  const tree = join(tmp, 'tree');
  const nodeModules = realpathSync(join(root, 'node_modules'));
  let worktreeAdded = false;
  try {
    // Both sides are synthesized at the same path, one after the other: with bundling skipped, a
    // function's asset hash is made of its bundling options, which hold absolute paths.
    execFileSync('git', ['worktree', 'add', '--quiet', '--detach', tree, commit], { cwd: root, stdio: 'inherit' });
    worktreeAdded = true;
    symlinkSync(nodeModules, join(tree, 'node_modules'));
    synthInChild(tree, join(tmp, 'rev'));
    execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: root, stdio: 'inherit' });
    worktreeAdded = false;
    // The working tree as it is (tracked and untracked files, uncommitted changes included).
    const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: root,
      encoding: 'utf8',
    });
    for (const file of new Set(files.split('\0').filter(Boolean))) {
      if (file === 'node_modules' || !existsSync(join(root, file))) continue; // a symlink here; deleted files
      mkdirSync(dirname(join(tree, file)), { recursive: true });
      cpSync(join(root, file), join(tree, file), { verbatimSymlinks: true });
    }
    symlinkSync(nodeModules, join(tree, 'node_modules'));
    synthInChild(tree, join(tmp, 'worktree'));
    if (values.keep) {
      cpSync(join(tmp, 'rev'), join(values.keep, commit), { recursive: true });
      cpSync(join(tmp, 'worktree'), join(values.keep, 'worktree'), { recursive: true });
    }
    const before = read(join(tmp, 'rev'));
    const after = read(join(tmp, 'worktree'));
    console.log(`compare-templates: ${commit} (${rev}) against the working tree, ${before.size} variants`);
    let differing = 0;
    for (const [name, a] of before) {
      const b = after.get(name);
      if (!b) throw new Error(`variant ${name} missing from the working tree's synth`);
      const { findings, orderOnly } = compare(a, b);
      const what = a.error
        ? 'refused alike'
        : `${Object.keys(a.template?.['Resources'] ?? {}).length} resources, ${a.messages.length} messages`;
      if (findings.length === 0) {
        console.log(`  identical${orderOnly ? ' (up to key order)' : ''}: ${name} (${what})`);
      } else {
        differing++;
        console.log(`  DIFFERENT: ${name}`);
        for (const f of findings) console.log(`      ${f}`);
      }
    }
    console.log(
      differing === 0 ? `every variant identical (${before.size})` : `${differing} of ${before.size} variants differ`,
    );
    return differing === 0 ? 0 : 1;
  } finally {
    if (worktreeAdded) execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: root, stdio: 'inherit' });
    rmSync(tmp, { recursive: true, force: true });
  }
}

process.exitCode = await main();
