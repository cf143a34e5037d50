/**
 * What lets an operator undo a mistake (docs/DEPLOYING.md, "Restoring from a point in time"):
 * deletion protection on the tables the stack keeps, and optional versioning of the segment
 * bucket, so that blobs deleted by retention, queue deletion or the orphan sweep can be brought
 * back for as long as a table restore may need them. Point-in-time recovery itself is on for
 * every table (lib/service/storage.ts).
 *
 * @example
 * ```ts
 * new dynamodb.Table(this, 'T', { ..., removalPolicy, deletionProtection: tableDeletionProtection(removalPolicy) });
 * new s3.Bucket(this, 'B', { ...bucketVersioningProps({ noncurrentVersionExpiration: Duration.days(35) }) });
 * ```
 */
import { RemovalPolicy, type Duration } from 'aws-cdk-lib';
import type * as s3 from 'aws-cdk-lib/aws-s3';

/**
 * Whether a table gets DynamoDB deletion protection: when the stack keeps it on deletion, so a
 * table outlives a mistaken `cdk destroy` *and* a mistaken `delete-table`. Never with DESTROY
 * (or SNAPSHOT), whose stack deletion would then fail on the table.
 *
 * @example
 * ```ts
 * tableDeletionProtection(RemovalPolicy.RETAIN); // true
 * tableDeletionProtection(RemovalPolicy.DESTROY); // false
 * ```
 */
export function tableDeletionProtection(removalPolicy: RemovalPolicy): boolean {
  return removalPolicy === RemovalPolicy.RETAIN || removalPolicy === RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE;
}

export interface BucketVersioningOptions {
  /**
   * How long a blob stays after it is deleted (or replaced), as a noncurrent version, before S3
   * expires it: whole days from 1 to {@link MAX_NONCURRENT_DAYS}. Match it to how far back a
   * table restore may reach (PITR keeps 35 days).
   */
  noncurrentVersionExpiration: Duration;
}

/** Longest `noncurrentVersionExpiration` (days): past a year a version outlives any restore it could serve. */
export const MAX_NONCURRENT_DAYS = 365;

/**
 * Throws unless `opts` keeps noncurrent versions for whole days from 1 to {@link MAX_NONCURRENT_DAYS}.
 *
 * @example
 * ```ts
 * checkBucketVersioning('bucketVersioning', { noncurrentVersionExpiration: Duration.days(35) }); // ok
 * checkBucketVersioning('bucketVersioning', { noncurrentVersionExpiration: Duration.hours(5) }); // throws
 * ```
 */
export function checkBucketVersioning(what: string, opts: BucketVersioningOptions | undefined): void {
  if (!opts) return;
  const days = opts.noncurrentVersionExpiration.toMilliseconds() / 86_400_000;
  if (!Number.isInteger(days) || days < 1 || days > MAX_NONCURRENT_DAYS)
    throw new Error(
      `${what} must keep noncurrent versions for whole days from 1 to ${MAX_NONCURRENT_DAYS} (got ${opts.noncurrentVersionExpiration.toHumanString()})`,
    );
}

/**
 * The bucket properties of `opts`: versioning on, and a lifecycle rule expiring noncurrent
 * versions after the given days and removing the delete markers left with no version behind
 * them (each is a key the orphan sweep's listing must step over). Without `opts`: unversioned,
 * no rule. The caller adds these rules to its own (none is replaced).
 */
export function bucketVersioningProps(opts: BucketVersioningOptions | undefined): {
  versioned: boolean;
  lifecycleRules: s3.LifecycleRule[];
} {
  if (!opts) return { versioned: false, lifecycleRules: [] };
  return {
    versioned: true,
    lifecycleRules: [
      {
        id: 'expire-noncurrent-versions',
        noncurrentVersionExpiration: opts.noncurrentVersionExpiration,
        expiredObjectDeleteMarker: true,
      },
    ],
  };
}
