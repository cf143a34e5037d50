/**
 * What the middlewares of one API request learn, shared along the chain: the route, the
 * services, the validated inputs, the caller's checks, and what the answer served. Keyed by
 * the event, because middy hands the handler the event, not the request.
 */
import type middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { Services } from '../../service/runtime.js';
import type { Action } from '../route.js';
import type { CompiledRoute } from '../router.js';
import type { HttpEvent, HttpResponse, HttpResult } from '../types.js';

export interface RequestState {
  /** When the invocation began (performance.now()), for its Lambda time. */
  started: number;
  principal: string;
  route?: CompiledRoute;
  runtime?: Services;
  /** Path parameters as matched (percent-decoded), then as validated. */
  params?: unknown;
  body?: unknown;
  query?: unknown;
  /** The first queue the request named, if it named one (the request log's). */
  queue?: string | undefined;
  authorize?: (queue: string, action?: Action) => void;
  allowed?: (queue: string, action?: Action) => boolean;
  /** Set once the route ran: its Lambda time, for the cost counters. */
  ranMs?: number;
  meter?: HttpResult['meter'];
}

/** A request on its way through the chain; the run step answers an `HttpResult`, `serialise` makes it a response. */
export type ApiRequest = middy.Request<HttpEvent, HttpResponse, Error, Context>;
export type ApiMiddleware = middy.MiddlewareObj<HttpEvent, HttpResponse, Error, Context>;

const states = new WeakMap<HttpEvent, RequestState>();

export const beginState = (event: HttpEvent, state: RequestState): RequestState => {
  states.set(event, state);
  return state;
};

/** The state `meter` began for this event (every chain starts with it). */
export function stateOf(event: HttpEvent): RequestState {
  const state = states.get(event);
  if (!state) throw new Error('no request state: the meter middleware must come first');
  return state;
}
