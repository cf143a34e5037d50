import * as zlib from 'node:zlib';
import { promisify } from 'node:util';

/**
 * zstd, from `node:zlib` where the runtime has it (Node >= 22.15, so Lambda's `nodejs22.x`)
 * and from `@mongodb-js/zstd` otherwise (Node 20 locally). Both write standard zstd frames
 * that the `zstd` CLI reads, and both run on libuv's thread pool, off the event loop.
 */
export interface Zstd {
  readonly impl: 'node:zlib' | '@mongodb-js/zstd';
  compress(data: Uint8Array): Promise<Uint8Array>;
  decompress(data: Uint8Array): Promise<Uint8Array>;
}

/** Level 3, zstd's default: fast, with a good ratio on JSON lines (docs/BENCHMARKS.md, Segment codec). */
export const ZSTD_LEVEL = 3;

type ZlibWithZstd = typeof zlib & {
  zstdCompress?: (buf: Uint8Array, opts: object, cb: (err: Error | null, out: Buffer) => void) => void;
  zstdDecompress?: (buf: Uint8Array, cb: (err: Error | null, out: Buffer) => void) => void;
  constants: typeof zlib.constants & { ZSTD_c_compressionLevel?: number };
};

async function load(): Promise<Zstd> {
  const z = zlib as ZlibWithZstd;
  if (typeof z.zstdCompress === 'function' && typeof z.zstdDecompress === 'function') {
    const level = z.constants.ZSTD_c_compressionLevel;
    const c = promisify<Uint8Array, object, Buffer>(z.zstdCompress);
    const d = promisify<Uint8Array, Buffer>(z.zstdDecompress);
    const opts = level === undefined ? {} : { params: { [level]: ZSTD_LEVEL } };
    return { impl: 'node:zlib', compress: (b) => c(b, opts), decompress: (b) => d(b) };
  }
  // Not bundled for Lambda (nodejs22.x has zlib zstd); a native module there would need the
  // Lambda architecture's binary.
  const m = (await import('@mongodb-js/zstd')) as {
    compress(b: Buffer, level?: number): Promise<Buffer>;
    decompress(b: Buffer): Promise<Buffer>;
  };
  const buf = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));
  return {
    impl: '@mongodb-js/zstd',
    compress: (b) => m.compress(buf(b), ZSTD_LEVEL),
    decompress: (b) => m.decompress(buf(b)),
  };
}

let loaded: Promise<Zstd> | undefined;
/** The process-wide zstd implementation, loaded once. */
export const zstd = (): Promise<Zstd> => (loaded ??= load());

const MAGIC = 0xfd2fb528;
/** zstd's largest block. */
const MAX_BLOCK = 128 * 1024;

/**
 * A standard zstd frame holding `data` uncompressed (raw blocks, content size in the header, no
 * checksum): what a compressor call is not worth for a small segment. Every zstd decoder reads
 * it (`zstd -d` included); {@link readRawZstdFrame} reads it without one.
 *
 * @example
 * ```ts
 * const frame = rawZstdFrame(Buffer.from('{"a":1}')); // 6-byte header, 3-byte block header, the bytes
 * ```
 */
export function rawZstdFrame(data: Uint8Array): Uint8Array {
  const n = data.length;
  // Single segment (no window descriptor); content size in 1, 2 (minus 256) or 4 bytes.
  const fcs = n < 256 ? 1 : n < 65_536 + 256 ? 2 : 4;
  const blocks = Math.max(1, Math.ceil(n / MAX_BLOCK));
  const out = Buffer.allocUnsafe(4 + 1 + fcs + blocks * 3 + n);
  out.writeUInt32LE(MAGIC, 0);
  out[4] = ((fcs === 1 ? 0 : fcs === 2 ? 1 : 2) << 6) | (1 << 5);
  if (fcs === 1) out[5] = n;
  else if (fcs === 2) out.writeUInt16LE(n - 256, 5);
  else out.writeUInt32LE(n, 5);
  let at = 5 + fcs;
  for (let b = 0; b < blocks; b++) {
    const size = Math.min(MAX_BLOCK, n - b * MAX_BLOCK);
    const last = b === blocks - 1 ? 1 : 0;
    out.writeUIntLE((size << 3) | last, at, 3); // block type 0: raw
    at += 3;
    out.set(data.subarray(b * MAX_BLOCK, b * MAX_BLOCK + size), at);
    at += size;
  }
  return out;
}

/**
 * The content of a frame written by {@link rawZstdFrame} (a single-segment frame of raw
 * blocks only), or `undefined` for any other frame, which needs a real decoder.
 *
 * @example
 * ```ts
 * readRawZstdFrame(rawZstdFrame(bytes)); // bytes
 * ```
 */
export function readRawZstdFrame(frame: Uint8Array): Uint8Array | undefined {
  const f = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  if (f.length < 8 || f.readUInt32LE(0) !== MAGIC) return undefined;
  const fhd = f[4] as number;
  // Single segment, no checksum, no dictionary: the only header rawZstdFrame writes.
  if ((fhd & 0x3f) !== 0x20) return undefined;
  const fcsFlag = fhd >> 6;
  if (fcsFlag === 3) return undefined;
  const fcs = [1, 2, 4][fcsFlag] as number;
  const size = fcs === 1 ? (f[5] as number) : fcs === 2 ? f.readUInt16LE(5) + 256 : f.readUInt32LE(5);
  const parts: Uint8Array[] = [];
  let at = 5 + fcs;
  for (;;) {
    if (at + 3 > f.length) return undefined;
    const h = f.readUIntLE(at, 3);
    if (((h >> 1) & 3) !== 0) return undefined; // not a raw block
    const len = h >>> 3;
    at += 3;
    if (at + len > f.length) return undefined;
    parts.push(f.subarray(at, at + len));
    at += len;
    if (h & 1) break;
  }
  if (at !== f.length) return undefined;
  const out = parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts);
  return out.length === size ? out : undefined;
}
