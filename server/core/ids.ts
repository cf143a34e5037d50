/**
 * The server's ids. {@link uuidv7} and {@link randomFromPool} are the client's
 * (`client/uuid.ts`, one implementation for both, which states their guarantees); what only the
 * server needs is here.
 */
import { uuidv7Of } from '../../client/uuid.js';

export { randomFromPool, uuidv7 } from '../../client/uuid.js';

const derived = new Uint8Array(10);

/**
 * A UUIDv7 whose "random" bits are derived from `seed` (10 or more bytes) and `index`: the same
 * arguments give the same id. A stamped push (`(producerId, sequence)`) mints its message ids
 * this way, so a retry of it answers with the ids the first attempt stored.
 *
 * @example
 * ```ts
 * uuidv7Derived(at, seed, 3) === uuidv7Derived(at, seed, 3); // true
 * ```
 */
export function uuidv7Derived(now: number, seed: Uint8Array, index: number): string {
  // The index goes into the seed's last four bytes (mod 2^32), so ids of one push differ.
  for (let i = 0; i < 10; i++) derived[i] = seed[i] as number;
  const x =
    ((derived[6] as number) << 24) |
    ((derived[7] as number) << 16) |
    ((derived[8] as number) << 8) |
    (derived[9] as number);
  const y = ((x >>> 0) + (index >>> 0)) >>> 0;
  derived[6] = y >>> 24;
  derived[7] = y >>> 16;
  derived[8] = y >>> 8;
  derived[9] = y;
  return uuidv7Of(now, derived);
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_RE.test(s);
