import { reportLag, type LagReport } from '../service/maintenance/lag-metrics.js';
import { runMaintenance, type MaintenanceReport } from '../service/maintenance/maintenance.js';
import { services } from '../service/runtime.js';

/**
 * Lambda entry for scheduled maintenance (an EventBridge rate rule): one maintenance pass
 * (retention, orphan-blob sweep), then the consumer-lag metrics, logged and counted through
 * the services' telemetry.
 */
export async function handler(): Promise<MaintenanceReport & { lag?: LagReport }> {
  const svc = await services();
  try {
    const report: MaintenanceReport & { lag?: LagReport } = await runMaintenance(svc);
    try {
      report.lag = await reportLag(svc);
    } catch (e) {
      // Lag is for the dashboard and an alarm; a failure here must not fail the pass.
      svc.telemetry.warn('consumer lag not reported', { error: e instanceof Error ? e.message : String(e) });
    }
    svc.telemetry.info('maintenance pass', { report });
    return report;
  } catch (e) {
    svc.telemetry.error('maintenance pass failed', {
      error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
    });
    throw e;
  } finally {
    svc.telemetry.flush?.();
  }
}
