/**
 * A local stand-in for API Gateway's WebSocket API, so the client's real `ws` code talks to the
 * real routes (`server/http/notification-socket.ts`): the upgrade runs `$connect` (a non-200
 * answer refuses it with that status), each message runs `$default` (its answer is sent back, as
 * a route response is), a close runs `$disconnect`, and {@link WsGateway.poster} is
 * PostToConnection (`gone` once the connection closed). Like API Gateway it closes a connection
 * idle for `idleTimeoutMs` (10 minutes there).
 *
 * @example
 * ```ts
 * const gw = await startWsGateway(() => svc);
 * const svc = testServices(storage, { config: { notifyUrl: gw.url } , ... poster: gw.poster });
 * ```
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { answerSocketEvent } from '../../server/http/notification-socket.js';
import type { ServerMessage } from '../../server/core/notifications.js';
import type { ConnectionPoster } from '../../server/service/notifications/connection-poster.js';
import type { Services } from '../../server/service/runtime.js';

export interface WsGateway {
  /** `ws://127.0.0.1:<port>`: what SLUICE_NOTIFY_URL would be. */
  url: string;
  poster: ConnectionPoster;
  /** Connections open now. */
  open(): number;
  /** Closes every connection, as API Gateway does at the 2-hour limit. */
  dropAll(): void;
  /** Route invocations by route key (what API Gateway would bill as Lambda calls). */
  invocations: Map<string, number>;
  /** Messages sent to clients (route responses and posts: what API Gateway bills as messages). */
  messagesSent(): number;
  close(): Promise<void>;
}

export async function startWsGateway(
  services: () => Services,
  opts: { idleTimeoutMs?: number } = {},
): Promise<WsGateway> {
  const sockets = new Map<string, WebSocket>();
  const invocations = new Map<string, number>();
  let sent = 0;
  let stopped = false;
  const invoke = (routeKey: string, connectionId: string, extra: { ticket?: string; body?: string } = {}) => {
    invocations.set(routeKey, (invocations.get(routeKey) ?? 0) + 1);
    return answerSocketEvent(services(), {
      requestContext: { routeKey, connectionId },
      queryStringParameters: extra.ticket !== undefined ? { ticket: extra.ticket } : undefined,
      body: extra.body,
    });
  };
  const wss = new WebSocketServer({ noServer: true });
  const server: Server = createServer((_req, res) => res.writeHead(426).end());
  server.on('upgrade', (req, socket, head) => {
    const connectionId = randomUUID();
    const ticket = new URL(req.url ?? '/', 'http://x').searchParams.get('ticket') ?? undefined;
    void invoke('$connect', connectionId, ticket !== undefined ? { ticket } : {}).then(
      (r) => {
        if (r.statusCode !== 200) {
          socket.end(`HTTP/1.1 ${r.statusCode} Refused\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
          return;
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          sockets.set(connectionId, ws);
          let idle: NodeJS.Timeout | undefined;
          const touch = (): void => {
            if (!opts.idleTimeoutMs) return;
            clearTimeout(idle);
            idle = setTimeout(() => ws.close(1001, 'Going away'), opts.idleTimeoutMs);
          };
          touch();
          ws.on('message', (data: Buffer) => {
            touch();
            void invoke('$default', connectionId, { body: data.toString('utf8') }).then((a) => {
              if (a.body !== undefined && ws.readyState === ws.OPEN) {
                sent++;
                ws.send(a.body);
              }
            });
          });
          ws.on('close', () => {
            clearTimeout(idle);
            sockets.delete(connectionId);
            if (!stopped) void invoke('$disconnect', connectionId);
          });
        });
      },
      () => socket.destroy(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    poster: {
      post(connectionId: string, message: ServerMessage) {
        const ws = sockets.get(connectionId);
        if (!ws || ws.readyState !== ws.OPEN) return Promise.resolve('gone' as const);
        sent++;
        return new Promise((resolve, reject) =>
          ws.send(JSON.stringify(message), (e) => (e ? reject(e) : resolve('sent' as const))),
        );
      },
    },
    open: () => sockets.size,
    dropAll: () => {
      for (const ws of sockets.values()) ws.close(1001, 'Going away');
    },
    invocations,
    messagesSent: () => sent,
    close: async () => {
      stopped = true;
      for (const ws of sockets.values()) ws.terminate();
      wss.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
