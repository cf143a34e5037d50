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
  /** Largest request body accepted (Lambda's synchronous payload limit is 6 MB). */
  maxBodyBytes: number;
  /** Largest single message payload (its JSON text). */
  maxMessageBytes: number;
  /** Most messages one push may carry. */
  maxPushItems: number;
  /** A push whose reservations are older than this without a commit may be aborted by another. */
  pushStallMs: number;
  /** Blobs younger than this are never swept (they may belong to a push still in flight). */
  sweepGraceMs: number;
  /** How long a queue's configuration is cached per process. */
  queueCacheMs: number;
}

export const MIB = 1024 * 1024;

const num = (env: Record<string, string | undefined>, key: string, dflt: number, min = 0): number => {
  const raw = env[key];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${key} must be a number >= ${min} (got ${JSON.stringify(raw)})`);
  return n;
};

export function loadConfig(env: Record<string, string | undefined> = process.env): SluiceConfig {
  const sync = env.SLUICE_SYNC ?? 'full';
  if (sync !== 'full' && sync !== 'normal') throw new Error(`SLUICE_SYNC must be "full" or "normal" (got ${JSON.stringify(sync)})`);
  return {
    host: env.SLUICE_HOST ?? '127.0.0.1',
    port: num(env, 'SLUICE_PORT', 6632),
    dataDir: env.SLUICE_DATA_DIR ?? './.sluice-data',
    sync,
    inlineMaxBytes: env.SLUICE_INLINE_MAX_BYTES ? num(env, 'SLUICE_INLINE_MAX_BYTES', 0) : undefined,
    maxBodyBytes: num(env, 'SLUICE_MAX_BODY_BYTES', 6 * MIB, 1024),
    maxMessageBytes: num(env, 'SLUICE_MAX_MESSAGE_BYTES', 2 * MIB, 1),
    maxPushItems: num(env, 'SLUICE_MAX_PUSH_ITEMS', 10_000, 1),
    pushStallMs: num(env, 'SLUICE_PUSH_STALL_MS', 30_000, 1),
    sweepGraceMs: num(env, 'SLUICE_SWEEP_GRACE_MS', 15 * 60_000, 0),
    queueCacheMs: num(env, 'SLUICE_QUEUE_CACHE_MS', 1000, 0),
  };
}

/**
 * Inline threshold per backend. On AWS it is a price: an S3 PUT ($5/M) costs as much as eight
 * 1 KB DynamoDB write units, and inside a commit transaction an inline segment costs two
 * units per KB, so segments above ~4 KiB compressed are cheaper as S3 objects (see
 * docs/STORAGE.md). On the embedded backend everything is one SQLite file and a separate file
 * per segment only costs time, so segments stay inline up to well below the item limit.
 */
export function defaultInlineMaxBytes(backend: 'embedded' | 'aws'): number {
  return backend === 'aws' ? 4096 : 256 * 1024;
}
