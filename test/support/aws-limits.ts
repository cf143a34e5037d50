/**
 * AWS's deploy-time limits as checks on a synthesized template, so a stack that CloudFormation
 * or IAM would refuse (or that would deploy and then misbehave) fails a test instead of a
 * deploy. Each check answers what breaks a limit, one line per finding (empty: all within),
 * and each limit names where AWS documents it.
 *
 * Sizes are measured on the template as deployed, every intrinsic resolved
 * ({@link resolveTemplate}): IAM counts resolved characters, and ARNs grow with the partition
 * and region names.
 *
 * @example
 * ```ts
 * const resolved = resolveTemplate(raw, { account: '111122223333', region: 'us-gov-west-1', partition: 'aws-us-gov' });
 * managedPolicyFindings(resolved); // [] or ['SluiceAdminPolicy…: 6720 characters, over IAM's 6144']
 * ```
 */
import { ACCOUNT_ROLE_ASSUMED_METADATA } from '../../lib/api-gateway-account.js';
import type { PolicyDocument } from './iam/evaluate.js';
import type { ResolvedTemplate, Template } from './iam/template.js';

type Json = Record<string, unknown>;

/** IAM User Guide, "IAM and AWS STS quotas": a managed policy, whitespace not counted. */
export const MANAGED_POLICY_MAX_CHARS = 6_144;
/** Same page: all inline policies of one role together, whitespace not counted. */
export const ROLE_INLINE_POLICIES_MAX_CHARS = 10_240;
/** Same page: a role's trust policy by default (a quota raisable to 4,096). */
export const ROLE_TRUST_POLICY_MAX_CHARS = 2_048;
/** CloudFormation User Guide, "CloudFormation quotas": resources per stack. */
export const STACK_MAX_RESOURCES = 500;
/** Same page: a template uploaded through S3, as `cdk deploy` does. */
export const TEMPLATE_MAX_BYTES = 1_048_576;
/**
 * Lambda Developer Guide, "Lambda quotas": a function's environment variables together. Lambda
 * measures them as JSON (its refusal quotes the "String measured", `{"KEY":"value",...}`).
 */
export const LAMBDA_ENVIRONMENT_MAX_BYTES = 4_096;
/** Lambda quotas: the longest a function may run. */
export const LAMBDA_MAX_TIMEOUT_SECONDS = 900;
/** API Gateway Developer Guide, HTTP API quotas: integration timeout, 30 s at most. */
export const HTTP_API_INTEGRATION_TIMEOUT_SECONDS = 30;
/** API Gateway Developer Guide, WebSocket API quotas: integration timeout, 29 s at most. */
export const WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS = 29;

/** A policy's size as IAM counts it: its JSON without whitespace. */
export const policyChars = (doc: unknown): number => JSON.stringify(doc).replace(/\s/g, '').length;

/** Logical ids of one resource type (raw or resolved template). */
const idsOf = (t: Template, type: string): string[] =>
  Object.keys(t.Resources).filter((id) => t.Resources[id]!.Type === type);
const props = (t: Template, id: string): Json => t.Resources[id]?.Properties ?? {};

/** Each customer managed policy's resolved size, by logical id. */
export function managedPolicySizes(t: ResolvedTemplate): Record<string, number> {
  return Object.fromEntries(
    idsOf(t, 'AWS::IAM::ManagedPolicy').map((id) => [id, policyChars(props(t, id)['PolicyDocument'])]),
  );
}

export function managedPolicyFindings(t: ResolvedTemplate): string[] {
  return Object.entries(managedPolicySizes(t))
    .filter(([, n]) => n > MANAGED_POLICY_MAX_CHARS)
    .map(([id, n]) => `${id}: ${n} characters, over IAM's ${MANAGED_POLICY_MAX_CHARS} for a managed policy`);
}

/** Each role's inline policies (its `Policies` and the `AWS::IAM::Policy` resources naming it), summed. */
export function inlinePolicySizes(t: ResolvedTemplate): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const role of idsOf(t, 'AWS::IAM::Role')) {
    const own = (props(t, role)['Policies'] as { PolicyDocument: PolicyDocument }[] | undefined) ?? [];
    sizes[role] = own.reduce((n, p) => n + policyChars(p.PolicyDocument), 0);
  }
  for (const id of idsOf(t, 'AWS::IAM::Policy')) {
    const p = props(t, id);
    for (const name of (p['Roles'] as string[] | undefined) ?? []) {
      const role = Object.keys(sizes).find((r) => t.refs[r] === name);
      if (role) sizes[role]! += policyChars(p['PolicyDocument']);
    }
  }
  return sizes;
}

export function rolePolicyFindings(t: ResolvedTemplate): string[] {
  const out: string[] = [];
  for (const [role, n] of Object.entries(inlinePolicySizes(t)))
    if (n > ROLE_INLINE_POLICIES_MAX_CHARS)
      out.push(`${role}: inline policies of ${n} characters, over IAM's ${ROLE_INLINE_POLICIES_MAX_CHARS} per role`);
  for (const role of idsOf(t, 'AWS::IAM::Role')) {
    const n = policyChars(props(t, role)['AssumeRolePolicyDocument']);
    if (n > ROLE_TRUST_POLICY_MAX_CHARS)
      out.push(`${role}: trust policy of ${n} characters, over IAM's ${ROLE_TRUST_POLICY_MAX_CHARS}`);
  }
  return out;
}

/** The template as `cdk synth` writes it (indented by one space), and its resource count. */
export function templateFindings(raw: Template): string[] {
  const out: string[] = [];
  const count = Object.keys(raw.Resources).length;
  if (count > STACK_MAX_RESOURCES) out.push(`${count} resources, over CloudFormation's ${STACK_MAX_RESOURCES}`);
  const bytes = Buffer.byteLength(JSON.stringify(raw, undefined, 1));
  if (bytes > TEMPLATE_MAX_BYTES) out.push(`template of ${bytes} bytes, over CloudFormation's ${TEMPLATE_MAX_BYTES}`);
  return out;
}

/** Each function's resolved environment, as Lambda measures it (bytes of its JSON). */
export function environmentSizes(t: ResolvedTemplate): Record<string, number> {
  return Object.fromEntries(
    idsOf(t, 'AWS::Lambda::Function').map((id) => {
      const vars = (props(t, id)['Environment'] as { Variables?: unknown } | undefined)?.Variables ?? {};
      return [id, Buffer.byteLength(JSON.stringify(vars))];
    }),
  );
}

export function environmentFindings(t: ResolvedTemplate): string[] {
  return Object.entries(environmentSizes(t))
    .filter(([, n]) => n > LAMBDA_ENVIRONMENT_MAX_BYTES)
    .map(([id, n]) => `${id}: environment of ${n} bytes, over Lambda's ${LAMBDA_ENVIRONMENT_MAX_BYTES}`);
}

/** The logical id a `{ "Fn::GetAtt": [id, …] }` or `{ "Ref": id }` names, anywhere inside `v`. */
function referencedIds(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) v.forEach((x) => referencedIds(x, out));
  else if (v && typeof v === 'object') {
    const o = v as Json;
    if (typeof o['Ref'] === 'string') out.add(o['Ref']);
    const att = o['Fn::GetAtt'];
    if (Array.isArray(att)) out.add(String(att[0]));
    else if (typeof att === 'string') out.add(att.split('.')[0]!);
    Object.values(o).forEach((x) => referencedIds(x, out));
  }
  return out;
}

/** `rate(5 minutes)` in seconds; undefined for cron expressions. */
function rateSeconds(expr: string): number | undefined {
  const m = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expr);
  if (!m) return undefined;
  const unit = m[2]!.startsWith('minute') ? 60 : m[2]!.startsWith('hour') ? 3600 : 86_400;
  return Number(m[1]) * unit;
}

/**
 * Each function's timeout against what invokes it, from the raw template (references intact):
 * - an HTTP API integration or authorizer ends at 30 s: the function must time out before, or
 *   the caller gets the gateway's 503 instead of the function's answer;
 * - a WebSocket integration ends at 29 s;
 * - a stream event source retries a failed batch `MaximumRetryAttempts` times, and drops records
 *   older than `MaximumRecordAgeInSeconds`: every attempt must fit in that age, or the retries
 *   configured never happen;
 * - a schedule must find the previous run finished (timeout ≤ the rate), and no function may
 *   run past Lambda's 900 s.
 */
export function timeoutFindings(raw: Template): string[] {
  const out: string[] = [];
  const timeout = (fn: string): number => Number(props(raw, fn)['Timeout'] ?? 3);
  const functions = new Set(idsOf(raw, 'AWS::Lambda::Function'));
  const fnsIn = (v: unknown): string[] => [...referencedIds(v)].filter((id) => functions.has(id));
  const protocolOf = (apiRef: unknown): string | undefined => {
    const [api] = [...referencedIds(apiRef)];
    return api ? (props(raw, api)['ProtocolType'] as string | undefined) : undefined;
  };
  for (const fn of functions)
    if (timeout(fn) > LAMBDA_MAX_TIMEOUT_SECONDS) out.push(`${fn}: timeout ${timeout(fn)} s, over Lambda's 900 s`);
  const gateway = (type: string, uriKey: string): void => {
    for (const id of idsOf(raw, type)) {
      const p = props(raw, id);
      const limit =
        protocolOf(p['ApiId']) === 'WEBSOCKET'
          ? WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS
          : HTTP_API_INTEGRATION_TIMEOUT_SECONDS;
      for (const fn of fnsIn(p[uriKey]))
        if (timeout(fn) >= limit)
          out.push(`${fn}: timeout ${timeout(fn)} s, but ${id} (API Gateway) gives up at ${limit} s`);
    }
  };
  gateway('AWS::ApiGatewayV2::Integration', 'IntegrationUri');
  gateway('AWS::ApiGatewayV2::Authorizer', 'AuthorizerUri');
  for (const id of idsOf(raw, 'AWS::Lambda::EventSourceMapping')) {
    const p = props(raw, id);
    const age = Number(p['MaximumRecordAgeInSeconds'] ?? -1);
    const attempts = Number(p['MaximumRetryAttempts'] ?? -1) + 1;
    if (age < 0 || attempts <= 0) continue;
    for (const fn of fnsIn(p['FunctionName']))
      if (attempts * timeout(fn) > age)
        out.push(`${fn}: ${attempts} attempts of up to ${timeout(fn)} s do not fit ${id}'s record age of ${age} s`);
  }
  for (const id of idsOf(raw, 'AWS::Events::Rule')) {
    const p = props(raw, id);
    const rate = rateSeconds(typeof p['ScheduleExpression'] === 'string' ? p['ScheduleExpression'] : '');
    if (rate === undefined) continue;
    for (const fn of fnsIn(p['Targets']))
      if (timeout(fn) > rate) out.push(`${fn}: timeout ${timeout(fn)} s, longer than ${id}'s schedule (${rate} s)`);
  }
  return out;
}

/**
 * Every log group keeps its events for a set time, and every function writes to one of the
 * template's log groups (without `LoggingConfig.LogGroup`, Lambda creates `/aws/lambda/<name>`
 * itself, kept for ever).
 */
export function logRetentionFindings(raw: Template): string[] {
  const out: string[] = [];
  const groups = idsOf(raw, 'AWS::Logs::LogGroup');
  for (const g of groups)
    if (props(raw, g)['RetentionInDays'] === undefined) out.push(`${g}: a log group without retention`);
  for (const fn of idsOf(raw, 'AWS::Lambda::Function')) {
    const target = [...referencedIds((props(raw, fn)['LoggingConfig'] as Json | undefined)?.['LogGroup'])];
    if (!target.some((id) => groups.includes(id))) out.push(`${fn}: logs to a group the stack does not create`);
  }
  return out;
}

/** With an alarm target configured, every alarm notifies it (on alarm and on recovery). */
export function alarmActionFindings(raw: Template, targetConfigured: boolean): string[] {
  if (!targetConfigured) return [];
  return idsOf(raw, 'AWS::CloudWatch::Alarm')
    .filter((id) => {
      const p = props(raw, id);
      return !(
        (p['AlarmActions'] as unknown[] | undefined)?.length && (p['OKActions'] as unknown[] | undefined)?.length
      );
    })
    .map((id) => `${id}: an alarm that notifies no one, though an alarm target is configured`);
}

/**
 * REST and WebSocket stages with access or execution logging need the account's API Gateway
 * CloudWatch role (API Gateway Developer Guide, "Set up CloudWatch logging for REST APIs"; the
 * same account setting serves WebSocket APIs): without it `CreateStage` fails with "CloudWatch
 * Logs role ARN must be set in account settings to enable logging". HTTP APIs need none. So
 * such a stage must depend on an `AWS::ApiGateway::Account` of the template, or say that the
 * deployer keeps that setting ({@link ACCOUNT_ROLE_ASSUMED_METADATA}).
 */
export function stageLoggingFindings(raw: Template): string[] {
  const out: string[] = [];
  const accounts = idsOf(raw, 'AWS::ApiGateway::Account');
  const check = (id: string, logs: boolean): void => {
    if (!logs) return;
    const r = raw.Resources[id]!;
    const deps = [r.DependsOn ?? []].flat();
    const assumed = (r as { Metadata?: Json }).Metadata?.[ACCOUNT_ROLE_ASSUMED_METADATA] !== undefined;
    if (!assumed && !deps.some((d) => accounts.includes(d)))
      out.push(
        `${id}: a stage with logging that neither depends on an AWS::ApiGateway::Account nor is marked as using the account's own`,
      );
  };
  for (const id of idsOf(raw, 'AWS::ApiGatewayV2::Stage')) {
    const p = props(raw, id);
    const [api] = [...referencedIds(p['ApiId'])];
    if (!api || props(raw, api)['ProtocolType'] !== 'WEBSOCKET') continue;
    const route = (p['DefaultRouteSettings'] ?? {}) as Json;
    check(
      id,
      p['AccessLogSettings'] !== undefined || route['LoggingLevel'] !== undefined || route['DataTraceEnabled'] === true,
    );
  }
  for (const id of idsOf(raw, 'AWS::ApiGateway::Stage')) {
    const p = props(raw, id);
    const methods = (p['MethodSettings'] as Json[] | undefined) ?? [];
    check(
      id,
      p['AccessLogSetting'] !== undefined ||
        methods.some(
          (m) => (m['LoggingLevel'] !== undefined && m['LoggingLevel'] !== 'OFF') || m['DataTraceEnabled'] === true,
        ),
    );
  }
  return out;
}
