import { defaultCompressMinBytes, defaultInlineMaxBytes, loadConfig, type SluiceConfig } from '../config.js';
import { defaultMaxWaiters } from '../core/holds.js';
import { parseKey } from '../core/sealing.js';
import type { Storage } from '../storage/port.js';
import { Activity } from './admin/activity.js';
import { ActivityStore } from './admin/activity-store.js';
import { buildAdminReads, type AdminReads } from './admin/index.js';
import { KmsKeyProvider, lazyKmsClient } from './adapters/kms-key-provider.js';
import { unreservedConcurrency } from './adapters/lambda-account.js';
import { ClaimService } from './claims/claim-service.js';
import { LocalKeyProvider, PayloadCipher, type KeyProvider } from './encryption.js';
import { GroupRegistry } from './groups/group-registry.js';
import { AckService } from './leases/ack.js';
import { AckAndPop } from './leases/ack-and-pop.js';
import { DlqService } from './leases/dlq-service.js';
import { LeaseGroupAdmin } from './leases/lease-groups.js';
import { LongPoll } from './leases/long-poll.js';
import { maxSizeGuard } from './leases/max-size-guard.js';
import { MatchingPopService } from './leases/namespace-pop.js';
import { PopService } from './leases/pop.js';
import { SelectorWork } from './leases/selector-work.js';
import { WorkIndex } from './leases/work-index.js';
import { MessageLookup } from './log/message-lookup.js';
import { PushService } from './log/push.js';
import { QueueDirectory } from './log/queue-directory.js';
import { SegmentReader } from './log/segments.js';
import { ActivityRollup } from './maintenance/activity-rollup.js';
import { QueueDeletion } from './maintenance/queue-deletion.js';
import { RetentionService } from './maintenance/retention.js';
import { WorkRepair } from './maintenance/work-repair.js';
import { SegmentBlobSweep } from './maintenance/segment-blob-sweep.js';
import type { ConnectionPoster } from './notifications/connection-poster.js';
import { NotificationService } from './notifications/notification-service.js';
import { Notifier } from './notifier.js';
import { watchWrites, WriteHealth } from './storage-health.js';
import { MemoryTelemetry, type Telemetry } from './telemetry.js';
import { TargetService, type FlagTarget } from './targets/target-service.js';
import { TargetStats } from './targets/target-stats.js';
import { TransactionService } from './transaction-service.js';
import { lambdaMemoryGb, UsageLedger } from './usage.js';
import { WaitSlots } from './wait-slots.js';

/**
 * Everything a handler needs, built once per process (per Lambda container): storage
 * clients, configuration and the services over them.
 */
export interface Services {
  config: SluiceConfig;
  storage: Storage;
  notifier: Notifier;
  clock: () => number;
  /** Queues and partitions: lookups, creation on first push, `/configure`. */
  queues: QueueDirectory;
  /** Pushes: dedup reservations and segment commits. */
  pushes: PushService;
  /** Reads of the log by offset, its tail and head. */
  segments: SegmentReader;
  /** A message by its transactionId. */
  messageLookup: MessageLookup;
  groups: GroupRegistry;
  /** Record claims: consumer groups as shared work queues (docs/CLAIMS.md). */
  claims: ClaimService;
  /** Partition-lease pops, long-polling when asked (docs/LEASES.md). */
  leasePops: PopService;
  /** Partition-lease pops across the queues a namespace and/or task selects (docs/LEASES.md). */
  matchingPops: MatchingPopService;
  /** Partition-lease acks and lease extends (docs/LEASES.md). */
  leaseAcks: AckService;
  /** An ack and the next pop in one request (our route; Queen's clients send two). */
  ackAndPop: AckAndPop;
  /** The partition-lease dead-letter queue. */
  dlq: DlqService;
  /** Lease consumer groups: lag, delete, subscription, seek. */
  leaseGroups: LeaseGroupAdmin;
  /** Atomic pushes + acks. */
  transactions: TransactionService;
  /** Retention of lease queues (run by maintenance). */
  retention: RetentionService;
  /** Queue deletion, and (run by maintenance) the removal of deleted queues' and retired partitions' data. */
  deletion: QueueDeletion;
  /** The orphan segment-blob sweep (run by maintenance). */
  segmentBlobs: SegmentBlobSweep;
  /** The work-index repair pass: partitions a crashed push left hidden from wildcard pops (run by maintenance). */
  workRepair: WorkRepair;
  /** The activity roll-up: every process's minutes summed for the series (run by maintenance). */
  activityRollup: ActivityRollup;
  telemetry: Telemetry;
  /** What each invocation cost (requests, Lambda time, storage units), added to its metrics line; running totals. */
  usage: UsageLedger;
  /** The admin reads: queue and group views, dead letters across queues, message browsing. */
  admin: AdminReads;
  /** What this process served (per-queue counts and series, request latency), counted at the HTTP boundary. */
  activity: Activity;
  /** This process's recent failed storage writes (`/health`, `/ready`); `storage` feeds it. */
  storageHealth: WriteHealth;
  /** The deployment-wide cap on concurrent long-poll waits; undefined when there is none (SLUICE_MAX_WAITERS=0). */
  waitSlots: WaitSlots | undefined;
  /** Aborted when the process is shutting down: long polls answer early. */
  shutdown: AbortSignal;
  /** Wake-ups for idle consumers over WebSocket (AWS; off without SLUICE_NOTIFY_URL). */
  notifications: NotificationService;
  /** Targets: consumer groups delivered to a function or an endpoint (docs/TARGETS.md). */
  targets: TargetService;
  /** What this process's dispatcher counted per target. */
  targetStats: TargetStats;
}

export interface BuildOptions {
  clock?: () => number;
  notifier?: Notifier;
  shutdown?: AbortSignal;
  telemetry?: Telemetry;
  /** Keys for `encryptionEnabled` queues; by default from SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID. */
  keyProvider?: KeyProvider;
  /**
   * With SLUICE_MAX_WAITERS=auto: the account's unreserved Lambda concurrency, read once per
   * process on the first wait; by default `lambda:GetAccountSettings` in AWS_REGION.
   */
  unreservedConcurrency?: () => Promise<number>;
  /** Where the notifier posts wake-ups; by default API Gateway's management API at SLUICE_NOTIFY_CALLBACK_URL. */
  poster?: () => Promise<ConnectionPoster>;
  /**
   * Whether this process runs a target dispatcher, and may deliver to http:// loopback endpoints
   * (the local server). Without one, setting a target is refused: nothing would deliver it.
   * `flags`: the targets it was started with (the local server's `--target`), never stored.
   */
  targets?: { dispatcher: boolean; loopback: boolean; flags?: readonly FlagTarget[] | undefined };
}

/**
 * Wires the services over a storage adapter: each gets only the services it uses.
 *
 * @example
 * ```ts
 * const svc = buildServices(await openEmbeddedStorage({ dataDir }), loadConfig());
 * await svc.pushes.push([{ queue: 'q', payload: Buffer.from('{}') }]);
 * ```
 */
export function buildServices(adapter: Storage, cfg: SluiceConfig, opts: BuildOptions = {}): Services {
  const config: SluiceConfig = {
    ...cfg,
    inlineMaxBytes: cfg.inlineMaxBytes ?? defaultInlineMaxBytes(adapter.kind),
    compressMinBytes: cfg.compressMinBytes ?? defaultCompressMinBytes(adapter.kind),
  };
  const clock = opts.clock ?? Date.now;
  const storageHealth = new WriteHealth(clock);
  const storage = watchWrites(adapter, storageHealth);
  const notifier = opts.notifier ?? new Notifier();
  const telemetry = opts.telemetry ?? new MemoryTelemetry();
  const keys = opts.keyProvider ?? keyProviderFromConfig(config, storage, clock);
  const cipher = keys ? new PayloadCipher(keys) : undefined;
  const segments = new SegmentReader({ storage, cipher, clock, gapCloseMs: config.gapCloseMs });
  const queues = new QueueDirectory({ storage, config, clock, segments, canSeal: cipher !== undefined });
  const pushes = new PushService({ storage, config, notifier, queues, cipher, clock, telemetry });
  const messageLookup = new MessageLookup({ storage, segments, cipher });
  const groups = new GroupRegistry(storage, clock, config.queueCacheMs);
  const waitSlots =
    config.maxWaiters === 0
      ? undefined
      : new WaitSlots({
          storage,
          clock,
          telemetry,
          maxWaiters:
            config.maxWaiters === 'auto'
              ? async () => defaultMaxWaiters(await (opts.unreservedConcurrency ?? accountUnreservedConcurrency)())
              : config.maxWaiters,
        });
  const longPoll = new LongPoll(notifier, waitSlots);
  const claims = new ClaimService({ storage, queues, segments, groups, notifier, longPoll, telemetry, config, clock });
  const dlq = new DlqService({ storage, queues, pushes, cipher, telemetry });
  const selectors = new SelectorWork({ storage, queues, clock });
  const work = new WorkIndex({ storage, queues, segments, groups, clock, recheckMs: config.queueCacheMs, selectors });
  pushes.addCommitHook(work.hook);
  pushes.addPushGuard(maxSizeGuard({ storage, segments }));
  const leasePops = new PopService({
    storage,
    config,
    queues,
    segments,
    cipher,
    groups,
    work,
    longPoll,
    telemetry,
    clock,
  });
  const matchingPops = new MatchingPopService({
    config,
    queues,
    pops: leasePops,
    longPoll,
    groups,
    work,
    selectors,
    clock,
  });
  const leaseAcks = new AckService({ storage, queues, segments, dlq, notifier, telemetry, clock });
  const leaseGroups = new LeaseGroupAdmin({ storage, queues, segments, groups, work, notifier, clock });
  const transactions = new TransactionService({ storage, queues, pushes, acks: leaseAcks, clock });
  const retention = new RetentionService({ storage, queues, segments, groups, claims, config, clock });
  const deletion = new QueueDeletion({ storage, queues, groups, work, dlq, config, clock });
  const segmentBlobs = new SegmentBlobSweep({ storage, config, clock });
  const admin = buildAdminReads({ storage, queues, segments, groups, leaseGroups, dlq, cipher, clock });
  const targets = new TargetService({
    storage,
    groups,
    cipher,
    clock,
    dispatcher: opts.targets?.dispatcher ?? false,
    lambdaTargets: false,
    loopbackTargets: opts.targets?.loopback ?? false,
    flagTargets: opts.targets?.flags,
  });
  return {
    config,
    storage,
    notifier,
    clock,
    queues,
    pushes,
    segments,
    messageLookup,
    groups,
    claims,
    leasePops,
    matchingPops,
    leaseAcks,
    ackAndPop: new AckAndPop({ queues, acks: leaseAcks, pops: leasePops }),
    dlq,
    leaseGroups,
    transactions,
    retention,
    deletion,
    segmentBlobs,
    workRepair: new WorkRepair({ storage, queues, work, telemetry }),
    activityRollup: new ActivityRollup({ storage, clock }),
    telemetry,
    usage: new UsageLedger(adapter.usage, lambdaMemoryGb()),
    admin,
    activity: new Activity(clock, new ActivityStore(storage)),
    storageHealth,
    waitSlots,
    shutdown: opts.shutdown ?? new AbortController().signal,
    notifications: new NotificationService({
      storage,
      clock,
      telemetry,
      url: config.notifyUrl,
      poster: opts.poster ?? (() => apiGatewayPoster(config.notifyCallbackUrl)),
    }),
    targets,
    targetStats: new TargetStats(),
  };
}

/** The unreserved concurrency of the account this process runs in (its region from AWS_REGION). */
function accountUnreservedConcurrency(): Promise<number> {
  const region = process.env['AWS_REGION'] ?? process.env['AWS_DEFAULT_REGION'];
  if (!region) return Promise.reject(new Error('AWS_REGION is not set'));
  return unreservedConcurrency({ region });
}

/** PostToConnection at the WebSocket stage's callback URL; the SDK is loaded only by the notifier. */
async function apiGatewayPoster(endpoint: string | undefined): Promise<ConnectionPoster> {
  if (!endpoint) throw new Error('SLUICE_NOTIFY_CALLBACK_URL is not set');
  const { ApiGatewayPoster } = await import('./adapters/api-gateway-poster.js');
  return new ApiGatewayPoster(endpoint);
}

/** SLUICE_ENCRYPTION_KEY (a local key) wins over SLUICE_KMS_KEY_ID (KMS data keys). */
function keyProviderFromConfig(config: SluiceConfig, storage: Storage, clock: () => number): KeyProvider | undefined {
  if (config.encryptionKey) return new LocalKeyProvider(parseKey(config.encryptionKey));
  if (config.kmsKeyId) return new KmsKeyProvider(storage, config.kmsKeyId, lazyKmsClient(), clock);
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
  const { awsStorageConfigFromEnv, createAwsStorage } = await import('../storage/aws/index.js');
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
  const { openEmbeddedStorage } = await import('../storage/embedded/index.js');
  return buildServices(await openEmbeddedStorage({ dataDir: config.dataDir, sync: config.sync }), config);
}
