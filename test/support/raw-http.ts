import { Agent, request } from 'node:http';

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

/** One keep-alive agent for every raw request of a test process. */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/**
 * An HTTP request sent exactly as given: the path is not normalised (`/a/../b` stays as
 * written, which fetch and browsers would fold away), headers are only those passed (plus
 * `host` and `content-length`), the body is sent as is.
 *
 * @example
 * ```ts
 * const r = await rawRequest(server.url, 'GET', '/api/v1/queues/../partitions/Default/messages');
 * ```
 */
export function rawRequest(
  base: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string | Buffer; timeoutMs?: number } = {},
): Promise<RawReply> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        agent,
        headers: {
          ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}),
          ...opts.headers,
        },
        timeout: opts.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in ${opts.timeoutMs ?? 30_000} ms`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}
