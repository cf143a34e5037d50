/**
 * Enforces a route's `access` declaration (docs/DEPLOYING.md, Grants): every queue the route
 * names needs the route's action; a route that names none needs the action (or one of its
 * `also` alternatives) on some queue, and its handler checks each queue it touches with the
 * `authorize` this leaves in the state. A name no queue can have is a 400, whoever asks.
 */
import { assertName } from '../../core/names.js';
import { grantsFromEnv, type Grants } from '../grants.js';
import type { Action } from '../route.js';
import { stateOf, type ApiMiddleware } from './request-state.js';

/** @example `chain.use(validateInputs).use(authorizeCaller(Grants.open()))` */
export function authorizeCaller(configured?: Grants): ApiMiddleware {
  let grants = configured;
  return {
    before: (request) => {
      const state = stateOf(request.event);
      const def = state.route!.def;
      const { principal, body, query, params } = state;
      // From the environment on first use, so building a handler (at import) reads none.
      grants ??= grantsFromEnv();
      const enforced = grants;
      state.authorize = (queue: string, action: Action = def.access.action): void => {
        if (action !== 'public') enforced.checkUnnamed(principal, action, queue);
      };
      state.allowed = (queue: string, action: Action = def.access.action): boolean =>
        action === 'public' || enforced.allows(principal, action, queue);
      if (def.access.action === 'public') return;
      const named = (def.access.queues?.({ body, query, params }) ?? []).filter(
        (q): q is string => typeof q === 'string',
      );
      if (named.length === 0) {
        const alternatives = def.access.also ?? [];
        if (!alternatives.some((a) => enforced.allowsSome(principal, a)))
          enforced.checkSome(principal, def.access.action);
      }
      state.queue = named[0];
      const unique = [...new Set(named)];
      for (const q of unique) assertName(q, 'queue');
      for (const q of unique) enforced.check(principal, def.access.action, q);
    },
  };
}
