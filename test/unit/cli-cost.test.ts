import { CloudWatchClient, GetMetricDataCommand, type GetMetricDataCommandInput } from '@aws-sdk/client-cloudwatch';
import { mockClient } from 'aws-sdk-client-mock';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { Io } from '../../cli/command.js';
import { EXIT } from '../../cli/errors.js';
import { run } from '../../cli/main.js';
import { fakeFetch } from '../support/fake-fetch.js';

const cw = mockClient(CloudWatchClient);
afterEach(() => cw.reset());

function io(env: Record<string, string>, fetchAnswer?: (path: string) => Response) {
  let out = '';
  let err = '';
  const f = fakeFetch((req) => fetchAnswer?.(new URL(req.url).pathname) ?? new Response('', { status: 404 }));
  const value: Io = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    stdin: Readable.from(['']),
    env,
    fetch: f.fetch,
    sleep: async () => undefined,
  };
  return { io: value, out: () => out, err: () => err, calls: f.calls };
}

/** One day's counters, split over two pages (and two datapoints) as CloudWatch may answer. */
const DAY: Record<string, number> = {
  ApiRequests: 20_000,
  LambdaGbSeconds: 1_000,
  DynamoDBRequests: 30_000,
  DynamoDBWriteUnits: 200_000,
  DynamoDBReadUnits: 40_000,
  S3Puts: 10_000,
  S3Gets: 5_000,
  S3Lists: 100,
  S3Deletes: 50,
  MessagesPushed: 1_000_000,
  MessagesDelivered: 3_000_000,
  Acks: 3_000_000,
};

describe('unit: sluice cost on AWS (CloudWatch mocked)', () => {
  it('reads the counters with GetMetricData and prices them, per million messages, next to SNS + SQS', async () => {
    const asked: GetMetricDataCommandInput[] = [];
    cw.on(GetMetricDataCommand).callsFake((input: GetMetricDataCommandInput) => {
      asked.push(input);
      const first = input.NextToken === undefined;
      const results = (input.MetricDataQueries ?? []).map((q) => {
        const v = DAY[q.MetricStat!.Metric!.MetricName!]!;
        // First page: a quarter and a half; second page: the last quarter.
        return { Id: q.Id, Values: first ? [v / 4, v / 2] : [v / 4] };
      });
      return { MetricDataResults: results, ...(first ? { NextToken: 'page2' } : {}) };
    });
    const t = io({ SLUICE_ENDPOINT: 'https://abc123.execute-api.eu-west-1.amazonaws.com' });
    const code = await run(
      ['cost', '--stack', 'prod', '--since', '2026-11-01T00:00:00Z', '--until', '2026-11-02T00:00:00Z', '--json'],
      t.io,
    );
    expect(t.err()).toBe('');
    expect(code).toBe(EXIT.ok);
    expect(asked).toHaveLength(2);
    const q = asked[0]!;
    expect(q.StartTime).toEqual(new Date('2026-11-01T00:00:00Z'));
    expect(q.EndTime).toEqual(new Date('2026-11-02T00:00:00Z'));
    expect(q.MetricDataQueries).toHaveLength(12);
    for (const m of q.MetricDataQueries!) {
      expect(m.MetricStat).toMatchObject({
        Metric: { Namespace: 'Sluice', Dimensions: [{ Name: 'service', Value: 'prod-Sluice' }] },
        Period: 86_400,
        Stat: 'Sum',
      });
    }
    const client = cw.call(0).thisValue as CloudWatchClient;
    expect(await client.config.region()).toBe('eu-west-1');
    const r = JSON.parse(t.out()) as {
      lines: { what: string; count: number; usd: number }[];
      totalUsd: number;
      usdPerMillion: number;
      groups: number;
      sqsKind: string;
      sqsUsd: number;
      reportCost: { metricsRequested: number; usd: number };
    };
    const usd = Object.fromEntries(r.lines.map((l) => [l.what, l.usd]));
    expect(usd['API Gateway requests']).toBeCloseTo(0.02, 10); // 20,000 × $1.00/M
    expect(usd['Lambda requests']).toBeCloseTo(0.004, 10); // 20,000 × $0.20/M
    expect(usd['Lambda GB-seconds']).toBeCloseTo(0.0133334, 10); // 1,000 × $0.0000133334
    expect(usd['DynamoDB write units']).toBeCloseTo(0.125, 10); // 200,000 × $0.625/M
    expect(usd['DynamoDB read units']).toBeCloseTo(0.005, 10); // 40,000 × $0.125/M
    expect(usd['S3 PUT']).toBeCloseTo(0.05, 10); // 10,000 × $5/M
    expect(usd['S3 LIST']).toBeCloseTo(0.0005, 10); // 100 × $5/M
    expect(usd['S3 GET']).toBeCloseTo(0.002, 10); // 5,000 × $0.40/M
    expect(usd['S3 DELETE (free)']).toBe(0);
    expect(r.totalUsd).toBeCloseTo(0.2198334, 10);
    expect(r.usdPerMillion).toBeCloseTo(0.2198334, 10);
    // Three deliveries per message: three groups, so SNS (100,000 publishes of 10) + 3 SQS queues (receive + delete).
    expect(r.groups).toBe(3);
    expect(r.sqsKind).toBe('SNS + SQS');
    expect(r.sqsUsd).toBeCloseTo(0.29, 10);
    expect(r.reportCost.metricsRequested).toBe(12);
    expect(r.reportCost.usd).toBeCloseTo(0.00012, 12); // 12 metrics × $0.01 per 1,000
  });

  it('prints the report as text, saying what it cost', async () => {
    cw.on(GetMetricDataCommand).callsFake((input: GetMetricDataCommandInput) => ({
      MetricDataResults: (input.MetricDataQueries ?? []).map((q) => ({
        Id: q.Id,
        Values: [DAY[q.MetricStat!.Metric!.MetricName!]!],
      })),
    }));
    const t = io({ AWS_REGION: 'us-east-1' });
    expect(
      await run(['--endpoint', 'https://q.example.com', 'cost', '--service', 'my-svc', '--since', '1h'], t.io),
    ).toBe(EXIT.ok);
    const text = t.out();
    expect(text).toMatch(/^Sluice cost of my-svc \(namespace Sluice\), /);
    expect(text).toMatch(/DynamoDB write units\s+200,000\s+\$0\.125000/);
    expect(text).toContain('per million messages: $0.219833 (SNS + SQS for the same messages: $0.290000)');
    expect(text).toContain('this report: 12 metrics from CloudWatch GetMetricData, $0.000120');
  });

  it('asks for --stack when the endpoint is not a local server', async () => {
    const t = io({ SLUICE_ENDPOINT: 'https://abc123.execute-api.eu-west-1.amazonaws.com' });
    expect(await run(['cost'], t.io)).toBe(EXIT.usage);
    expect(t.err()).toContain('--stack');
    expect(cw.calls()).toHaveLength(0);
  });
});

describe('unit: sluice cost against a local server', () => {
  it('reads the counters from /metrics and prices the same traffic at AWS prices', async () => {
    const prometheus = [
      '# TYPE sluice_api_requests_total counter',
      'sluice_api_requests_total 2000',
      'sluice_lambda_gb_seconds_total 0',
      'sluice_dynamodb_requests_total 5000',
      'sluice_dynamodb_write_units_total 16000',
      'sluice_dynamodb_read_units_total 8000',
      'sluice_s3_puts_total 0',
      'sluice_s3_gets_total 0',
      'sluice_s3_lists_total 0',
      'sluice_s3_deletes_total 0',
      'queen_cluster_push_messages_total{scope="cluster"} 100000',
      'queen_cluster_pop_messages_total{scope="cluster"} 100000',
      'queen_cluster_ack_messages_total{scope="cluster"} 100000',
    ].join('\n');
    const t = io({ SLUICE_ENDPOINT: 'http://127.0.0.1:6632' }, (path) =>
      path === '/metrics' ? new Response(prometheus, { headers: { 'content-type': 'text/plain' } }) : new Response(''),
    );
    expect(await run(['cost', '--json'], t.io)).toBe(EXIT.ok);
    expect(cw.calls()).toHaveLength(0);
    const r = JSON.parse(t.out()) as { local: boolean; totalUsd: number; usdPerMillion: number; sqsUsd: number };
    expect(r.local).toBe(true);
    // 2,000 × ($1.00 + $0.20)/M + 16,000 × $0.625/M + 8,000 × $0.125/M = 0.0024 + 0.01 + 0.001
    expect(r.totalUsd).toBeCloseTo(0.0134, 10);
    expect(r.usdPerMillion).toBeCloseTo(0.134, 10);
    // SQS, one group: 10,000 sends + 20,000 receives and deletes, at $0.40/M.
    expect(r.sqsUsd).toBeCloseTo(0.012, 10);
  });
});
