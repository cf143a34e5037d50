/**
 * What a route is: its method and API Gateway path, one schema per input part, the access it
 * needs, and the service call. `handler.ts` serves routes; `router.ts` matches them.
 */
import type { z } from 'zod';
import type { Services } from '../service/runtime.js';
import type { HttpEvent, HttpResult } from './types.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Which Lambda function serves a route (each gets only the permissions its routes need). */
export type FunctionGroup = 'log' | 'leases' | 'claims' | 'admin';

/** Permission a route needs on a queue. */
export type Action = 'push' | 'consume' | 'manage' | 'public';

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

export interface RouteInput<B, Q, P> {
  /** Who is calling: the IAM ARN, the JWT subject, the local bearer token's principal, or 'anonymous'. */
  principal: string;
  body: B;
  /** The body's bytes, for handlers that keep parts of it verbatim (payloads). */
  rawBody: () => Buffer;
  query: Q;
  params: P;
  event: HttpEvent;
  services: Services;
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
 * A route: its method and API Gateway path, one schema per input part, and the service
 * call. Handlers stay thin: parse, validate, call, serialise.
 */
export interface RouteDef<B = unknown, Q = unknown, P = unknown> {
  method: Method;
  /** API Gateway route syntax: `/api/v1/messages/{partitionId}/{transactionId}`. */
  path: string;
  group: FunctionGroup;
  /** One-line description for docs and the route listing. */
  summary: string;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  /**
   * What the call needs: `push`, `consume` or `manage` (docs/DEPLOYING.md, Grants), on the
   * queues `queues` names; `public` needs nothing (health).
   * Authorization is enforced from this in one place, the `authorize` middleware: every queue `queues`
   * names must be granted; when it names none (absent, or only `undefined`s), the caller
   * must hold the action on some queue and the handler calls `authorize(queue)` itself.
   */
  access: {
    action: Action;
    queues?: (input: { body: B; query: Q; params: P }) => (string | undefined)[];
    /**
     * Other actions that also open the route (and its IAM policy): a caller who holds `action`
     * or one of these on some queue may call it, and the handler checks each queue it touches
     * with `authorize(queue, action)`. The queues `queues` names still need `action`. A
     * transaction, say, needs `push` on the queues it pushes to and `consume` on those it acks.
     */
    also?: readonly Exclude<Action, 'public'>[];
  };
  /** Successful status when `run` returns a plain value. */
  run(input: RouteInput<B, Q, P>): Promise<HttpResult>;
}

/**
 * Declares a route with its types inferred from the schemas.
 *
 * @example
 * ```ts
 * export const health = defineRoute({ method: 'GET', path: '/health', group: 'log', summary: 'liveness',
 *   run: async () => ({ statusCode: 200, body: { status: 'healthy' } }) });
 * ```
 */
export function defineRoute<B = undefined, Q = Record<string, string>, P = Record<string, string>>(
  def: RouteDef<B, Q, P>,
): RouteDef {
  return def as unknown as RouteDef;
}
