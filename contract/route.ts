/**
 * A route as data: its method and path, which Lambda function serves it, the grant it needs,
 * one zod schema per request part, and one per answer it gives, keyed by status. The server
 * implements each (`server/http/handlers/`, `implement`); the stack deploys them by method,
 * path and group (`lib/`); the OpenAPI document is generated from them.
 *
 * Request schemas are what the server parses with (their transforms included: a query string
 * integer comes out a number). Answer schemas describe the JSON the server writes, exactly
 * where it is fully known (`.strict()`); only user payloads are `z.unknown()`.
 *
 * @example
 * ```ts
 * export const health = route({ method: 'GET', path: '/health', group: 'log', summary: 'Liveness.',
 *   access: { action: 'public' }, response: { 200: z.object({ status: z.string() }) } });
 * ```
 */
import type { z } from 'zod';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Which Lambda function serves a route (each gets only the permissions its routes need). */
export type FunctionGroup = 'log' | 'leases' | 'claims' | 'admin';

/** Permission a route needs on a queue. */
export type Action = 'push' | 'consume' | 'manage' | 'public';

/** A text answer (not JSON) of a media type, such as Prometheus metrics. */
export interface TextAnswer {
  readonly mediaType: string;
  readonly schema: z.ZodType<string>;
}

/** What one status answers: a JSON body's schema, a text body, or nothing ({@link NO_BODY}). */
export type Answer = z.ZodType | TextAnswer | null;

/** The answer of a status without a body (204). */
export const NO_BODY = null;

/**
 * A text answer of `mediaType`.
 *
 * @example
 * ```ts
 * response: { 200: text('text/plain', z.string()) }
 * ```
 */
export const text = (mediaType: string, schema: z.ZodType<string>): TextAnswer => ({ mediaType, schema });

/** Whether an answer is a text one. */
export const isTextAnswer = (a: Answer): a is TextAnswer =>
  a !== null && typeof (a as Partial<TextAnswer>).mediaType === 'string';

/** The answers a route gives by status (its successes, and any other status it answers itself). */
export type Answers = Readonly<Partial<Record<number, Answer>>>;

/** A request part once its schema parsed it (`Absent` when the route has no schema for it). */
export type Parsed<S, Absent> = S extends z.ZodType ? z.output<S> : Absent;

/** The parsed request, as `access.queues` sees it. */
export interface ParsedInput<B, Q, P> {
  body: Parsed<B, undefined>;
  query: Parsed<Q, Record<string, string>>;
  params: Parsed<P, Record<string, string>>;
}

/** A request part: its schema, or undefined when the route takes none. */
export type Part = z.ZodType | undefined;

export interface RouteContract<B extends Part = Part, Q extends Part = Part, P extends Part = Part> {
  method: Method;
  /** API Gateway route syntax: `/api/v1/messages/{partitionId}/{transactionId}`. */
  path: string;
  group: FunctionGroup;
  /** One-line description for docs and the route listing. */
  summary: string;
  body?: B;
  query?: Q;
  params?: P;
  /**
   * What the call needs: `push`, `consume` or `manage` (docs/DEPLOYING.md, Grants), on the
   * queues `queues` names; `public` needs nothing (health). The server enforces it in one place
   * (`makeHandler`): every queue `queues` names must be granted; when it names none (absent, or
   * only `undefined`s), the caller must hold the action on some queue and the handler checks
   * each queue it learns while running.
   */
  access: {
    action: Action;
    queues?(input: ParsedInput<B, Q, P>): (string | undefined)[];
    /**
     * Other actions that also open the route (and its IAM policy): a caller who holds `action`
     * or one of these on some queue may call it, and the handler checks each queue it touches.
     * The queues `queues` names still need `action`. A transaction, say, needs `push` on the
     * queues it pushes to and `consume` on those it acks.
     */
    also?: readonly Exclude<Action, 'public'>[];
  };
  /** Every status `run` answers with, and what its body is; errors are the table's (errors.ts). */
  response: Answers;
}

/**
 * Declares a route, its parsed types inferred from its schemas.
 *
 * @example
 * ```ts
 * export const deleteQueue = route({ method: 'DELETE', path: '/api/v1/resources/queues/{queue}', group: 'admin',
 *   summary: 'Delete a queue.', params: z.object({ queue: nameSchema('queue') }),
 *   access: { action: 'manage', queues: ({ params }) => [params.queue] }, response: { 200: Deleted } });
 * ```
 */
export function route<B extends Part = undefined, Q extends Part = undefined, P extends Part = undefined>(
  def: RouteContract<B, Q, P>,
): RouteContract<B, Q, P> {
  return def;
}
