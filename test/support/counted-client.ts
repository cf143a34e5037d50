/**
 * A client whose requests are counted by `METHOD /path` (pops as `GET pop`, lease extensions as
 * `POST extend`), retrying briefly: for tests that pin how many requests a client call makes.
 *
 * @example
 * ```ts
 * const { sluice, count } = countedClient(local.url);
 * await sluice.queue('q').push([1]);
 * expect(count('POST /api/v1/push')).toBe(1);
 * ```
 */
import { Sluice, type SluiceOptions } from '../../client/index.js';

export function countedClient(
  endpoint: string,
  opts: SluiceOptions = {},
): { sluice: Sluice; count: (key: string) => number; requests: Map<string, number> } {
  const requests = new Map<string, number>();
  const count = (key: string): number => requests.get(key) ?? 0;
  const sluice = new Sluice({
    endpoint,
    retry: { attempts: 2, baseDelayMs: 10 },
    ...opts,
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const path = url.pathname.startsWith('/api/v1/pop/')
        ? 'pop'
        : url.pathname.startsWith('/api/v1/lease/')
          ? 'extend'
          : url.pathname;
      const key = `${init?.method ?? 'GET'} ${path}`;
      requests.set(key, count(key) + 1);
      return fetch(input, init);
    },
  });
  return { sluice, count, requests };
}
