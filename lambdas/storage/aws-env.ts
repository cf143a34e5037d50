import type { TableName } from './port.js';

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
export const BUCKET_ENV = 'SLUICE_BUCKET';
