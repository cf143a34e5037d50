/**
 * One Lambda handler (API Gateway HTTP API, payload format 2.0) serving a set of routes: the
 * route's `run` behind a chain of single-purpose middy middlewares, in this order —
 *
 *   meter → serialise → match route → parse body → validate → authorize → run
 *
 * `before` steps run left to right; on the way back `serialise` makes the answer (or the error's
 * `{error, code}` body) a response, then `meter` counts it and writes the request log. The run
 * step ends the invocation's cost counters (`endApiInvocation`), as every API invocation does.
 */
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { services, type Services } from '../service/runtime.js';
import { MemoryTelemetry } from '../service/telemetry.js';
import type { Grants } from './grants.js';
import { authorizeCaller } from './middleware/authorize.js';
import { matchRoutes } from './middleware/match-route.js';
import { meter, type RequestLog } from './middleware/meter.js';
import { parseJsonBody, requestBodyBytes } from './middleware/parse-body.js';
import { stateOf, type ApiMiddleware } from './middleware/request-state.js';
import { serialise } from './middleware/serialise.js';
import { validateInputs } from './middleware/validate.js';
import type { Action, RouteDef } from './route.js';
import type { HttpEvent, HttpResponse, HttpResult } from './types.js';

export type { RequestLog, RequestRecord } from './middleware/meter.js';

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

export interface HandlerOptions {
  services?: () => Promise<Services>;
  grants?: Grants;
  /** Called once per answered request; none by default (API Gateway keeps access logs on AWS). */
  requestLog?: RequestLog;
  /**
   * A step that sees each serialised answer before `meter` does: the tests' response
   * validation (test/support/check-answers.ts). Never set in production or the bench.
   */
  answerCheck?: ApiMiddleware;
}

/** The route's own step: its `run`, given what the chain validated and checked. */
async function runRoute(event: HttpEvent, _context: Context, invocation: { signal: AbortSignal }): Promise<HttpResult> {
  const state = stateOf(event);
  const def = state.route!.def;
  const runtime = state.runtime!;
  try {
    let signal: AbortSignal | undefined;
    const result = await def.run({
      principal: state.principal,
      body: state.body,
      rawBody: () => requestBodyBytes(event),
      query: state.query,
      params: state.params,
      event,
      services: runtime,
      // Made on first use: only waiting routes read it, and it costs every request otherwise.
      get signal() {
        return (signal ??= AbortSignal.any([invocation.signal, runtime.shutdown]));
      },
      authorize: state.authorize as (queue: string, action?: Action) => void,
      allowed: state.allowed as (queue: string, action?: Action) => boolean,
    });
    state.meter = result.meter;
    return result;
  } finally {
    endApiInvocation(runtime, performance.now() - state.started);
  }
}

/**
 * @example
 * ```ts
 * export const handler = makeHandler(routesOf('log'));
 * ```
 */
/** An API handler; tests and the local server may pass a partial context (middy reads only its clock, when present). */
export type ApiHandler = (event: HttpEvent, context?: Partial<Context>) => Promise<HttpResponse>;

export function makeHandler(routes: RouteDef[], options: HandlerOptions = {}): ApiHandler {
  // The run step answers an HttpResult; `serialise` makes it the HttpResponse the chain returns.
  const run = runRoute as unknown as (e: HttpEvent, c: Context, o: { signal: AbortSignal }) => Promise<HttpResponse>;
  const chain = middy<HttpEvent, HttpResponse>(run, { timeoutEarlyInMillis: 1000 }).use(meter(options.requestLog));
  if (options.answerCheck) chain.use(options.answerCheck);
  return (
    chain
      // Errors are logged through the services' telemetry; when building the services failed,
      // there is none, and the error goes out as a JSON line on stderr (CloudWatch on Lambda).
      .use(serialise(new MemoryTelemetry()))
      .use(matchRoutes(routes, options.services ?? services))
      .use(parseJsonBody)
      .use(validateInputs)
      .use(authorizeCaller(options.grants)) as ApiHandler
  );
}
