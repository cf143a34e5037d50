/**
 * First in every chain, last to finish: starts the request's state (its clock, the caller) and,
 * once `serialise` made the answer, counts it in the process's activity (latency by route; the
 * route's own `meter` on success), flushes a finished minute to storage, and hands the request
 * log its record. A refusal (4xx) is counted but flushes nothing: it changed nothing stored. A
 * failed flush is logged through the services' telemetry.
 */
import { principalOf } from '../route.js';
import { beginState, stateOf, type ApiMiddleware, type ApiRequest } from './request-state.js';

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

/**
 * @example
 * ```ts
 * middy(run).use(meter((r) => lines.push(`${r.route} ${r.status}`))).use(serialise(log));
 * ```
 */
export function meter(requestLog?: RequestLog): ApiMiddleware {
  const end = async (request: ApiRequest): Promise<void> => {
    const state = stateOf(request.event);
    const status = request.response?.statusCode ?? 200;
    const ms = performance.now() - state.started;
    const { runtime, route } = state;
    if (runtime && route) {
      runtime.activity.request(route.label, status, ms / 1000);
      if (status < 400) {
        state.meter?.(runtime.activity);
        // Once a minute: the finished minute's buckets go to storage (the series of every process).
        await runtime.activity
          .flushDue()
          .catch((e: unknown) =>
            runtime.telemetry.error('activity flush failed (tried again after the next request)', { error: String(e) }),
          );
      }
    }
    requestLog?.({
      method: request.event.requestContext.http.method,
      route: route?.def.path ?? request.event.rawPath,
      status,
      durationMs: ms,
      principal: state.principal,
      queue: state.queue,
    });
  };
  return {
    before: (request) => {
      beginState(request.event, { started: performance.now(), principal: principalOf(request.event) });
    },
    after: end,
    onError: end,
  };
}
