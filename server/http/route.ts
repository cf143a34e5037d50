import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { z } from 'zod';
import { SluiceError } from '../core/errors.js';
import { assertName } from '../core/names.js';
import { services, type Services } from '../service/runtime.js';
import { keptBodyBytes } from './body-bytes.js';
import { describeZodError, errorResponse } from './errors.js';
import { grantsFromEnv, type Grants } from './grants.js';
import { toJson } from '../codec/json-writer.js';
import type { HttpEvent, HttpResponse, HttpResult } from './types.js';

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
   * Authorization is enforced from this in one place, `makeHandler`: every queue `queues`
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

interface CompiledRoute {
  def: RouteDef;
  /** `METHOD /path/{template}`: the route's name in metrics and logs. */
  label: string;
  parts: { literal?: string; param?: string }[];
  /** Literal segments first: `/consumer-groups/lagging` beats `/consumer-groups/{group}`. */
  specificity: number;
}

function compile(def: RouteDef): CompiledRoute {
  const parts = def.path
    .split('/')
    .filter(Boolean)
    .map((seg) => {
      const m = /^\{([A-Za-z0-9_]+)\}$/.exec(seg);
      return m ? { param: m[1] as string } : { literal: seg };
    });
  const specificity = parts.reduce((n, p, i) => n + (p.literal !== undefined ? 2 ** (20 - i) : 0), 0);
  return { def, label: `${def.method} ${def.path}`, parts, specificity };
}

function decodeSegment(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    throw new SluiceError('invalid_request', `path segment ${JSON.stringify(seg)} is not valid percent-encoding`);
  }
}

/** Finds the route for a method and raw path; params are percent-decoded. */
export function matchRoute(
  routes: CompiledRoute[],
  method: string,
  rawPath: string,
): { route: CompiledRoute; params: Record<string, string> } | { allowed: Method[] } | undefined {
  const segments = rawPath.split('/').filter(Boolean);
  const allowed: Method[] = [];
  for (const r of routes) {
    if (r.parts.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < segments.length && ok; i++) {
      const part = r.parts[i]!;
      const segment = segments[i]!;
      if (part.literal !== undefined) ok = part.literal === segment;
      else params[part.param!] = decodeSegment(segment);
    }
    if (!ok) continue;
    if (r.def.method === method) return { route: r, params };
    allowed.push(r.def.method);
  }
  return allowed.length > 0 ? { allowed } : undefined;
}

/** The request body's bytes (decoded from base64 when API Gateway encoded it). */
function bodyBytes(event: HttpEvent): Buffer {
  const kept = keptBodyBytes(event);
  if (kept) return kept;
  const raw = event.body ?? '';
  return event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
}

/** Reads the request body as JSON, enforcing the size limit before parsing. */
function parseBody(event: HttpEvent, maxBytes: number): unknown {
  const raw = event.body;
  if (raw === undefined || raw === null || raw === '') return undefined;
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  // The exact byte count scans the whole body; three bytes per UTF-16 unit bounds it.
  const size = text.length * 3 <= maxBytes ? 0 : Buffer.byteLength(text);
  if (size > maxBytes) {
    throw new SluiceError('payload_too_large', `request body is ${size} bytes; the limit is ${maxBytes}`, {
      limit: maxBytes,
    });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new SluiceError(
      'invalid_json',
      `request body is not valid JSON: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

function validate<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return value as T;
  const r = schema.safeParse(value);
  if (!r.success) throw new SluiceError('invalid_request', describeZodError(r.error, where));
  return r.data;
}

function serialise(result: HttpResult): HttpResponse {
  const headers: Record<string, string> = { ...(result.headers ?? {}) };
  if (result.statusCode === 204 || result.body === undefined) return { statusCode: result.statusCode, headers };
  headers['content-type'] ??= 'application/json';
  return {
    statusCode: result.statusCode,
    headers,
    body:
      typeof result.body === 'string' ? result.body : result.raw ? toJson(result.body) : JSON.stringify(result.body),
  };
}

const jsonLog = {
  error(message: string, fields: Record<string, unknown>): void {
    console.error(JSON.stringify({ level: 'ERROR', message, ...fields, timestamp: new Date().toISOString() }));
  },
};

/**
 * What every API invocation ends with: its cost counters added to the metrics, and the metrics
 * written (one EMF line on Lambda). The cost bench ends its calls with it too, to log what a
 * function logs.
 *
 * @example
 * ```ts
 * endApiInvocation(services, 12.5); // ApiRequests 1, LambdaGbSeconds, DynamoDB units..., flushed
 * ```
 */
export function endApiInvocation(runtime: Services, ms: number): void {
  runtime.usage.record(runtime.telemetry, { apiRequest: true, ms });
  runtime.telemetry.flush?.();
}

/** One answered request, as the request log sees it. */
export interface RequestRecord {
  method: string;
  /** The route's template (`/api/v1/pop/queue/{queue}`), or the raw path when no route matched. */
  route: string;
  status: number;
  durationMs: number;
  principal: string;
  /** The first queue the request named, if it named one. */
  queue: string | undefined;
}

/** Receives every answered request (the local server's one JSON line per request). */
export type RequestLog = (r: RequestRecord) => void;

export interface HandlerOptions {
  services?: () => Promise<Services>;
  grants?: Grants;
  /** Called once per answered request; none by default (API Gateway keeps access logs on AWS). */
  requestLog?: RequestLog;
}

/** What one request's handling learnt, for the activity and the request log. */
interface Seen {
  /** When the invocation began (performance.now()), for its Lambda time. */
  started: number;
  route?: CompiledRoute;
  runtime?: Services;
  principal: string;
  queue?: string | undefined;
  meter?: HttpResult['meter'];
}

/**
 * One Lambda handler (API Gateway HTTP API, payload format 2.0) serving a set of routes.
 * Errors of any kind are turned into `{error, code}` bodies in one place ({@link errorResponse}).
 * Every answer is recorded in the process's activity (latency by route; the route's `meter`)
 * and handed to `requestLog` when there is one.
 */
export function makeHandler(routes: RouteDef[], options: HandlerOptions = {}) {
  const getServices = options.services ?? services;
  let grants = options.grants;
  const compiled = routes.map(compile).sort((a, b) => b.specificity - a.specificity);
  const base = async (
    event: HttpEvent,
    context: Context,
    invocation: { signal: AbortSignal },
  ): Promise<HttpResponse> => {
    const started = performance.now();
    const seen: Seen = { started, principal: principalOf(event) };
    let response: HttpResponse;
    try {
      response = await answer(event, context, invocation, seen);
    } catch (e) {
      response = serialise(errorResponse(e, jsonLog));
    }
    const status = response.statusCode ?? 200;
    const ms = performance.now() - started;
    if (seen.runtime && seen.route) {
      seen.runtime.activity.request(seen.route.label, status, ms / 1000);
      if (status < 400) seen.meter?.(seen.runtime.activity);
      // Once a minute: the finished minute's buckets go to storage (the series of every
      // process). Not after a refusal: a 4xx changes nothing stored.
      if (status < 400)
        await seen.runtime.activity
          .flushDue()
          .catch((e: unknown) =>
            jsonLog.error('activity flush failed (tried again after the next request)', { error: String(e) }),
          );
    }
    options.requestLog?.({
      method: event.requestContext.http.method,
      route: seen.route?.def.path ?? event.rawPath,
      status,
      durationMs: ms,
      principal: seen.principal,
      queue: seen.queue,
    });
    return response;
  };
  const answer = async (
    event: HttpEvent,
    _context: Context,
    invocation: { signal: AbortSignal },
    seen: Seen,
  ): Promise<HttpResponse> => {
    const method = event.requestContext.http.method.toUpperCase();
    const rawPath = event.rawPath;
    const m = matchRoute(compiled, method, rawPath);
    if (!m) throw new SluiceError('not_found', `no route for ${method} ${rawPath}`);
    if ('allowed' in m)
      throw new SluiceError(
        'method_not_allowed',
        `${method} is not allowed on ${rawPath}; use ${m.allowed.join(' or ')}`,
      );
    const runtime = await getServices();
    seen.route = m.route;
    seen.runtime = runtime;
    const def = m.route.def;
    const body = def.body
      ? validate(def.body, parseBody(event, runtime.config.maxBodyBytes), 'request body')
      : undefined;
    const query = validate(def.query, event.queryStringParameters ?? {}, 'query string');
    const params = validate(def.params, m.params, 'path');
    const principal = seen.principal;
    grants ??= grantsFromEnv();
    const enforced = grants;
    const authorize = (queue: string, action: Action = def.access.action): void => {
      if (action !== 'public') enforced.checkUnnamed(principal, action, queue);
    };
    const allowed = (queue: string, action: Action = def.access.action): boolean =>
      action === 'public' || enforced.allows(principal, action, queue);
    if (def.access.action !== 'public') {
      const named = (def.access.queues?.({ body, query, params }) ?? []).filter(
        (q): q is string => typeof q === 'string',
      );
      if (named.length === 0) {
        const alternatives = def.access.also ?? [];
        if (!alternatives.some((a) => enforced.allowsSome(principal, a)))
          enforced.checkSome(principal, def.access.action);
      }
      seen.queue = named[0];
      const unique = [...new Set(named)];
      // A name no queue can have is a bad request (400), whoever asks.
      for (const q of unique) assertName(q, 'queue');
      for (const q of unique) enforced.check(principal, def.access.action, q);
    }
    try {
      let signal: AbortSignal | undefined;
      const result = await def.run({
        principal,
        body,
        rawBody: () => bodyBytes(event),
        query,
        params,
        event,
        services: runtime,
        // Made on first use: only waiting routes read it, and it costs every request otherwise.
        get signal() {
          return (signal ??= AbortSignal.any([invocation.signal, runtime.shutdown]));
        },
        authorize,
        allowed,
      });
      seen.meter = result.meter;
      return serialise(result);
    } finally {
      endApiInvocation(runtime, performance.now() - seen.started);
    }
  };
  return middy<HttpEvent, HttpResponse>(base, { timeoutEarlyInMillis: 1000 }).use({
    onError: (request) => {
      request.response = serialise(errorResponse(request.error, jsonLog));
    },
  });
}
