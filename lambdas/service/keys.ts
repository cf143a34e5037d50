// Re-export for lib/ and test/cdk/ (another lane): delete once they import log/log-store.ts.
export { SEGMENT_BLOB_PREFIX, segmentBlobKey } from './log/log-store.js';
