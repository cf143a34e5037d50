/**
 * Where wake-up notifications keep their state (table `meta`): one-use tickets, open WebSocket
 * connections and one-shot waits, each with its own key and encoding here. Every item carries a
 * TTL past its own expiry, which readers compare with `now`; TTL only collects.
 *
 * A queue's waits share one partition key, so a push reads them with one query. A wait that
 * names a group sorts by group, then by its slot (`wake-plan.ts`), so a relay reads only the
 * range of its group it was handed; a wait without one keeps the old key (the connection id).
 *
 * @example
 * ```ts
 * const item = await storage.items.get('meta', notificationKeys.ticket(id));
 * const ticket = item ? decodeTicket(item) : undefined;
 * ```
 */
import type { Connection, Ticket, Wait } from '../../core/notifications.js';
import { CONNECTION_MAX_MS } from '../../core/notifications.js';
import { registeredAt, waitSlot, type RelayRange } from '../../core/wake-plan.js';
import type { Item, ItemKey, Json, QueryOptions } from '../../storage/port.js';

/** Prefix of every wait's partition key: one partition per queue, a row per waiting connection. */
export const WAIT_PK_PREFIX = 'WSWAIT#';

/** Where a group's waits start in the queue's partition (no `#` inside: the group is URI-encoded). */
const groupPrefix = (group: string): string => `G#${encodeURIComponent(group)}#`;

export const notificationKeys = {
  /** meta: a ticket, until a `$connect` consumes it. */
  ticket: (ticketId: string): ItemKey => ({ pk: `WSTICKET#${ticketId}`, sk: 'ticket' }),
  /** meta: an open connection and what it may wait on. */
  connection: (connectionId: string): ItemKey => ({ pk: `WSCONN#${connectionId}`, sk: 'conn' }),
  /** meta: a connection's one-shot wait on a queue, for a group or (from an older client) none. */
  wait: (queue: string, connectionId: string, group?: string): ItemKey => ({
    pk: `${WAIT_PK_PREFIX}${queue}`,
    sk: group === undefined ? connectionId : `${groupPrefix(group)}${waitSlot(connectionId)}#${connectionId}`,
  }),
};

/** The query reading the waits of `group` whose slots a relay range names. */
export function waitRange(queue: string, group: string, r: RelayRange): { pk: string; opts: QueryOptions } {
  const prefix = groupPrefix(group);
  // Connection ids are base64 ('~' sorts after all of them).
  return { pk: `${WAIT_PK_PREFIX}${queue}`, opts: { prefix, gte: `${prefix}${r.from}#`, lte: `${prefix}${r.to}#~` } };
}

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

/** A wait as read, with what a guarded delete of exactly this registration needs. */
export interface StoredWait extends Wait {
  key: ItemKey;
  ver: number;
}

export function waitItem(queue: string, w: Wait): Item {
  return {
    ...notificationKeys.wait(queue, w.connectionId, w.group),
    // The registration time: a guarded delete removes the registration it read, never a newer one.
    ver: Math.max(1, registeredAt(w)),
    attrs: w.group === undefined ? { until: w.until } : { until: w.until, group: w.group, conn: w.connectionId },
    expiresAt: ttlAfter(w.until),
  };
}
export function decodeWait(item: Item): StoredWait {
  const group = item.attrs['group'];
  const conn = item.attrs['conn'];
  return {
    connectionId: typeof conn === 'string' ? conn : item.sk,
    until: Number(item.attrs['until']),
    ...(typeof group === 'string' ? { group } : {}),
    key: { pk: item.pk, sk: item.sk },
    ver: item.ver,
  };
}
