/**
 * UUIDv7s (RFC 9562) for the client and the server alike: the server imports this module
 * (`server/core/ids.ts`), so the packed client carries it and needs nothing of the server.
 *
 * Layout: 48 bits of Unix milliseconds, the version, a 26-bit counter (RFC 9562 §6.2, method 1:
 * `rand_a` and the top of `rand_b`), the variant, then 48 random bits.
 * - Within a process, ids minted with the same millisecond strictly increase: the counter is
 *   seeded at random below 2^25 each new millisecond and counts up, so 33 million ids fit in a
 *   millisecond before it borrows the next one.
 * - Across processes (many Lambdas at once) ids are unique by their randomness: the counter's
 *   random seed and the 48 random bits. No caller treats an id as a secret: the server's
 *   capabilities (lease ids) are bytes of {@link randomFromPool}, and transaction ids may be the
 *   client's own.
 */
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

const COUNTER_MAX = 0x3ff_ffff; // 26 bits
let lastMs = -1;
let counter = 0;

/** The pool's next `n` bytes' offset, refilling it first when fewer are left. */
function take(n: number): number {
  if (poolPos + n > pool.length) {
    randomFillSync(pool);
    poolPos = 0;
  }
  const at = poolPos;
  poolPos += n;
  return at;
}

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
 * A UUIDv7 carrying `now`'s millisecond: ids minted later in this process sort later, and ids of
 * the same millisecond strictly increase. Without `now`, the wall clock is used, held from going
 * back within the process (a clock stepped back does not reorder ids); a `now` that is given is
 * carried as given, earlier or not (the server passes its injectable clock).
 *
 * @example
 * ```ts
 * const a = uuidv7();
 * const b = uuidv7(); // b > a
 * uuidv7(0); // '00000000-0000-7…'
 * ```
 */
export function uuidv7(now: number = Math.max(Date.now(), lastMs)): string {
  const r = take(10);
  if (now === lastMs && counter < COUNTER_MAX) {
    counter++;
  } else {
    // A new millisecond, or the counter is spent and borrows the next one.
    if (now === lastMs) now++;
    lastMs = now;
    counter = pool.readUInt32BE(r) & 0x1ff_ffff; // below 2^25, so the counter has room
  }
  writeTime(now);
  bytes[6] = 0x70 | (counter >>> 22); // version 7, counter bits 25–22
  bytes[7] = counter >>> 14;
  bytes[8] = 0x80 | ((counter >>> 8) & 0x3f); // RFC 4122 variant, counter bits 13–8
  bytes[9] = counter;
  for (let i = 10; i < 16; i++) bytes[i] = pool[r + i - 6] as number;
  return render();
}

/**
 * A UUIDv7 of `now` whose other 74 bits are `rand`'s first 10 bytes (the version and variant
 * bits overwritten): the same arguments give the same id. For ids that must be derived, not
 * minted (the server's stamped pushes, `uuidv7Derived`).
 *
 * @example
 * ```ts
 * uuidv7Of(0, new Uint8Array(10)); // '00000000-0000-7000-8000-000000000000'
 * ```
 */
export function uuidv7Of(now: number, rand: Uint8Array): string {
  writeTime(now);
  for (let i = 0; i < 10; i++) bytes[6 + i] = rand[i] as number;
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
  const at = take(n);
  return Buffer.from(pool.subarray(at, at + n));
}
