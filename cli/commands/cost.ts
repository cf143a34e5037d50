/**
 * `sluice cost`: what the deployment cost over a time range, from its own counters (docs/CLI.md).
 * On AWS it reads the cost counters each invocation writes to its EMF line back from CloudWatch
 * (GetMetricData, with the AWS profile and region of this run); against a local server it reads
 * the same counters from `/metrics`.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { regionFromHost } from '../../client/auth.js';
import { DEFAULT_ENDPOINT } from '../../client/http.js';
import { USAGE_METRICS, USAGE_PROMETHEUS } from '../../server/public/usage.js';
import type { CommandContext } from '../command.js';
import { connectionFor } from '../connection.js';
import {
  MESSAGE_METRICS,
  priceCounters,
  REPORT_METRICS,
  REPORT_USD,
  zeroCounters,
  type Counters,
  type CostReport,
  type MessageMetric,
} from '../cost-report.js';
import { UsageError } from '../errors.js';
import { table } from '../format.js';
import { parseDuration } from '../duration.js';
import type { GlobalOpts } from '../options.js';

/** `now`, a duration ago (`24h`, `90m`) or an ISO-8601 instant, as epoch ms relative to `now`. */
export function parseWhen(v: string, what: string, now: number): number {
  if (v === 'now') return now;
  if (/^\d{4}-\d\d-\d\d/.test(v)) {
    const t = Date.parse(v);
    if (Number.isFinite(t)) return t;
  }
  try {
    return now - parseDuration(v, what);
  } catch {
    throw new InvalidArgumentError(
      `${what} must be now, a duration ago (24h, 90m) or an ISO-8601 instant (got ${JSON.stringify(v)})`,
    );
  }
}

/** The local server's counters, from its Prometheus text. */
function countersFromPrometheus(text: string): Counters {
  const value = (series: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
  };
  const c = zeroCounters();
  for (const m of USAGE_METRICS) c[m] = value(USAGE_PROMETHEUS[m][0]);
  const messages: Record<MessageMetric, string> = {
    MessagesPushed: 'queen_cluster_push_messages_total{scope="cluster"}',
    MessagesDelivered: 'queen_cluster_pop_messages_total{scope="cluster"}',
    Acks: 'queen_cluster_ack_messages_total{scope="cluster"}',
  };
  for (const m of MESSAGE_METRICS) c[m] = value(messages[m]);
  return c;
}

/** A CloudWatch period that covers the range in one datapoint, in the steps CloudWatch keeps for data that old. */
function periodFor(rangeMs: number, startAgoMs: number): number {
  const day = 86_400_000;
  const step = startAgoMs > 63 * day ? 3600 : startAgoMs > 15 * day ? 300 : 60;
  return Math.max(step, Math.ceil(rangeMs / 1000 / step) * step);
}

interface CloudWatchTarget {
  namespace: string;
  service: string;
  region: string | undefined;
  profile: string | undefined;
}

/** Sums each report metric over [start, end) with GetMetricData (one call per page of answers). */
async function countersFromCloudWatch(t: CloudWatchTarget, start: number, end: number, now: number): Promise<Counters> {
  const { CloudWatchClient, GetMetricDataCommand } = await import('@aws-sdk/client-cloudwatch');
  const cw = new CloudWatchClient({
    ...(t.region ? { region: t.region } : {}),
    ...(t.profile ? { profile: t.profile } : {}),
  });
  const period = periodFor(end - start, now - start);
  const queries = REPORT_METRICS.map((name, i) => ({
    Id: `m${i}`,
    MetricStat: {
      Metric: { Namespace: t.namespace, MetricName: name, Dimensions: [{ Name: 'service', Value: t.service }] },
      Period: period,
      Stat: 'Sum',
    },
  }));
  const c = zeroCounters();
  try {
    let token: string | undefined;
    do {
      const page = await cw.send(
        new GetMetricDataCommand({
          StartTime: new Date(start),
          EndTime: new Date(end),
          MetricDataQueries: queries,
          ...(token ? { NextToken: token } : {}),
        }),
      );
      for (const r of page.MetricDataResults ?? []) {
        const name = REPORT_METRICS[Number(r.Id?.slice(1))];
        if (name) c[name] += (r.Values ?? []).reduce((a, b) => a + b, 0);
      }
      token = page.NextToken;
    } while (token);
  } finally {
    cw.destroy();
  }
  return c;
}

const usd = (n: number): string => `$${n.toFixed(6)}`;
const count = (n: number): string => (Number.isInteger(n) ? n.toLocaleString('en-US') : n.toFixed(3));

function reportText(r: CostReport, heading: string, notes: string[]): string {
  const rows = [['USAGE', 'COUNT', 'USD'], ...r.lines.map((l) => [l.what, count(l.count), usd(l.usd)])];
  rows.push(['total', '', usd(r.totalUsd)]);
  const m = r.messages;
  const out = [
    heading,
    '',
    table(rows).trimEnd(),
    '',
    `messages: ${count(m.pushed)} pushed, ${count(m.delivered)} delivered (${r.groups} group${r.groups > 1 ? 's' : ''} by the traffic), ${count(m.acked)} acked`,
    r.usdPerMillion === undefined
      ? 'per million messages: no messages pushed in this range'
      : `per million messages: ${usd(r.usdPerMillion)} (${r.sqsKind} for the same messages: ${usd(r.sqsUsdPerMillion ?? 0)})`,
    `${r.sqsKind} for the same traffic: ${usd(r.sqsUsd)} (batches of 10 on every call, its best case)`,
    ...notes,
  ];
  return `${out.join('\n')}\n`;
}

const isLocal = (endpoint: string): boolean => {
  const host = new URL(endpoint).hostname;
  return host === 'localhost' || host === '[::1]' || host === '::1' || host.startsWith('127.');
};

/** Registers `cost`. */
export function costCommands(program: Command, ctx: CommandContext): void {
  const { out, printJson, json, client, io } = ctx;
  program
    .command('cost')
    .description(
      'What the deployment cost over a time range, from its own counters, priced per million messages next to SQS.',
    )
    .addOption(new Option('--since <when>', 'start: a duration ago (24h, 90m) or an ISO-8601 instant').default('24h'))
    .addOption(new Option('--until <when>', 'end: now, a duration ago or an ISO-8601 instant').default('now'))
    .addOption(new Option('--stack <name>', 'the CDK stack: its metrics are those of service <name>-Sluice'))
    .addOption(
      new Option('--service <name>', 'the metrics service dimension (POWERTOOLS_SERVICE_NAME)').conflicts('stack'),
    )
    .addOption(new Option('--namespace <name>', 'the CloudWatch namespace').default('Sluice'))
    .action(
      async (
        o: { since: string; until: string; stack?: string; service?: string; namespace: string },
        cmd: Command,
      ) => {
        const g = cmd.optsWithGlobals<GlobalOpts>();
        const endpoint = connectionFor(g, io.env).options.endpoint ?? DEFAULT_ENDPOINT;
        const service = o.service ?? (o.stack !== undefined ? `${o.stack}-Sluice` : undefined);
        if (service === undefined) {
          if (!isLocal(endpoint))
            throw new UsageError(
              `${endpoint} is not a local server: name the deployment's metrics with --stack <stack> (or --service <name>)`,
            );
          const text = await client(cmd).http.json<string>({ method: 'GET', path: '/metrics', retry: 'idempotent' });
          const report = priceCounters(countersFromPrometheus(String(text ?? '')));
          const scope = 'since the server started';
          if (json(cmd)) return printJson({ scope, local: true, ...report });
          return out(
            reportText(report, `Sluice cost at ${endpoint}, ${scope}`, [
              'local: storage counted as the AWS adapter would make its requests, DynamoDB units estimated from item sizes;',
              'the dollars are what the same traffic would cost on AWS (no Lambda time is counted locally).',
            ]),
          );
        }
        const now = Date.now();
        const start = parseWhen(o.since, 'since', now);
        const end = parseWhen(o.until, 'until', now);
        if (!(start < end)) throw new UsageError('--since must come before --until');
        const region =
          g.region ??
          regionFromHost(new URL(endpoint).hostname) ??
          io.env['AWS_REGION'] ??
          io.env['AWS_DEFAULT_REGION'];
        const counters = await countersFromCloudWatch(
          { namespace: o.namespace, service, region, profile: g.profile },
          start,
          end,
          now,
        );
        const report = priceCounters(counters);
        const range = { from: new Date(start).toISOString(), to: new Date(end).toISOString() };
        const reportCost = { metricsRequested: REPORT_METRICS.length, usd: REPORT_USD };
        if (json(cmd)) return printJson({ ...range, service, namespace: o.namespace, ...report, reportCost });
        out(
          reportText(report, `Sluice cost of ${service} (namespace ${o.namespace}), ${range.from} to ${range.to}`, [
            `this report: ${REPORT_METRICS.length} metrics from CloudWatch GetMetricData, ${usd(REPORT_USD)} ($0.01 per 1,000 metrics)`,
          ]),
        );
      },
    );
}
