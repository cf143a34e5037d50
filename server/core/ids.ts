import { randomFillSync } from 'node:crypto';

// Random bytes come from a pool refilled in bulk: one syscall per 1,024 ids instead of one
// per id, which was a visible share of a push's CPU time.
const POOL_IDS = 1024;
const pool = Buffer.allocUnsafe(10 * POOL_IDS);
let poolPos = pool.length;
const DIGITS = Buffer.from('0123456789abcdef');
// The id is written as ASCII into one buffer and read out as a flat string: built by
// concatenation it was a tree of string pieces that every later use (SQLite binding, JSON
// text, regex) had to flatten first, which cost more than making the id.
const text = Buffer.alloc(36, 0x2d); // dashes stay at 8, 13, 18 and 23
const bytes = new Uint8Array(16);
/** Where each of the 16 bytes' two hex digits go in the text. */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/** 48-bit big-endian milliseconds into bytes 0–5 (split: bitwise ops are 32-bit; Uint8Array keeps the low byte). */
function writeTime(now: number): void {
  const hi = Math.floor(now / 2 ** 32);
  const lo = now >>> 0;
  bytes[0] = hi >>> 8;
  bytes[1] = hi;
  bytes[2] = lo >>> 24;
  bytes[3] = lo >>> 16;
  bytes[4] = lo >>> 8;
  bytes[5] = lo;
}

/** The 16 bytes as the id's text. */
function render(): string {
  for (let i = 0; i < 16; i++) {
    const b = bytes[i] as number;
    const at = AT[i] as number;
    text[at] = DIGITS[b >>> 4] as number;
    text[at + 1] = DIGITS[b & 15] as number;
  }
  return text.toString('latin1', 0, 36);
}

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Time-ordered, so
 * ids minted later sort later, which keeps DynamoDB keys built from them append-mostly.
 *
 * @example
 * ```ts
 * uuidv7(); // '0193b1c2-7d4e-7a1b-9c3d-5e6f7a8b9c0d'
 * ```
 */
export function uuidv7(now: number = Date.now()): string {
  if (poolPos + 10 > pool.length) {
    randomFillSync(pool);
    poolPos = 0;
  }
  const r = poolPos;
  poolPos += 10;
  writeTime(now);
  bytes[6] = ((pool[r] as number) & 0x0f) | 0x70; // version 7
  bytes[7] = pool[r + 1] as number;
  bytes[8] = ((pool[r + 2] as number) & 0x3f) | 0x80; // RFC 4122 variant
  for (let i = 9; i < 16; i++) bytes[i] = pool[r + i - 6] as number;
  return render();
}

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
  writeTime(now);
  // The index goes into the seed's last four bytes (mod 2^32), so ids of one push differ.
  const idx = index >>> 0;
  for (let i = 0; i < 10; i++) bytes[6 + i] = seed[i] as number;
  const x =
    ((bytes[12] as number) << 24) |
    ((bytes[13] as number) << 16) |
    ((bytes[14] as number) << 8) |
    (bytes[15] as number);
  const y = ((x >>> 0) + idx) >>> 0;
  bytes[12] = y >>> 24;
  bytes[13] = y >>> 16;
  bytes[14] = y >>> 8;
  bytes[15] = y;
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  return render();
}

/**
 * `n` (≤ 64) random bytes from the same pool as {@link uuidv7}: a fresh copy, for ids such as
 * lease ids (`crypto.randomBytes` per id cost a pop more than the rest of an empty pop's work).
 *
 * @example
 * ```ts
 * randomFromPool(16).length; // 16
 * ```
 */
export function randomFromPool(n: number): Buffer {
  if (!(n > 0 && n <= 64)) throw new Error(`randomFromPool takes 1 to 64 bytes, got ${n}`);
  if (poolPos + n > pool.length) {
    randomFillSync(pool);
    poolPos = 0;
  }
  const out = Buffer.from(pool.subarray(poolPos, poolPos + n));
  poolPos += n;
  return out;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_RE.test(s);
