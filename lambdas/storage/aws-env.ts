// Transitional, for lib/sluice-service.ts only: it imports this path today. At merge it imports
// TABLE_ENV and BUCKET_ENV from './aws/schema.js' and this file is deleted.
export { BUCKET_ENV, TABLE_ENV } from './aws/schema.js';
