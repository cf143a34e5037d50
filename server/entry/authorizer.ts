import { makeTokenAuthorizer } from '../auth/authorizer.js';
import { TokenStore } from '../auth/token-store.js';
import { awsStorageConfigFromEnv, createAwsStorage } from '../storage/aws/index.js';

let store: TokenStore | undefined;

/**
 * Lambda entry for the bearer-token authorizer of `auth=tokens` deployments (an API Gateway
 * HTTP API REQUEST authorizer with simple responses). Reads the token items from the `meta`
 * table named in the environment; it is granted nothing but GetItem on that table.
 */
export const handler = makeTokenAuthorizer(() => {
  if (store) return store;
  const config = awsStorageConfigFromEnv();
  if (!config) throw new Error('SLUICE_TABLE_* and SLUICE_BUCKET are not set: the authorizer has no token table');
  store = new TokenStore(createAwsStorage(config).items);
  return store;
});
