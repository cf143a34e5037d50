/**
 * A route as the server serves it: a contract route (`contract/`, its method, path, schemas and
 * access rule) with the services it uses and its call. `handler.ts` serves routes; `router.ts`
 * matches them.
 */
import type { Action, Parsed, Part, RouteContract } from '../../contract/route.js';
import type { Services } from '../service/runtime.js';
import type { HttpEvent, HttpResult } from './types.js';

export type { Action, FunctionGroup, Method } from '../../contract/route.js';

/** The caller as API Gateway's authorizer (or the local server) identified it. */
export function principalOf(event: HttpEvent): string {
  const auth = (
    event.requestContext as {
      authorizer?: {
        iam?: { userArn?: string };
        jwt?: { claims?: Record<string, unknown> };
        lambda?: { principal?: string };
      };
    }
  ).authorizer;
  return auth?.iam?.userArn ?? (auth?.jwt?.claims?.sub as string | undefined) ?? auth?.lambda?.principal ?? 'anonymous';
}

export interface RouteInput<B, Q, P, S = Services> {
  /** Who is calling: the IAM ARN, the JWT subject, the local bearer token's principal, or 'anonymous'. */
  principal: string;
  body: B;
  /** The body's bytes, for handlers that keep parts of it verbatim (payloads). */
  rawBody: () => Buffer;
  query: Q;
  params: P;
  event: HttpEvent;
  /** The services the route declared it uses (`implement`'s `uses`). */
  services: S;
  /** Aborts shortly before the Lambda (or the local server's request) times out. */
  signal: AbortSignal;
  /**
   * Throws `forbidden` (403) unless the caller may do `action` (default: the route's) on
   * `queue`. For routes that learn their queue only while running (their `access.queues` does
   * not name it), call this before acting on or revealing anything of that queue. The refusal
   * does not name the queue: the caller did not, and may not be allowed to learn it.
   */
  authorize: (queue: string, action?: Action) => void;
  /** Whether the caller may do `action` (default: the route's) on `queue`: to filter listings. */
  allowed: (queue: string, action?: Action) => boolean;
}

/**
 * A contract route (`contract/`) with its implementation: the services it uses, and the call.
 * Handlers stay thin: the contract's schemas have parsed and validated the input; `run` calls
 * a service and shapes the answer.
 */
export interface RouteDef<
  B = unknown,
  Q = unknown,
  P = unknown,
  D extends keyof Services = keyof Services,
> extends RouteContract {
  /** The services `run` reaches (its `services` holds only these, by type). */
  uses: readonly D[];
  run(input: RouteInput<B, Q, P, Pick<Services, D>>): Promise<HttpResult>;
}

/**
 * Implements a contract route: its input types come from the contract's schemas, and `run`
 * sees only the services `uses` names.
 *
 * @example
 * ```ts
 * export const health = implement(systemApi.health, ['health'], async ({ services }) => ({
 *   statusCode: 200, body: await services.health.check() }));
 * ```
 */
export function implement<B extends Part, Q extends Part, P extends Part, D extends keyof Services = never>(
  contract: RouteContract<B, Q, P>,
  uses: readonly D[],
  run: (
    input: RouteInput<
      Parsed<B, undefined>,
      Parsed<Q, Record<string, string>>,
      Parsed<P, Record<string, string>>,
      Pick<Services, D>
    >,
  ) => Promise<HttpResult>,
): RouteDef {
  return { ...(contract as RouteContract), uses, run: run as RouteDef['run'] };
}
