/**
 * Where wake-up notifications keep their state (table `meta`): one-use tickets, open WebSocket
 * connections and one-shot waits, each with its own key and encoding here. Every item carries a
 * TTL past its own expiry, which readers compare with `now`; TTL only collects.
 *
 * @example
 * ```ts
 * const item = await storage.items.get('meta', notificationKeys.ticket(id));
 * const ticket = item ? decodeTicket(item) : undefined;
 * ```
 */
import type { Connection, Ticket, Wait } from '../../core/notifications.js';
import { CONNECTION_MAX_MS } from '../../core/notifications.js';
import type { Item, ItemKey, Json } from '../../storage/port.js';

/** Prefix of every wait's partition key: one partition per queue, a row per waiting connection. */
export const WAIT_PK_PREFIX = 'WSWAIT#';

export const notificationKeys = {
  /** meta: a ticket, until a `$connect` consumes it. */
  ticket: (ticketId: string): ItemKey => ({ pk: `WSTICKET#${ticketId}`, sk: 'ticket' }),
  /** meta: an open connection and what it may wait on. */
  connection: (connectionId: string): ItemKey => ({ pk: `WSCONN#${connectionId}`, sk: 'conn' }),
  /** meta: a connection's one-shot wait on a queue. */
  wait: (queue: string, connectionId: string): ItemKey => ({ pk: `${WAIT_PK_PREFIX}${queue}`, sk: connectionId }),
};

/** TTL (epoch s) a little past `untilMs`: collection only, never a correctness signal. */
const ttlAfter = (untilMs: number): number => Math.ceil(untilMs / 1000) + 3_600;

export function ticketItem(ticketId: string, t: Ticket): Item {
  return {
    ...notificationKeys.ticket(ticketId),
    ver: 1,
    attrs: t as unknown as Record<string, Json>,
    expiresAt: ttlAfter(t.until),
  };
}
export const decodeTicket = (item: Item): Ticket => item.attrs as unknown as Ticket;

export function connectionItem(connectionId: string, c: Connection): Item {
  return {
    ...notificationKeys.connection(connectionId),
    ver: 1,
    attrs: c as unknown as Record<string, Json>,
    expiresAt: ttlAfter(c.connectedAt + CONNECTION_MAX_MS),
  };
}
export const decodeConnection = (item: Item): Connection => item.attrs as unknown as Connection;

export function waitItem(queue: string, w: Wait): Item {
  return {
    ...notificationKeys.wait(queue, w.connectionId),
    ver: 1,
    attrs: { until: w.until },
    expiresAt: ttlAfter(w.until),
  };
}
export const decodeWait = (item: Item): Wait => ({ connectionId: item.sk, until: Number(item.attrs['until']) });
