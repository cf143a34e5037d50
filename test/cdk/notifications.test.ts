import type { Template } from 'aws-cdk-lib/assertions';
import { Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { SEQUENCER_PK_PREFIX } from '../../server/core/notifications.js';
import { notificationTicket } from '../../server/http/handlers/notifications.js';
import { TABLES } from '../../server/storage/port.js';
import { FUNCTIONS, TABLE_ACTIONS } from '../../lib/access.js';
import { routesForRole } from '../../lib/api-access.js';
import type { SluiceStack } from '../../lib/sluice-stack.js';
import { nagViolations, refId, resourcesOf, synthStack } from '../support/cdk.js';

let stack: SluiceStack;
let template: Template;
beforeAll(() => {
  ({ stack, template } = synthStack());
});

const logicalId = (c: IConstruct): string => Stack.of(c).getLogicalId(c.node.defaultChild as never);
const TICKET_ROUTE = `${notificationTicket.method} ${notificationTicket.path}`;
type Statement = { Sid?: string; Action: string | string[]; Resource: unknown };
const statementsOf = (t: Template, roleId: string): Statement[] =>
  Object.values(resourcesOf(t, 'AWS::IAM::Policy'))
    .filter((p) => (p.Properties['Roles'] as unknown[]).some((r) => refId(r) === roleId))
    .flatMap((p) => (p.Properties['PolicyDocument'] as { Statement: Statement[] }).Statement);
const envOf = (t: Template, fnId: string): Record<string, unknown> =>
  (resourcesOf(t, 'AWS::Lambda::Function')[fnId]!.Properties['Environment'] as { Variables: Record<string, unknown> })
    .Variables;

describe('cdk: idle-consumer notifications', () => {
  it('a WebSocket API with $connect, $disconnect and $default (answering) on the notifications function', () => {
    const n = stack.service.notifications!;
    const apiId = logicalId(n.api);
    expect(resourcesOf(template, 'AWS::ApiGatewayV2::Api')[apiId]!.Properties).toMatchObject({
      ProtocolType: 'WEBSOCKET',
      RouteSelectionExpression: '$request.body.action',
    });
    const routes = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Route')).filter(
      (r) => refId(r.Properties['ApiId']) === apiId,
    );
    expect(routes.map((r) => r.Properties['RouteKey']).sort()).toEqual(['$connect', '$default', '$disconnect']);
    const integrations = resourcesOf(template, 'AWS::ApiGatewayV2::Integration');
    for (const r of routes) {
      const target = (r.Properties['Target'] as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1][1];
      const uri = JSON.stringify(integrations[refId(target)!]!.Properties['IntegrationUri']);
      expect(uri).toContain(logicalId(n.function));
    }
    const responses = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::RouteResponse'));
    expect(responses).toHaveLength(1);
    const stage = Object.values(resourcesOf(template, 'AWS::ApiGatewayV2::Stage')).find(
      (s) => refId(s.Properties['ApiId']) === apiId,
    )!;
    expect(stage.Properties).toMatchObject({ StageName: 'live', AutoDeploy: true });
    expect(stage.Properties['AccessLogSettings']).toBeDefined();
  });

  it('the log table streams keys only; the notifier hears only sequencer writes (INSERT, MODIFY)', () => {
    const tables = resourcesOf(template, 'AWS::DynamoDB::Table');
    for (const t of TABLES) {
      const spec = tables[logicalId(stack.service.tables[t])]!.Properties['StreamSpecification'];
      expect({ t, spec }).toEqual({ t, spec: t === 'log' ? { StreamViewType: 'KEYS_ONLY' } : undefined });
    }
    const mappings = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(1);
    const m = mappings[0]!.Properties;
    expect(refId(m['FunctionName'])).toBe(logicalId(stack.service.notifications!.function));
    expect(JSON.stringify(m['EventSourceArn'])).toContain(logicalId(stack.service.tables.log));
    expect(m).toMatchObject({
      StartingPosition: 'LATEST',
      MaximumRecordAgeInSeconds: 60,
      MaximumRetryAttempts: 2,
      BisectBatchOnFunctionError: true,
    });
    // Batches given up on go to the failures queue (SSE, TLS only, kept 14 days).
    const failuresId = logicalId(stack.service.notifications!.failures);
    expect(refId((m['DestinationConfig'] as { OnFailure: { Destination: unknown } }).OnFailure.Destination)).toBe(
      failuresId,
    );
    expect(resourcesOf(template, 'AWS::SQS::Queue')[failuresId]!.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 86_400,
    });
    const filters = (m['FilterCriteria'] as { Filters: { Pattern: string }[] }).Filters;
    expect(filters.map((f) => JSON.parse(f.Pattern) as unknown)).toEqual([
      { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { pk: { S: [{ prefix: SEQUENCER_PK_PREFIX }] } } } },
    ]);
  });

  it('the notifier may read and write meta, read the log stream and post to its own stage, nothing else', () => {
    const n = stack.service.notifications!;
    const statements = statementsOf(template, logicalId(n.function.role!));
    const tables = statements.find((s) => s.Sid === 'ReadWriteTables')!;
    expect([tables.Action].flat().sort()).toEqual([...TABLE_ACTIONS.readwrite].sort());
    expect(refId([tables.Resource].flat()[0])).toBe(logicalId(stack.service.tables.meta));
    const manage = statements.filter((s) => [s.Action].flat().includes('execute-api:ManageConnections'));
    expect(manage).toHaveLength(1);
    const resource = JSON.stringify(manage[0]!.Resource);
    expect(resource).toContain(logicalId(n.api));
    expect(resource).toContain('/live/*/@connections/*');
    const streamRead = statements.filter((s) => [s.Action].flat().includes('dynamodb:GetRecords'));
    expect(JSON.stringify(streamRead.map((s) => s.Resource))).toContain('StreamArn');
    // The mapping's on-failure destination: that queue only.
    const send = statements.filter((s) => JSON.stringify(s.Action).includes('sqs:'));
    expect(send.flatMap((s) => [s.Action].flat())).toContain('sqs:SendMessage');
    expect(send.map((s) => refId([s.Resource].flat()[0]))).toEqual([logicalId(n.failures)]);
    // No other table, no bucket.
    const all = JSON.stringify(statements);
    for (const t of TABLES.filter((t) => t !== 'meta' && t !== 'log'))
      expect(all).not.toContain(logicalId(stack.service.tables[t]));
    expect(all).not.toContain('s3:');
    // The API functions may not post to connections.
    for (const f of FUNCTIONS)
      expect(JSON.stringify(statementsOf(template, logicalId(stack.service.functions[f].role!)))).not.toContain(
        'ManageConnections',
      );
  });

  it('the notifier is in the errors and throttles alarms and the dashboard; its stream lag and give-ups alarm', () => {
    const n = stack.service.notifications!;
    const alarms = Object.entries(resourcesOf(template, 'AWS::CloudWatch::Alarm')).map(([id, a]) => ({
      id,
      text: JSON.stringify(a.Properties),
    }));
    const fnRef = `{"Ref":"${logicalId(n.function)}"}`;
    for (const metric of ['Errors', 'Throttles']) {
      const [a] = alarms.filter((x) => x.text.includes(`"MetricName":"${metric}"`));
      expect(a!.text).toContain(fnRef);
      expect(a!.text).toContain('FILL(');
    }
    const age = alarms.filter((x) => x.text.includes('"MetricName":"IteratorAge"'));
    expect(age).toHaveLength(1);
    expect(age[0]!.text).toContain(fnRef);
    expect(JSON.parse(age[0]!.text)).toMatchObject({
      Namespace: 'AWS/Lambda',
      Statistic: 'Maximum',
      Threshold: 30_000,
    });
    const gaveUp = alarms.filter((x) => x.text.includes('"MetricName":"ApproximateNumberOfMessagesVisible"'));
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]!.text).toContain(logicalId(n.failures));
    const body = JSON.stringify(Object.values(resourcesOf(template, 'AWS::CloudWatch::Dashboard'))[0]!.Properties);
    for (const m of ['WakeUps', 'WakeUpsDropped', 'IteratorAge', 'ApproximateNumberOfMessagesVisible'])
      expect(body).toContain(m);
    expect(body).toContain(logicalId(n.function));
  });

  it('the API functions learn the WebSocket URL, the notifier its callback URL', () => {
    const n = stack.service.notifications!;
    for (const f of FUNCTIONS.filter((f) => f !== 'maintenance'))
      expect(JSON.stringify(envOf(template, logicalId(stack.service.functions[f]))['SLUICE_NOTIFY_URL'])).toContain(
        logicalId(n.api),
      );
    const env = envOf(template, logicalId(n.function));
    expect(JSON.stringify(env['SLUICE_NOTIFY_CALLBACK_URL'])).toContain('https://');
    expect(env['SLUICE_NOTIFY_URL']).toBeUndefined();
  });

  it('the ticket route has the API auth of every mode and is the consumers’ to call', () => {
    const ticketRoute = (t: Template) =>
      Object.values(resourcesOf(t, 'AWS::ApiGatewayV2::Route')).find((r) => r.Properties['RouteKey'] === TICKET_ROUTE)!;
    expect(ticketRoute(template).Properties['AuthorizationType']).toBe('AWS_IAM');
    expect(routesForRole('Consumer', [notificationTicket])).toEqual([
      { method: notificationTicket.method, path: notificationTicket.path },
    ]);
    expect(routesForRole('Producer', [notificationTicket])).toEqual([]);
    const jwt = synthStack({ auth: { type: 'jwt', issuer: 'https://issuer.example.com/', audience: ['s'] } }, 'Jwt');
    expect(ticketRoute(jwt.template).Properties['AuthorizationType']).toBe('JWT');
    const tokens = synthStack({ auth: { type: 'tokens' } }, 'Tokens');
    expect(ticketRoute(tokens.template).Properties).toMatchObject({ AuthorizationType: 'CUSTOM' });
    expect(nagViolations(stack)).toEqual([]);
  });

  it('notifications: false leaves out the WebSocket API, the stream and the URL', () => {
    const { stack: off, template: t } = synthStack({ notifications: false }, 'NoNotify');
    expect(off.service.notifications).toBeUndefined();
    expect(Object.keys(resourcesOf(t, 'AWS::ApiGatewayV2::Api'))).toHaveLength(1);
    t.resourceCountIs('AWS::Lambda::EventSourceMapping', 0);
    t.resourceCountIs('AWS::SQS::Queue', 0);
    expect(JSON.stringify(resourcesOf(t, 'AWS::CloudWatch::Alarm'))).not.toContain('IteratorAge');
    for (const tb of Object.values(resourcesOf(t, 'AWS::DynamoDB::Table')))
      expect(tb.Properties['StreamSpecification']).toBeUndefined();
    expect(envOf(t, logicalId(off.service.functions.leases))['SLUICE_NOTIFY_URL']).toBeUndefined();
  });
});
