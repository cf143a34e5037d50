/**
 * The functions' IAM proof, attached where the AWS-backend suites already run: every SDK
 * command a test's storage clients send while the code runs *as a function* is turned into
 * the IAM requests AWS would evaluate (`requests.ts`) and decided against that function's role
 * as synthesized (`iam-global-setup.ts` provides the resolved policies). A denial fails the
 * test that caused it (`iam-setup.ts`), naming the function, action and resource.
 *
 * Which function runs is an async context: the test server runs each request as the function
 * API Gateway would send it to ({@link asRouteFunction}); other code says so with
 * {@link asFunction}. Requests outside any function (a test's own setup and assertions) are
 * not checked: no function makes them.
 *
 * @example
 * ```ts
 * const { dynamodb } = emulatorClients(endpoints);
 * recordIam(dynamodb);
 * await asFunction('maintenance', () => runMaintenance(svc)); // every request checked against the maintenance role
 * ```
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { inject } from 'vitest';
import type { FunctionGroup } from '../../../server/http/route.js';
import { ALL_ROUTES } from '../../../server/http/routes.js';
import { TABLES, type TableName } from '../../../server/storage/port.js';
import type { FunctionName } from '../../../lib/access.js';
import { deny } from './denials.js';
import { evaluate, type IamRequest, type PolicyDocument } from './evaluate.js';
import { iamRequestsOf, type ResourceArns } from './requests.js';

/** Every role Sluice's code runs as: the route functions, maintenance, the notifier, the token authorizer. */
export type FunctionRole = FunctionName | 'notifications' | 'authorizer';

/** What the global setup provides: each role's resolved policies and the deployed ARNs. */
export interface IamUnderTest {
  roles: Record<FunctionRole, PolicyDocument[]>;
  /** What AWS does with each role besides the code (lib/access.ts PLATFORM_USES), as IAM requests. */
  platform: Record<FunctionRole, IamRequest[]>;
  arns: Omit<ResourceArns, 'tableOf'>;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by test/support/iam-global-setup.ts. */
    iamUnderTest: IamUnderTest;
  }
}

const scope = new AsyncLocalStorage<FunctionRole>();

/** Runs `body` as function `role`: AWS requests it makes are checked against that role. */
export const asFunction = <T>(role: FunctionRole, body: () => T): T => scope.run(role, body);

/** The function a request of `method` and `path` reaches behind API Gateway (literal segments beat parameters). */
export function routeFunctionOf(method: string, path: string): FunctionGroup | undefined {
  const segs = path.split('?')[0]!.split('/').filter(Boolean);
  let best: { group: FunctionGroup; score: number } | undefined;
  for (const r of ALL_ROUTES) {
    const parts = r.path.split('/').filter(Boolean);
    if (r.method !== method || parts.length !== segs.length) continue;
    let score = 0;
    const ok = parts.every((p, i) => {
      if (/^\{.+\}$/.test(p)) return true;
      score += 2 ** (20 - i);
      return p === segs[i];
    });
    if (ok && (!best || score > best.score)) best = { group: r.group, score };
  }
  return best?.group;
}

/** Runs `body` as the function API Gateway would route `method path` to (outside any, for local-only routes). */
export function asRouteFunction<T>(method: string, path: string, body: () => T): T {
  const group = routeFunctionOf(method, path);
  return group ? scope.run(group, body) : body();
}

/** Physical table names of the tests end in `-<logical name>` (test/support/aws-emulator.ts). */
const tableOf = (physical: string): TableName | undefined => TABLES.find((t) => physical.endsWith(`-${t}`));

let underTest: IamUnderTest | null | undefined;
/** The policies under test, or null outside a run that provides them. */
export const policies = (): IamUnderTest | null => {
  if (underTest === undefined) {
    try {
      underTest = inject('iamUnderTest') ?? null;
    } catch {
      underTest = null; // not in a vitest worker (a bench): nothing to check against
    }
  }
  return underTest;
};

/** What each role was seen to do (`action resource`), for coverage assertions. */
export const observed = new Map<FunctionRole, Set<string>>();

/**
 * Decides `requests` for the current function (nothing outside one). A denial is kept for
 * {@link takeDenials}; the request still goes to the emulator, so the test goes on.
 */
export function checkIamRequests(requests: IamRequest[], what: string, role = scope.getStore()): void {
  const under = policies();
  if (!role || !under) return;
  const seen = observed.get(role) ?? new Set<string>();
  observed.set(role, seen);
  for (const req of requests) {
    seen.add(`${req.action} ${req.resource}`);
    const decision = evaluate(under.roles[role], req).decision;
    if (decision !== 'allow')
      deny(
        `${role}: ${req.action} on ${req.resource}${
          req.context && Object.keys(req.context).length > 0 ? ` ${JSON.stringify(req.context)}` : ''
        } (${decision}, in ${what})`,
      );
  }
}

interface MiddlewareClient {
  middlewareStack: {
    add(
      mw: (
        next: (args: { input: object }) => Promise<unknown>,
        context: { commandName?: string },
      ) => (args: { input: object }) => Promise<unknown>,
      opts: { step: 'initialize'; name: string },
    ): void;
  };
}

/**
 * Checks every command `client` sends while code runs as a function. Idempotent per client.
 *
 * @example
 * ```ts
 * recordIam(new DynamoDBClient({ endpoint }));
 * ```
 */
export function recordIam<C>(client: C): C {
  const c = client as unknown as MiddlewareClient & { [RECORDED]?: true };
  if (c[RECORDED]) return client;
  c[RECORDED] = true;
  c.middlewareStack.add(
    (next, context) => (args) => {
      const role = scope.getStore();
      const under = policies();
      if (role && under) {
        const command = context.commandName ?? '?';
        checkIamRequests(
          iamRequestsOf(command, args.input as Record<string, unknown>, { ...under.arns, tableOf }),
          command,
          role,
        );
      }
      return next(args);
    },
    { step: 'initialize', name: 'sluiceIamProof' },
  );
  return client;
}
const RECORDED = Symbol('sluiceIamRecorded');
