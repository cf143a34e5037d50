/**
 * The AWS blob store: the port's blobs as S3 objects in one bucket, put-if-absent as
 * `If-None-Match: *`. `SlowDown` and 503s past the retries, 5xx answers and lost connections
 * surface as the port's `StoreUnavailableError` (`retry.ts`).
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { ConditionFailedError, type BlobInfo, type BlobStore } from '../port.js';
import { backoff, errorName, S3_CONFLICT_RETRIES, sleep, statusOf, throttled, unavailable } from './retry.js';

/**
 * The port's {@link BlobStore} over an S3 bucket.
 *
 * @example
 * ```ts
 * const blobs = new S3BlobStore(new S3Client({}), 'sluice-data');
 * await blobs.put('seg/q/0001', bytes, { ifAbsent: true });
 * ```
 */
export class S3BlobStore implements BlobStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  async put(key: string, bytes: Uint8Array, opts: { ifAbsent?: boolean } = {}): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await throttled('S3 PutObject', () =>
          this.s3.send(
            new PutObjectCommand({
              Bucket: this.bucket,
              Key: key,
              Body: bytes,
              ...(opts.ifAbsent ? { IfNoneMatch: '*' } : {}),
            }),
          ),
        );
        return;
      } catch (err) {
        const name = errorName(err);
        if (name === 'PreconditionFailed' || statusOf(err) === 412) {
          throw new ConditionFailedError([{ index: 0, current: undefined }]);
        }
        // S3 answers 409 when a concurrent conditional write to the key is in progress; the
        // retry then sees the winner's object (412) or succeeds.
        if ((name === 'ConditionalRequestConflict' || statusOf(err) === 409) && attempt < S3_CONFLICT_RETRIES) {
          await sleep(backoff(attempt, 50, 1_000));
          continue;
        }
        throw err;
      }
    }
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      const out = await throttled('S3 GetObject', () =>
        this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key })),
      );
      if (out.Body === undefined) return new Uint8Array(0);
      return await out.Body.transformToByteArray();
    } catch (err) {
      if (errorName(err) === 'NoSuchKey' || statusOf(err) === 404) return undefined;
      // The body stream can break after the headers came: that is no answer either.
      throw unavailable(err, 'S3 GetObject') ?? err;
    }
  }

  async delete(key: string): Promise<void> {
    // S3 deletes are idempotent: a missing key answers 204 like a present one.
    await throttled('S3 DeleteObject', () => this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })));
  }

  async list(
    prefix: string,
    opts: { after?: string | undefined; limit?: number | undefined } = {},
  ): Promise<{ blobs: BlobInfo[]; next?: string | undefined }> {
    const { after, limit } = opts;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
      throw new Error(`list limit must be a positive integer, got ${limit}`);
    }
    const out = await throttled('S3 ListObjectsV2', () =>
      this.s3.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(after ? { StartAfter: after } : {}),
          ...(limit !== undefined ? { MaxKeys: limit } : {}),
        }),
      ),
    );
    const blobs: BlobInfo[] = (out.Contents ?? []).map((o) => ({
      key: o.Key ?? '',
      size: o.Size ?? 0,
      modifiedAt: o.LastModified?.getTime() ?? 0,
    }));
    const last = blobs.at(-1)?.key;
    return out.IsTruncated && last !== undefined ? { blobs, next: last } : { blobs };
  }
}
