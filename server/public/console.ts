/**
 * The server behind `sluice console`: the local server on loopback, serving the console's files
 * at `/console/` and handing every other request to the caller's handler, behind the local
 * server's edge (`local/edge.ts`): a request addressed to another host name (DNS rebinding) or
 * sent by another web origin is refused before the handler sees it. Named for the CLI: `cli/`
 * imports from `server/` only through `server/public/` (eslint.config.js enforces it).
 */
import type { HttpEvent, HttpResponse } from '../http/types.js';
import type { ConsoleFiles } from '../local/console-assets.js';
import { requestGate } from '../local/edge.js';
import { startLocalServer, type LocalServer } from '../local/server.js';

export type { HttpEvent, HttpResponse } from '../http/types.js';
export type { ConsoleFiles } from '../local/console-assets.js';
export type { LocalServer } from '../local/server.js';

export interface ConsoleServerOptions {
  /** Answers every request that is not for the console's files. */
  handler: (event: HttpEvent) => Promise<HttpResponse>;
  /** The built console (scripts/build-console.ts). */
  files: ConsoleFiles;
  /** Port on 127.0.0.1 (0: any free one). */
  port: number;
  maxBodyBytes: number;
  /** Per-request time budget. */
  requestTimeoutMs: number;
}

/**
 * Starts the console's server on 127.0.0.1.
 *
 * @example
 * ```ts
 * const server = await startConsoleServer({ handler: forward, files, port: 6633, maxBodyBytes: 6 << 20, requestTimeoutMs: 65_000 });
 * console.log(`${server.url}/console/`);
 * ```
 */
export function startConsoleServer(opts: ConsoleServerOptions): Promise<LocalServer> {
  return startLocalServer({
    handler: opts.handler,
    // Loopback, so no host name but the loopback ones and no other web origin.
    gate: requestGate({ allowedHosts: [], checkHost: true, corsOrigins: [] }),
    host: '127.0.0.1',
    port: opts.port,
    maxBodyBytes: opts.maxBodyBytes,
    requestTimeoutMs: opts.requestTimeoutMs,
    consoleFiles: opts.files,
  });
}
