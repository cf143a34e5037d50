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
