/**
 * `SluiceService`'s storage room: the DynamoDB tables (one per storage-port table, all of one
 * item shape), the segment bucket and the KMS key that seals payloads of `encryptionEnabled`
 * queues. Built in the service's own scope, as every room is (lib/service/rooms.ts says why).
 *
 * @example
 * ```ts
 * const { tables, bucket, payloadKey } = createStorage(this, { removalPolicy: RemovalPolicy.RETAIN, notifications: true });
 * ```
 */
import { Annotations, Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { SEGMENT_BLOB_PREFIX } from '../../server/storage/blob-prefixes.js';
import { ITEM_TABLE_SCHEMA } from '../../server/storage/aws/schema.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import {
  bucketVersioningProps,
  checkBucketVersioning,
  tableDeletionProtection,
  type BucketVersioningOptions,
} from '../recovery.js';
import { capitalise } from './rooms.js';

/**
 * The KMS key sealing payloads of queues with `encryptionEnabled` (each function process asks
 * it for a data key; see server/service/encryption.ts).
 *
 * @example
 * ```ts
 * new SluiceService(this, 'Queue', { payloadKey: { create: true } });
 * new SluiceService(this, 'Queue', { payloadKey: { keyArn: 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-...' } });
 * ```
 */
export type PayloadKeyOption =
  /** A key this construct creates: symmetric, yearly rotation, kept or deleted with the data. */
  | { create: true }
  /** An existing symmetric key, by ARN. Its key policy must let the account's IAM policies grant use. */
  | { keyArn: string }
  /** An existing key construct. */
  | { key: kms.IKey };

/** What the storage room reads of `SluiceServiceProps` (defaults resolved by the caller where noted). */
export interface StorageProps {
  /** Resolved: RETAIN unless the props said otherwise. */
  removalPolicy: RemovalPolicy;
  /** Resolved: whether the notification channel (and so the `log` table's stream) exists. */
  notifications: boolean;
  bucketVersioning?: BucketVersioningOptions;
  segmentExpiration?: Duration;
  accessLogsBucket?: s3.IBucket;
  payloadKey?: PayloadKeyOption;
  /** The functions' extra environment: only checked here (SLUICE_KMS_KEY_ID against `payloadKey`). */
  environment?: Record<string, string>;
}

/** What the storage room built: the service's `tables`, `bucket` and `payloadKey`. */
export interface Storage {
  tables: Record<TableName, dynamodb.Table>;
  bucket: s3.Bucket;
  payloadKey: kms.IKey | undefined;
}

/**
 * The tables (one per {@link TABLES} name), the segment bucket and the payload key, in `scope`.
 * Throws on a bad `bucketVersioning` or key ARN, or a key set twice.
 *
 * @example
 * ```ts
 * const { tables, bucket, payloadKey } = createStorage(this, { removalPolicy: RemovalPolicy.RETAIN, notifications: true });
 * tables.log.tableArn;
 * ```
 */
export function createStorage(scope: Construct, props: StorageProps): Storage {
  const { removalPolicy } = props;
  const tables = Object.fromEntries(
    TABLES.map((name) => [
      name,
      new dynamodb.Table(scope, `${capitalise(name)}Table`, {
        partitionKey: { name: ITEM_TABLE_SCHEMA.partitionKey.name, type: dynamodb.AttributeType.STRING },
        sortKey: { name: ITEM_TABLE_SCHEMA.sortKey.name, type: dynamodb.AttributeType.STRING },
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        timeToLiveAttribute: ITEM_TABLE_SCHEMA.timeToLiveAttribute,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        encryption: dynamodb.TableEncryption.AWS_MANAGED,
        // The notifier hears pushes from the log's stream (lib/notifications.ts); keys are all it reads.
        ...(name === 'log' && props.notifications ? { stream: dynamodb.StreamViewType.KEYS_ONLY } : {}),
        removalPolicy,
        // A kept table must survive a stray delete-table too; a destroyed one must let the stack go.
        deletionProtection: tableDeletionProtection(removalPolicy),
      }),
    ]),
  ) as Record<TableName, dynamodb.Table>;

  checkBucketVersioning(`${scope.node.path}: bucketVersioning`, props.bucketVersioning);
  const versioning = bucketVersioningProps(props.bucketVersioning);
  const bucket = new s3.Bucket(scope, 'SegmentBucket', {
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    minimumTLSVersion: 1.2,
    encryption: s3.BucketEncryption.S3_MANAGED,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    versioned: versioning.versioned,
    lifecycleRules: [
      { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ...(props.segmentExpiration
        ? [{ id: 'expire-old-segments', prefix: SEGMENT_BLOB_PREFIX, expiration: props.segmentExpiration }]
        : []),
      ...versioning.lifecycleRules,
    ],
    removalPolicy,
    autoDeleteObjects: removalPolicy === RemovalPolicy.DESTROY,
    ...(props.accessLogsBucket
      ? { serverAccessLogsBucket: props.accessLogsBucket, serverAccessLogsPrefix: 'sluice-segments/' }
      : {}),
  });

  const payloadKey = payloadKeyOf(scope, props.payloadKey, removalPolicy);
  if (payloadKey && props.environment?.['SLUICE_KMS_KEY_ID'] !== undefined)
    throw new Error(
      `${scope.node.path}: set the payload key with \`payloadKey\` or with SLUICE_KMS_KEY_ID in \`environment\`, not both`,
    );
  if (!payloadKey && props.environment?.['SLUICE_KMS_KEY_ID'] !== undefined)
    Annotations.of(scope).addWarningV2(
      'sluice:kmsKeyWithoutGrants',
      'SLUICE_KMS_KEY_ID is set in `environment`, so no function is granted the key: pass `payloadKey` instead.',
    );
  return { tables, bucket, payloadKey };
}

/** The payload key `option` names (created here when asked), or undefined without one. */
function payloadKeyOf(
  scope: Construct,
  option: PayloadKeyOption | undefined,
  removalPolicy: RemovalPolicy,
): kms.IKey | undefined {
  if (!option) return undefined;
  if ('key' in option) return option.key;
  if ('keyArn' in option) {
    checkKmsKeyArn(option.keyArn);
    return kms.Key.fromKeyArn(scope, 'PayloadKey', option.keyArn);
  }
  return new kms.Key(scope, 'PayloadKey', {
    description: `Sluice payload sealing (${scope.node.path}): wraps the data keys of encryptionEnabled queues`,
    enableKeyRotation: true,
    // Sealed payloads are unreadable without it: it lives as long as the tables do.
    removalPolicy: removalPolicy === RemovalPolicy.DESTROY ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    pendingWindow: Duration.days(30),
  });
}

/**
 * Throws unless `arn` is a KMS key ARN (`arn:aws:kms:REGION:ACCOUNT:key/ID`). Aliases are
 * refused: IAM grants on an alias ARN do not cover the key it points at.
 *
 * @example
 * ```ts
 * checkKmsKeyArn('arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab'); // ok
 * checkKmsKeyArn('alias/sluice'); // throws
 * ```
 */
export function checkKmsKeyArn(arn: string, what = 'kmsKeyArn'): void {
  if (!/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/.test(arn))
    throw new Error(
      `${what} must be a KMS key ARN, arn:aws:kms:REGION:ACCOUNT:key/KEY-ID (got ${arn}); an alias will not do, since IAM grants name the key itself`,
    );
}
