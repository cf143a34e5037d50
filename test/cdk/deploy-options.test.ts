// Options that make a deployment work on a fresh account and reachable by its operators
// (docs/DEPLOYING.md, "Deploy"): concurrency reservations, payload keys, alarm notifications,
// request limits, bearer-token auth. Each is checked on the synthesized template, default and opted
// in.
import { App, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { isLagTask, LAG_TASK_EVENT } from '../../server/entry/maintenance-event.js';
import { loadConfig } from '../../server/config.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import {
  FUNCTIONS,
  PAYLOAD_KEY_ACCESS,
  PAYLOAD_KEY_ACTIONS,
  WAITING_FUNCTIONS,
  type FunctionName,
} from '../../lib/access.js';
import {
  AWS_DEFAULT_MAX_BODY_BYTES,
  AWS_DEFAULT_MAX_PUSH_ITEMS,
  AWS_MAX_BODY_BYTES,
  DEFAULT_THROTTLE,
  LAMBDA_MAX_EVENT_BYTES,
  WORST_CASE_ESCAPE_FACTOR,
  worstCaseEventBytes,
} from '../../lib/limits.js';
import { NAG_REASONS } from '../../lib/nag.js';
import { ACCOUNT_CONCURRENCY_ACTION, TOKEN_CACHE_TTL } from '../../lib/sluice-service.js';
import { SluiceStack } from '../../lib/sluice-stack.js';
import { nagViolations, refId, resourcesOf, synthStack } from '../support/cdk.js';

type Synth = ReturnType<typeof synthStack>;
/** The default stack, synthesized once. */
let dflt: Synth;
beforeAll(() => {
  dflt = synthStack();
});
const logicalId = (c: IConstruct): string => Stack.of(c).getLogicalId(c.node.defaultChild as never);
/** A function's properties in the template. */
const fnProps = ({ stack, template }: Synth, name: FunctionName) =>
  resourcesOf(template, 'AWS::Lambda::Function')[logicalId(stack.service.functions[name])]!.Properties;

describe('cdk: maintenance concurrency', () => {
  it('reserves no concurrency anywhere by default (a fresh account refuses any reservation)', () => {
    const { template } = dflt;
    for (const [id, f] of Object.entries(resourcesOf(template, 'AWS::Lambda::Function')))
      expect(f.Properties['ReservedConcurrentExecutions'], `${id}`).toBeUndefined();
  });

  it('reserves executions for maintenance only when asked, and only there', () => {
    const reserved = synthStack({ maintenanceReservedConcurrency: 2 }, 'Reserved');
    expect(fnProps(reserved, 'maintenance')['ReservedConcurrentExecutions']).toBe(2);
    for (const f of FUNCTIONS.filter((n) => n !== 'maintenance'))
      expect(fnProps(reserved, f)['ReservedConcurrentExecutions'], `${f}`).toBeUndefined();
    // One execution is not enough: the lag report would be throttled whenever a pass runs.
    const one = synthStack({ maintenanceReservedConcurrency: 1 }, 'ReservedOne');
    Annotations.fromStack(one.stack).hasWarning('*', Match.stringLikeRegexp('maintenanceReservedConcurrency=1'));
    expect(() => synthStack({ maintenanceReservedConcurrency: 0 }, 'ReservedZero')).toThrow(
      /maintenanceReservedConcurrency must be a whole number from 1 to 10 \(got 0\)/,
    );
  });
});

/** Every statement of the role a function runs as. */
function statementsOf(
  { stack, template }: Synth,
  name: FunctionName,
): { Sid?: string; Action: unknown; Resource: unknown }[] {
  const roleId = refId(fnProps({ stack, template } as Synth, name)['Role']);
  return Object.values(resourcesOf(template, 'AWS::IAM::Policy'))
    .filter((p) => (p.Properties['Roles'] as unknown[]).some((r) => refId(r) === roleId))
    .flatMap(
      (p) =>
        (p.Properties['PolicyDocument'] as { Statement: { Sid?: string; Action: unknown; Resource: unknown }[] })
          .Statement,
    );
}
const kmsStatements = (s: Synth, name: FunctionName) =>
  statementsOf(s, name).filter((st) => JSON.stringify(st.Action).includes('kms:'));
const envOf = (s: Synth, name: FunctionName) =>
  (fnProps(s, name)['Environment'] as { Variables: Record<string, unknown> }).Variables;

describe('cdk: the wait cap (docs/DEPLOYING.md#quotas)', () => {
  const API = FUNCTIONS.filter((f) => f !== 'maintenance');
  const lambdaStatements = (s: Synth, name: FunctionName) =>
    statementsOf(s, name).filter((st) => JSON.stringify(st.Action).includes('lambda:'));

  it('by default the API functions cap waits at a share of the account concurrency, which only the waiting ones may read', () => {
    for (const f of API) expect(envOf(dflt, f)['SLUICE_MAX_WAITERS'], `${f}`).toBe('auto');
    for (const f of API)
      expect(loadConfig({ SLUICE_MAX_WAITERS: String(envOf(dflt, f)['SLUICE_MAX_WAITERS']) }).maxWaiters).toBe('auto');
    for (const f of FUNCTIONS) {
      const expected = WAITING_FUNCTIONS.includes(f)
        ? [{ Sid: 'ReadAccountConcurrency', Effect: 'Allow', Action: ACCOUNT_CONCURRENCY_ACTION, Resource: '*' }]
        : [];
      expect({ f, statements: lambdaStatements(dflt, f) }).toEqual({ f, statements: expected });
    }
    expect(WAITING_FUNCTIONS).toEqual(['leases', 'claims']);
  });

  it('the "*" that GetAccountSettings and ListStreams need is acknowledged with its reason, and nothing else', () => {
    expect(nagViolations(dflt.stack)).toEqual([]);
    const acks: [string, string, string][] = [];
    const visit = (c: IConstruct): void => {
      for (const m of c.node.metadata)
        if (m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
          for (const [rule, reason] of Object.entries(m.data as Record<string, string>))
            acks.push([c.node.path, rule, reason]);
      c.node.children.forEach(visit);
    };
    visit(dflt.stack);
    const star = acks.filter(([, rule]) => rule.endsWith('AwsSolutions-IAM5[Resource::*]'));
    expect(star).toEqual([
      [
        'Sluice/Sluice/Notifications/Role/DefaultPolicy/Resource',
        'Annotation::AwsSolutions-IAM5[Resource::*]',
        NAG_REASONS.listStreams,
      ],
      ...['Leases', 'Claims'].map((f) => [
        `Sluice/Sluice/${f}Role/DefaultPolicy/Resource`,
        'Annotation::AwsSolutions-IAM5[Resource::*]',
        NAG_REASONS.accountConcurrency,
      ]),
    ]);
    // Any other action on "*" in the same policy stays a finding.
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const other = new SluiceStack(app, 'WideLeases', { env: { account: '111122223333', region: 'eu-west-1' } });
    other.service.functions.leases.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:ListAllMyBuckets'], resources: ['*'] }),
    );
    Template.fromStack(other);
    expect(nagViolations(other)).toEqual([
      { rule: 'AwsSolutions-IAM5[Resource::*]', paths: ['WideLeases/Sluice/LeasesRole/DefaultPolicy/Resource'] },
    ]);
  });

  it('a number (-c maxWaiters=N) is passed as it is and grants nothing; 0 turns the cap off', () => {
    for (const [id, maxWaiters] of [
      ['Four', 4],
      ['None', 0],
    ] as const) {
      const s = synthStack({ maxWaiters }, `Waiters${id}`);
      for (const f of API) expect(envOf(s, f)['SLUICE_MAX_WAITERS'], `${id} ${f}`).toBe(String(maxWaiters));
      for (const f of FUNCTIONS) expect(lambdaStatements(s, f), `${id} ${f}`).toEqual([]);
      expect(nagViolations(s.stack)).toEqual([]);
    }
    // `environment` wins, as for every SLUICE_* setting, and the grant follows it.
    const env = synthStack({ environment: { SLUICE_MAX_WAITERS: '12' } }, 'WaitersEnv');
    expect(envOf(env, 'leases')['SLUICE_MAX_WAITERS']).toBe('12');
    expect(lambdaStatements(env, 'leases')).toEqual([]);
    expect(() => synthStack({ maxWaiters: -1 }, 'WaitersBad')).toThrow(
      /maxWaiters must be auto or a whole number from 0 \(no cap\) to 999999 \(got -1\)/,
    );
    expect(() => synthStack({ environment: { SLUICE_MAX_WAITERS: 'lots' } }, 'WaitersBadEnv')).toThrow(
      /SLUICE_MAX_WAITERS must be "auto" or a whole number/,
    );
  });
});

describe('cdk: payload key (encryptionEnabled queues on AWS)', () => {
  const keyArn = 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';

  it('without a key: no function has SLUICE_KMS_KEY_ID or any KMS permission', () => {
    const s = dflt;
    for (const f of FUNCTIONS) {
      expect(envOf(s, f)['SLUICE_KMS_KEY_ID'], `${f}`).toBeUndefined();
      expect(kmsStatements(s, f), `${f}`).toEqual([]);
    }
    s.template.resourceCountIs('AWS::KMS::Key', 0);
  });

  it('with -c kmsKeyArn: exactly the functions that seal or open payloads get the key, each with only its actions', () => {
    const s = synthStack({ payloadKey: { keyArn } }, 'Keyed');
    for (const f of FUNCTIONS) {
      const uses = PAYLOAD_KEY_ACCESS[f];
      expect({ f, env: envOf(s, f)['SLUICE_KMS_KEY_ID'] }).toEqual({ f, env: uses.length ? keyArn : undefined });
      expect({ f, statements: kmsStatements(s, f) }).toEqual({
        f,
        statements: uses.length
          ? [
              {
                Sid: 'PayloadKey',
                Effect: 'Allow',
                Action: uses.length === 1 ? PAYLOAD_KEY_ACTIONS[uses[0]!] : uses.map((u) => PAYLOAD_KEY_ACTIONS[u]),
                Resource: keyArn,
              },
            ]
          : [],
      });
    }
    // Pushes seal (GenerateDataKey), reads open (Decrypt); maintenance never touches payloads.
    expect(PAYLOAD_KEY_ACCESS.log).toEqual(['seal', 'open']);
    expect(PAYLOAD_KEY_ACCESS.claims).toEqual(['open']);
    expect(PAYLOAD_KEY_ACCESS.maintenance).toEqual([]);
    expect(s.template.findOutputs('PayloadKeyArn')['PayloadKeyArn']?.['Value']).toBe(keyArn);
    expect(nagViolations(s.stack)).toEqual([]);
  });

  it('with -c kmsKey=create: a rotating key kept with the data (deleted with it under removalPolicy=destroy)', () => {
    const s = synthStack({ payloadKey: { create: true } }, 'OwnKey');
    const keys = Object.entries(resourcesOf(s.template, 'AWS::KMS::Key'));
    expect(keys).toHaveLength(1);
    const [keyId, key] = keys[0]!;
    expect(key.Properties).toMatchObject({ EnableKeyRotation: true, PendingWindowInDays: 30 });
    expect(key['DeletionPolicy']).toBe('Retain');
    expect(refId(envOf(s, 'log')['SLUICE_KMS_KEY_ID'])).toBe(keyId);
    expect(kmsStatements(s, 'claims')).toEqual([
      { Sid: 'PayloadKey', Effect: 'Allow', Action: 'kms:Decrypt', Resource: { 'Fn::GetAtt': [keyId, 'Arn'] } },
    ]);
    expect(kmsStatements(s, 'maintenance')).toEqual([]);
    expect(nagViolations(s.stack)).toEqual([]);
    const destroy = synthStack({ payloadKey: { create: true }, removalPolicy: RemovalPolicy.DESTROY }, 'OwnKeyGone');
    expect(Object.values(resourcesOf(destroy.template, 'AWS::KMS::Key'))[0]!['DeletionPolicy']).toBe('Delete');
  });

  it('refuses an alias or a malformed ARN, and a key set twice', () => {
    expect(() => synthStack({ payloadKey: { keyArn: 'alias/sluice' } }, 'Alias')).toThrow(/must be a KMS key ARN/);
    expect(() => synthStack({ payloadKey: { keyArn }, environment: { SLUICE_KMS_KEY_ID: keyArn } }, 'Twice')).toThrow(
      /not both/,
    );
  });
});

describe('cdk: alarm notifications and the lag alarm', () => {
  const alarms = (s: Synth) =>
    Object.values(resourcesOf(s.template, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties);
  const lagAlarm = (s: Synth) =>
    alarms(s).find((a) => JSON.stringify(a).includes('"MetricName":"OldestUnconsumedAgeSeconds"'))!;

  it('by default alarms notify nobody and no topic exists', () => {
    const s = dflt;
    for (const a of alarms(s)) expect(a['AlarmActions']).toBeUndefined();
    s.template.resourceCountIs('AWS::SNS::Topic', 0);
  });

  it('-c alarmEmail: a TLS-only topic with an email subscription, and every alarm notifies it', () => {
    const s = synthStack({ alarms: { email: 'ops@example.com' } }, 'Mailed');
    const topics = Object.keys(resourcesOf(s.template, 'AWS::SNS::Topic'));
    expect(topics).toHaveLength(1);
    s.template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
      TopicArn: { Ref: topics[0] },
    });
    const all = alarms(s);
    expect(all.length).toBeGreaterThanOrEqual(7);
    for (const a of all) {
      expect(a['AlarmActions']).toEqual([{ Ref: topics[0] }]);
      expect(a['OKActions']).toEqual([{ Ref: topics[0] }]);
    }
    expect(s.template.findOutputs('AlarmTopicArn')['AlarmTopicArn']?.['Value']).toEqual({ Ref: topics[0] });
    expect(nagViolations(s.stack)).toEqual([]);
  });

  it('-c alarmTopicArn: alarms notify the existing topic (and an email subscribes to it when given)', () => {
    const topicArn = 'arn:aws:sns:eu-west-1:111122223333:ops-alerts';
    const s = synthStack({ alarms: { topicArn, email: 'ops@example.com' } }, 'Topic');
    s.template.resourceCountIs('AWS::SNS::Topic', 0);
    s.template.hasResourceProperties('AWS::SNS::Subscription', { TopicArn: topicArn, Protocol: 'email' });
    for (const a of alarms(s)) expect(a['AlarmActions']).toEqual([topicArn]);
    expect(() => synthStack({ alarms: { topicArn: 'ops-alerts' } }, 'BadTopic')).toThrow(/SNS topic ARN/);
    expect(() => synthStack({ alarms: { email: 'ops' } }, 'BadMail')).toThrow(/alarmEmail must be an email/);
  });

  it('the lag alarm breaches on missing data (lag no longer measured), over two lag intervals', () => {
    expect(lagAlarm(dflt)).toMatchObject({
      TreatMissingData: 'breaching',
      EvaluationPeriods: 2,
      Period: 300,
      Statistic: 'Maximum',
    });
    // The other alarms count events: no data there means nothing happened.
    for (const a of alarms(dflt).filter((x) => !JSON.stringify(x).includes('OldestUnconsumed')))
      expect(a['TreatMissingData']).toBe('notBreaching');
  });

  it('lag is published every 5 minutes by a second schedule sending { task: "lag" } to maintenance', () => {
    const s = dflt;
    const rules = Object.values(resourcesOf(s.template, 'AWS::Events::Rule')).map((r) => r.Properties);
    const maintenanceArn = { 'Fn::GetAtt': [logicalId(s.stack.service.functions.maintenance), 'Arn'] };
    expect(rules.map((r) => r['ScheduleExpression']).sort()).toEqual(['rate(15 minutes)', 'rate(5 minutes)']);
    const lag = rules.find((r) => r['ScheduleExpression'] === 'rate(5 minutes)')!;
    expect(lag['Targets']).toEqual([
      expect.objectContaining({ Arn: maintenanceArn, Input: JSON.stringify(LAG_TASK_EVENT) }),
    ]);
    expect(isLagTask(JSON.parse(String((lag['Targets'] as { Input: string }[])[0]!.Input)) as never)).toBe(true);
    const pass = rules.find((r) => r['ScheduleExpression'] === 'rate(15 minutes)')!;
    expect((pass['Targets'] as Record<string, unknown>[])[0]!['Input']).toBeUndefined();
    const fast = synthStack({ lagInterval: Duration.minutes(1) }, 'FastLag');
    expect(lagAlarm(fast)['Period']).toBe(60);
    expect(() => synthStack({ lagInterval: Duration.seconds(30) }, 'TooFast')).toThrow(
      /lagInterval must be whole minutes/,
    );
  });
});

describe('cdk: request limits the gateway can honour', () => {
  const API = FUNCTIONS.filter((f) => f !== 'maintenance');
  const configOf = (s: Synth, f: FunctionName) =>
    loadConfig(
      Object.fromEntries(Object.entries(envOf(s, f)).filter((e): e is [string, string] => typeof e[1] === 'string')),
    );

  it("the API functions' body limit keeps the worst-case escaped event under Lambda's 6 MB, so Sluice's own 413 answers", () => {
    for (const f of API) {
      const { maxBodyBytes, maxPushItems } = configOf(dflt, f);
      expect({ f, maxBodyBytes, maxPushItems }).toEqual({
        f,
        maxBodyBytes: AWS_DEFAULT_MAX_BODY_BYTES,
        maxPushItems: AWS_DEFAULT_MAX_PUSH_ITEMS,
      });
      // Six bytes per body byte (a control character as \u00XX), plus the rest of the event.
      expect(worstCaseEventBytes(maxBodyBytes)).toBeLessThan(LAMBDA_MAX_EVENT_BYTES);
    }
    // The local server's default (6 MiB) could never reach a function whole.
    expect(worstCaseEventBytes(loadConfig({}).maxBodyBytes)).toBeGreaterThan(LAMBDA_MAX_EVENT_BYTES);
    expect(JSON.stringify('\u0001').length - 2).toBe(WORST_CASE_ESCAPE_FACTOR);
  });

  it('maxBodyBytes and maxPushItems are set per deployment, within what a function can receive', () => {
    const s = synthStack({ maxBodyBytes: 3_000_000, maxPushItems: 500 }, 'Limits');
    for (const f of API) expect(configOf(s, f)).toMatchObject({ maxBodyBytes: 3_000_000, maxPushItems: 500 });
    expect(() => synthStack({ maxBodyBytes: 6 * 1024 * 1024 }, 'TooBig')).toThrow(
      new RegExp(
        `maxBodyBytes \\(SLUICE_MAX_BODY_BYTES\\) must be a whole number of bytes from 1024 to ${AWS_MAX_BODY_BYTES}`,
      ),
    );
    expect(() => synthStack({ environment: { SLUICE_MAX_BODY_BYTES: String(8 << 20) } }, 'TooBigEnv')).toThrow(
      /maxBodyBytes/,
    );
    expect(() => synthStack({ maxPushItems: 20_000 }, 'TooMany')).toThrow(/maxPushItems .* from 1 to 10000/);
  });

  it('throttles the stage by default (1,000 rps, burst 500), and as asked', () => {
    const settings = (s: Synth) =>
      Object.values(resourcesOf(s.template, 'AWS::ApiGatewayV2::Stage'))[0]!.Properties['DefaultRouteSettings'];
    expect(settings(dflt)).toEqual({ ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 500 });
    expect(DEFAULT_THROTTLE).toEqual({ rateLimit: 1000, burstLimit: 500 });
    const s = synthStack({ throttle: { rateLimit: 50, burstLimit: 100 } }, 'Throttled');
    expect(settings(s)).toEqual({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
    expect(() => synthStack({ throttle: { rateLimit: 0, burstLimit: 10 } }, 'Zero')).toThrow(/rate must be/);
  });
});

describe('cdk: auth=tokens (opaque bearer tokens, as Queen clients send them)', () => {
  let s: Synth;
  beforeAll(() => {
    s = synthStack({ auth: { type: 'tokens' } }, 'Tokens');
  });

  it('every route, /health included, goes through the Lambda REQUEST authorizer', () => {
    const authorizers = Object.entries(resourcesOf(s.template, 'AWS::ApiGatewayV2::Authorizer'));
    expect(authorizers).toHaveLength(1);
    const [authorizerId, authorizer] = authorizers[0]!;
    expect(authorizer.Properties).toMatchObject({
      AuthorizerType: 'REQUEST',
      EnableSimpleResponses: true,
      AuthorizerPayloadFormatVersion: '2.0',
      IdentitySource: ['$request.header.Authorization'],
    });
    // A revoked token is refused within a minute.
    expect(authorizer.Properties['AuthorizerResultTtlInSeconds']).toBe(TOKEN_CACHE_TTL.toSeconds());
    expect(TOKEN_CACHE_TTL.toSeconds()).toBeLessThanOrEqual(60);
    expect(JSON.stringify(authorizer.Properties['AuthorizerUri'])).toContain(
      logicalId(s.stack.service.authorizerFunction!),
    );
    // The HTTP API's routes; the WebSocket API's $connect takes a ticket that one of these gave
    // (test/cdk/notifications.test.ts).
    const routes = Object.values(resourcesOf(s.template, 'AWS::ApiGatewayV2::Route'))
      .filter((r) => refId(r.Properties['ApiId']) === logicalId(s.stack.service.api))
      .map((r) => r.Properties);
    expect(routes.map((r) => r['RouteKey']).sort()).toEqual(ALL_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    expect(routes.map((r) => r['RouteKey'])).toContain('GET /health');
    for (const r of routes)
      expect({ route: r['RouteKey'], type: r['AuthorizationType'], id: r['AuthorizerId'] }).toEqual({
        route: r['RouteKey'],
        type: 'CUSTOM',
        id: { Ref: authorizerId },
      });
  });

  it('the authorizer function may only read the meta table (where token hashes live)', () => {
    const fn = s.stack.service.authorizerFunction!;
    const props = resourcesOf(s.template, 'AWS::Lambda::Function')[logicalId(fn)]!.Properties;
    const roleId = refId(props['Role']);
    const statements = Object.values(resourcesOf(s.template, 'AWS::IAM::Policy'))
      .filter((p) => (p.Properties['Roles'] as unknown[]).some((r) => refId(r) === roleId))
      .flatMap((p) => (p.Properties['PolicyDocument'] as { Statement: { Sid: string }[] }).Statement);
    expect(statements.map((st) => st.Sid).sort()).toEqual(['ReadTokens', 'WriteOwnLogs']);
    expect(statements.find((st) => st.Sid === 'ReadTokens')).toMatchObject({
      Action: 'dynamodb:GetItem',
      Resource: { 'Fn::GetAtt': [logicalId(s.stack.service.tables.meta), 'Arn'] },
    });
    // API Gateway may invoke it.
    expect(
      Object.values(resourcesOf(s.template, 'AWS::Lambda::Permission')).some(
        (p) =>
          p.Properties['Principal'] === 'apigateway.amazonaws.com' &&
          refId(p.Properties['FunctionName']) === logicalId(fn),
      ),
    ).toBe(true);
  });

  it('publishes no IAM policies, outputs the token table for the CLI, and passes cdk-nag', () => {
    s.template.resourceCountIs('AWS::IAM::ManagedPolicy', 0);
    const outputs = s.template.findOutputs('*');
    expect(outputs['AuthMode']?.['Value']).toBe('tokens');
    expect(outputs['TokenTableName']?.['Value']).toEqual({ Ref: logicalId(s.stack.service.tables.meta) });
    Annotations.fromStack(s.stack).hasWarning('*', Match.stringLikeRegexp('every stored token may use every queue'));
    expect(nagViolations(s.stack)).toEqual([]);
    // Other modes have no such function.
    expect(dflt.stack.service.authorizerFunction).toBeUndefined();
    expect(dflt.template.findOutputs('TokenTableName')).toEqual({});
  });
});

describe('cdk: what the functions log (docs/DEPLOYING.md, "Costs per million messages")', () => {
  const functionsOf = (s: Synth) => Object.entries(resourcesOf(s.template, 'AWS::Lambda::Function'));
  const env = (f: { Properties: Record<string, unknown> }) =>
    (f.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables;
  /** Every kind of function (the token authorizer too), with the options opted in. */
  let opted: Synth;
  beforeAll(() => {
    opted = synthStack(
      { auth: { type: 'tokens' }, sourceMaps: true, environment: { POWERTOOLS_LOG_LEVEL: 'DEBUG' } },
      'LoggingOpted',
    );
  });

  it('every function logs JSON with system logs at WARN (no START/END/REPORT lines), application logs at the Powertools level', () => {
    // The API functions, maintenance, the notifier, the token authorizer.
    expect(functionsOf(opted).length).toBe(FUNCTIONS.length + 2);
    for (const [s, level] of [
      [dflt, 'INFO'],
      [opted, 'DEBUG'],
    ] as const)
      for (const [id, f] of functionsOf(s)) {
        const { LogGroup: _group, ...config } = f.Properties['LoggingConfig'] as Record<string, unknown>;
        expect({ id, config }).toEqual({
          id,
          config: {
            LogFormat: 'JSON',
            SystemLogLevel: 'WARN',
            // The authorizer logs at Powertools' default whatever `environment` says: it does not get it.
            ApplicationLogLevel: id.includes('Authorizer') ? 'INFO' : level,
          },
        });
      }
    expect(() => synthStack({ environment: { POWERTOOLS_LOG_LEVEL: 'LOUD' } }, 'LoggingBad')).toThrow(
      /POWERTOOLS_LOG_LEVEL must be one of/,
    );
  });

  it('runs Node with --enable-source-maps only when asked', () => {
    const options = (s: Synth) => functionsOf(s).map(([id, f]) => [id, env(f)['NODE_OPTIONS']]);
    for (const [id, o] of options(dflt)) expect([id, o]).toEqual([id, undefined]);
    for (const [id, o] of options(opted)) expect([id, o]).toEqual([id, '--enable-source-maps']);
  });
});
