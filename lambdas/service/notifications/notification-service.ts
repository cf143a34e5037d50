/**
 * Wake-up notifications for idle consumers (docs/DEPLOYING.md, "Idle consumers"): a consumer
 * on AWS waits on a WebSocket connection, which costs nothing while idle, instead of a
 * long-polling Lambda, which bills every second of the wait.
 *
 * 1. `POST /api/v1/notifications/ticket` (the stack's normal auth and grants: `consume` on every
 *    queue named) answers a one-use ticket that expires within a minute ({@link issueTicket}).
 * 2. The WebSocket `$connect` trades it for a connection record ({@link connect}).
 * 3. The client pops with `wait=false`; on an empty answer it registers a one-shot wait on the
 *    queue ({@link registerWait}), pops once more (a push may have landed in between), then
 *    sleeps until told or until its safety poll.
 * 4. Every push moves its partition's offset sequencer; DynamoDB Streams hands those writes to
 *    the notifier ({@link onSequencerWrites}), which wakes each waiting connection once.
 *
 * @example
 * ```ts
 * const { ticket } = await svc.notifications.issueTicket('alice', ['orders']);
 * await svc.notifications.connect('conn-1', ticket);
 * await svc.notifications.registerWait('conn-1', 'orders');
 * await svc.notifications.onSequencerWrites([`SEQ#${partitionId}`]); // posts {type:'work'} to conn-1
 * ```
 */
import { randomBytes } from 'node:crypto';
import { SluiceError } from '../../core/errors.js';
import {
  newTicket,
  newWait,
  partitionsOfSequencerKeys,
  ticketRefusal,
  waitRefusal,
  wakeSet,
  type Connection,
} from '../../core/notifications.js';
import { ConditionFailedError, type Storage } from '../../storage/port.js';
import { logKeys, partitionRefOf } from '../log/log-store.js';
import type { ConnectionPoster } from './connection-poster.js';
import {
  WAIT_PK_PREFIX,
  connectionItem,
  decodeConnection,
  decodeTicket,
  decodeWait,
  notificationKeys,
  ticketItem,
  waitItem,
} from './notification-store.js';

/** Partition ids the notifier remembers the queue of (partitions never change queue). */
const PARTITION_CACHE_MAX = 10_000;

export interface NotificationDeps {
  storage: Storage;
  clock: () => number;
  /** The WebSocket URL clients connect to (SLUICE_NOTIFY_URL); undefined: notifications are off (long polls). */
  url: string | undefined;
  /** Made on first use: only the notifier posts. */
  poster: () => Promise<ConnectionPoster>;
}

/** What {@link NotificationService.issueTicket} answers. */
export type TicketAnswer =
  { available: false } | { available: true; url: string; ticket: string; expiresAt: number; queues: string[] };

export class NotificationService {
  private readonly queueOfPartition = new Map<string, string>();
  private posterInstance: Promise<ConnectionPoster> | undefined;

  constructor(private readonly deps: NotificationDeps) {}

  /** Whether this deployment has a notification channel. */
  get available(): boolean {
    return this.deps.url !== undefined;
  }

  /**
   * A one-use ticket for a WebSocket connection that may wait on `queues`. The caller's grants
   * were checked by the route (`consume` on each).
   */
  async issueTicket(principal: string, queues: string[]): Promise<TicketAnswer> {
    const url = this.deps.url;
    if (url === undefined) return { available: false };
    const ticket = newTicket({ principal, queues }, this.deps.clock());
    const id = randomBytes(24).toString('base64url');
    await this.deps.storage.items.put('meta', ticketItem(id, ticket), { kind: 'absent' });
    return { available: true, url, ticket: id, expiresAt: ticket.until, queues: ticket.queues };
  }

  /**
   * `$connect`: consumes the ticket (one guarded delete, so a ticket opens one connection) and
   * records the connection. Throws `unauthorized` for a missing, used or expired ticket.
   */
  async connect(connectionId: string, ticketId: string | undefined): Promise<Connection> {
    const now = this.deps.clock();
    const key = ticketId ? notificationKeys.ticket(ticketId) : undefined;
    const item = key ? await this.deps.storage.items.get('meta', key) : undefined;
    const ticket = item ? decodeTicket(item) : undefined;
    const refusal = ticketRefusal(ticket, now);
    if (refusal || !ticket || !key || !item) throw new SluiceError('unauthorized', refusal ?? 'no ticket');
    try {
      await this.deps.storage.items.delete('meta', key, { kind: 'version', ver: item.ver });
    } catch (e) {
      if (e instanceof ConditionFailedError) throw new SluiceError('unauthorized', 'unknown or already used ticket');
      throw e;
    }
    const conn: Connection = { principal: ticket.principal, queues: ticket.queues, connectedAt: now };
    await this.deps.storage.items.put('meta', connectionItem(connectionId, conn));
    return conn;
  }

  /** Registers a one-shot wait of `connectionId` on `queue` (a queue its ticket named). */
  async registerWait(connectionId: string, queue: string): Promise<void> {
    const now = this.deps.clock();
    const item = await this.deps.storage.items.get('meta', notificationKeys.connection(connectionId));
    const refusal = waitRefusal(item ? decodeConnection(item) : undefined, queue, now);
    if (refusal) throw new SluiceError('forbidden', refusal);
    await this.deps.storage.items.put('meta', waitItem(queue, newWait(connectionId, now)));
  }

  /** `$disconnect`: forgets the connection (its waits go stale and are removed when next seen). */
  async disconnect(connectionId: string): Promise<void> {
    await this.deps.storage.items.delete('meta', notificationKeys.connection(connectionId));
  }

  /**
   * The notifier: given the partition keys of sequencer writes (a DynamoDB Streams batch), wakes
   * every connection waiting on their queues, once each, and removes stale waits.
   */
  async onSequencerWrites(pks: readonly string[]): Promise<{ queues: number; woken: number }> {
    const queues = new Set<string>();
    for (const id of partitionsOfSequencerKeys(pks)) {
      const q = await this.queueOf(id);
      if (q) queues.add(q);
    }
    let woken = 0;
    for (const queue of queues) woken += await this.wakeQueue(queue);
    return { queues: queues.size, woken };
  }

  private async wakeQueue(queue: string): Promise<number> {
    const now = this.deps.clock();
    const items = this.deps.storage.items;
    const waits = [];
    let after: string | undefined;
    do {
      const page = await items.query('meta', `${WAIT_PK_PREFIX}${queue}`, { after });
      waits.push(...page.items.map(decodeWait));
      after = page.next;
    } while (after !== undefined);
    const { wake, stale } = wakeSet(waits, now);
    // The wait goes before the message: a client woken re-registers only after its pop, and
    // that new wait must not be the one deleted.
    await Promise.all([...wake, ...stale].map((c) => items.delete('meta', notificationKeys.wait(queue, c))));
    if (wake.length === 0) return 0;
    const poster = await (this.posterInstance ??= this.deps.poster());
    const sent = await Promise.all(
      wake.map(async (c) => {
        const r = await poster.post(c, { type: 'work', queue }).catch(() => 'failed' as const);
        if (r === 'gone') await this.disconnect(c);
        return r === 'sent' ? 1 : 0;
      }),
    );
    return sent.reduce<number>((a, b) => a + b, 0);
  }

  private async queueOf(partitionId: string): Promise<string | undefined> {
    const cached = this.queueOfPartition.get(partitionId);
    if (cached !== undefined) return cached;
    const item = await this.deps.storage.items.get('meta', logKeys.partitionById(partitionId));
    const queue = item ? partitionRefOf(item).queue : undefined;
    // A partition not found yet may be one being created: only found ones are remembered.
    if (queue !== undefined) {
      if (this.queueOfPartition.size >= PARTITION_CACHE_MAX) this.queueOfPartition.clear();
      this.queueOfPartition.set(partitionId, queue);
    }
    return queue;
  }
}
