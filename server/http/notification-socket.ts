/**
 * The WebSocket API's routes (API Gateway `$connect`, `$default`, `$disconnect`) over the
 * notification service: a connect must carry a valid one-use ticket (`?ticket=`), a message
 * registers a wait (for the client's consumer group, when it names one), relays a wake-up or
 * answers a keepalive. The answer of `$default` goes back to the client as the route's
 * response; a relay has none (the client does not wait for one). Domain errors become 401/403 on connect and `{type: 'error'}` messages
 * after; nothing else about the failure is revealed.
 *
 * @example
 * ```ts
 * const r = await answerSocketEvent(services, { requestContext: { routeKey: '$default', connectionId: 'c1' },
 *   body: '{"action":"wait","queue":"orders","group":"billing","id":"1"}' });
 * // r.body: '{"type":"waiting","queue":"orders","id":"1"}'
 * ```
 */
import { z } from 'zod';
import { SluiceError } from '../core/errors.js';
import { nameProblem } from '../core/names.js';
import type { ServerMessage } from '../core/notifications.js';
import type { Services } from '../service/runtime.js';

/** The parts of API Gateway's WebSocket event the routes read. */
export interface SocketEvent {
  requestContext: { routeKey: string; connectionId: string };
  queryStringParameters?: Record<string, string | undefined> | null | undefined;
  body?: string | null | undefined;
}

export interface SocketResult {
  statusCode: number;
  body?: string;
}

const queue = z.string().min(1).max(256);
const group = z.string().refine((g) => nameProblem(g, 'consumer group') === undefined, 'not a consumer group name');
// `group` is optional on a wait: a client from before groups sends none (docs/DEPLOYING.md, "Idle consumers").
const ClientMessage = z.discriminatedUnion('action', [
  z.object({ action: z.literal('wait'), queue, group: group.optional(), id: z.string().max(64).optional() }),
  z.object({ action: z.literal('relay'), queue, group, token: z.string().max(64) }),
  z.object({ action: z.literal('ping'), id: z.string().max(64).optional() }),
]);

const reply = (m: ServerMessage): SocketResult => ({ statusCode: 200, body: JSON.stringify(m) });

/** Answers one WebSocket event. */
export async function answerSocketEvent(services: Services, event: SocketEvent): Promise<SocketResult> {
  const { routeKey, connectionId } = event.requestContext;
  const svc = services.notifications;
  if (routeKey === '$connect') {
    try {
      await svc.connect(connectionId, event.queryStringParameters?.['ticket']);
      return { statusCode: 200 };
    } catch (e) {
      if (e instanceof SluiceError) return { statusCode: e.code === 'unauthorized' ? 401 : 403 };
      throw e;
    }
  }
  if (routeKey === '$disconnect') {
    await svc.disconnect(connectionId);
    return { statusCode: 200 };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(event.body ?? '');
  } catch {
    return reply({ type: 'error', error: 'messages are JSON' });
  }
  const msg = ClientMessage.safeParse(parsed);
  if (!msg.success)
    return reply({
      type: 'error',
      error: 'expected {action: "wait", queue, group?}, {action: "relay", queue, group, token} or {action: "ping"}',
    });
  if (msg.data.action === 'ping') return reply({ type: 'pong', id: msg.data.id });
  if (msg.data.action === 'relay') {
    try {
      await svc.relay(connectionId, msg.data.queue, msg.data.group, msg.data.token);
    } catch (e) {
      // Nobody waits for a relay's answer: a refused one is only not carried out.
      if (!(e instanceof SluiceError)) throw e;
    }
    return { statusCode: 200 };
  }
  try {
    await svc.registerWait(connectionId, msg.data.queue, msg.data.group);
  } catch (e) {
    if (e instanceof SluiceError) return reply({ type: 'error', error: e.message, id: msg.data.id });
    throw e;
  }
  return reply({ type: 'waiting', queue: msg.data.queue, id: msg.data.id });
}
