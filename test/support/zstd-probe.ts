/**
 * Which zstd the code in this process runs, seen from outside it: calls into `node:zlib`'s zstd
 * functions are counted, and imports of `@mongodb-js/zstd` (what server/codec/zstd.ts falls
 * back to where `node:zlib` has no zstd) are recorded. Made for the Lambda bundles, whose copy
 * of the codec module is inlined into each `index.mjs` and cannot be asked: what they call is
 * what can be observed.
 *
 * Needs Node >= 22.15 (zstd in `node:zlib`, `module.registerHooks`): it is meant for the Node 22
 * child of test/support/node22.ts, not for the Node 20 test process.
 */
import nodeModule, { createRequire, syncBuiltinESMExports } from 'node:module';
import type { Zstd } from '../../server/codec/zstd.js';

/** The library server/codec/zstd.ts imports where `node:zlib` has no zstd. */
const FALLBACK = '@mongodb-js/zstd';

/** What the observed code did since {@link watchZstd}. */
export interface ZstdUse {
  /**
   * The codec it ran: `node:zlib` when it called `node:zlib`'s zstd and never imported the
   * fallback, the fallback's name when it imported that and never called `node:zlib`, `none`
   * when it did neither, `mixed` when both.
   */
  codec: Zstd['impl'] | 'none' | 'mixed';
  /** Calls to `zstdCompress` / `zstdCompressSync` of `node:zlib`. */
  zlibCompressCalls: number;
  /** Calls to `zstdDecompress` / `zstdDecompressSync` of `node:zlib`. */
  zlibDecompressCalls: number;
  /** Resolutions of the fallback's module specifier. */
  fallbackImports: number;
}

type Fn = (...args: unknown[]) => unknown;
interface ResolveHooks {
  resolve(specifier: string, context: unknown, next: (specifier: string, context: unknown) => unknown): unknown;
}

/**
 * Starts observing and returns a reader of what was seen. Call it before the code to observe
 * first compresses: the codec module takes its reference to `node:zlib`'s functions then.
 *
 * @example
 * ```ts
 * const used = watchZstd();
 * await import(bundle); // … and let it push and pop
 * used(); // { codec: 'node:zlib', zlibCompressCalls: 1, zlibDecompressCalls: 1, fallbackImports: 0 }
 * ```
 */
export function watchZstd(): () => ZstdUse {
  const zlib = createRequire(import.meta.url)('node:zlib') as Record<string, Fn | undefined>;
  // Not in @types/node@20, which this project builds against.
  const { registerHooks } = nodeModule as unknown as { registerHooks?: (hooks: ResolveHooks) => void };
  if (typeof zlib['zstdCompress'] !== 'function' || typeof registerHooks !== 'function')
    throw new Error(
      `watchZstd needs Node >= 22.15 (zstd in node:zlib, module.registerHooks); this is ${process.version}`,
    );
  const calls = { compress: 0, decompress: 0 };
  const count = (name: string, kind: keyof typeof calls): void => {
    const original = zlib[name];
    if (typeof original !== 'function') return;
    zlib[name] = function (this: unknown, ...args: unknown[]) {
      calls[kind]++;
      return original.apply(this, args);
    };
  };
  count('zstdCompress', 'compress');
  count('zstdCompressSync', 'compress');
  count('zstdDecompress', 'decompress');
  count('zstdDecompressSync', 'decompress');
  // The bundles read node:zlib through an ES module namespace (`import * as z from "node:zlib"`):
  // this carries the replaced functions over to it.
  syncBuiltinESMExports();
  let fallbackImports = 0;
  registerHooks({
    resolve(specifier, context, next) {
      if (specifier === FALLBACK || specifier.startsWith(`${FALLBACK}/`)) fallbackImports++;
      return next(specifier, context);
    },
  });
  return () => {
    const zlibUsed = calls.compress + calls.decompress > 0;
    return {
      codec:
        zlibUsed && fallbackImports > 0 ? 'mixed' : zlibUsed ? 'node:zlib' : fallbackImports > 0 ? FALLBACK : 'none',
      zlibCompressCalls: calls.compress,
      zlibDecompressCalls: calls.decompress,
      fallbackImports,
    };
  };
}
