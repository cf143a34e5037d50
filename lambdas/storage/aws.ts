// Transitional, for lib/sluice-service.ts only: it imports this path today. At merge it imports
// ITEM_TABLE_SCHEMA from './aws/schema.js' (SDK-free) and this file is deleted.
export { ITEM_TABLE_SCHEMA } from './aws/schema.js';
