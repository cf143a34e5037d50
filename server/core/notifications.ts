/**
 * Wake-up notifications for idle consumers on AWS (docs/DEPLOYING.md, "Idle consumers"): the
 * pure rules. A consumer trades an HTTPS ticket for a WebSocket connection, registers one-shot
 * waits on queues it may consume, and is told when a push lands on one of them. Expiry is a
 * comparison with `now` (epoch ms); TTL only collects.
 *
 * @example
 * ```ts
 * const t = newTicket({ principal: 'alice', queues: ['orders'] }, now);
 * ticketRefusal(t, now + 1_000); // undefined: valid
 * newWait('c1', now, 'billing'); // { connectionId: 'c1', until: now + WAIT_HOLD_MS, group: 'billing' }
 * ```
 *
 * Which waits a push wakes, and how the rest are reached, is `wake-plan.ts`.
 */

/** How long a ticket stays valid: it is used at once, by the connect that follows it. */
export const TICKET_TTL_MS = 60_000;

/** API Gateway closes every WebSocket connection after 2 hours: a connection record never outlives that. */
export const CONNECTION_MAX_MS = 2 * 60 * 60_000;

/**
 * How long a registered wait holds: a little past the client's safety poll, which registers
 * again; a wait nobody renewed stops being woken (and TTL collects it).
 */
export const WAIT_HOLD_MS = 10 * 60_000;

/**
 * The stream records that mean "a push landed": writes of a partition's offset sequencer
 * (`logKeys.sequencer`, pk `SEQ#<partitionId>` in the `log` table), which every push moves. The
 * CDK stack's event-source filter and the notifier both use it.
 */
export const SEQUENCER_PK_PREFIX = 'SEQ#';

/** A one-use ticket, as stored until a `$connect` consumes it. */
export interface Ticket {
  principal: string;
  /** The queues the principal may consume that the connection will be allowed to wait on. */
  queues: string[];
  issuedAt: number;
  /** Epoch ms after which the ticket is refused. */
  until: number;
}

/** A ticket issued at `now` to a caller whose grants allow `consume` on every one of `queues`. */
export function newTicket(who: { principal: string; queues: string[] }, now: number): Ticket {
  return { principal: who.principal, queues: [...new Set(who.queues)], issuedAt: now, until: now + TICKET_TTL_MS };
}

/** Why a ticket may not open a connection at `now` (undefined: it may). */
export function ticketRefusal(t: Ticket | undefined, now: number): string | undefined {
  if (!t) return 'unknown or already used ticket';
  if (now >= t.until) return 'ticket expired';
  if (now < t.issuedAt - 60_000) return 'ticket issued in the future';
  return undefined;
}

/** An open connection, as stored from `$connect` to `$disconnect`. */
export interface Connection {
  principal: string;
  queues: string[];
  connectedAt: number;
}

/** Whether `conn` may register a wait on `queue` at `now`. */
export function waitRefusal(conn: Connection | undefined, queue: string, now: number): string | undefined {
  if (!conn) return 'unknown connection';
  if (now >= conn.connectedAt + CONNECTION_MAX_MS) return 'connection expired';
  if (!conn.queues.includes(queue)) return 'the ticket did not name this queue';
  return undefined;
}

/** A registered one-shot wait on a queue. */
export interface Wait {
  connectionId: string;
  /** Epoch ms after which the wait is stale: not woken, removed. */
  until: number;
  /** The consumer group the connection pops for; absent from a client from before groups. */
  group?: string | undefined;
}

/** A wait registered at `now`, for `group` when the client named one. */
export const newWait = (connectionId: string, now: number, group?: string): Wait => ({
  connectionId,
  until: now + WAIT_HOLD_MS,
  ...(group !== undefined ? { group } : {}),
});

/** The partition ids whose sequencer a batch of stream keys names, each once. */
export function partitionsOfSequencerKeys(pks: readonly string[]): string[] {
  const ids = new Set<string>();
  for (const pk of pks) if (pk.startsWith(SEQUENCER_PK_PREFIX)) ids.add(pk.slice(SEQUENCER_PK_PREFIX.length));
  return [...ids];
}

/** What the server sends a connection. */
export type ServerMessage =
  | { type: 'waiting'; queue: string; id?: string | undefined }
  /** `relay`: the range of the group this connection relays to when its pop finds work (`wake-plan.ts`). */
  | { type: 'work'; queue: string; relay?: string | undefined }
  | { type: 'pong'; id?: string | undefined }
  | { type: 'error'; error: string; id?: string | undefined };
