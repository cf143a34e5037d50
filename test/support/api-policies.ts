/**
 * The caller policies a deployment publishes (Producer, Consumer, Admin), resolved as IAM
 * holds them, and what they decide for one HTTP request: API Gateway authorizes a SigV4
 * request as `execute-api:Invoke` on `arn:<partition>:execute-api:<region>:<account>:<apiId>/<stage>/<METHOD>/<path>`,
 * the path as the caller sent it.
 *
 * @example
 * ```ts
 * const p = callerPolicies(synthStack());
 * p.allows('Consumer', 'GET', '/api/v1/pop/queue/orders'); // true
 * p.allows('Producer', 'POST', '/api/v1/configure');       // false
 * ```
 */
import type { Template as CdkTemplate } from 'aws-cdk-lib/assertions';
import type { RouteDef } from '../../server/http/route.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { API_ROLES, API_STAGE, type ApiRole } from '../../lib/api-access.js';
import type { SluiceStack } from '../../lib/sluice-stack.js';
import { isAllowed, type PolicyDocument } from './iam/evaluate.js';
import { resolveTemplate, type Environment, type Template } from './iam/template.js';

export const ROLES = Object.keys(API_ROLES) as ApiRole[];

export interface CallerPolicies {
  env: Environment;
  apiId: string;
  documents: Record<ApiRole, PolicyDocument>;
  /** The execute-api ARN API Gateway authorizes a request to `method` `path` as. */
  arnOf(method: string, path: string): string;
  /** Whether `role`'s policy alone allows the request. */
  allows(role: ApiRole, method: string, path: string): boolean;
}

/** The three policies of a synthesized stack (IAM auth), resolved in `env` (default: the stack's own). */
export function callerPolicies(
  synth: { stack: SluiceStack; template: CdkTemplate },
  env: Environment = { account: '111122223333', region: 'eu-west-1', partition: 'aws' },
): CallerPolicies {
  const { stack } = synth;
  const resolved = resolveTemplate(synth.template.toJSON() as Template, env);
  const id = (c: { node: { defaultChild?: unknown } }): string => stack.getLogicalId(c.node.defaultChild as never);
  const documents = Object.fromEntries(
    ROLES.map((role) => {
      const policy = stack.service.policies[role];
      if (!policy) throw new Error(`the stack publishes no ${role} policy (IAM auth only)`);
      return [role, resolved.Resources[id(policy)]!.Properties!['PolicyDocument'] as PolicyDocument];
    }),
  ) as Record<ApiRole, PolicyDocument>;
  const apiId = resolved.refs[id(stack.service.api)]!;
  const arnOf = (method: string, path: string): string =>
    `arn:${env.partition}:execute-api:${env.region}:${env.account}:${apiId}/${API_STAGE}/${method}${path}`;
  return {
    env,
    apiId,
    documents,
    arnOf,
    allows: (role, method, path) =>
      isAllowed([documents[role]], { action: 'execute-api:Invoke', resource: arnOf(method, path) }),
  };
}

/** Whether `role` should reach `route` by the route table: one of its actions is the role's, or it is public. */
export const routeIsFor = (role: ApiRole, route: RouteDef): boolean =>
  route.access.action === 'public' ||
  [route.access.action, ...(route.access.also ?? [])].some((a) => (API_ROLES[role] as readonly string[]).includes(a));

/** A route's path with each `{param}` replaced by `value(param)`. */
export const samplePath = (route: RouteDef, value: (param: string) => string): string =>
  route.path.replace(/\{([^}/]+)\}/g, (_m, p: string) => encodeURIComponent(value(p)));

/**
 * The deployed route API Gateway picks for a method and concrete path (literal segments beat
 * parameters, as in its route selection), or undefined when none (a 404 there).
 */
export function deployedRoute(method: string, path: string, routes: RouteDef[] = ALL_ROUTES): RouteDef | undefined {
  const segs = path.split('?')[0]!.split('/').filter(Boolean);
  let best: { route: RouteDef; score: number } | undefined;
  for (const route of routes) {
    if (route.method !== method) continue;
    const parts = route.path.split('/').filter(Boolean);
    if (parts.length !== segs.length) continue;
    let score = 0;
    const ok = parts.every((p, i) => {
      if (/^\{[^}]+\}$/.test(p)) return true;
      score += 2 ** (parts.length - i);
      return p === segs[i];
    });
    if (ok && (!best || score > best.score)) best = { route, score };
  }
  return best?.route;
}
