import { defaultInlineMaxBytes, loadConfig, type SluiceConfig } from '../config.js';
import type { Storage } from '../storage/port.js';
import { ClaimService } from './claims/claim-service.js';
import { ConsumerGroupsService } from './leases/lease-groups.js';
import { DlqService } from './leases/dlq-service.js';
import { KmsKeyProvider, LocalKeyProvider, PayloadCipher, type KeyProvider } from './encryption.js';
import { LeaseService } from './leases/lease-service.js';
import { QueueDeletion } from './maintenance/queue-deletion.js';
import { RetentionService } from './maintenance/retention.js';
import { TransactionService } from './transaction-service.js';
import { parseKey } from '../core/sealing.js';
import { GroupRegistry } from './groups/group-registry.js';
import { LogService } from './log/log-service.js';
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
  /** Record claims: consumer groups as shared work queues (docs/CLAIMS.md). */
  claims: ClaimService;
  /** Partition leases: pop, ack, extend (docs/LEASES.md). */
  leases: LeaseService;
  /** The partition-lease dead-letter queue. */
  dlq: DlqService;
  /** Lease consumer groups: lag, delete, subscription, seek. */
  consumerGroups: ConsumerGroupsService;
  /** Atomic pushes + acks. */
  transactions: TransactionService;
  /** Retention of lease queues (run by maintenance). */
  retention: RetentionService;
  /** Queue deletion, and (run by maintenance) the removal of deleted queues' and retired partitions' data. */
  deletion: QueueDeletion;
  telemetry: Telemetry;
  /** Aborted when the process is shutting down: long polls answer early. */
  shutdown: AbortSignal;
}

export interface BuildOptions {
  clock?: () => number;
  notifier?: Notifier;
  shutdown?: AbortSignal;
  telemetry?: Telemetry;
  /** Keys for `encryptionEnabled` queues; by default from SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID. */
  keyProvider?: KeyProvider;
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
  const telemetry = opts.telemetry ?? new MemoryTelemetry();
  const log = new LogService({ storage, config, notifier, clock, telemetry });
  const groups = new GroupRegistry(storage, clock, config.queueCacheMs);
  const claims = new ClaimService({ storage, log, groups, notifier, telemetry, config, clock });
  const keys = opts.keyProvider ?? keyProviderFromConfig(config, storage, clock);
  if (keys) log.setCipher(new PayloadCipher(keys));
  const dlq = new DlqService(storage, log);
  const leases = new LeaseService({ storage, config, log, groups, dlq, notifier, telemetry, clock });
  const consumerGroups = new ConsumerGroupsService(storage, log, groups, leases, clock);
  const transactions = new TransactionService(log, leases);
  const retention = new RetentionService({ log, groups, claims, config, clock });
  const deletion = new QueueDeletion({ storage, log, groups, ready: leases.ready, dlq, config, clock });
  return {
    config,
    storage,
    notifier,
    clock,
    log,
    groups,
    claims,
    leases,
    dlq,
    consumerGroups,
    transactions,
    retention,
    deletion,
    telemetry,
    shutdown: opts.shutdown ?? new AbortController().signal,
  };
}

/** SLUICE_ENCRYPTION_KEY (a local key) wins over SLUICE_KMS_KEY_ID (KMS data keys). */
function keyProviderFromConfig(config: SluiceConfig, storage: Storage, clock: () => number): KeyProvider | undefined {
  if (config.encryptionKey) return new LocalKeyProvider(parseKey(config.encryptionKey));
  if (config.kmsKeyId) {
    const kmsKeyId = config.kmsKeyId;
    let client: Promise<{ send(cmd: unknown): Promise<unknown> }> | undefined;
    const kms = () =>
      (client ??= import('@aws-sdk/client-kms').then(
        (m) => new m.KMSClient({}) as unknown as { send(cmd: unknown): Promise<unknown> },
      ));
    return new KmsKeyProvider(storage, kmsKeyId, kms, clock);
  }
  return undefined;
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
    const telemetry = onLambda
      ? new (await import('./adapters/powertools-telemetry.js')).PowertoolsTelemetry()
      : undefined;
    return buildServices(createAwsStorage(aws), config, telemetry ? { telemetry } : {});
  }
  if (onLambda)
    throw new Error('SLUICE_TABLE_* and SLUICE_BUCKET are not set: a Lambda function has no embedded backend');
  const { openEmbeddedStorage } = await import('../storage/embedded.js');
  return buildServices(await openEmbeddedStorage({ dataDir: config.dataDir, sync: config.sync }), config);
}
