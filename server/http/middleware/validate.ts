/** Checks the body, query string and path parameters against the route's schemas (400 on the first failure). */
import type { z } from 'zod';
import { SluiceError } from '../../core/errors.js';
import { describeZodError } from '../errors.js';
import { stateOf, type ApiMiddleware } from './request-state.js';

function check<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return value as T;
  const r = schema.safeParse(value);
  if (!r.success) throw new SluiceError('invalid_request', describeZodError(r.error, where));
  return r.data;
}

/** @example `chain.use(parseJsonBody).use(validateInputs)` */
export const validateInputs: ApiMiddleware = {
  before: (request) => {
    const state = stateOf(request.event);
    const def = state.route!.def;
    state.body = def.body ? check(def.body, state.body, 'request body') : undefined;
    state.query = check(def.query, request.event.queryStringParameters ?? {}, 'query string');
    state.params = check(def.params, state.params, 'path');
  },
};
