/**
 * `SluiceService`'s HTTP API room: the API and its stage (access logs, throttling), the
 * authorizer of the auth mode (with `auth=tokens`, its function), one route per entry of the
 * route table on its group's function, the Producer/Consumer/Admin policies callers attach (IAM
 * auth) derived from the same table, and the grants the functions enforce. The one place lib/
 * reads the route table and the grants parser from the server. Built in the service's own
 * scope, as every room is (lib/service/rooms.ts says why).
 *
 * @example
 * ```ts
 * const grantsJson = grantsJsonOf(this, auth, props.grants);
 * const { api, stage, apiUrl, policies } = createHttpApi(this, { auth, tables, bucket, functions, logRetention, removalPolicy });
 * ```
 */
import { join } from 'node:path';
import { Annotations, ArnFormat, Duration, Stack, type RemovalPolicy } from 'aws-cdk-lib';
import {
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
  type IHttpRouteAuthorizer,
} from 'aws-cdk-lib/aws-apigatewayv2';
import {
  HttpIamAuthorizer,
  HttpJwtAuthorizer,
  HttpLambdaAuthorizer,
  HttpLambdaResponseType,
} from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { GRANT_ACTIONS, parseGrants, type Grant } from '../../server/http/grants.js';
import { CONTRACT } from '../../contract/index.js';
import type { RouteContract } from '../../contract/route.js';
import { BUCKET_ENV, TABLE_ENV } from '../../server/storage/aws/schema.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { FUNCTIONS, type FunctionName } from '../access.js';
import { API_ROLES, API_STAGE, invokeResources, type ApiRole } from '../api-access.js';
import { functionLogging, nodeOptions } from '../function-logging.js';
import { DEFAULT_THROTTLE } from '../limits.js';
import { BUNDLING, REPO_ROOT } from './functions.js';
import { capitalise } from './rooms.js';

export type AuthOptions =
  /** SigV4-signed requests; callers need `execute-api:Invoke` (attach the published policies). */
  | { type: 'iam' }
  /** `Authorization: Bearer <JWT>` checked by API Gateway against the issuer and audience. */
  | { type: 'jwt'; issuer: string; audience: string[] }
  /**
   * `Authorization: Bearer <token>` with opaque tokens stored (as SHA-256 hashes) in the `meta`
   * table, checked by a Lambda authorizer (server/auth/); each token maps to a principal the
   * grants apply to. Tokens are created and revoked without a deploy.
   */
  | { type: 'tokens' };

/**
 * How long API Gateway caches the token authorizer's answer per Authorization header: a revoked
 * token is refused within this. Kept at or under a minute.
 */
export const TOKEN_CACHE_TTL = Duration.seconds(30);

/** Largest grants JSON passed in the environment (Lambda allows 4 KB for all variables). */
export const MAX_GRANTS_ENV_BYTES = 2500;

/** The default grants: every authenticated caller, every action, every queue. */
export const ALLOW_ALL_AUTHENTICATED: Grant[] = [
  {
    principal: '*',
    actions: [...GRANT_ACTIONS],
    queues: ['*'],
    description: 'every authenticated caller (IAM policies decide)',
  },
];

/**
 * The grants as the functions read them (SLUICE_GRANTS): `grants`, or
 * {@link ALLOW_ALL_AUTHENTICATED} with a warning under bearer auth, where no IAM policy narrows
 * them. Throws on a malformed grant, or grants too large for the environment.
 *
 * @example
 * ```ts
 * grantsJsonOf(this, { type: 'iam' }, [{ principal: '*', actions: ['push'], queues: ['orders-*'] }]);
 * // '{"grants":[{"principal":"*","actions":["push"],"queues":["orders-*"]}]}'
 * ```
 */
export function grantsJsonOf(scope: Construct, auth: AuthOptions, given: Grant[] | undefined): string {
  const grants = given ?? ALLOW_ALL_AUTHENTICATED;
  parseGrants({ grants }, `${scope.node.path} grants`);
  const grantsJson = JSON.stringify({ grants });
  if (Buffer.byteLength(grantsJson) > MAX_GRANTS_ENV_BYTES) {
    throw new Error(
      `${scope.node.path}: the grants are ${Buffer.byteLength(grantsJson)} bytes as JSON; at most ` +
        `${MAX_GRANTS_ENV_BYTES} fit in the functions' environment. Use wider patterns.`,
    );
  }
  if (auth.type === 'jwt' && given === undefined) {
    Annotations.of(scope).addWarningV2(
      'sluice:jwtDefaultGrants',
      'JWT auth with the default grants: every token the issuer signs for the audience may use every queue. Pass `grants` to restrict.',
    );
  }
  if (auth.type === 'tokens' && given === undefined) {
    Annotations.of(scope).addWarningV2(
      'sluice:tokensDefaultGrants',
      'Token auth with the default grants: every stored token may use every queue. Pass `grants` (principals are the names tokens map to) to restrict.',
    );
  }
  return grantsJson;
}

/** What {@link createHttpApi} reads: the auth mode, the functions it routes to, what the token authorizer reads. */
export interface HttpApiProps {
  auth: AuthOptions;
  functions: Record<FunctionName, NodejsFunction>;
  /** The token authorizer's environment names every table and the bucket; its role reads `meta` only. */
  tables: Record<TableName, dynamodb.Table>;
  bucket: s3.Bucket;
  logRetention: logs.RetentionDays;
  removalPolicy: RemovalPolicy;
  sourceMaps?: boolean | undefined;
  tracing?: lambda.Tracing | undefined;
  throttle?: { rateLimit: number; burstLimit: number } | undefined;
}

/** What the HTTP API room built. */
export interface SluiceHttpApi {
  api: HttpApi;
  stage: HttpStage;
  /** Base URL of the API (no trailing slash). */
  apiUrl: string;
  /** IAM managed policies allowing `execute-api:Invoke` per role (IAM auth only; empty otherwise). */
  policies: Partial<Record<ApiRole, iam.ManagedPolicy>>;
  /** The bearer-token authorizer's function (`auth: { type: 'tokens' }` only). */
  authorizerFunction: NodejsFunction | undefined;
}

/**
 * The API, its stage and authorizer, a route per entry of the route table, and (IAM auth) the
 * policies callers attach.
 *
 * @example
 * ```ts
 * const { apiUrl, policies } = createHttpApi(this, { auth: { type: 'iam' }, functions, tables, bucket, logRetention, removalPolicy });
 * myRole.addManagedPolicy(policies.Producer!);
 * ```
 */
export function createHttpApi(scope: Construct, props: HttpApiProps): SluiceHttpApi {
  const { auth } = props;
  const stack = Stack.of(scope);
  const authorizerFunction = auth.type === 'tokens' ? tokenAuthorizerFunction(scope, props) : undefined;
  const authorizer: IHttpRouteAuthorizer =
    auth.type === 'jwt'
      ? new HttpJwtAuthorizer('JwtAuthorizer', auth.issuer, { jwtAudience: auth.audience })
      : authorizerFunction
        ? new HttpLambdaAuthorizer('TokenAuthorizer', authorizerFunction, {
            responseTypes: [HttpLambdaResponseType.SIMPLE],
            identitySource: ['$request.header.Authorization'],
            resultsCacheTtl: TOKEN_CACHE_TTL,
          })
        : new HttpIamAuthorizer();
  const api = new HttpApi(scope, 'Api', {
    // API names need not be unique; this one says which deployment it belongs to.
    apiName: `${stack.stackName}-${scope.node.id}`,
    description: `Sluice (${scope.node.path})`,
    createDefaultStage: false,
    defaultAuthorizer: authorizer,
  });
  const accessLogs = new logs.LogGroup(scope, 'ApiAccessLogs', {
    retention: props.logRetention,
    removalPolicy: props.removalPolicy,
  });
  const stage = new HttpStage(scope, 'DefaultStage', {
    httpApi: api,
    stageName: API_STAGE,
    autoDeploy: true,
    accessLogSettings: {
      destination: new LogGroupLogDestination(accessLogs),
      format: AccessLogFormat.custom(
        JSON.stringify({
          requestId: '$context.requestId',
          time: '$context.requestTime',
          ip: '$context.identity.sourceIp',
          method: '$context.httpMethod',
          path: '$context.path',
          routeKey: '$context.routeKey',
          status: '$context.status',
          bytes: '$context.responseLength',
          latencyMs: '$context.responseLatency',
          principal:
            auth.type === 'jwt'
              ? '$context.authorizer.claims.sub'
              : auth.type === 'tokens'
                ? '$context.authorizer.principal'
                : '$context.identity.userArn',
          authError: '$context.authorizer.error',
          integrationError: '$context.integrationErrorMessage',
        }),
      ),
    },
    // A runaway client must not take the account's API Gateway quota (shared by every API in the
    // region) or its Lambda concurrency: docs/DEPLOYING.md#quotas.
    throttle: props.throttle ?? DEFAULT_THROTTLE,
  });
  // The client appends paths to the base URL, which must not end in '/'.
  const apiUrl = `https://${api.apiId}.execute-api.${stack.region}.${stack.urlSuffix}`;

  const integrations = Object.fromEntries(
    FUNCTIONS.filter((f) => f !== 'maintenance').map((f) => [
      f,
      // One API-scoped invoke permission per function instead of one per route.
      new HttpLambdaIntegration(`${capitalise(f)}Integration`, props.functions[f], { scopePermissionToRoute: false }),
    ]),
  ) as Record<Exclude<FunctionName, 'maintenance'>, HttpLambdaIntegration>;
  for (const route of CONTRACT) {
    api.addRoutes({
      path: route.path,
      methods: [HttpMethod[route.method]],
      integration: integrations[route.group],
      authorizer,
    });
  }

  // ---------------------------------------------------------------- policies
  const policies: Partial<Record<ApiRole, iam.ManagedPolicy>> = {};
  if (auth.type === 'iam') {
    for (const role of Object.keys(API_ROLES) as ApiRole[]) {
      policies[role] = new iam.ManagedPolicy(scope, `${role}Policy`, {
        description: `Sluice ${role.toLowerCase()}: execute-api:Invoke on the ${API_ROLES[role].join('/')} routes of ${scope.node.path}`,
        statements: invokeStatements(api, role, CONTRACT),
      });
    }
  }
  return { api, stage, apiUrl, policies, authorizerFunction };
}

/**
 * The token authorizer: its own log group and a role holding nothing but GetItem on the
 * `meta` table, where the token items live (server/auth/token-store.ts).
 */
function tokenAuthorizerFunction(scope: Construct, props: HttpApiProps): NodejsFunction {
  const { tables } = props;
  const logGroup = new logs.LogGroup(scope, 'AuthorizerLogs', {
    retention: props.logRetention,
    removalPolicy: props.removalPolicy,
  });
  const role = new iam.Role(scope, 'AuthorizerRole', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: `Sluice bearer-token authorizer (${scope.node.path})`,
  });
  role.addToPolicy(
    new iam.PolicyStatement({
      sid: 'WriteOwnLogs',
      actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      resources: [logGroup.logGroupArn],
    }),
  );
  role.addToPolicy(
    new iam.PolicyStatement({
      sid: 'ReadTokens',
      actions: ['dynamodb:GetItem'],
      resources: [tables.meta.tableArn],
    }),
  );
  return new NodejsFunction(scope, 'AuthorizerFunction', {
    entry: join(REPO_ROOT, 'server', 'entry', 'authorizer.ts'),
    handler: 'handler',
    projectRoot: REPO_ROOT,
    depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
    runtime: lambda.Runtime.NODEJS_22_X,
    architecture: lambda.Architecture.ARM_64,
    // One GetItem per uncached token: little memory, and a short timeout.
    memorySize: 256,
    timeout: Duration.seconds(10),
    description: `Sluice bearer-token authorizer (${scope.node.path})`,
    role,
    logGroup,
    ...functionLogging({}),
    // The storage adapter wants every name; the role allows only the meta table.
    environment: {
      ...Object.fromEntries(TABLES.map((t) => [TABLE_ENV[t], tables[t].tableName])),
      [BUCKET_ENV]: props.bucket.bucketName,
      ...nodeOptions(props.sourceMaps),
    },
    bundling: BUNDLING,
    tracing: props.tracing,
  });
}

/**
 * `execute-api:Invoke` on the resources {@link invokeResources} derives for `role` from the
 * route table, and a Deny for the routes an allowed pattern would otherwise also cover.
 */
function invokeStatements(api: HttpApi, role: ApiRole, routes: readonly RouteContract[]): iam.PolicyStatement[] {
  const stack = Stack.of(api);
  const arns = (names: string[]): string[] =>
    names.map((resourceName) =>
      stack.formatArn({
        service: 'execute-api',
        resource: api.apiId,
        resourceName,
        arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
      }),
    );
  const { allow, deny } = invokeResources(role, routes);
  return [
    new iam.PolicyStatement({ sid: `Invoke${role}Routes`, actions: ['execute-api:Invoke'], resources: arns(allow) }),
    ...(deny.length > 0
      ? [
          new iam.PolicyStatement({
            sid: `NotOther${role}Routes`,
            effect: iam.Effect.DENY,
            actions: ['execute-api:Invoke'],
            resources: arns(deny),
          }),
        ]
      : []),
  ];
}
