import { defaultInlineMaxBytes, loadConfig, type SluiceConfig } from '../config.js';
import type { Storage } from '../storage/port.js';
import { GroupRegistry } from './groups.js';
import { LogService } from './log-service.js';
import { Notifier } from './notifier.js';
import { MemoryTelemetry, type Telemetry } from './telemetry.js';

/**
 * Everything a handler needs, built once per process (per Lambda container): storage
 * clients, configuration and the services over them.
 */
export interface Services {
  config: SluiceConfig;
  storage: Storage;
  notifier: Notifier;
  clock: () => number;
  log: LogService;
  groups: GroupRegistry;
  telemetry: Telemetry;
  /** Aborted when the process is shutting down: long polls answer early. */
  shutdown: AbortSignal;
}

export interface BuildOptions {
  clock?: () => number;
  notifier?: Notifier;
  shutdown?: AbortSignal;
  telemetry?: Telemetry;
}

/**
 * Wires the services over a storage adapter.
 *
 * @example
 * ```ts
 * const svc = buildServices(await openEmbeddedStorage({ dataDir }), loadConfig());
 * await svc.log.push([{ queue: 'q', payload: Buffer.from('{}') }]);
 * ```
 */
export function buildServices(storage: Storage, cfg: SluiceConfig, opts: BuildOptions = {}): Services {
  const config: SluiceConfig = { ...cfg, inlineMaxBytes: cfg.inlineMaxBytes ?? defaultInlineMaxBytes(storage.kind) };
  const clock = opts.clock ?? Date.now;
  const notifier = opts.notifier ?? new Notifier();
  const log = new LogService({ storage, config, notifier, clock });
  const groups = new GroupRegistry(storage, clock, config.queueCacheMs);
  const telemetry = opts.telemetry ?? new MemoryTelemetry();
  return { config, storage, notifier, clock, log, groups, telemetry, shutdown: opts.shutdown ?? new AbortController().signal };
}

let current: Promise<Services> | undefined;

/** Installs the services handlers use (the local server does this at start). */
export function useServices(s: Services | Promise<Services>): void {
  current = Promise.resolve(s);
}

/** The process's services; on Lambda, built from the environment on first use. */
export function services(): Promise<Services> {
  current ??= fromEnvironment();
  return current;
}

async function fromEnvironment(): Promise<Services> {
  const config = loadConfig();
  const { awsStorageConfigFromEnv, createAwsStorage } = await import('../storage/aws.js');
  const aws = awsStorageConfigFromEnv();
  const onLambda = Boolean(process.env['AWS_LAMBDA_FUNCTION_NAME']);
  if (aws) {
    // On Lambda: structured logs and EMF metrics (Powertools); elsewhere the in-memory default.
    const telemetry = onLambda ? new (await import('./powertools-telemetry.js')).PowertoolsTelemetry() : undefined;
    return buildServices(createAwsStorage(aws), config, telemetry ? { telemetry } : {});
  }
  if (onLambda) throw new Error('SLUICE_TABLE_* and SLUICE_BUCKET are not set: a Lambda function has no embedded backend');
  const { openEmbeddedStorage } = await import('../storage/embedded.js');
  return buildServices(await openEmbeddedStorage({ dataDir: config.dataDir, sync: config.sync }), config);
}
