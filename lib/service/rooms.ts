/**
 * How `SluiceService` is divided: one module per concern in `lib/service/` — `storage.ts`
 * (tables, bucket, payload key), `functions.ts` (functions, roles, schedules), `http-api.ts`
 * (API, authorizers, routes, grants and the policies callers attach), `alarms.ts` (alarms,
 * dashboard) — beside the notifications construct (`lib/notifications.ts`).
 *
 * Each room is a function that builds in the service's own scope, not a child construct: a
 * child's id would join every construct path under it, and so every logical id, and
 * CloudFormation replaces a resource whose logical id changes (a replaced table is lost data).
 * `npx tsx scripts/compare-templates.ts <rev>` says whether a change to lib/ left every
 * template, synth message and construct path as it was.
 *
 * @example
 * ```ts
 * new dynamodb.Table(scope, `${capitalise('log')}Table`, { ... }); // the id `LogTable`
 * ```
 */

/** `log` → `Log`: construct ids are a table's or function's name, capitalised, and a kind (`LogTable`, `LogRole`). */
export function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
