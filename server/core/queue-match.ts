/**
 * The order in which a namespace/task pop tries the queues it matches (docs/LEASES.md,
 * "Pops by namespace and task"): highest `priority` first; among queues of equal priority,
 * round-robin — the tier starts after the queue that served the previous pop of this
 * (selector, group) in this process, so queues with work take turns whatever their names.
 *
 * @example
 * ```ts
 * const qs = [{ name: 'a', priority: 5 }, { name: 'b', priority: 1 }, { name: 'c', priority: 1 }];
 * popOrder(qs, undefined); // ['a', 'b', 'c']
 * popOrder(qs, 'b'); // ['a', 'c', 'b']
 * ```
 */
export function popOrder(
  queues: readonly { name: string; priority: number }[],
  lastServed: string | undefined,
): string[] {
  const sorted = [...queues].sort(
    (a, b) => b.priority - a.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  const out: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (
      j < sorted.length &&
      (sorted[j] as { priority: number }).priority === (sorted[i] as { priority: number }).priority
    )
      j++;
    const tier = sorted.slice(i, j).map((q) => q.name);
    const at = lastServed !== undefined && tier.includes(lastServed) ? tier.indexOf(lastServed) + 1 : 0;
    out.push(...tier.slice(at), ...tier.slice(0, at));
    i = j;
  }
  return out;
}
