/**
 * A synthesized assembly's Lambda bundles behind the simulated gateway (test/support/gateway.ts),
 * served from this process: test/cdk/bundles.test.ts runs it on Node 22, Lambda's runtime, to
 * see the bundles take `node:zlib`'s zstd, a path the Node 20 test process cannot reach.
 * startBundleChild (test/support/node22.ts) builds it into one ES module with esbuild and starts
 * that with an IPC channel:
 *
 *   node cdk.out/bundle-test-child.mjs <assembly dir> <stack name>
 *
 * The environment is the functions' (tables, bucket, endpoints). Once it listens it sends
 * {@link BundleChildReady}; it answers `'zstd-use'` with a {@link BundleChildZstdUse}. It runs
 * until killed or until its parent goes (the channel closes).
 */
import { zstd, type Zstd } from '../../server/codec/zstd.js';
import { startLocalServer } from '../../server/local/server.js';
import { loadBundle, readAssembly, simulatedGateway } from './gateway.js';
import { watchZstd, type ZstdUse } from './zstd-probe.js';

/** The child's first message. */
export interface BundleChildReady {
  ready: {
    /** Where the gateway listens. */
    url: string;
    /** `process.version`. */
    node: string;
    /** What server/codec/zstd.ts picks on this runtime (`impl`). */
    codec: Zstd['impl'];
  };
}

/** The child's answer to `'zstd-use'`: what the bundles ran since they were loaded. */
export interface BundleChildZstdUse {
  zstdUse: ZstdUse;
}

const send = (message: BundleChildReady | BundleChildZstdUse): void => {
  if (!process.send) throw new Error('bundle-child.ts runs with an IPC channel (startBundleChild)');
  process.send(message);
};

const [outdir, stack] = process.argv.slice(2);
if (!outdir || !stack) throw new Error('usage: bundle-child.ts <assembly dir> <stack name>');
// Before any bundle loads: the codec takes its reference to node:zlib's functions on first use.
const zstdUse = watchZstd();
const assembly = readAssembly(outdir, stack);
const handlers = new Map<string, (event: unknown, context: unknown) => Promise<unknown>>();
for (const fn of assembly.functions.values()) handlers.set(fn.logicalId, await loadBundle(fn));
// startLocalServer turns each HTTP request into an API Gateway HTTP API (payload 2.0) event.
const server = await startLocalServer({
  handler: simulatedGateway(assembly.routes, handlers),
  host: '127.0.0.1',
  port: 0,
  maxBodyBytes: 10 << 20,
});
process.on('message', (m) => {
  if (m === 'zstd-use') send({ zstdUse: zstdUse() });
});
// The parent (a vitest worker) can die without stopping this process.
process.on('disconnect', () => process.exit(0));
send({ ready: { url: server.url, node: process.version, codec: (await zstd()).impl } });
