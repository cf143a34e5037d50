/**
 * `GET /metrics` and `GET /metrics/prometheus`: the local server's metrics in Prometheus text
 * format (on AWS, CloudWatch holds the metrics: these routes are not deployed). Queen's metric
 * names where Queen has one, Sluice's own (`sluice_*`) for the rest:
 *
 * - process: `queen_uptime_seconds`, `queen_cpu_{user,system}_microseconds_total`,
 *   `queen_process_{resident,heap}_memory_bytes`, `queen_maintenance_mode_enabled` (always 0);
 * - totals (`scope="cluster"`): `queen_cluster_{push,pop,ack}_{requests,messages}_total`,
 *   `queen_cluster_transactions_total`, `queen_cluster_ack_total{result}`,
 *   `queen_cluster_dlq_total`, `queen_cluster_db_errors_total`; `queen_dlq_depth`;
 * - per queue, the latest finished minute (Queen's gauges): `queen_queue_{push_requests,
 *   push_messages,pop_messages,pop_empty,transactions}_per_minute`, `queen_queue_ack_per_minute{result}`,
 *   `queen_queue_pop_lag_milliseconds{stat}`, `queen_queue_parked_consumers` (0),
 *   `queen_queue_metrics_age_seconds`;
 * - per queue: `queen_dlq_depth_by_queue`, `sluice_pushes_total`, `sluice_messages_pushed_total`,
 *   `sluice_duplicates_total`, `sluice_pops_total`, `sluice_messages_delivered_total`,
 *   `sluice_empty_pops_total`, `sluice_messages_expired_total`, `sluice_acks_total{result}`, `sluice_dead_letters_total`,
 *   `sluice_claim_polls_total`, `sluice_claim_polls_capped_total`, `sluice_claim_acks_total`,
 *   `sluice_transactions_total`;
 * - per group and queue: `sluice_consumer_lag_messages`, `sluice_consumer_lag_seconds` (age of
 *   the oldest unfinished message), with `kind` lease or claim;
 * - cost counters (`sluice cost` reads them; docs/CLI.md): `sluice_api_requests_total`,
 *   `sluice_lambda_gb_seconds_total`, `sluice_dynamodb_{requests,write_units,read_units}_total`,
 *   `sluice_s3_{puts,gets,lists,deletes}_total`: the storage requests as the AWS adapter would
 *   make them, with DynamoDB units estimated from item sizes (`storage/usage.ts`);
 * - per route: `sluice_http_request_duration_seconds` (histogram, `route` and `code` class);
 * - per target (docs/TARGETS.md), labelled `queue` and `group`: `sluice_target_invocations_total`,
 *   `sluice_target_errors_total`, `sluice_target_throttles_total`, `sluice_target_retries_total`,
 *   `sluice_target_dead_letters_total`, `sluice_target_batches_in_flight`,
 *   `sluice_target_oldest_record_age_seconds` (0 when nothing waits).
 *
 * Counters count since the process started, and only for queues that exist: a pop, ack-and-pop
 * or claim poll naming a queue nobody made (204 or 404) adds no series, since its name is
 * whatever a client sent; deleting a queue drops its counters and lag series (in this process).
 * The route latency histograms still count every request. Open on the loopback server without grants; with
 * grants, `manage` on some queue, and series labelled by a queue only for queues the caller may
 * manage (http/access.ts).
 */
import { metricsSnapshot } from '../../service/admin/metrics.js';
import { PROMETHEUS_CONTENT_TYPE } from '../prometheus-text.js';
import { metricsText } from '../answers/metrics.js';
import { implement, type RouteDef, type RouteInput } from '../route.js';
import type { Services } from '../../service/runtime.js';
import * as systemApi from '../../../contract/routes/admin/system.js';
import { seesMetricsOf } from '../access.js';

/** What both metrics routes use: what the snapshot reads. */
const METRICS_USES = ['activity', 'admin', 'clock', 'usage', 'targets', 'targetStats'] as const;

const metricsRun = async ({
  services,
  allowed,
}: RouteInput<undefined, unknown, unknown, Pick<Services, (typeof METRICS_USES)[number]>>) => ({
  statusCode: 200,
  headers: { 'content-type': PROMETHEUS_CONTENT_TYPE },
  body: metricsText(await metricsSnapshot(services, seesMetricsOf(allowed))),
});

export const metrics = implement(systemApi.metrics, METRICS_USES, metricsRun);
export const metricsPrometheus = implement(systemApi.metricsPrometheus, METRICS_USES, metricsRun);

/** Routes the local server serves and the stack does not deploy. */
export const metricsRoutes: RouteDef[] = [metrics, metricsPrometheus];
