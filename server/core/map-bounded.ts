/**
 * A map over async work with a cap on how much of it is under way: the admin reads fan out
 * over queues, groups and partitions, and a bound keeps one request from opening a storage
 * request per item at once (DynamoDB throttles bursts; the embedded store serialises them
 * anyway), while still overlapping their latency.
 */

/**
 * `fn` over `items` with at most `limit` (at least 1) calls unfinished at once; the results
 * in the items' order. A rejection rejects the map at once; the other calls under way, and
 * the items after them, still run, and their results are dropped.
 *
 * @example
 * ```ts
 * const counts = await mapBounded(queues, 4, async (q) => (await directory.listPartitions(q)).length);
 * ```
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(Math.max(1, limit), items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i] as T);
      }
    }),
  );
  return out;
}
