/**
 * The AWS backend's shape, shared by the adapter, the test provisioning and the CDK stack:
 * one DynamoDB table per logical table, all of one key schema, and the environment variables
 * that name them. Imports no AWS SDK, so `lib/` can use it without pulling the SDK into the
 * CDK app.
 *
 * @example
 * ```ts
 * import { BUCKET_ENV, ITEM_TABLE_SCHEMA, TABLE_ENV } from '../server/storage/aws/schema.js';
 * new dynamodb.Table(this, 'LogTable', {
 *   partitionKey: { name: ITEM_TABLE_SCHEMA.partitionKey.name, type: dynamodb.AttributeType.STRING },
 *   sortKey: { name: ITEM_TABLE_SCHEMA.sortKey.name, type: dynamodb.AttributeType.STRING },
 *   timeToLiveAttribute: ITEM_TABLE_SCHEMA.timeToLiveAttribute,
 * });
 * fn.addEnvironment(TABLE_ENV.log, table.tableName);
 * ```
 */
import type { TableName } from '../port.js';

/** Name of the DynamoDB TTL attribute (epoch seconds, `Item.expiresAt`). */
export const TTL_ATTRIBUTE = 'ttl';

/** The token the last `take` stamped on a counter item (how a retried take knows its own). */
export const TAKE_TOKEN_ATTRIBUTE = 'lt';

/**
 * Prefix of the top-level attributes a `take` sets (`a.<key>`, each value as JSON text): an
 * update cannot change one key inside the JSON string `a`, so they live beside it, and reads
 * merge them over it. A put writes every attribute into `a` again and drops them.
 */
export const SET_ATTRIBUTE_PREFIX = 'a.';

/**
 * The one table shape every logical table shares. Tests (via `ensureTables`) and the CDK
 * stack both build tables from this, so they cannot drift. Type codes are DynamoDB's (`S`, `N`,
 * `B`), which are also the values of CDK's `AttributeType` enum.
 */
export const ITEM_TABLE_SCHEMA = {
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  /** Non-key attributes (not declared to DynamoDB; listed for readers and tests). */
  attributes: {
    version: { name: 'v', type: 'N' },
    attrs: { name: 'a', type: 'S' },
    bin: { name: 'b', type: 'B' },
    expiresAt: { name: TTL_ATTRIBUTE, type: 'N' },
    takeToken: { name: TAKE_TOKEN_ATTRIBUTE, type: 'S' },
  },
  timeToLiveAttribute: TTL_ATTRIBUTE,
  billingMode: 'PAY_PER_REQUEST',
} as const;

/**
 * Environment variables naming the AWS backend's resources: the stack sets them on every
 * function, `awsStorageConfigFromEnv` reads them (and so does `npm start` on the AWS backend).
 */
export const TABLE_ENV: Record<TableName, string> = {
  log: 'SLUICE_TABLE_LOG',
  meta: 'SLUICE_TABLE_META',
  dedup: 'SLUICE_TABLE_DEDUP',
  leases: 'SLUICE_TABLE_LEASES',
  claims: 'SLUICE_TABLE_CLAIMS',
  dlq: 'SLUICE_TABLE_DLQ',
};
/** Environment variable naming the bucket that holds the blobs. */
export const BUCKET_ENV = 'SLUICE_BUCKET';
