/**
 * The AWS adapter: the storage port over DynamoDB (items, `item-store.ts`) and S3 (blobs,
 * `blob-store.ts`).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import type { Storage } from '../port.js';
import { S3BlobStore } from './blob-store.js';
import type { AwsResources } from './config.js';
import { DynamoItemStore } from './item-store.js';
import { meterAwsClients, type UsageMeterOptions } from './usage-meter.js';
import { newStorageUsage } from '../usage.js';

/** Default for {@link AwsStorageOptions.writeConcurrency}. */
export const DEFAULT_WRITE_CONCURRENCY = 32;

/** What {@link createAwsStorage} opens: the resources, and optionally the clients to use. */
export interface AwsStorageOptions extends AwsResources {
  /** A client to use (and not destroy on close). Created from the environment when omitted. */
  dynamodb?: DynamoDBClient | undefined;
  /** A client to use (and not destroy on close). Created from the environment when omitted. */
  s3?: S3Client | undefined;
  /** Region for the clients this adapter creates; the SDK's own resolution when omitted. */
  region?: string | undefined;
  /** Most single-item writes {@link ItemStore.writeEach} keeps in flight (default {@link DEFAULT_WRITE_CONCURRENCY}). */
  writeConcurrency?: number | undefined;
  /**
   * Count what the requests are billed into the storage's `usage` (`usage-meter.ts`). Always on
   * for clients the adapter creates; for clients passed in, only when given (a client takes one meter).
   */
  usageMeter?: UsageMeterOptions | undefined;
}

/**
 * Opens the AWS adapter. Clients not passed in are created once here (honouring
 * `AWS_ENDPOINT_URL*`, so the same code targets moto or LocalStack) and destroyed by `close()`.
 *
 * @example
 * ```ts
 * const storage = createAwsStorage({ tables: { log: 'sluice-log', ... }, bucket: 'sluice-data' });
 * await storage.items.put('meta', { pk: 'queue#q', sk: 'config', ver: 1, attrs: {} }, { kind: 'absent' });
 * ```
 */
export function createAwsStorage(opts: AwsStorageOptions): Storage {
  const ownDynamo = opts.dynamodb === undefined;
  const ownS3 = opts.s3 === undefined;
  const ddb = opts.dynamodb ?? new DynamoDBClient(opts.region ? { region: opts.region } : {});
  const s3 = opts.s3 ?? createS3Client(opts.region);
  const metered = opts.usageMeter ?? (ownDynamo && ownS3 ? {} : undefined);
  const usage = metered ? newStorageUsage() : undefined;
  if (usage && metered) meterAwsClients(ddb, s3, usage, metered);
  let closed = false;
  return {
    kind: 'aws',
    ...(usage ? { usage } : {}),
    items: new DynamoItemStore(ddb, opts.tables, opts.writeConcurrency ?? DEFAULT_WRITE_CONCURRENCY),
    blobs: new S3BlobStore(s3, opts.bucket),
    close() {
      if (!closed) {
        closed = true;
        // Requests are awaited by their callers, so nothing is pending here; just free sockets.
        if (ownDynamo) ddb.destroy();
        if (ownS3) s3.destroy();
      }
      return Promise.resolve();
    },
  };
}

function createS3Client(region: string | undefined): S3Client {
  const emulated = Boolean(process.env['AWS_ENDPOINT_URL'] || process.env['AWS_ENDPOINT_URL_S3']);
  return new S3Client({
    ...(region ? { region } : {}),
    // Emulators serve buckets by path, not by virtual-host DNS names.
    ...(emulated ? { forcePathStyle: true } : {}),
    // Otherwise stream bodies go out `aws-chunked` and emulators store the framing as data.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
