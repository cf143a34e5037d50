/**
 * The source-maps bench (bench/source-maps.ts) measures the stack's bundles only if it gives
 * esbuild what `cdk synth` gives it: these pin its translation of BUNDLING.
 */
import { describe, expect, it } from 'vitest';
import { bundlingOptions } from '../../bench/source-maps.js';

describe('source-maps bench: bundling options', () => {
  it('builds the stack bundle: one minified ES module, a linked map without sources', () => {
    const options = bundlingOptions('/repo/server/entry/log.ts', '/tmp/out');
    expect(options).toMatchObject({
      bundle: true,
      platform: 'node',
      target: 'node22',
      format: 'esm',
      outfile: '/tmp/out/index.mjs',
      minify: true,
      sourcemap: 'linked',
      sourcesContent: false,
      external: ['@mongodb-js/zstd', 'better-sqlite3'],
      mainFields: ['module', 'main'],
    });
    expect(options.banner?.js).toContain('createRequire');
  });
});
