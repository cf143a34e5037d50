import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { App, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { awsStorageConfigFromEnv, TTL_ATTRIBUTE } from '../../server/storage/aws/index.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import {
  BLOB_PREFIXES,
  BUCKET_ACTIONS,
  FUNCTION_ACCESS,
  FUNCTIONS,
  LIST_PREFIXES,
  TABLE_ACTIONS,
  TAKE_ACTION,
  TAKE_KEY_PATTERN,
  WAITING_FUNCTIONS,
  type FunctionName,
} from '../../lib/access.js';
import { API_ROLES, invokePath, invokeResources, routesForRole, type ApiRole } from '../../lib/api-access.js';
import {
  ACCOUNT_CONCURRENCY_ACTION,
  API_GATEWAY_TIMEOUT,
  checkLongPollBudget,
  LONG_POLL_HEADROOM,
  MAX_GRANTS_ENV_BYTES,
  SluiceService,
  TABLE_ENV,
} from '../../lib/sluice-service.js';
import type { SluiceStack } from '../../lib/sluice-stack.js';
import { nagViolations, refId, resourcesOf, synthStack } from '../support/cdk.js';

let stack: SluiceStack;
let template: Template;
beforeAll(() => {
  ({ stack, template } = synthStack());
});

/** `Template.hasResourceProperties` as an expectation. */
const expectResource = (t: Template, type: string, props: Record<string, unknown>): void =>
  expect(() => t.hasResourceProperties(type, props)).not.toThrow();
const logicalId = (c: IConstruct): string => Stack.of(c).getLogicalId(c.node.defaultChild as never);
const tableIds = (): Record<TableName, string> =>
  Object.fromEntries(TABLES.map((t) => [t, logicalId(stack.service.tables[t])])) as Record<TableName, string>;

/** The HTTP API's routes (the notifications' WebSocket API has its own: test/cdk/notifications.test.ts). */
const httpRoutes = (t: Template, st: SluiceStack) =>
  Object.values(resourcesOf(t, 'AWS::ApiGatewayV2::Route')).filter(
    (r) => refId(r.Properties['ApiId']) === logicalId(st.service.api),
  );

describe('cdk: API', () => {
  it('serves exactly the route table, each route with the IAM authorizer', () => {
    const routes = httpRoutes(template, stack);
    expect(routes.map((r) => r.Properties['RouteKey']).sort()).toEqual(
      ALL_ROUTES.map((r) => `${r.method} ${r.path}`).sort(),
    );
    expect(
      routes.filter((r) => r.Properties['AuthorizationType'] !== 'AWS_IAM').map((r) => r.Properties['RouteKey']),
    ).toEqual([]);
  });

  it("sends each route to its group's function (payload 2.0), one invoke permission per function", () => {
    const integrations = resourcesOf(template, 'AWS::ApiGatewayV2::Integration');
    for (const r of httpRoutes(template, stack)) {
      const def = ALL_ROUTES.find((d) => `${d.method} ${d.path}` === r.Properties['RouteKey']);
      const integrationId = refId((r.Properties['Target'] as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1][1]);
      const integration = integrations[integrationId as string];
      expect(integration?.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
      expect(refId(integration?.Properties['IntegrationUri'])).toBe(logicalId(stack.service.functions[def!.group]));
    }
    const notifier = logicalId(stack.service.notifications!.function);
    const apiPermissions = Object.values(resourcesOf(template, 'AWS::Lambda::Permission')).filter(
      (p) =>
        p.Properties['Principal'] === 'apigateway.amazonaws.com' && refId(p.Properties['FunctionName']) !== notifier,
    );
    expect(apiPermissions.length).toBe(new Set(ALL_ROUTES.map((r) => r.group)).size);
  });

  it('logs access on the $default stage', () => {
    expectResource(template, 'AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('\\$context.requestId') },
    });
  });
});

describe('cdk: storage', () => {
  it('has the six tables: pk/sk strings, on demand, TTL on `ttl`, PITR, KMS encryption', () => {
    const tables = resourcesOf(template, 'AWS::DynamoDB::Table');
    expect(Object.keys(tables).sort()).toEqual(Object.values(tableIds()).sort());
    for (const t of Object.values(tables)) {
      expect(t.Properties).toMatchObject({
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        // SSEEnabled: the AWS managed KMS key (absent would be an AWS owned key).
        SSESpecification: { SSEEnabled: true },
      });
    }
    // TTL on claims and leases only collects what has expired: expiry itself is a comparison with
    // `now` in server/core, so an item TTL has not yet deleted is still treated as gone.
    for (const t of ['claims', 'leases'] as const)
      expect(tables[tableIds()[t]]?.Properties['TimeToLiveSpecification']).toEqual({
        AttributeName: 'ttl',
        Enabled: true,
      });
  });

  it('keeps data by default (Retain, tables deletion-protected) and deletes it when asked', () => {
    for (const t of Object.values(resourcesOf(template, 'AWS::DynamoDB::Table'))) {
      expect(t['DeletionPolicy']).toBe('Retain');
      // A kept table also refuses a stray delete-table (lib/recovery.ts).
      expect(t.Properties['DeletionProtectionEnabled']).toBe(true);
    }
    const destroyStack = synthStack({ removalPolicy: RemovalPolicy.DESTROY }, 'Destroy');
    const destroy = destroyStack.template;
    for (const t of Object.values(resourcesOf(destroy, 'AWS::DynamoDB::Table'))) {
      expect(t['DeletionPolicy']).toBe('Delete');
      // Protected, the stack's own deletion would fail on the table.
      expect(t.Properties['DeletionProtectionEnabled'] ?? false).toBe(false);
    }
    destroy.resourceCountIs('Custom::S3AutoDeleteObjects', 1);
    // The stack `npm run deploy:local` deploys (its auto-delete provider included) passes cdk-nag too.
    expect(nagViolations(destroyStack.stack)).toEqual([]);
  });

  it('expires old segment blobs only when asked (segmentExpiration), and only under segments/', () => {
    const rules = (t: typeof template) =>
      Object.values(resourcesOf(t, 'AWS::S3::Bucket'))[0]?.Properties['LifecycleConfiguration'] as {
        Rules: Record<string, unknown>[];
      };
    expect(rules(template).Rules.filter((r) => 'ExpirationInDays' in r)).toEqual([]);
    const expiring = synthStack({ segmentExpiration: Duration.days(30) }, 'Expiring').template;
    expect(rules(expiring).Rules).toContainEqual(
      expect.objectContaining({ ExpirationInDays: 30, Prefix: 'segments/', Status: 'Enabled' }),
    );
  });

  it('leaves the bucket unversioned unless asked (bucketVersioning; test/cdk/operators.test.ts)', () => {
    const bucket = Object.values(resourcesOf(template, 'AWS::S3::Bucket'))[0]!.Properties;
    expect(bucket['VersioningConfiguration']).toBeUndefined();
    expect(JSON.stringify(bucket['LifecycleConfiguration'])).not.toContain('Noncurrent');
  });

  it('locks the bucket down: encryption, no public access, TLS only, lifecycle', () => {
    expectResource(template, 'AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' }),
        ]),
      },
    });
    expectResource(template, 'AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } },
          }),
        ]),
      },
    });
  });
});

describe('cdk: functions', () => {
  const fnOf = (name: FunctionName) =>
    resourcesOf(template, 'AWS::Lambda::Function')[logicalId(stack.service.functions[name])]!;

  it('run nodejs22.x on arm64 as ESM bundles; API functions stop before API Gateway does', () => {
    for (const name of FUNCTIONS) {
      const p = fnOf(name).Properties;
      expect({ name, ...p }).toMatchObject({
        name,
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
      });
    }
    const apiTimeouts = FUNCTIONS.filter((f) => f !== 'maintenance').map((f) => [f, fnOf(f).Properties['Timeout']]);
    expect(apiTimeouts).toEqual(FUNCTIONS.filter((f) => f !== 'maintenance').map((f) => [f, 29]));
  });

  it('trace nothing unless asked (tracing; test/cdk/operators.test.ts): no TracingConfig, no X-Ray grant', () => {
    for (const fn of Object.values(resourcesOf(template, 'AWS::Lambda::Function')))
      expect(fn.Properties['TracingConfig']).toBeUndefined();
    expect(JSON.stringify(resourcesOf(template, 'AWS::IAM::Policy'))).not.toContain('xray:');
  });

  it("outlast the long-poll caps they run with (SLUICE_MAX_POP_WAIT_MS, SLUICE_CLAIM_MAX_WAIT_MS) and stop before API Gateway's 30 s", () => {
    for (const name of FUNCTIONS.filter((f) => f !== 'maintenance')) {
      const p = fnOf(name).Properties;
      const env = Object.fromEntries(
        Object.entries((p['Environment'] as { Variables: Record<string, unknown> }).Variables).filter(
          (e): e is [string, string] => typeof e[1] === 'string',
        ),
      );
      // The caps the deployed function will read from its environment (defaults: 25 s each).
      const { maxPopWaitMs, claimMaxWaitMs } = loadConfig(env);
      const timeoutMs = Number(p['Timeout']) * 1000;
      expect({ name, maxPopWaitMs, claimMaxWaitMs }).toEqual({ name, maxPopWaitMs: 25_000, claimMaxWaitMs: 25_000 });
      expect(
        Math.max(maxPopWaitMs, claimMaxWaitMs) + LONG_POLL_HEADROOM.toMilliseconds(),
        `${name}`,
      ).toBeLessThanOrEqual(timeoutMs);
      expect(timeoutMs, `${name}`).toBeLessThan(API_GATEWAY_TIMEOUT.toMilliseconds());
    }
  });

  it('refuse to synthesize long-poll caps that would outlast the function or API Gateway', () => {
    expect(() => synthStack({ environment: { SLUICE_MAX_POP_WAIT_MS: '29000' } }, 'LongPop')).toThrow(
      /SLUICE_MAX_POP_WAIT_MS is 29000 ms.*at most 27000 ms/,
    );
    expect(() => synthStack({ environment: { SLUICE_CLAIM_MAX_WAIT_MS: '28000' } }, 'LongClaim')).toThrow(
      /SLUICE_CLAIM_MAX_WAIT_MS is 28000 ms/,
    );
    expect(() => synthStack({ environment: { SLUICE_MAX_POP_WAIT_MS: 'soon' } }, 'BadPop')).toThrow(
      /SLUICE_MAX_POP_WAIT_MS must be a number/,
    );
    expect(() => checkLongPollBudget({}, Duration.seconds(30))).toThrow(/below API Gateway's 30000 ms/);
    // Shorter caps are fine, and reach the functions.
    const { template: t } = synthStack({ environment: { SLUICE_MAX_POP_WAIT_MS: '10000' } }, 'ShortPop');
    for (const f of Object.values(resourcesOf(t, 'AWS::Lambda::Function')))
      expect(
        (f.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables['SLUICE_MAX_POP_WAIT_MS'],
      ).toBe('10000');
  });

  it('get the environment the runtime reads: every table, the bucket, the grants', () => {
    for (const name of FUNCTIONS) {
      const env = (fnOf(name).Properties['Environment'] as { Variables: Record<string, unknown> }).Variables;
      for (const t of TABLES) expect(refId(env[TABLE_ENV[t]]), `${name} ${t}`).toBe(tableIds()[t]);
      expect(refId(env['SLUICE_BUCKET'])).toBe(logicalId(stack.service.bucket));
      expect(JSON.parse(String(env['SLUICE_GRANTS']))).toHaveProperty('grants');
      // The same names the adapter reads (a rename on either side fails here).
      const fake = Object.fromEntries(
        Object.keys(env)
          .filter((k) => k.startsWith('SLUICE_TABLE_') || k === 'SLUICE_BUCKET')
          .map((k) => [k, 'x']),
      );
      expect(awsStorageConfigFromEnv(fake)).toBeDefined();
    }
  });

  it('each role holds only its own log group and the tables and bucket actions FUNCTION_ACCESS declares', () => {
    const policies = resourcesOf(template, 'AWS::IAM::Policy');
    const bucketId = logicalId(stack.service.bucket);
    for (const name of FUNCTIONS) {
      const roleId = refId(fnOf(name).Properties['Role']);
      const role = resourcesOf(template, 'AWS::IAM::Role')[roleId!]!;
      expect(role.Properties['ManagedPolicyArns'], `${name}: no managed policies`).toBeUndefined();
      const attached = Object.values(policies).filter((p) =>
        (p.Properties['Roles'] as unknown[]).some((r) => refId(r) === roleId),
      );
      expect(attached).toHaveLength(1);
      const statements = (
        attached[0]!.Properties['PolicyDocument'] as {
          Statement: {
            Sid: string;
            Action: string | string[];
            Resource: unknown;
            Effect: string;
            Condition?: unknown;
          }[];
        }
      ).Statement;
      const access = FUNCTION_ACCESS[name];
      const got: Record<string, { actions: string[]; resources: string[]; condition?: unknown }> = {};
      for (const s of statements) {
        expect(s.Effect).toBe('Allow');
        const resources = (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map((r) => JSON.stringify(r));
        got[s.Sid] = {
          actions: [s.Action].flat().sort(),
          resources: resources.sort(),
          ...(s.Condition ? { condition: s.Condition } : {}),
        };
      }
      // No wildcard but the one resource-less action (IAM takes only "*" for it), checked exactly below.
      for (const [sid, g] of Object.entries(got).filter(([sid]) => sid !== 'ReadAccountConcurrency'))
        expect(g.resources.join(), `${name} ${sid}`).not.toMatch(/"\*"|"arn:aws:[^"]*\*/);
      const tablesWith = (mode: 'read' | 'readwrite') =>
        TABLES.filter((t) => access.tables[t] === mode)
          .map((t) => JSON.stringify({ 'Fn::GetAtt': [tableIds()[t], 'Arn'] }))
          .sort();
      const expected: typeof got = {
        WriteOwnLogs: {
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [
            JSON.stringify({
              'Fn::GetAtt': [logicalId(stack.service.functions[name].logGroup), 'Arn'],
            }),
          ],
        },
      };
      if (tablesWith('read').length)
        expected['ReadTables'] = { actions: [...TABLE_ACTIONS.read].sort(), resources: tablesWith('read') };
      if (tablesWith('readwrite').length)
        expected['ReadWriteTables'] = {
          actions: [...TABLE_ACTIONS.readwrite].sort(),
          resources: tablesWith('readwrite'),
        };
      // The offset take: UpdateItem on the log table's sequencer keys, nothing else.
      if (access.takesOffsets)
        expected['TakeOffsets'] = {
          actions: [TAKE_ACTION],
          resources: [JSON.stringify({ 'Fn::GetAtt': [tableIds().log, 'Arn'] })],
          condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [TAKE_KEY_PATTERN] } },
        };
      const objectOps = access.bucket.filter((op) => op !== 'list');
      const objects = BLOB_PREFIXES.map((p) =>
        JSON.stringify({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, `/${p}*`]] }),
      ).sort();
      if (objectOps.length)
        expected['BlobObjects'] = { actions: objectOps.map((op) => BUCKET_ACTIONS[op]).sort(), resources: objects };
      if (access.bucket.includes('list'))
        expected['ListBlobs'] = {
          actions: ['s3:ListBucket'],
          resources: [JSON.stringify({ 'Fn::GetAtt': [bucketId, 'Arn'] })],
          condition: { StringLike: { 's3:prefix': LIST_PREFIXES.map((p) => `${p}*`) } },
        };
      // The default wait cap (SLUICE_MAX_WAITERS=auto) reads the account's Lambda concurrency.
      if (WAITING_FUNCTIONS.includes(name))
        expected['ReadAccountConcurrency'] = { actions: [ACCOUNT_CONCURRENCY_ACTION], resources: ['"*"'] };
      expect({ name, statements: got }).toEqual({ name, statements: expected });
    }
  });

  it('runs maintenance on a schedule', () => {
    expectResource(template, 'AWS::Events::Rule', {
      ScheduleExpression: 'rate(15 minutes)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalId(stack.service.functions.maintenance), 'Arn'] } })],
    });
  });
});

describe('cdk: policies callers attach', () => {
  it('Producer, Consumer and Admin allow execute-api:Invoke on their route patterns of this API', () => {
    // Which requests each pattern lets through is proven route by route in test/cdk/api-access.test.ts.
    const apiId = logicalId(stack.service.api);
    const managed = resourcesOf(template, 'AWS::IAM::ManagedPolicy');
    for (const role of Object.keys(API_ROLES) as ApiRole[]) {
      const policy = managed[logicalId(stack.service.policies[role]!)]!;
      const [statement, ...more] = (
        policy.Properties['PolicyDocument'] as { Statement: { Action: string; Resource: unknown }[] }
      ).Statement;
      expect(more).toHaveLength(0);
      expect(statement!.Action).toBe('execute-api:Invoke');
      const got = [statement!.Resource].flat().map((r) => {
        const parts = (r as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
        expect(parts).toContainEqual({ Ref: apiId });
        return String(parts[parts.length - 1]).replace(/^\//, '');
      });
      expect({ role, resources: got.sort() }).toEqual({
        role,
        resources: invokeResources(role, ALL_ROUTES).allow.sort(),
      });
    }
    expect(routesForRole('Producer', ALL_ROUTES).map((r) => r.path)).toContain(invokePath('/api/v1/push'));
    expect(routesForRole('Producer', ALL_ROUTES).map((r) => r.path)).not.toContain('/api/v1/configure');
    // A transaction pushes (Producer) and acks (Consumer): both may call it; the handler checks each queue.
    for (const role of ['Producer', 'Consumer', 'Admin'] as const)
      expect(routesForRole(role, ALL_ROUTES)).toContainEqual({ method: 'POST', path: '/api/v1/transaction' });
    // Deleting a queue is management.
    const del = { method: 'DELETE', path: invokePath('/api/v1/resources/queues/{queue}') };
    expect(routesForRole('Admin', ALL_ROUTES)).toContainEqual(del);
    for (const role of ['Producer', 'Consumer'] as const)
      expect(routesForRole(role, ALL_ROUTES)).not.toContainEqual(del);
  });

  it('outputs the API URL and the policy ARNs', () => {
    const outputs = template.findOutputs('*');
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining([
        'ApiUrl',
        'AuthMode',
        'ProducerPolicyArn',
        'ConsumerPolicyArn',
        'AdminPolicyArn',
        'DashboardName',
        'Grants',
      ]),
    );
    expect(JSON.stringify(outputs['ApiUrl']?.['Value'])).toContain('execute-api');
  });
});

describe('cdk: operations', () => {
  it('alarms on 5xx, throttles, errors, dead letters and the oldest unconsumed message', () => {
    const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).map((a) =>
      JSON.stringify(a.Properties),
    );
    const withMetric = (name: string) => alarms.filter((a) => a.includes(`"MetricName":"${name}"`));
    expect(withMetric('5xx')).toHaveLength(1);
    expect(withMetric('Throttles')).toHaveLength(1);
    expect(withMetric('Errors')).toHaveLength(1);
    expect(withMetric('ReadThrottleEvents')).toHaveLength(1);
    expect(withMetric('WriteThrottleEvents')).toHaveLength(1);
    expect(withMetric('DeadLettered')).toHaveLength(1);
    expect(withMetric('OldestUnconsumedAgeSeconds')).toHaveLength(1);
    // Custom metrics are read in the namespace and with the service dimension the functions write.
    expect(withMetric('DeadLettered')[0]).toContain(`"Namespace":"${stack.service.metricsNamespace}"`);
    expect(withMetric('DeadLettered')[0]).toContain(`"Value":"${stack.service.metricsService}"`);
    const env = (
      Object.values(resourcesOf(template, 'AWS::Lambda::Function'))[0]!.Properties['Environment'] as {
        Variables: Record<string, string>;
      }
    ).Variables;
    expect(env['POWERTOOLS_METRICS_NAMESPACE']).toBe(stack.service.metricsNamespace);
    expect(env['POWERTOOLS_SERVICE_NAME']).toBe(stack.service.metricsService);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it('names nothing by hand (CloudFormation generates every physical name)', () => {
    const named: Record<string, string> = {
      'AWS::DynamoDB::Table': 'TableName',
      'AWS::S3::Bucket': 'BucketName',
      'AWS::Lambda::Function': 'FunctionName',
      'AWS::IAM::Role': 'RoleName',
      'AWS::IAM::ManagedPolicy': 'ManagedPolicyName',
      'AWS::Logs::LogGroup': 'LogGroupName',
      'AWS::CloudWatch::Alarm': 'AlarmName',
      'AWS::CloudWatch::Dashboard': 'DashboardName',
      'AWS::Events::Rule': 'Name',
      'AWS::SQS::Queue': 'QueueName',
    };
    for (const [type, prop] of Object.entries(named)) {
      for (const [id, r] of Object.entries(resourcesOf(template, type)))
        expect(r.Properties[prop], `${id}.${prop}`).toBeUndefined();
    }
  });
});

describe('cdk: cdk-nag AwsSolutions', () => {
  it('has no unacknowledged finding', () => {
    expect(nagViolations(stack)).toEqual([]);
  });

  it('records a reason with every acknowledgment', () => {
    const acks: [string, string][] = [];
    const visit = (c: IConstruct): void => {
      for (const m of c.node.metadata)
        if (m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
          acks.push(...Object.entries(m.data as Record<string, string>));
      c.node.children.forEach(visit);
    };
    visit(stack);
    expect(acks.length).toBeGreaterThan(0);
    expect(acks.filter(([, reason]) => reason.length < 40)).toEqual([]);
  });

  it('still flags wildcards it was not told about', () => {
    const { stack: other } = synthStack({}, 'Other');
    other.service.functions.log.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:GetObject'], resources: ['arn:aws:s3:::someone-elses-bucket/*'] }),
    );
    expect(nagViolations(other).map((v) => v.rule)).toContain(
      'AwsSolutions-IAM5[Resource::arn:aws:s3:::someone-elses-bucket/*]',
    );
  });
});

describe('cdk: options', () => {
  it('JWT auth: every route gets the JWT authorizer; no IAM policies; a warning with the default grants', () => {
    const { stack: jwt, template: t } = synthStack(
      { auth: { type: 'jwt', issuer: 'https://issuer.example.com/', audience: ['sluice'] } },
      'Jwt',
    );
    expectResource(t, 'AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      JwtConfiguration: { Issuer: 'https://issuer.example.com/', Audience: ['sluice'] },
    });
    for (const r of httpRoutes(t, jwt))
      // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- vitest types its asymmetric matchers as any
      expect(r.Properties).toMatchObject({ AuthorizationType: 'JWT', AuthorizerId: expect.anything() });
    t.resourceCountIs('AWS::IAM::ManagedPolicy', 0);
    Annotations.fromStack(jwt).hasWarning('*', Match.stringLikeRegexp('JWT auth with the default grants'));
    expect(nagViolations(jwt)).toEqual([]);
  });

  it('grants are validated at synth and passed to the functions', () => {
    const grants = [
      { principal: 'arn:aws:iam::111122223333:role/writer', actions: ['push' as const], queues: ['orders-*'] },
    ];
    const { template: t } = synthStack({ grants }, 'Granted');
    const env = (
      Object.values(resourcesOf(t, 'AWS::Lambda::Function'))[0]!.Properties['Environment'] as {
        Variables: Record<string, string>;
      }
    ).Variables;
    expect(JSON.parse(env['SLUICE_GRANTS']!)).toEqual({ grants });
    expect(() =>
      synthStack({ grants: [{ principal: 'x', actions: ['read' as never], queues: ['q'] }] }, 'Bad'),
    ).toThrow(/grants/);
    const many = Array.from({ length: 60 }, (_, i) => ({
      principal: `arn:aws:iam::111122223333:role/role-number-${i}`,
      actions: ['push' as const],
      queues: [`queue-${i}-*`],
    }));
    expect(() => synthStack({ grants: many }, 'TooMany')).toThrow(new RegExp(`at most ${MAX_GRANTS_ENV_BYTES} fit`));
  });

  it('memory and log retention reach the functions and log groups; bad memory sizes are refused', () => {
    const { stack: st, template: t } = synthStack(
      { memorySize: 2048, maintenanceMemorySize: 256, logRetention: RetentionDays.ONE_WEEK },
      'Sized',
    );
    const fns = resourcesOf(t, 'AWS::Lambda::Function');
    const memoryOf = (name: FunctionName) =>
      fns[Stack.of(st).getLogicalId(st.service.functions[name].node.defaultChild as never)]!.Properties['MemorySize'];
    expect(FUNCTIONS.map((f) => [f, memoryOf(f)])).toEqual(FUNCTIONS.map((f) => [f, f === 'maintenance' ? 256 : 2048]));
    const groups = Object.values(resourcesOf(t, 'AWS::Logs::LogGroup'));
    // One per function, the notifications function's, and the two APIs' access logs.
    expect(groups.length).toBe(FUNCTIONS.length + 3);
    for (const g of groups) expect(g.Properties['RetentionInDays']).toBe(7);
    // Defaults: 1024 MB for the API functions, a month of logs.
    for (const g of Object.values(resourcesOf(template, 'AWS::Logs::LogGroup')))
      expect(g.Properties['RetentionInDays']).toBe(30);
    expect(() => synthStack({ memorySize: 64 }, 'Tiny')).toThrow(
      /memorySize must be a whole number of MB from 128 to 10240 \(got 64\)/,
    );
    expect(() => synthStack({ memorySize: Number.NaN }, 'NaNMemory')).toThrow(/memorySize must be/);
  });

  it('SluiceService embeds in any stack', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const host = new Stack(app, 'Host');
    const a = new SluiceService(host, 'QueueA');
    const b = new SluiceService(host, 'QueueB');
    expect(a.metricsService).not.toBe(b.metricsService);
    expect(() => app.synth()).not.toThrow();
  });
});
