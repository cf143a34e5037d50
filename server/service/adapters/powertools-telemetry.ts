import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MetricName, Telemetry } from '../telemetry.js';

/**
 * The Lambda telemetry: structured JSON logs (Powertools Logger) and CloudWatch metrics as EMF
 * log lines (Powertools Metrics), flushed after every request.
 *
 * Metrics carry one dimension, `service` (`POWERTOOLS_SERVICE_NAME`, set by the stack to tell
 * deployments apart), in namespace `POWERTOOLS_METRICS_NAMESPACE`. Per-queue dimensions are
 * left out on purpose: every distinct dimension set is a billed custom metric, and queue names
 * are unbounded. A value recorded with dimensions is also logged with them, so CloudWatch Logs
 * Insights can break any metric down by queue or group.
 *
 * @example
 * ```ts
 * const t = new PowertoolsTelemetry();
 * t.count('MessagesPushed', 10, { queue: 'orders' });
 * t.flush(); // one EMF line on stdout
 * ```
 */
export class PowertoolsTelemetry implements Telemetry {
  readonly logger: Logger;
  readonly metrics: Metrics;

  constructor(opts: { logger?: Logger; metrics?: Metrics } = {}) {
    this.logger = opts.logger ?? new Logger();
    this.metrics = opts.metrics ?? new Metrics();
  }

  count(name: MetricName, value = 1, dims?: Record<string, string>): void {
    this.metrics.addMetric(name, MetricUnit.Count, value);
    if (dims) this.logger.debug('metric', { metric: name, value, ...dims });
  }

  gauge(name: MetricName, value: number, dims?: Record<string, string>): void {
    this.metrics.addMetric(name, name.endsWith('Seconds') ? MetricUnit.Seconds : MetricUnit.Count, value);
    if (dims) this.logger.info('metric', { metric: name, value, ...dims });
  }

  debug(message: string, fields?: Record<string, unknown>): void {
    this.logger.debug(message, fields ?? {});
  }

  info(message: string, fields?: Record<string, unknown>): void {
    this.logger.info(message, fields ?? {});
  }

  warn(message: string, fields?: Record<string, unknown>): void {
    this.logger.warn(message, fields ?? {});
  }

  error(message: string, fields?: Record<string, unknown>): void {
    this.logger.error(message, fields ?? {});
  }

  flush(): void {
    if (this.metrics.hasStoredMetrics()) this.metrics.publishStoredMetrics();
  }
}
