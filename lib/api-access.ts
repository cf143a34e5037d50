/**
 * What the IAM policies users attach allow: `execute-api:Invoke` on the routes of each role,
 * derived from the route table (so a new route is covered by the right policy without edits).
 *
 * The policies list resource patterns, not one ARN per route: a managed policy holds 6,144
 * characters, and one ARN per route (65+) overflows it in regions with long names. The patterns
 * are computed from the route table ({@link invokeResources}): the shortest method-and-path
 * prefixes that cover a role's routes and match no other route, where IAM's `*` matches any
 * run of characters, `/` included.
 *
 * @example
 * ```ts
 * invokeResources('Admin', CONTRACT).allow;    // ['*\/*']: every route is an Admin's
 * invokeResources('Consumer', CONTRACT).allow; // ['$default/GET/*', '$default/POST/api/v1/ack', ...]
 * ```
 */
import type { Action, Method, RouteContract } from '../contract/route.js';

/** The policies the stack publishes, and the route actions each one covers. */
export const API_ROLES = {
  /** Push to queues (transactions included: routes whose `access.also` names an action count for it too). */
  Producer: ['push'],
  /** Pop, ack (transactions included), renew, claim, read, replay. */
  Consumer: ['consume'],
  /** Everything, including configuration, deletion and group management. */
  Admin: ['push', 'consume', 'manage'],
} as const satisfies Record<string, readonly Exclude<Action, 'public'>[]>;
export type ApiRole = keyof typeof API_ROLES;

/**
 * The HTTP API's one stage. Policies name it rather than `*`: a `*` in the stage would also
 * match across the method (`*\/GET/*` matches `$default/POST/api/v1/queues/GET/...`).
 */
export const API_STAGE = '$default';

/** An API Gateway route path as an execute-api resource path: `{param}` becomes `*`. */
export const invokePath = (path: string): string => path.replace(/\{[^}/]+\}/g, '*');

/** Whether a route is open to `role`: its actions include one of the role's, or it is public. */
export function opensTo(role: ApiRole, route: RouteContract): boolean {
  const actions: readonly Action[] = [...API_ROLES[role], 'public'];
  return [route.access.action, ...(route.access.also ?? [])].some((a) => actions.includes(a));
}

/** The (method, resource path) pairs a role may invoke: its actions' routes plus public ones. */
export function routesForRole(role: ApiRole, routes: readonly RouteContract[]): { method: Method; path: string }[] {
  const seen = new Set<string>();
  const out: { method: Method; path: string }[] = [];
  for (const r of routes) {
    if (!opensTo(role, r)) continue;
    const path = invokePath(r.path);
    const key = `${r.method} ${path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ method: r.method, path });
  }
  return out;
}

/**
 * Whether two patterns in which `*` matches any run of characters (IAM's resource wildcard,
 * which crosses `/`) match some string in common.
 *
 * @example
 * ```ts
 * globsOverlap('POST/api/v1/queues/*', 'POST/api/v1/queues/*\/seek'); // true
 * globsOverlap('POST/api/v1/ack', 'POST/api/v1/ack/*');              // false
 * ```
 */
export function globsOverlap(a: string, b: string): boolean {
  const memo = new Map<number, boolean>();
  const star = (c: string | undefined): boolean => c === '*' || c === SEGMENT;
  // A SEGMENT star stands for one path parameter as a caller sends it: no `/` in it.
  const go = (i: number, j: number): boolean => {
    const key = i * (b.length + 1) + j;
    const known = memo.get(key);
    if (known !== undefined) return known;
    const [x, y] = [a[i], b[j]];
    let r: boolean;
    if (x === undefined && y === undefined) r = true;
    else if (star(x) && star(y)) r = go(i + 1, j) || go(i, j + 1);
    else if (star(x)) r = go(i + 1, j) || (y !== undefined && !(x === SEGMENT && y === '/') && go(i, j + 1));
    else if (star(y)) r = go(i, j + 1) || (x !== undefined && !(y === SEGMENT && x === '/') && go(i + 1, j));
    else r = x !== undefined && x === y && go(i + 1, j + 1);
    memo.set(key, r);
    return r;
  };
  return go(0, 0);
}

/** Marks a path parameter that cannot hold `/` (a request API Gateway routes), inside {@link globsOverlap}. */
const SEGMENT = '\u0000';

/**
 * The execute-api resources (after `arn:…:execute-api:<region>:<account>:<apiId>/`) of the
 * policy for `role`. `allow`: `*\/*` when every route is the role's; else per method, for each
 * of the role's routes the shortest prefix ending at a `/` (then `*`) that overlaps none of the
 * routes of that method the role may not call, or the route itself when none does; prefixes
 * that another one covers are dropped. A path parameter counts as `*` on both sides, so no
 * parameter value (not even one with `/` in it) reaches a route the role may not call.
 *
 * `deny`: the routes the role may not call that even an allowed route's own pattern overlaps
 * (`GET …/queues/*` overlaps a later `GET …/queues/*\/secrets`), for an explicit Deny. Throws
 * when such a Deny would in turn overlap one of the role's routes: the route table then cannot
 * be expressed in IAM patterns, and a path must change.
 */
export function invokeResources(role: ApiRole, routes: readonly RouteContract[]): { allow: string[]; deny: string[] } {
  const allowed = routesForRole(role, routes);
  const denied = routes.filter((r) => !opensTo(role, r)).map((r) => ({ method: r.method, path: invokePath(r.path) }));
  if (denied.length === 0) return { allow: ['*/*'], deny: [] };
  const resource = (method: string, path: string): string => `${API_STAGE}/${method}${path}`;
  const chosen: string[] = [];
  const deny = new Set<string>();
  for (const { method, path } of allowed) {
    const others = denied.filter((d) => d.method === method).map((d) => resource(d.method, d.path));
    const prefixes = [...path.matchAll(/\//g)].map((m) => `${path.slice(0, m.index + 1)}*`);
    const pick = [...prefixes, path]
      .map((p) => resource(method, p))
      .find((p) => !others.some((d) => globsOverlap(p, d)));
    const own = resource(method, path);
    chosen.push(pick ?? own);
    if (!pick) for (const d of others) if (globsOverlap(own, d)) deny.add(d);
  }
  // A Deny must not refuse a request the role's routes serve (parameters without `/` in them).
  for (const d of deny) {
    const clash = allowed.find((a) => globsOverlap(d, resource(a.method, a.path.replace(/\*/g, SEGMENT))));
    if (clash)
      throw new Error(
        `the ${role} policy cannot allow ${clash.method} ${clash.path} without ${d} (or deny ${d} without it): ` +
          'IAM patterns cannot tell these routes apart; change one of the paths',
      );
  }
  const unique = [...new Set(chosen)];
  const covers = (wide: string, narrow: string): boolean =>
    wide !== narrow && wide.endsWith('*') && narrow.startsWith(wide.slice(0, -1));
  return { allow: unique.filter((p) => !unique.some((q) => covers(q, p))), deny: [...deny] };
}
