import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { Grants } from '../../server/http/grants.js';
import { makeHandler } from '../../server/http/handler.js';
import { ALL_ROUTES, SERVER_ROUTES } from '../../server/http/routes.js';
import type { HttpEvent } from '../../server/http/types.js';
import { PowertoolsTelemetry } from '../../server/service/adapters/powertools-telemetry.js';
import { buildServices } from '../../server/service/runtime.js';
import { USAGE_METRICS, USAGE_PROMETHEUS } from '../../server/service/usage.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { StorageUsage } from '../../server/storage/usage.js';
import { newAwsTestStorage } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';

const event = (method: string, path: string, body?: unknown, query?: Record<string, string>) =>
  ({
    version: '2.0',
    rawPath: path,
    headers: { 'content-type': 'application/json' },
    queryStringParameters: query,
    body: body === undefined ? undefined : JSON.stringify(body),
    isBase64Encoded: false,
    requestContext: { http: { method, path } },
  }) as unknown as HttpEvent;

/** The EMF lines Powertools writes to stdout while `fn` runs. */
async function emfLines(fn: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.includes('"_aws"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('integration: each Lambda invocation adds its cost to its EMF line (AWS backend)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups) await c();
  });
  afterEach(() => {
    delete process.env['AWS_LAMBDA_FUNCTION_MEMORY_SIZE'];
  });

  it('a push and a pop: requests, DynamoDB units as DynamoDB reported them, Lambda GB-seconds, one dimension', async () => {
    const { storage, cleanup } = await newAwsTestStorage(awsEndpoints(), { usageMeter: {} });
    cleanups.push(cleanup);
    process.env['AWS_LAMBDA_FUNCTION_MEMORY_SIZE'] = '1024';
    const telemetry = new PowertoolsTelemetry({
      logger: new Logger({ logLevel: 'ERROR' }),
      metrics: new Metrics({ namespace: 'SluiceTest', serviceName: 'costs' }),
    });
    const svc = buildServices(storage, loadConfig({}), { telemetry });
    const handler = makeHandler(ALL_ROUTES, { services: async () => svc, grants: Grants.open() });
    const usage = storage.usage!;

    const before: StorageUsage = { ...usage };
    const [push] = await emfLines(async () => {
      const r = await handler(event('POST', '/api/v1/push', { items: [{ queue: 'costs', payload: { n: 1 } }] }), {});
      expect(r.statusCode).toBe(201);
    });
    expect(push).toBeDefined();
    expect(push).toMatchObject({
      ApiRequests: 1,
      MessagesPushed: 1,
      DynamoDBRequests: usage.dynamodbRequests - before.dynamodbRequests,
      DynamoDBWriteUnits: usage.writeUnits - before.writeUnits,
      service: 'costs',
    });
    expect(push!['DynamoDBWriteUnits']).toBeGreaterThan(0);
    // The handler's time, at least 1 ms, at 1 GB.
    expect(push!['LambdaGbSeconds']).toBeGreaterThanOrEqual(0.001);
    const aws = push!['_aws'] as { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] };
    expect(aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service']]);
    const names = aws.CloudWatchMetrics[0]!.Metrics.map((m) => m.Name);
    expect(names).toEqual(expect.arrayContaining(['ApiRequests', 'DynamoDBRequests', 'DynamoDBWriteUnits']));

    const mid: StorageUsage = { ...usage };
    const [pop] = await emfLines(async () => {
      const r = await handler(event('GET', '/api/v1/pop/queue/costs', undefined, { autoAck: 'true' }), {});
      expect(r.statusCode).toBe(200);
    });
    expect(pop).toMatchObject({
      ApiRequests: 1,
      MessagesDelivered: 1,
      DynamoDBReadUnits: usage.readUnits - mid.readUnits,
      DynamoDBWriteUnits: usage.writeUnits - mid.writeUnits,
    });
    expect(pop!['DynamoDBReadUnits']).toBeGreaterThan(0);
    // Nothing counted twice: the next invocation starts from zero.
    expect(svc.usage.totals()).toMatchObject({ ApiRequests: 2, DynamoDBWriteUnits: usage.writeUnits });
  });
});

describe('integration: the embedded server exposes the same counters', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-usage-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('on /metrics, counted as the AWS adapter would make the requests', async () => {
    const storage = await openEmbeddedStorage({ dataDir: dir });
    const svc = buildServices(storage, loadConfig({ SLUICE_DATA_DIR: dir }));
    const handler = makeHandler(SERVER_ROUTES, { services: async () => svc, grants: Grants.open() });
    try {
      const items = Array.from({ length: 3 }, (_, i) => ({ queue: 'local-costs', payload: { i } }));
      expect((await handler(event('POST', '/api/v1/push', { items }), {})).statusCode).toBe(201);
      const counted = { ...storage.usage! };
      // One push of three small messages: one segment put and the queue's records, ⌈KB⌉ each.
      expect(counted.writeUnits).toBeGreaterThanOrEqual(1);
      expect(counted.dynamodbRequests).toBeGreaterThanOrEqual(2);
      const metrics = await handler(event('GET', '/metrics'), {});
      const text = String(metrics.body);
      const value = (series: string): number =>
        Number(
          text
            .split('\n')
            .find((l) => l.startsWith(`${series} `))
            ?.slice(series.length + 1),
        );
      // The push; the scrape itself is counted once it has answered.
      expect(value('sluice_api_requests_total')).toBe(1);
      expect(svc.usage.totals().ApiRequests).toBe(2);
      expect(value('sluice_dynamodb_write_units_total')).toBe(counted.writeUnits);
      expect(value('sluice_dynamodb_requests_total')).toBeGreaterThanOrEqual(counted.dynamodbRequests);
      expect(value('sluice_lambda_gb_seconds_total')).toBe(0);
      for (const m of USAGE_METRICS) expect(text).toContain(`# TYPE ${USAGE_PROMETHEUS[m][0]} counter`);
      expect(value('queen_cluster_push_messages_total{scope="cluster"}')).toBe(3);
    } finally {
      await storage.close();
    }
  });
});
