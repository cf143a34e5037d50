// Re-export for test/cdk/ (another lane): delete once it imports maintenance/lag-metrics.ts.
export { reportLag } from './maintenance/lag-metrics.js';
