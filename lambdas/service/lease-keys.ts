// Re-export for lib/access.ts (another lane): delete once it imports leases/dlq-store.ts.
export { DLQ_BLOB_PREFIX } from './leases/dlq-store.js';
