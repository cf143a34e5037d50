import { reportLag, type LagReport } from '../service/maintenance/lag-metrics.js';
import { runMaintenance, type MaintenanceReport, type SkippedPass } from '../service/maintenance/maintenance.js';
import { services, type Services } from '../service/runtime.js';
import { isLagTask, type MaintenanceEvent } from './maintenance-event.js';

/**
 * Lambda entry for scheduled maintenance (an EventBridge rate rule): one maintenance pass
 * (orphan-blob sweeps, work-index repair, activity roll-up, deleted queues' data, retention),
 * then the consumer-lag metrics, logged and counted through the services' telemetry. A pass is single-flight: while another holds the maintenance lease
 * this one returns at once, reporting `skipped`. The event `{ "task": "lag" }` (a more
 * frequent schedule) reports lag only and takes no lease: see {@link lagOnly}.
 */
export async function handler(
  event?: MaintenanceEvent,
): Promise<(MaintenanceReport & { lag?: LagReport }) | SkippedPass | { lag: LagReport }> {
  const started = performance.now();
  const svc = await services();
  if (isLagTask(event)) return lagOnly(svc, started);
  try {
    const outcome = await runMaintenance(svc);
    if (outcome.skipped) {
      svc.telemetry.info('maintenance pass skipped: another pass holds the lease', { skipped: outcome.skipped });
      return outcome;
    }
    const report: MaintenanceReport & { lag?: LagReport } = outcome;
    if (report.leaseLost)
      svc.telemetry.warn('maintenance pass stopped early: it ran past its lease and another pass took it over', {
        report,
      });
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
    svc.usage.record(svc.telemetry, { apiRequest: false, ms: performance.now() - started });
    svc.telemetry.flush?.();
  }
}

/**
 * Reports consumer lag and nothing else. With no consumer group at all it publishes an age of
 * 0, so the lag alarm (missing data breaches) sees that lag was measured; a failure throws, so
 * the errors alarm says why the lag alarm breaches.
 */
async function lagOnly(svc: Services, started: number): Promise<{ lag: LagReport }> {
  try {
    const lag = await reportLag(svc);
    if (lag.groups === 0) svc.telemetry.gauge('OldestUnconsumedAgeSeconds', 0);
    svc.telemetry.info('lag reported', { lag });
    return { lag };
  } catch (e) {
    svc.telemetry.error('lag report failed', {
      error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
    });
    throw e;
  } finally {
    svc.usage.record(svc.telemetry, { apiRequest: false, ms: performance.now() - started });
    svc.telemetry.flush?.();
  }
}
