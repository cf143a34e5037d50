/**
 * Token administration for `sluice token`: the token store (`auth/token-store.ts`) over a
 * deployment's token table, with the operator's own DynamoDB client. Named for the CLI: `cli/`
 * imports from `server/` only through `server/public/` (eslint.config.js enforces it).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TokenStore } from '../auth/token-store.js';
import { DynamoItemStore } from '../storage/aws/item-store.js';
import { TABLES, type TableName } from '../storage/port.js';

export { principalProblem, type TokenInfo, type TokenStore } from '../auth/token-store.js';

/**
 * The tokens in DynamoDB table `table` (the stack's `TokenTableName` output).
 *
 * @example
 * ```ts
 * const tokens = tokenTable(new DynamoDBClient({ profile: 'prod' }), 'sluice-prod-tokens');
 * await tokens.list(); // [{ id, principal, createdAt, description }]: never the secret
 * ```
 */
export function tokenTable(ddb: DynamoDBClient, table: string): TokenStore {
  // The token store only touches `meta`; every logical table names the one table, never read otherwise.
  const tables = Object.fromEntries(TABLES.map((t) => [t, table])) as Record<TableName, string>;
  return new TokenStore(new DynamoItemStore(ddb, tables, 1));
}
