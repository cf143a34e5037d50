/**
 * Provisioning for emulators and local development: tables and a bucket of the shape the
 * adapter expects, made idempotently. Production resources come from the CDK stack, built
 * from the same `ITEM_TABLE_SCHEMA`.
 */
import {
  CreateTableCommand,
  DescribeTimeToLiveCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  HeadBucketCommand,
  type BucketLocationConstraint,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { TableName } from '../port.js';
import { errorName, statusOf } from './retry.js';
import { ITEM_TABLE_SCHEMA } from './schema.js';

/**
 * Creates any missing table (on-demand, TTL on `ttl`) and waits for it to be
 * active. For emulators and local development only; the CDK stack owns real tables.
 *
 * @example
 * ```ts
 * await ensureTables(new DynamoDBClient({ endpoint }), { log: 't-log', meta: 't-meta', ... });
 * ```
 */
export async function ensureTables(client: DynamoDBClient, tables: Record<TableName, string>): Promise<void> {
  const s = ITEM_TABLE_SCHEMA;
  await Promise.all(
    Object.values(tables).map(async (TableName) => {
      try {
        await client.send(
          new CreateTableCommand({
            TableName,
            AttributeDefinitions: [
              { AttributeName: s.partitionKey.name, AttributeType: s.partitionKey.type },
              { AttributeName: s.sortKey.name, AttributeType: s.sortKey.type },
            ],
            KeySchema: [
              { AttributeName: s.partitionKey.name, KeyType: 'HASH' },
              { AttributeName: s.sortKey.name, KeyType: 'RANGE' },
            ],
            BillingMode: s.billingMode,
          }),
        );
      } catch (err) {
        if (errorName(err) !== 'ResourceInUseException') throw err;
      }
      await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName });
      const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName }));
      const status = ttl.TimeToLiveDescription?.TimeToLiveStatus;
      if (status !== 'ENABLED' && status !== 'ENABLING') {
        await client.send(
          new UpdateTimeToLiveCommand({
            TableName,
            TimeToLiveSpecification: { AttributeName: s.timeToLiveAttribute, Enabled: true },
          }),
        );
      }
    }),
  );
}

/**
 * Creates the bucket if it is missing. For emulators and local development only.
 *
 * @example
 * ```ts
 * await ensureBucket(new S3Client({ endpoint, forcePathStyle: true }), 'sluice-test-1a2b');
 * ```
 */
export async function ensureBucket(s3: S3Client, bucket: string): Promise<void> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    return;
  } catch (err) {
    if (errorName(err) !== 'NotFound' && errorName(err) !== 'NoSuchBucket' && statusOf(err) !== 404) throw err;
  }
  const region = await s3.config.region();
  try {
    await s3.send(
      new CreateBucketCommand({
        Bucket: bucket,
        // us-east-1 is the one region that refuses an explicit location constraint.
        ...(region && region !== 'us-east-1'
          ? { CreateBucketConfiguration: { LocationConstraint: region as BucketLocationConstraint } }
          : {}),
      }),
    );
  } catch (err) {
    if (errorName(err) !== 'BucketAlreadyOwnedByYou') throw err;
  }
}
