/**
 * A synthesized CloudFormation template as IAM will see it once deployed: every intrinsic
 * (`Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`, `Fn::Select`, `Fn::Split`, `Fn::If` on known
 * conditions) resolved with example account, region, partition and physical ids, so policy
 * documents can be evaluated (`evaluate.ts`) and measured (IAM's size limits count resolved
 * characters).
 *
 * Physical ids are made up but shaped like AWS's (a table name as CloudFormation generates it,
 * a 10-character API id, a key UUID), so sizes are realistic. A resource type without a rule
 * here throws: a new kind of resource in a policy must be taught, not guessed.
 *
 * @example
 * ```ts
 * const t = resolveTemplate(template.toJSON(), { account: '111122223333', region: 'eu-west-1', partition: 'aws' });
 * rolePolicies(t, 'SluiceLogRoleE2A63123'); // the role's policy documents, resolved
 * ```
 */
import type { PolicyDocument } from './evaluate.js';

export interface Environment {
  account: string;
  region: string;
  /** `aws`, `aws-us-gov` or `aws-cn`. */
  partition: string;
  /** Default `amazonaws.com` (`amazonaws.com.cn` in aws-cn). */
  urlSuffix?: string;
  stackName?: string;
}

type Json = unknown;
interface Resource {
  Type: string;
  Properties?: Record<string, Json>;
  DependsOn?: string | string[];
  Condition?: string;
}
export interface Template {
  Resources: Record<string, Resource>;
  Conditions?: Record<string, Json>;
  Parameters?: Record<string, { Default?: Json }>;
}
/** A template whose every value is plain JSON (no intrinsics left), with what each logical id's `Ref` answers. */
export interface ResolvedTemplate extends Template {
  refs: Record<string, string>;
  env: Environment;
}

/** A physical name CloudFormation would generate: stack-LogicalId-RANDOMSUFFIX (13 characters). */
const generatedName = (env: Environment, logicalId: string): string =>
  `${env.stackName ?? 'Sluice'}-${logicalId}-${suffixOf(logicalId)}`;
const suffixOf = (id: string): string => {
  let h = 0;
  for (const c of id) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return h.toString(36).toUpperCase().padStart(13, 'X').slice(0, 13);
};
const uuidOf = (id: string): string => {
  const hex = [...id]
    .map((c) => c.charCodeAt(0).toString(16))
    .join('')
    .padEnd(32, '0')
    .slice(0, 32);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
};
/** API Gateway ids are 10 lowercase alphanumerics. */
const apiIdOf = (id: string): string => suffixOf(id).toLowerCase().slice(0, 10);

/** What `Ref` and `Fn::GetAtt` answer for each resource type the stack uses. */
function physical(env: Environment, id: string, r: Resource): { ref: string; attrs: Record<string, string> } {
  const { partition: p, region, account } = env;
  const name = generatedName(env, id);
  const props = r.Properties ?? {};
  switch (r.Type) {
    case 'AWS::DynamoDB::Table': {
      const arn = `arn:${p}:dynamodb:${region}:${account}:table/${name}`;
      return { ref: name, attrs: { Arn: arn, StreamArn: `${arn}/stream/2026-12-03T00:00:00.000` } };
    }
    case 'AWS::S3::Bucket': {
      const bucket = name.toLowerCase();
      return {
        ref: bucket,
        attrs: {
          Arn: `arn:${p}:s3:::${bucket}`,
          DomainName: `${bucket}.s3.amazonaws.com`,
          RegionalDomainName: `${bucket}.s3.${region}.amazonaws.com`,
        },
      };
    }
    case 'AWS::Logs::LogGroup': {
      const group = typeof props['LogGroupName'] === 'string' ? props['LogGroupName'] : name;
      return { ref: group, attrs: { Arn: `arn:${p}:logs:${region}:${account}:log-group:${group}:*` } };
    }
    case 'AWS::IAM::Role':
      return {
        ref: name.slice(0, 64),
        attrs: { Arn: `arn:${p}:iam::${account}:role/${name.slice(0, 64)}`, RoleId: `AROA${suffixOf(id)}` },
      };
    case 'AWS::IAM::ManagedPolicy':
      return { ref: `arn:${p}:iam::${account}:policy/${name}`, attrs: {} };
    case 'AWS::IAM::Policy':
      return { ref: name, attrs: {} };
    case 'AWS::Lambda::Function':
      return {
        ref: name.slice(0, 64),
        attrs: { Arn: `arn:${p}:lambda:${region}:${account}:function:${name.slice(0, 64)}` },
      };
    case 'AWS::ApiGatewayV2::Api':
      return {
        ref: apiIdOf(id),
        attrs: { ApiEndpoint: `https://${apiIdOf(id)}.execute-api.${region}.${suffix(env)}` },
      };
    case 'AWS::ApiGatewayV2::Stage':
    case 'AWS::ApiGatewayV2::Authorizer':
    case 'AWS::ApiGatewayV2::Integration':
    case 'AWS::ApiGatewayV2::Route':
      return { ref: apiIdOf(id), attrs: {} };
    case 'AWS::KMS::Key': {
      const keyId = uuidOf(id);
      return { ref: keyId, attrs: { Arn: `arn:${p}:kms:${region}:${account}:key/${keyId}`, KeyId: keyId } };
    }
    case 'AWS::SNS::Topic': {
      const arn = `arn:${p}:sns:${region}:${account}:${name}`;
      return { ref: arn, attrs: { TopicArn: arn, TopicName: name } };
    }
    case 'AWS::SQS::Queue': {
      const arn = `arn:${p}:sqs:${region}:${account}:${name}`;
      return { ref: `https://sqs.${region}.${suffix(env)}/${account}/${name}`, attrs: { Arn: arn, QueueName: name } };
    }
    case 'AWS::Lambda::EventSourceMapping':
      return { ref: uuidOf(id), attrs: {} };
    case 'AWS::CloudWatch::Alarm':
      return { ref: name, attrs: { Arn: `arn:${p}:cloudwatch:${region}:${account}:alarm:${name}` } };
    case 'AWS::Events::Rule':
      return { ref: name, attrs: { Arn: `arn:${p}:events:${region}:${account}:rule/${name}` } };
    case 'AWS::CloudWatch::Dashboard':
    case 'AWS::Lambda::Permission':
    case 'AWS::S3::BucketPolicy':
    case 'AWS::ApiGateway::Account':
    case 'AWS::ApiGatewayV2::RouteResponse':
    case 'AWS::SNS::Subscription':
    case 'AWS::SQS::QueuePolicy':
    case 'AWS::SNS::TopicPolicy':
    case 'AWS::CDK::Metadata':
      return { ref: name, attrs: {} };
    default:
      throw new Error(`template.ts does not know what a ${r.Type} (${id}) resolves to: add a rule for it`);
  }
}

const suffix = (env: Environment): string =>
  env.urlSuffix ?? (env.partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com');

/** Resolves every intrinsic in `template` for `env`. */
export function resolveTemplate(template: Template, env: Environment): ResolvedTemplate {
  const physicals = new Map<string, { ref: string; attrs: Record<string, string> }>();
  const phys = (id: string): { ref: string; attrs: Record<string, string> } => {
    let p = physicals.get(id);
    if (!p) {
      const r = template.Resources[id];
      if (!r) throw new Error(`a reference to ${id}, which is not in the template`);
      p = physical(env, id, r);
      physicals.set(id, p);
    }
    return p;
  };
  const pseudo: Record<string, string> = {
    'AWS::AccountId': env.account,
    'AWS::Region': env.region,
    'AWS::Partition': env.partition,
    'AWS::URLSuffix': suffix(env),
    'AWS::StackName': env.stackName ?? 'Sluice',
    'AWS::StackId': `arn:${env.partition}:cloudformation:${env.region}:${env.account}:stack/${env.stackName ?? 'Sluice'}/${uuidOf('stack')}`,
    'AWS::NoValue': '',
  };
  const ref = (name: string): string => {
    if (name in pseudo) return pseudo[name]!;
    const param = template.Parameters?.[name];
    if (param) {
      if (param.Default === undefined) throw new Error(`parameter ${name} has no default`);
      return typeof param.Default === 'string' ? param.Default : JSON.stringify(param.Default);
    }
    return phys(name).ref;
  };
  const condition = (name: string): boolean => {
    const c = template.Conditions?.[name];
    if (c === undefined) throw new Error(`unknown condition ${name}`);
    return truth(resolve(c));
  };
  const truth = (v: Json): boolean => {
    if (typeof v === 'boolean') return v;
    if (v === 'true') return true;
    if (v === 'false') return false;
    throw new Error(`not a condition value: ${JSON.stringify(v)}`);
  };
  const resolve = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(resolve).filter((x) => x !== NO_VALUE);
    if (v === null || typeof v !== 'object') return v;
    const o = v as Record<string, Json>;
    const keys = Object.keys(o);
    if (keys.length === 1) {
      const [k] = keys as [string];
      const arg = o[k];
      switch (k) {
        case 'Ref':
          return arg === 'AWS::NoValue' ? NO_VALUE : ref(String(arg));
        case 'Fn::GetAtt': {
          const [id, attr] = Array.isArray(arg) ? (arg as string[]) : String(arg).split('.');
          const value = phys(String(id)).attrs[String(attr)];
          if (value === undefined) throw new Error(`template.ts does not know ${String(id)}.${String(attr)}`);
          return value;
        }
        case 'Fn::Join': {
          const [sep, parts] = arg as [string, Json[]];
          return (resolve(parts) as Json[]).map(String).join(sep);
        }
        case 'Fn::Select': {
          const [i, list] = arg as [Json, Json];
          return (resolve(list) as Json[])[Number(resolve(i))];
        }
        case 'Fn::Split': {
          const [sep, s] = arg as [string, Json];
          return String(resolve(s)).split(sep);
        }
        case 'Fn::Sub': {
          const [text, vars] = Array.isArray(arg) ? (arg as [string, Record<string, Json>]) : [String(arg), {}];
          return text.replace(/\$\{([^}]+)\}/g, (_m, name: string) => {
            if (name in vars) return String(resolve(vars[name]));
            if (name.includes('.')) {
              const [id, attr] = name.split('.') as [string, string];
              return String(resolve({ 'Fn::GetAtt': [id, attr] }));
            }
            return ref(name);
          });
        }
        case 'Fn::If': {
          const [c, yes, no] = arg as [string, Json, Json];
          return resolve(condition(c) ? yes : no);
        }
        case 'Fn::Equals': {
          const [a, b] = resolve(arg) as [Json, Json];
          return JSON.stringify(a) === JSON.stringify(b);
        }
        case 'Fn::Not':
          return !truth((resolve(arg) as Json[])[0]);
        case 'Fn::And':
          return (resolve(arg) as Json[]).every(truth);
        case 'Fn::Or':
          return (resolve(arg) as Json[]).some(truth);
        case 'Condition':
          return condition(String(arg));
        case 'Fn::ImportValue':
        case 'Fn::GetAZs':
        case 'Fn::Base64':
        case 'Fn::FindInMap':
          throw new Error(`template.ts does not resolve ${k}`);
      }
    }
    const out: Record<string, Json> = {};
    for (const [k, x] of Object.entries(o)) {
      const r = resolve(x);
      if (r !== NO_VALUE) out[k] = r;
    }
    return out;
  };
  const resources: Record<string, Resource> = {};
  for (const [id, r] of Object.entries(template.Resources)) {
    if (r.Condition !== undefined && !condition(r.Condition)) continue;
    resources[id] = { ...r, ...(r.Properties ? { Properties: resolve(r.Properties) as Record<string, Json> } : {}) };
  }
  const refs = Object.fromEntries(Object.keys(resources).map((id) => [id, phys(id).ref]));
  return { ...template, Resources: resources, refs, env };
}

const NO_VALUE: Json = Symbol('AWS::NoValue');

/** Logical ids of the resources of one type. */
export const resourcesOfType = (t: ResolvedTemplate, type: string): string[] =>
  Object.entries(t.Resources)
    .filter(([, r]) => r.Type === type)
    .map(([id]) => id);

/**
 * Every policy document a role holds once deployed: its inline `Policies`, each
 * `AWS::IAM::Policy` attached to it, and each customer managed policy of the template it
 * names. AWS managed policies (by ARN) are answered in `awsManaged`, by name.
 */
export function rolePolicies(
  t: ResolvedTemplate,
  roleLogicalId: string,
): { documents: PolicyDocument[]; awsManaged: string[] } {
  const role = t.Resources[roleLogicalId];
  if (role?.Type !== 'AWS::IAM::Role') throw new Error(`${roleLogicalId} is not a role in the template`);
  const props = role.Properties ?? {};
  const roleName = t.refs[roleLogicalId]!;
  const documents: PolicyDocument[] = [
    ...((props['Policies'] as { PolicyDocument: PolicyDocument }[] | undefined) ?? []).map((p) => p.PolicyDocument),
  ];
  for (const id of resourcesOfType(t, 'AWS::IAM::Policy')) {
    const p = t.Resources[id]!.Properties!;
    if (((p['Roles'] as string[] | undefined) ?? []).includes(roleName))
      documents.push(p['PolicyDocument'] as PolicyDocument);
  }
  const awsManaged: string[] = [];
  const managedByArn = new Map(
    resourcesOfType(t, 'AWS::IAM::ManagedPolicy').map((id) => [t.refs[id]!, t.Resources[id]!] as const),
  );
  for (const arn of (props['ManagedPolicyArns'] as string[] | undefined) ?? []) {
    const own = managedByArn.get(arn);
    if (own) documents.push(own.Properties!['PolicyDocument'] as PolicyDocument);
    else awsManaged.push(arn.replace(/^arn:[^:]+:iam::aws:policy\//, ''));
  }
  for (const id of resourcesOfType(t, 'AWS::IAM::ManagedPolicy')) {
    const p = t.Resources[id]!.Properties!;
    if (((p['Roles'] as string[] | undefined) ?? []).includes(roleName))
      documents.push(p['PolicyDocument'] as PolicyDocument);
  }
  return { documents, awsManaged };
}

/** The role a function runs as (its `Role` property, as a logical id). */
export function functionRoleId(raw: Template, functionLogicalId: string): string {
  const fn = raw.Resources[functionLogicalId];
  if (fn?.Type !== 'AWS::Lambda::Function') throw new Error(`${functionLogicalId} is not a function in the template`);
  const role = fn.Properties?.['Role'] as { 'Fn::GetAtt'?: [string, string] } | undefined;
  const id = role?.['Fn::GetAtt']?.[0];
  if (!id) throw new Error(`${functionLogicalId}'s role is not a role of this template`);
  return id;
}
