/**
 * Wake-up notifications for idle consumers (docs/DEPLOYING.md, "Idle consumers"): a consumer
 * on AWS waits on a WebSocket connection, which costs nothing while idle, instead of a
 * long-polling Lambda, which bills every second of the wait.
 *
 * 1. `POST /api/v1/notifications/ticket` (the stack's normal auth and grants: `consume` on every
 *    queue named) answers a one-use ticket that expires within a minute ({@link issueTicket}).
 * 2. The WebSocket `$connect` trades it for a connection record ({@link connect}).
 * 3. The client pops with `wait=false`; on an empty answer it registers a one-shot wait on the
 *    queue for its group ({@link registerWait}), pops once more (a push may have landed in
 *    between), then sleeps until told or until its safety poll.
 * 4. Every push moves its partition's offset sequencer; DynamoDB Streams hands those writes to
 *    the notifier ({@link onSequencerWrites}), which wakes at most two waits per group
 *    (`core/wake-plan.ts`), each holding a share of the rest of its group.
 * 5. A woken consumer whose pop finds work relays ({@link relay}): two more of its share are
 *    woken, and so on while the work lasts.
 *
 * @example
 * ```ts
 * const { ticket } = await svc.notifications.issueTicket('alice', ['orders']);
 * await svc.notifications.connect('conn-1', ticket);
 * await svc.notifications.registerWait('conn-1', 'orders', 'billing');
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
  type Connection,
} from '../../core/notifications.js';
import { decodeRelay, planPush, planRelay } from '../../core/wake-plan.js';
import { ConditionFailedError, type QueryOptions, type Storage } from '../../storage/port.js';
import { logKeys, partitionRefOf } from '../log/log-store.js';
import type { Telemetry } from '../telemetry.js';
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
  waitRange,
  type StoredWait,
} from './notification-store.js';
import { MAX_WAKES_PER_CALL, WakeFanout, pool, type WakeJob, type WakeOutcome } from './wake-fanout.js';

/** Partition ids the notifier remembers the queue of (partitions never change queue). */
const PARTITION_CACHE_MAX = 10_000;

export interface NotificationDeps {
  storage: Storage;
  clock: () => number;
  /** Where the notifier counts its wake-ups (`WakeUps`, `WakeUpsDropped`). */
  telemetry: Telemetry;
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
  private readonly fanout: WakeFanout;

  constructor(private readonly deps: NotificationDeps) {
    this.fanout = new WakeFanout({
      storage: deps.storage,
      telemetry: deps.telemetry,
      poster: deps.poster,
      forget: (c) => this.disconnect(c),
    });
  }

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

  /**
   * Registers a one-shot wait of `connectionId` on `queue` (a queue its ticket named) for
   * `group`; without one (a client from before groups) it is woken with the other such waits.
   */
  async registerWait(connectionId: string, queue: string, group?: string): Promise<void> {
    const now = this.deps.clock();
    await this.allowed(connectionId, queue, now);
    await this.deps.storage.items.put('meta', waitItem(queue, newWait(connectionId, now, group)));
  }

  /**
   * A woken consumer of `group` found work: wakes at most two more waits of the range its `work`
   * message named (`token`), each holding a share of the rest. Throws `invalid_request` for a
   * token that is not one, `forbidden` as {@link registerWait} does.
   */
  async relay(connectionId: string, queue: string, group: string, token: string): Promise<WakeOutcome> {
    const now = this.deps.clock();
    const range = decodeRelay(token);
    if (!range) throw new SluiceError('invalid_request', 'not a relay token');
    await this.allowed(connectionId, queue, now);
    const { pk, opts } = waitRange(queue, group, range);
    const branches = planRelay(await this.readWaits(pk, opts), now, group, range, connectionId);
    return this.fanout.run(
      branches.map((branch) => ({ queue, branch })),
      { at: range.at },
    );
  }

  private async allowed(connectionId: string, queue: string, now: number): Promise<void> {
    const item = await this.deps.storage.items.get('meta', notificationKeys.connection(connectionId));
    const refusal = waitRefusal(item ? decodeConnection(item) : undefined, queue, now);
    if (refusal) throw new SluiceError('forbidden', refusal);
  }

  /** `$disconnect`: forgets the connection (its waits go stale and are removed when next seen). */
  async disconnect(connectionId: string): Promise<void> {
    await this.deps.storage.items.delete('meta', notificationKeys.connection(connectionId));
  }

  /**
   * The notifier: given the partition keys of sequencer writes (a DynamoDB Streams batch), wakes
   * at most two waits per (queue, group), at most {@link MAX_WAKES_PER_CALL} in all, and removes
   * stale waits. One query per queue (a page per ~1 MB of waits), then a guarded delete and a
   * post per wake-up, `WAKE_CONCURRENCY` at a time (`wake-fanout.ts`).
   */
  async onSequencerWrites(pks: readonly string[]): Promise<{ queues: number } & WakeOutcome> {
    const now = this.deps.clock();
    const found = await pool(partitionsOfSequencerKeys(pks), (id) => this.queueOf(id));
    const queues = [...new Set(found.filter((q): q is string => q !== undefined))];
    const waits = await pool(queues, (q) => this.readWaits(`${WAIT_PK_PREFIX}${q}`));
    const jobs: WakeJob[] = [];
    const stale: StoredWait[] = [];
    let skipped = 0;
    queues.forEach((queue, i) => {
      const plan = planPush(waits[i] ?? [], now, MAX_WAKES_PER_CALL - jobs.length);
      for (const branch of plan.branches) jobs.push({ queue, branch });
      stale.push(...plan.stale);
      skipped += plan.skipped;
    });
    const out = await this.fanout.run(jobs, { at: now, stale, skipped });
    return { queues: queues.length, ...out };
  }

  private async readWaits(pk: string, opts: QueryOptions = {}): Promise<StoredWait[]> {
    const waits: StoredWait[] = [];
    let after: string | undefined;
    do {
      const page = await this.deps.storage.items.query('meta', pk, { ...opts, after });
      waits.push(...page.items.map(decodeWait));
      after = page.next;
    } while (after !== undefined);
    return waits;
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
