/** Where the AWS backend's resources come from at run time: the environment the stack sets. */
import { TABLES, type TableName } from '../port.js';
import { BUCKET_ENV, TABLE_ENV } from './schema.js';

/** The AWS backend's resources: a physical DynamoDB table per logical table, and the bucket. */
export interface AwsResources {
  /** Physical DynamoDB table name for each logical table. */
  tables: Record<TableName, string>;
  /** S3 bucket holding the blobs. */
  bucket: string;
}

/**
 * Reads the adapter's table and bucket names from the environment (set by the CDK stack on
 * each function). Returns `undefined` when none is set (run embedded); throws when only some are.
 *
 * @example
 * ```ts
 * const config = awsStorageConfigFromEnv();
 * const storage = config ? createAwsStorage(config) : await openEmbeddedStorage({ dataDir });
 * ```
 */
export function awsStorageConfigFromEnv(env: NodeJS.ProcessEnv = process.env): AwsResources | undefined {
  const names = [...Object.values(TABLE_ENV), BUCKET_ENV];
  const value = (name: string): string | undefined => (env[name] ? env[name] : undefined);
  const missing = names.filter((n) => value(n) === undefined);
  if (missing.length === names.length) return undefined;
  if (missing.length > 0) {
    throw new Error(
      `AWS storage is partly configured: missing ${missing.join(', ')} (set all of ${names.join(', ')} or none)`,
    );
  }
  const tables = Object.fromEntries(TABLES.map((t) => [t, value(TABLE_ENV[t]) as string])) as Record<TableName, string>;
  return { tables, bucket: value(BUCKET_ENV) as string };
}
