/**
 * The console's static files (console/, built by scripts/build-console.ts) as the local server
 * and `sluice console` serve them under `/console/`: held in memory (a few tens of KiB), with
 * their content types and caching. The hashed script and style never change under their name
 * (cached for a year); the page is revalidated every time, so a new build shows at once.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { HttpResponse } from '../http/types.js';

/** The built console: file name (`index.html`, `app-<hash>.js`, …) to its bytes. */
export type ConsoleFiles = ReadonlyMap<string, Buffer>;

/** Where the console is served. */
export const CONSOLE_PATH = '/console';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The page may load only its own files and call only its own origin (the API it is served with). */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * Reads a built console directory; undefined when it has not been built (a server run from
 * source rather than by `npm start`).
 *
 * @example
 * ```ts
 * const files = readConsoleFiles('.sluice-build/server/console');
 * ```
 */
export function readConsoleFiles(dir: string): ConsoleFiles | undefined {
  if (!existsSync(join(dir, 'index.html'))) return undefined;
  return new Map(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name))]));
}

function json(statusCode: number, code: string, error: string, headers: Record<string, string> = {}): HttpResponse {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ error, code }),
  };
}

/**
 * The answer to a request for a console path, or undefined when `rawPath` is not one (the API's
 * routes then answer it). Static files carry no data and need no authentication; every API call
 * the page makes goes through the same authentication as any other client's.
 *
 * @example
 * ```ts
 * consoleResponse(files, 'GET', '/console/'); // { statusCode: 200, headers: { 'content-type': 'text/html; …' }, … }
 * ```
 */
export function consoleResponse(
  files: ConsoleFiles | undefined,
  method: string,
  rawPath: string,
): (HttpResponse & { bodyBytes?: Buffer }) | undefined {
  if (rawPath !== CONSOLE_PATH && !rawPath.startsWith(`${CONSOLE_PATH}/`)) return undefined;
  if (method !== 'GET' && method !== 'HEAD')
    return json(405, 'method_not_allowed', 'the console is read with GET', { allow: 'GET, HEAD' });
  // Relative links in the page need the trailing slash.
  if (rawPath === CONSOLE_PATH) return { statusCode: 308, headers: { location: `${CONSOLE_PATH}/` }, body: '' };
  if (!files)
    return json(
      404,
      'not_found',
      'the console is not built: `npm start` builds it (or run `npx tsx scripts/build-server.ts`)',
    );
  const name = rawPath.slice(CONSOLE_PATH.length + 1) || 'index.html';
  const bytes = name.includes('/') ? undefined : files.get(name);
  if (!bytes) return json(404, 'not_found', `no console file ${JSON.stringify(name)}`);
  const page = name === 'index.html';
  return {
    statusCode: 200,
    headers: {
      'content-type': TYPES[extname(name)] ?? 'application/octet-stream',
      'cache-control': page ? 'no-cache' : 'public, max-age=31536000, immutable',
      ...SECURITY_HEADERS,
    },
    bodyBytes: bytes,
  };
}
