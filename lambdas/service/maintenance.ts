// Re-export for test/cdk/ (another lane): delete once it imports maintenance/maintenance.ts.
export { runMaintenance } from './maintenance/maintenance.js';
