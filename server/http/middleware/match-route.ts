/**
 * Finds the route a request is for (404 when no route has its path, 405 when only other
 * methods do) and the services that serve it.
 */
import { SluiceError } from '../../core/errors.js';
import type { Services } from '../../service/runtime.js';
import type { RouteDef } from '../route.js';
import { compileRoutes, matchRoute } from '../router.js';
import { stateOf, type ApiMiddleware } from './request-state.js';

/** @example `middy(run).use(meter(log)).use(serialise(log)).use(matchRoutes(ALL_ROUTES, services))` */
export function matchRoutes(routes: RouteDef[], getServices: () => Promise<Services>): ApiMiddleware {
  const compiled = compileRoutes(routes);
  return {
    before: async (request) => {
      const { event } = request;
      const method = event.requestContext.http.method.toUpperCase();
      const m = matchRoute(compiled, method, event.rawPath);
      if (!m) throw new SluiceError('not_found', `no route for ${method} ${event.rawPath}`);
      if ('allowed' in m)
        throw new SluiceError(
          'method_not_allowed',
          `${method} is not allowed on ${event.rawPath}; use ${m.allowed.join(' or ')}`,
        );
      const runtime = await getServices();
      const state = stateOf(event);
      state.route = m.route;
      state.runtime = runtime;
      state.params = m.params;
    },
  };
}
