/**
 * What the IAM policies users attach allow: `execute-api:Invoke` on the routes of each role,
 * derived from the route table (so a new route is covered by the right policy without edits).
 */
import type { Action, Method, RouteDef } from '../lambdas/http/route.js';

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

/** An API Gateway route path as an execute-api resource path: `{param}` becomes `*`. */
export const invokePath = (path: string): string => path.replace(/\{[^}/]+\}/g, '*');

/** The (method, resource path) pairs a role may invoke: its actions' routes plus public ones. */
export function routesForRole(role: ApiRole, routes: RouteDef[]): { method: Method; path: string }[] {
  const actions: readonly Action[] = [...API_ROLES[role], 'public'];
  const seen = new Set<string>();
  const out: { method: Method; path: string }[] = [];
  for (const r of routes) {
    if (![r.access.action, ...(r.access.also ?? [])].some((a) => actions.includes(a))) continue;
    const path = invokePath(r.path);
    const key = `${r.method} ${path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ method: r.method, path });
  }
  return out;
}
