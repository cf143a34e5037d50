/**
 * `npm start`: the Sluice HTTP API on one machine. Embedded backend (SQLite + files) by
 * default; the AWS backend when SLUICE_TABLE_* and SLUICE_BUCKET are set.
 *
 *   npm start -- --port 6632 --data-dir ./.sluice-data
 *   npm start -- --host 0.0.0.0 --grants ./grants.json   # bearer tokens + per-queue grants
 *   npm start -- --cors-origin http://localhost:5173      # a dashboard served from elsewhere
 *   npm start -- --log-level warn                         # no line per request (only 5xx)
 *   npm start -- --target 'orders/billing=./handler.ts?batchSize=10'   # a handler module as a group's consumer
 *
 * Without a grants file the server is open to anyone who reaches it, so it only listens on
 * loopback then, and answers only requests addressed to a loopback name from no other web
 * origin (docs/SECURITY.md).
 *
 * What it logs goes through its telemetry (JSON lines: INFO on stdout, WARN and ERROR on
 * stderr); only the usage, the listening banner and why it did not start are printed here.
 * A `--target` handler module's own output goes to stderr, each line prefixed with
 * `[target <file>]` (handler-module.ts).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { loadConfig } from '../config.js';
import { Grants, readGrantsFile } from '../http/grants.js';
import { makeHandler } from '../http/handler.js';
import { SERVER_ROUTES } from '../http/routes.js';
import type { LogLine } from '../service/adapters/key-file-provider.js';
import { runMaintenance } from '../service/maintenance/maintenance.js';
import { buildServices, useServices } from '../service/runtime.js';
import { TARGET_FLAG_FORM, parseTargetFlags, targetFlagValues } from './target-flags.js';
import { openModuleTargets, startTargetDispatcher, type ModuleTargets } from './targets.js';
import { MemoryTelemetry, type Telemetry } from '../service/telemetry.js';
import type { Storage } from '../storage/port.js';
import { assertSafeBind, bearerAuthenticator, withBearerTokens } from './auth.js';
import { CONSOLE_PATH, readConsoleFiles } from './console-assets.js';
import { corsOriginProblem, requestGate } from './edge.js';
import { parseLogLevel, requestLogger } from './request-log.js';
import { SERVER_LIMITS, startLocalServer, type LambdaHttpHandler, type LocalServer } from './server.js';
import { listenProblem, localKeyProvider, withLocalDefaults } from './setup.js';

// Old-generation growth capped at 2x the live data (V8 allows 4x): less memory resident for as
// many full collections (docs/BENCHMARKS.md, Local server and build). V8 reads it at each collection.
setFlagsFromString('--heap-growing-percent=100');

/** Start-up and usage output, for the person starting the server; not log lines (those go through telemetry). */
function print(text: string, to: 'stdout' | 'stderr' = 'stdout'): void {
  // eslint-disable-next-line no-console -- the one console write here: usage, banner, why it did not start (eslint.config.js)
  console[to === 'stdout' ? 'log' : 'error'](text);
}

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    'data-dir': { type: 'string' },
    sync: { type: 'string' },
    grants: { type: 'string' },
    'cors-origin': { type: 'string', multiple: true },
    'allowed-host': { type: 'string', multiple: true },
    'max-connections': { type: 'string' },
    'log-level': { type: 'string' },
    target: { type: 'string', multiple: true },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  print(
    'usage: npm start -- [--port 6632] [--host 127.0.0.1] [--data-dir ./.sluice-data] [--sync full|normal] [--grants grants.json]\n' +
      '                    [--cors-origin https://dash.example]... [--allowed-host sluice.internal]... [--max-connections 1000]\n' +
      '                    [--log-level debug|info|warn|error|silent]\n' +
      `                    [--target '${TARGET_FLAG_FORM}']...\n` +
      '\n' +
      '--target runs a handler module (export const handler = async (event, context) => …) as the consumer of one\n' +
      "group, e.g. --target 'orders/billing=./handler.ts?mode=claims&batchSize=10&maximumConcurrency=2'. The knobs\n" +
      'are those of PUT /api/v1/targets/{queue}/{group}, under their names; quote the value (it holds ? and &).\n' +
      'SLUICE_TARGETS takes the same values, comma-separated. docs/TARGETS.md, "Develop a consumer locally".',
  );
  process.exit(0);
}

const env = withLocalDefaults({ ...process.env });
if (values.port) env.SLUICE_PORT = values.port;
if (values.host) env.SLUICE_HOST = values.host;
if (values['data-dir']) env.SLUICE_DATA_DIR = values['data-dir'];
if (values.sync) env.SLUICE_SYNC = values.sync;
if (values.grants) env.SLUICE_GRANTS_FILE = values.grants;
if (values['cors-origin']) env.SLUICE_CORS_ORIGINS = values['cors-origin'].join(',');
if (values['allowed-host']) env.SLUICE_ALLOWED_HOSTS = values['allowed-host'].join(',');
if (values['max-connections']) env.SLUICE_MAX_CONNECTIONS = values['max-connections'];
if (values['log-level']) env.SLUICE_LOG_LEVEL = values['log-level'];

/** A comma-separated list from the environment. */
const list = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A key-file line (service/adapters/key-file-provider.ts) at its own level. */
const logKeyFile =
  (telemetry: Telemetry) =>
  ({ level, message, ...fields }: LogLine): void =>
    level === 'WARN' ? telemetry.warn(message, fields) : telemetry.info(message, fields);

async function main(): Promise<void> {
  const telemetry = new MemoryTelemetry({ info: true });
  const config = loadConfig(env);
  const grantsFile = env.SLUICE_GRANTS_FILE || undefined;
  assertSafeBind(config.host, grantsFile !== undefined);
  const corsOrigins = list(env.SLUICE_CORS_ORIGINS);
  for (const origin of corsOrigins) {
    const problem = corsOriginProblem(origin);
    if (problem) throw new Error(`--cors-origin ${problem}`);
  }
  const allowedHosts = list(env.SLUICE_ALLOWED_HOSTS);
  const maxConnections = Number(env.SLUICE_MAX_CONNECTIONS ?? SERVER_LIMITS.maxConnections);
  if (!Number.isInteger(maxConnections) || maxConnections < 1)
    throw new Error(`--max-connections must be a whole number of 1 or more (got ${env.SLUICE_MAX_CONNECTIONS})`);
  const requestLog = requestLogger(parseLogLevel(env.SLUICE_LOG_LEVEL));
  // Not through `env` as the other flags are: a flag's value may hold the comma the variable's list is cut at.
  const targetValues = targetFlagValues(values.target, env.SLUICE_TARGETS);
  const flagTargets = parseTargetFlags(targetValues.values, process.cwd(), targetValues.source);
  let handler: LambdaHttpHandler;
  let tokens: Record<string, string> | undefined;
  if (grantsFile) {
    const grantsConfig = readGrantsFile(grantsFile);
    tokens = grantsConfig.tokens ?? {};
    if (Object.keys(tokens).length === 0)
      throw new Error(`grants file ${grantsFile} has no "tokens": nobody could authenticate to the local server`);
    // The edge authenticates from the headers before the body is read; the handler checks the
    // token again, so no path to it can skip authentication.
    handler = withBearerTokens(makeHandler(SERVER_ROUTES, { grants: Grants.from(grantsConfig), requestLog }), tokens);
  } else {
    handler = makeHandler(SERVER_ROUTES, { grants: Grants.open(), requestLog });
  }
  const gate = requestGate({
    allowedHosts,
    // Open, the server trusts whoever reaches it, so a rebound DNS name must not; with grants a
    // page cannot borrow a bearer token, and hosts are checked when configured.
    checkHost: grantsFile === undefined || allowedHosts.length > 0,
    corsOrigins,
    authenticate: tokens ? bearerAuthenticator(tokens) : undefined,
  });
  // The AWS SDK is heavy to load (docs/BENCHMARKS.md, Local server and build): only for the AWS backend.
  const wantsAws = Object.keys(env).some((k) => (k.startsWith('SLUICE_TABLE_') || k === 'SLUICE_BUCKET') && env[k]);
  const awsModule = wantsAws ? await import('../storage/aws/index.js') : undefined;
  const aws = awsModule?.awsStorageConfigFromEnv(env);
  let storage: Storage;
  if (awsModule && aws) storage = awsModule.createAwsStorage(aws);
  else {
    const { openEmbeddedStorage } = await import('../storage/embedded/index.js');
    storage = await openEmbeddedStorage({ dataDir: config.dataDir, sync: config.sync });
  }
  const stopping = new AbortController();
  const sealing = localKeyProvider(config, storage.kind, logKeyFile(telemetry));
  const svc = buildServices(storage, config, {
    shutdown: stopping.signal,
    telemetry,
    ...(sealing.keys ? { keyProvider: sealing.keys } : {}),
    targets: { dispatcher: true, loopback: true, flags: flagTargets },
  });
  useServices(svc);
  let modules: ModuleTargets;
  try {
    await svc.targets.checkFlagTargets();
    modules = await openModuleTargets(flagTargets);
  } catch (e) {
    await storage.close();
    throw e;
  }
  let server: LocalServer;
  try {
    server = await startLocalServer({
      handler,
      gate,
      host: config.host,
      port: config.port,
      maxBodyBytes: config.maxBodyBytes,
      limits: { maxConnections },
      log: telemetry,
      // Built beside this file by `npm start` (scripts/build-server.ts).
      consoleFiles: readConsoleFiles(join(dirname(fileURLToPath(import.meta.url)), 'console')),
    });
  } catch (e) {
    await modules.close();
    await storage.close();
    throw new Error(listenProblem(e, config.host, config.port) ?? (e instanceof Error ? e.message : String(e)));
  }
  const intervalMs = Number(env.SLUICE_MAINTENANCE_INTERVAL_MS ?? 60_000);
  const timer =
    intervalMs > 0
      ? setInterval(() => {
          runMaintenance(svc).catch((e: unknown) => telemetry.error('maintenance failed', { error: String(e) }));
        }, intervalMs)
      : undefined;
  timer?.unref();
  const targets = startTargetDispatcher(svc, modules);
  print(
    JSON.stringify({
      level: 'INFO',
      message: 'sluice listening',
      url: server.url,
      console: `${server.url}${CONSOLE_PATH}/`,
      backend: storage.kind,
      dataDir: aws ? undefined : config.dataDir,
      auth: grantsFile ? `bearer tokens, grants from ${grantsFile}` : 'none (loopback only)',
      encryptionKey: sealing.source,
      ...(corsOrigins.length ? { corsOrigins } : {}),
      ...(allowedHosts.length ? { allowedHosts } : {}),
      ...(flagTargets.length
        ? { targets: flagTargets.map(({ queue, group, settings }) => ({ queue, group, endpoint: settings.endpoint })) }
        : {}),
    }),
  );

  let closing = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (closing) return;
    closing = true;
    telemetry.info('shutting down', { signal });
    if (timer) clearInterval(timer);
    stopping.abort(); // long polls answer now instead of at their timeout
    await server.close(); // requests in flight finish; every acknowledged push is already committed
    await targets.stop(); // batches in flight settle
    // The minute under way, so the series still show it after a restart.
    await svc.activity.flushDue({ underWay: true }).catch(() => undefined);
    await storage.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((e: unknown) => {
  print(`sluice: ${e instanceof Error ? e.message : String(e)}`, 'stderr');
  process.exit(1);
});
