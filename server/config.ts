/**
 * Service-wide settings, read once from the environment. Every value has a default that
 * works for `npm start`; the CDK stack sets the AWS ones.
 *
 * @example
 * ```ts
 * const cfg = loadConfig({ SLUICE_PORT: '7000' });
 * cfg.port; // 7000
 * ```
 */
export interface SluiceConfig {
  /** Local server bind address; loopback unless told otherwise. */
  host: string;
  port: number;
  /** Embedded backend directory. */
  dataDir: string;
  /** SQLite durability: `full` fsyncs every commit, `normal` survives process crashes only. */
  sync: 'full' | 'normal';
  /**
   * Compressed segments up to this size are stored inside the index item; larger ones as
   * blobs. Undefined picks the backend's default (see {@link defaultInlineMaxBytes}).
   */
  inlineMaxBytes: number | undefined;
  /**
   * Segments whose messages pack to fewer bytes than this are stored uncompressed (still a zstd
   * frame). Undefined picks the backend's default (see {@link defaultCompressMinBytes}).
   */
  compressMinBytes: number | undefined;
  /**
   * Largest request body accepted. On AWS the stack sets it so that any body up to it still
   * fits Lambda's 6 MB event once escaped (lib/limits.ts); the local default is 6 MiB.
   */
  maxBodyBytes: number;
  /** Largest single message payload (its JSON text). */
  maxMessageBytes: number;
  /** Most messages one push may carry. */
  maxPushItems: number;
  /** A push whose reservations are older than this without a commit may be aborted by another. */
  pushStallMs: number;
  /** Blobs younger than this are never swept (they may belong to a push still in flight). */
  sweepGraceMs: number;
  /**
   * How long readers wait at a range of offsets a push took and has not written before they
   * close it with a skip (SLUICE_GAP_CLOSE_MS): longer than any push can run (30 s on AWS), so
   * the writer of a range that old is gone (docs/STORAGE.md, "How a push commits").
   */
  gapCloseMs: number;
  /** How long a queue's configuration is cached per process. */
  queueCacheMs: number;
  /**
   * Record claims: service-wide defaults of the per-queue options `visibilityTimeoutMs`,
   * `maxAttempts`, `maxInFlight` and `maxVisibilityMs` (the seed's FELIX_GROUP_* settings),
   * from SLUICE_GROUP_VISIBILITY_TIMEOUT_MS, SLUICE_GROUP_MAX_ATTEMPTS,
   * SLUICE_GROUP_MAX_IN_FLIGHT and SLUICE_GROUP_MAX_VISIBILITY_MS.
   */
  claimDefaults: ClaimDefaults;
  /**
   * Cap on a claim poll's `waitMs` (SLUICE_CLAIM_MAX_WAIT_MS). 25 s rather than the seed's
   * 30 s: API Gateway ends every integration at 30 s, so a poll must answer well before.
   */
  claimMaxWaitMs: number;
  /**
   * Longest a long-polling partition-lease pop (`wait=true`) holds before answering 204
   * (SLUICE_MAX_POP_WAIT_MS): below API Gateway's 30 s, so a waiting client gets an empty
   * answer, never a 504.
   */
  maxPopWaitMs: number;
  /**
   * Most long polls (waiting pops and claim polls) that wait at once across the deployment
   * (SLUICE_MAX_WAITERS): a number, 0 for no cap (the default: the local server is one process,
   * where waiting costs nothing), or `auto` for a share of the account's unreserved Lambda
   * concurrency (what the CDK stack sets unless told a number; docs/DEPLOYING.md, "Quotas").
   * A request turned away by the cap holds briefly and answers empty.
   */
  maxWaiters: number | 'auto';
  /** Base64 32-byte key sealing payloads of queues with `encryptionEnabled` (SLUICE_ENCRYPTION_KEY; local server). */
  encryptionKey: string | undefined;
  /** KMS key whose data keys seal payloads of queues with `encryptionEnabled` (SLUICE_KMS_KEY_ID; AWS). */
  kmsKeyId: string | undefined;
  /**
   * The WebSocket URL idle consumers wait on (SLUICE_NOTIFY_URL; set by the CDK stack). Unset
   * (the local server): no notification channel, consumers long-poll, which costs nothing there.
   */
  notifyUrl: string | undefined;
  /** The WebSocket stage's management endpoint the notifier posts to (SLUICE_NOTIFY_CALLBACK_URL; AWS). */
  notifyCallbackUrl: string | undefined;
}

/** Defaults of the record-claim queue options. */
export interface ClaimDefaults {
  visibilityTimeoutMs: number;
  maxAttempts: number;
  maxInFlight: number;
  maxVisibilityMs: number;
}

export const MIB = 1024 * 1024;

const num = (
  env: Record<string, string | undefined>,
  key: string,
  dflt: number,
  min = 0,
  max = Number.POSITIVE_INFINITY,
): number => {
  const raw = env[key];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new Error(
      `${key} must be a number >= ${min}${max < Number.POSITIVE_INFINITY ? ` and <= ${max}` : ''} (got ${JSON.stringify(raw)})`,
    );
  return n;
};

/** SLUICE_MAX_WAITERS: `auto`, or a whole number from 0 (no cap) to 999,999. */
function maxWaitersOf(raw: string | undefined): number | 'auto' {
  const v = raw?.trim() ?? '';
  if (v === '') return 0;
  if (v === 'auto') return 'auto';
  if (!/^\d{1,6}$/.test(v))
    throw new Error(
      `SLUICE_MAX_WAITERS must be "auto" or a whole number from 0 (no cap) to 999999 (got ${JSON.stringify(raw)})`,
    );
  return Number(v);
}

/**
 * Largest inline segment: an inline segment's item (keys, index attributes, the bytes) must
 * stay under the 400 KB item limit both backends enforce, or every push that large would fail.
 */
export const MAX_INLINE_BYTES = 390_000;

export function loadConfig(env: Record<string, string | undefined> = process.env): SluiceConfig {
  const sync = env.SLUICE_SYNC ?? 'full';
  if (sync !== 'full' && sync !== 'normal')
    throw new Error(`SLUICE_SYNC must be "full" or "normal" (got ${JSON.stringify(sync)})`);
  return {
    host: env.SLUICE_HOST ?? '127.0.0.1',
    port: num(env, 'SLUICE_PORT', 6632),
    dataDir: env.SLUICE_DATA_DIR ?? './.sluice-data',
    sync,
    inlineMaxBytes: env.SLUICE_INLINE_MAX_BYTES
      ? num(env, 'SLUICE_INLINE_MAX_BYTES', 0, 0, MAX_INLINE_BYTES)
      : undefined,
    compressMinBytes: env.SLUICE_COMPRESS_MIN_BYTES
      ? num(env, 'SLUICE_COMPRESS_MIN_BYTES', 0, 0, MAX_INLINE_BYTES)
      : undefined,
    maxBodyBytes: num(env, 'SLUICE_MAX_BODY_BYTES', 6 * MIB, 1024),
    maxMessageBytes: num(env, 'SLUICE_MAX_MESSAGE_BYTES', 2 * MIB, 1),
    maxPushItems: num(env, 'SLUICE_MAX_PUSH_ITEMS', 10_000, 1),
    pushStallMs: num(env, 'SLUICE_PUSH_STALL_MS', 30_000, 1),
    sweepGraceMs: num(env, 'SLUICE_SWEEP_GRACE_MS', 15 * 60_000, 0),
    gapCloseMs: num(env, 'SLUICE_GAP_CLOSE_MS', 60_000, 0),
    queueCacheMs: num(env, 'SLUICE_QUEUE_CACHE_MS', 1000, 0),
    claimDefaults: loadClaimDefaults(env),
    claimMaxWaitMs: num(env, 'SLUICE_CLAIM_MAX_WAIT_MS', 25_000, 0),
    maxPopWaitMs: num(env, 'SLUICE_MAX_POP_WAIT_MS', 25_000, 0),
    maxWaiters: maxWaitersOf(env.SLUICE_MAX_WAITERS),
    encryptionKey: env.SLUICE_ENCRYPTION_KEY || undefined,
    kmsKeyId: env.SLUICE_KMS_KEY_ID || undefined,
    notifyUrl: env.SLUICE_NOTIFY_URL || undefined,
    notifyCallbackUrl: env.SLUICE_NOTIFY_CALLBACK_URL || undefined,
  };
}

function loadClaimDefaults(env: Record<string, string | undefined>): ClaimDefaults {
  const d: ClaimDefaults = {
    visibilityTimeoutMs: num(env, 'SLUICE_GROUP_VISIBILITY_TIMEOUT_MS', 30_000, 1),
    maxAttempts: num(env, 'SLUICE_GROUP_MAX_ATTEMPTS', 5, 1),
    maxInFlight: num(env, 'SLUICE_GROUP_MAX_IN_FLIGHT', 10_000, 1),
    maxVisibilityMs: num(env, 'SLUICE_GROUP_MAX_VISIBILITY_MS', 43_200_000, 1),
  };
  if (d.maxVisibilityMs < d.visibilityTimeoutMs) {
    throw new Error(
      `SLUICE_GROUP_MAX_VISIBILITY_MS (${d.maxVisibilityMs}) must not be below SLUICE_GROUP_VISIBILITY_TIMEOUT_MS (${d.visibilityTimeoutMs})`,
    );
  }
  return d;
}

/**
 * Inline threshold per backend. On AWS it is a price: an inline segment is one plain put at one
 * write unit per KB, while a blob costs an S3 PUT ($5/M, eight write units) plus a commit marker
 * that makes the commit a transaction, so segments up to ~8 KiB compressed are cheaper inline
 * (docs/STORAGE.md, "Inline or blob"). On the embedded backend everything is one SQLite file and
 * a separate file per segment only costs time, so segments stay inline up to well below the
 * item limit.
 */
export function defaultInlineMaxBytes(backend: 'embedded' | 'aws'): number {
  return backend === 'aws' ? 8192 : 256 * 1024;
}

/**
 * Below this many packed bytes a segment is stored uncompressed, per backend. On AWS every byte
 * is billed (a 1 KiB message compresses into one write unit, not two), so everything is
 * compressed. On the embedded backend a compressor call costs a small push more CPU than the
 * rest of its commit (docs/BENCHMARKS.md, "Small requests") and disk is cheap.
 */
export function defaultCompressMinBytes(backend: 'embedded' | 'aws'): number {
  return backend === 'aws' ? 0 : 4096;
}
