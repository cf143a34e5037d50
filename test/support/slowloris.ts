import { connect, type Socket } from 'node:net';
import { rawRequest } from './raw-http.js';

export interface SlowlorisReport {
  /** Slow connections the server accepted and held. */
  connections: number;
  /** Requests of the other client (health checks and pushes) sent while they were held. */
  requests: number;
  /** Of those, answered with something other than 200 / 201, or not answered. */
  failed: number;
  fiveXx: number;
  /** Slowest answer to the other client, in ms. */
  maxMs: number;
}

/**
 * Slowloris against a server: `connections` connections that each send a request's headers a
 * few bytes at a time, for `holdMs`, while another client times `/health` and pushes (issue
 * 17, item 4). The server must answer that client as fast as ever.
 *
 * @example
 * ```ts
 * const r = await runSlowloris({ url: server.url, connections: 200, holdMs: 3_000 });
 * expect(r.maxMs).toBeLessThan(2_000);
 * ```
 */
export async function runSlowloris(opts: {
  url: string;
  connections: number;
  holdMs: number;
  headers?: Record<string, string>;
}): Promise<SlowlorisReport> {
  const { hostname, port } = new URL(opts.url);
  const sockets: Socket[] = [];
  let connected = 0;
  await Promise.all(
    Array.from({ length: opts.connections }, async () => {
      const s = connect(Number(port), hostname);
      s.on('error', () => {});
      sockets.push(s);
      await new Promise<void>((r) => {
        s.once('connect', () => {
          connected++;
          r();
        });
        s.once('close', () => r());
      });
      s.write(`GET /health HTTP/1.1\r\nhost: ${hostname}:${port}\r\n`);
    }),
  );
  // A header line every half second keeps each one short of finishing its request.
  let n = 0;
  const drip = setInterval(() => {
    n++;
    for (const s of sockets) if (!s.destroyed) s.write(`x-drip-${n}: 1\r\n`);
  }, 500);
  const report: SlowlorisReport = { connections: connected, requests: 0, failed: 0, fiveXx: 0, maxMs: 0 };
  const until = Date.now() + opts.holdMs;
  try {
    for (let i = 0; Date.now() < until; i++) {
      const started = Date.now();
      try {
        const r =
          i % 2 === 0
            ? await rawRequest(opts.url, 'GET', '/health', { headers: { ...opts.headers }, timeoutMs: 10_000 })
            : await rawRequest(opts.url, 'POST', '/api/v1/push', {
                headers: { 'content-type': 'application/json', ...opts.headers },
                body: JSON.stringify({ items: [{ queue: 'slowloris', payload: { i } }] }),
                timeoutMs: 10_000,
              });
        if (r.status >= 500) report.fiveXx++;
        if (r.status !== 200 && r.status !== 201) report.failed++;
      } catch {
        report.failed++;
      }
      report.requests++;
      report.maxMs = Math.max(report.maxMs, Date.now() - started);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    clearInterval(drip);
    for (const s of sockets) s.destroy();
  }
  return report;
}
