/**
 * The AWS adapter (DynamoDB + S3), as its callers use it: the adapter, its configuration from
 * the environment, the table schema and the provisioning for emulators.
 *
 * @example
 * ```ts
 * import { awsStorageConfigFromEnv, createAwsStorage } from '../storage/aws/index.js';
 * const config = awsStorageConfigFromEnv();
 * if (config) services = buildServices(createAwsStorage(config), loadConfig());
 * ```
 */
export { awsStorageConfigFromEnv, type AwsResources } from './config.js';
export { ensureBucket, ensureTables } from './provision.js';
export { BUCKET_ENV, ITEM_TABLE_SCHEMA, TABLE_ENV, TTL_ATTRIBUTE } from './schema.js';
export { createAwsStorage, type AwsStorageOptions } from './storage.js';
