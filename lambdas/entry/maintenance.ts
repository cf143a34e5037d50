import { runMaintenance, type MaintenanceReport } from '../service/maintenance.js';
import { services } from '../service/runtime.js';

/**
 * Lambda entry for scheduled maintenance (an EventBridge rate rule): one maintenance pass
 * (retention, orphan-blob sweep), logged and counted through the services' telemetry.
 */
export async function handler(): Promise<MaintenanceReport> {
  const svc = await services();
  try {
    const report = await runMaintenance(svc);
    svc.telemetry.info('maintenance pass', { report });
    return report;
  } catch (e) {
    svc.telemetry.error('maintenance pass failed', { error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e) });
    throw e;
  } finally {
    svc.telemetry.flush?.();
  }
}
