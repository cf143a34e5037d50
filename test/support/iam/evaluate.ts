/**
 * An offline evaluator of identity-based IAM policies: what AWS decides for one request
 * (principal's policies, action, resource, context keys) in a single account, with no
 * resource policies, permission boundaries, SCPs or sessions.
 *
 * Why our own: `@cloud-copilot/iam-simulate` does this fully but is AGPL-3.0, which has no place
 * in an Apache-2.0 project even as a dev dependency. What Sluice's stack writes is small —
 * Allow statements, wildcards in actions and resources, a few condition operators — so this
 * evaluates exactly that grammar, and throws on anything it does not know rather than guess.
 *
 * The model (IAM User Guide, "Policy evaluation logic"; "Condition operators"; "Conditions with
 * multiple context keys or values"):
 * - an explicit Deny in any statement wins; else an Allow that matches allows; else denied;
 * - a statement matches when its Action (or NotAction) matches, its Resource (or NotResource)
 *   matches, and every condition holds;
 * - actions match case-insensitively, resources case-sensitively, `*` and `?` as wildcards;
 *   ARNs compare segment by segment (a wildcard does not cross the first five colons);
 * - condition operators AND together, keys within an operator AND, values of one key OR (NOR
 *   for negated operators); a key absent from the request makes a condition false, except that
 *   a negated operator is then true, `…IfExists` is true, and `Null` tests the absence itself;
 * - `ForAllValues:` holds when every request value matches some policy value (also when the key
 *   is absent), `ForAnyValue:` when at least one does.
 *
 * @example
 * ```ts
 * const doc = { Statement: [{ Effect: 'Allow', Action: 'dynamodb:Get*', Resource: 'arn:aws:dynamodb:*:*:table/t' }] };
 * evaluate([doc], { action: 'dynamodb:GetItem', resource: 'arn:aws:dynamodb:eu-west-1:1:table/t' }).decision; // 'allow'
 * ```
 */

export type ContextValue = string | boolean | number | readonly string[];

/** One request as IAM sees it: an action on a resource, with the request's context keys. */
export interface IamRequest {
  /** `service:Action`, e.g. `dynamodb:UpdateItem`. */
  action: string;
  /** The resource ARN, or `*` for actions that act on no resource. */
  resource: string;
  /** Context keys by name (case-insensitive, as in IAM), e.g. `{ 'dynamodb:LeadingKeys': ['SEQ#p'] }`. */
  context?: Record<string, ContextValue>;
}

export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: Record<string, Record<string, string | boolean | number | (string | boolean | number)[]>>;
  Principal?: unknown;
}

export interface PolicyDocument {
  Version?: string;
  Statement: PolicyStatement | PolicyStatement[];
}

export type Decision = 'allow' | 'explicitDeny' | 'implicitDeny';

export interface Evaluation {
  decision: Decision;
  /** The statement that decided (the Deny, or the first Allow that matched). */
  statement?: PolicyStatement | undefined;
}

/** Decides `req` against every policy `principal` holds (their statements pooled, as IAM does). */
export function evaluate(policies: readonly PolicyDocument[], req: IamRequest): Evaluation {
  const statements = policies.flatMap((p) => asList(p.Statement));
  let allowedBy: PolicyStatement | undefined;
  for (const s of statements) {
    if (s.Principal !== undefined)
      throw new Error('a Principal in an identity policy: this evaluates identity policies only');
    if (!statementMatches(s, req)) continue;
    if (s.Effect === 'Deny') return { decision: 'explicitDeny', statement: s };
    if (s.Effect !== 'Allow') throw new Error(`unknown Effect ${String(s.Effect)}`);
    allowedBy ??= s;
  }
  return allowedBy ? { decision: 'allow', statement: allowedBy } : { decision: 'implicitDeny' };
}

/** True when `policies` allow `req`. */
export const isAllowed = (policies: readonly PolicyDocument[], req: IamRequest): boolean =>
  evaluate(policies, req).decision === 'allow';

function statementMatches(s: PolicyStatement, req: IamRequest): boolean {
  if ((s.Action === undefined) === (s.NotAction === undefined))
    throw new Error(`statement ${s.Sid ?? ''} needs exactly one of Action and NotAction`);
  if ((s.Resource === undefined) === (s.NotResource === undefined))
    throw new Error(`statement ${s.Sid ?? ''} needs exactly one of Resource and NotResource`);
  const action =
    s.Action !== undefined
      ? asList(s.Action).some((p) => actionMatches(p, req.action))
      : !asList(s.NotAction!).some((p) => actionMatches(p, req.action));
  if (!action) return false;
  const resource =
    s.Resource !== undefined
      ? asList(s.Resource).some((p) => resourceMatches(p, req.resource))
      : !asList(s.NotResource!).some((p) => resourceMatches(p, req.resource));
  if (!resource) return false;
  return conditionsHold(s.Condition ?? {}, req.context ?? {});
}

/** `s3:Get*` against `s3:GetObject`: case-insensitive, wildcards within the action name. */
export function actionMatches(pattern: string, action: string): boolean {
  noVariables(pattern);
  return globMatch(pattern.toLowerCase(), action.toLowerCase());
}

/**
 * A Resource pattern against a request's ARN: `*` alone matches anything. Within the first
 * five colon-separated segments (partition, service, region, account) a wildcard stays in its
 * segment, except a `*` that ends its segment, which may run past the colons (IAM User Guide,
 * "Using wildcards in resource ARNs"); in the resource part, slashes and colons are crossed.
 */
export function resourceMatches(pattern: string, arn: string): boolean {
  noVariables(pattern);
  if (pattern === '*') return true;
  const segments = pattern.split(':');
  const head = segments.slice(0, 5);
  const seg = (s: string, last: boolean): string =>
    s
      .split('')
      .map((c, i) =>
        c === '*' ? (last || i === s.length - 1 ? '.*' : '[^:]*') : c === '?' ? (last ? '.' : '[^:]') : escape(c),
      )
      .join('');
  const parts = head.map((s) => seg(s, false));
  const source = segments.length > 5 ? [...parts, seg(segments.slice(5).join(':'), true)].join(':') : parts.join(':');
  return compiled(source).test(arn);
}

/** Patterns recur for every request of a suite: compile each once. */
const regexes = new Map<string, RegExp>();
const compiled = (source: string): RegExp => {
  let re = regexes.get(source);
  if (!re) regexes.set(source, (re = new RegExp(`^${source}$`, 's')));
  return re;
};

const escape = (c: string): string => c.replace(/[.+^${}()|[\]\\]/g, '\\$&');

/** `*` any run of characters, `?` any one; everything else literal. */
export function globMatch(pattern: string, value: string): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return compiled(source).test(value);
}

function noVariables(pattern: string): void {
  if (pattern.includes('${')) throw new Error(`policy variables are not supported by this evaluator: ${pattern}`);
}

type Matcher = (policyValue: string, requestValue: string) => boolean;

/** The base operators (without IfExists or a set qualifier): how one value matches, and whether negated. */
const OPERATORS: Record<string, { match: Matcher; negated: boolean }> = {
  StringEquals: { match: (p, v) => p === v, negated: false },
  StringNotEquals: { match: (p, v) => p === v, negated: true },
  StringEqualsIgnoreCase: { match: (p, v) => p.toLowerCase() === v.toLowerCase(), negated: false },
  StringNotEqualsIgnoreCase: { match: (p, v) => p.toLowerCase() === v.toLowerCase(), negated: true },
  StringLike: { match: (p, v) => globMatch(p, v), negated: false },
  StringNotLike: { match: (p, v) => globMatch(p, v), negated: true },
  ArnEquals: { match: (p, v) => p === v, negated: false },
  ArnNotEquals: { match: (p, v) => p === v, negated: true },
  ArnLike: { match: (p, v) => resourceMatches(p, v), negated: false },
  ArnNotLike: { match: (p, v) => resourceMatches(p, v), negated: true },
  Bool: { match: (p, v) => p.toLowerCase() === v.toLowerCase(), negated: false },
  NumericEquals: { match: (p, v) => Number(v) === Number(p), negated: false },
  NumericNotEquals: { match: (p, v) => Number(v) === Number(p), negated: true },
  NumericLessThan: { match: (p, v) => Number(v) < Number(p), negated: false },
  NumericLessThanEquals: { match: (p, v) => Number(v) <= Number(p), negated: false },
  NumericGreaterThan: { match: (p, v) => Number(v) > Number(p), negated: false },
  NumericGreaterThanEquals: { match: (p, v) => Number(v) >= Number(p), negated: false },
};

function conditionsHold(
  block: NonNullable<PolicyStatement['Condition']>,
  context: Record<string, ContextValue>,
): boolean {
  const lowered = new Map(Object.entries(context).map(([k, v]) => [k.toLowerCase(), v]));
  return Object.entries(block).every(([operator, keys]) =>
    Object.entries(keys).every(([key, values]) =>
      conditionHolds(
        operator,
        asList(values).map((v) => String(v)),
        lowered.get(key.toLowerCase()),
      ),
    ),
  );
}

function conditionHolds(operator: string, policyValues: string[], present: ContextValue | undefined): boolean {
  const [qualifier, rest] = operator.includes(':')
    ? (operator.split(':', 2) as [string, string])
    : [undefined, operator];
  const requestValues =
    present === undefined ? [] : asList(present as string | readonly string[]).map((v) => String(v));
  const absent = present === undefined || (Array.isArray(present) && present.length === 0);

  if (rest === 'Null') {
    if (qualifier) throw new Error(`a set qualifier on Null: ${operator}`);
    const wantsAbsent = policyValues.map((v) => v.toLowerCase() === 'true');
    return wantsAbsent.every((w) => w === absent);
  }
  const ifExists = rest.endsWith('IfExists');
  const base = ifExists ? rest.slice(0, -'IfExists'.length) : rest;
  const op = OPERATORS[base];
  if (!op) throw new Error(`condition operator ${operator} is not supported by this evaluator`);
  const anyMatches = (v: string): boolean => policyValues.some((p) => op.match(p, v));

  if (qualifier === 'ForAllValues') {
    if (absent) return true;
    return requestValues.every((v) => (op.negated ? !anyMatches(v) : anyMatches(v)));
  }
  if (qualifier === 'ForAnyValue') {
    if (absent) return false;
    return requestValues.some((v) => (op.negated ? !anyMatches(v) : anyMatches(v)));
  }
  if (qualifier !== undefined) throw new Error(`unknown set qualifier in ${operator}`);
  if (absent) return ifExists || op.negated;
  if (requestValues.length > 1)
    throw new Error(`a single-valued operator ${operator} on a multivalued key: use ForAllValues or ForAnyValue`);
  const v = requestValues[0]!;
  return op.negated ? !anyMatches(v) : anyMatches(v);
}

function asList<T>(v: T | readonly T[]): T[] {
  return Array.isArray(v) ? [...(v as readonly T[])] : [v as T];
}
