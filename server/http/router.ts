/**
 * Route matching, compiled once per handler: a route's path template becomes its segments, and
 * routes are tried with literal segments first (`/consumer-groups/lagging` beats
 * `/consumer-groups/{group}`), as API Gateway selects among its routes.
 *
 * @example
 * ```ts
 * const routes = compileRoutes(ALL_ROUTES);
 * matchRoute(routes, 'GET', '/api/v1/pop/queue/orders'); // { route, params: { queue: 'orders' } }
 * ```
 */
import { SluiceError } from '../core/errors.js';
import type { Method, RouteDef } from './route.js';

export interface CompiledRoute {
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

/** The routes in the order {@link matchRoute} tries them. */
export const compileRoutes = (routes: RouteDef[]): CompiledRoute[] =>
  routes.map(compile).sort((a, b) => b.specificity - a.specificity);

function decodeSegment(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    throw new SluiceError('invalid_request', `path segment ${JSON.stringify(seg)} is not valid percent-encoding`);
  }
}

/**
 * Finds the route for a method and raw path; params are percent-decoded. When only other
 * methods match the path, answers which (for a 405).
 */
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
