/**
 * Wake-ups for an idle consumer on AWS, over the deployment's WebSocket API (docs/CLIENT.md,
 * "Idle consumers"): waiting there costs nothing, where a long poll bills a Lambda for every
 * second it waits. `consume()` uses it when the server offers one (`POST
 * /api/v1/notifications/ticket` answers `available: true`); the local server does not, and
 * consumers long-poll there, which is free.
 *
 * The cycle: pop with `wait=false`; on an empty answer {@link WakeChannel.arm} registers a
 * one-shot wait on the queue for the consumer's group, the consumer pops once more (a push may
 * have landed before the wait was stored), then {@link WakeChannel.sleep}s until the server says
 * there is work, the safety poll interval passes, or the connection closes. A push wakes only
 * two waiting consumers per group; one that was woken and found work calls
 * {@link WakeChannel.relay}, and the server wakes two more, so a backlog reaches every idle
 * consumer in a few rounds and a single message wakes two. The connection opens on first use
 * with a one-use ticket from the HTTPS API (so it authenticates however the API does), is kept
 * alive with a ping while it is quiet, and is opened again after API Gateway closes it (idle for
 * 10 minutes, or 2 hours old).
 *
 * @example
 * ```ts
 * const ch = new WakeChannel(http, 'orders', 'billing');
 * if ((await ch.arm()) === 'armed' && (await pop()).length === 0 && (await ch.sleep(120_000)) === 'work')
 *   if ((await pop()).length > 0) ch.relay();
 * ```
 */
import type { WebSocket as WsSocket } from 'ws';
import { SluiceApiError } from './errors.js';
import type { Transport } from './http.js';

/** How long a consumer sleeps on the channel before it pops anyway (default): see docs/CLIENT.md. */
export const DEFAULT_SAFETY_POLL_MS = 120_000;
/** A quiet connection is pinged this often: API Gateway closes one idle for 10 minutes. */
export const KEEPALIVE_MS = 9 * 60_000;
/** How long registering a wait may take before the attempt counts as failed. */
const ARM_TIMEOUT_MS = 10_000;

type Ticket = { available: false } | { available: true; url: string; ticket: string };

export class WakeChannel {
  /** `unavailable`: the server has no channel (the local server); callers long-poll. */
  state: 'unknown' | 'available' | 'unavailable' = 'unknown';
  private socket: Promise<WsSocket> | undefined;
  /** What happened since the last {@link arm}: a sleep that starts after it returns at once. */
  private since: 'work' | 'closed' | undefined;
  private live: WsSocket | undefined;
  private readonly sleepers = new Set<(why: 'work' | 'closed') => void>();
  private readonly pending = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  private seq = 0;
  private lastSent = 0;
  private keepalive: NodeJS.Timeout | undefined;
  private closed = false;
  /** The relay token of the last wake-up, until it is relayed (once: see {@link relay}). */
  private relayToken: string | undefined;

  /** `group`: the consumer group the waits are for (a server from before groups ignores it). */
  constructor(
    private readonly http: Transport,
    private readonly queue: string,
    private readonly group?: string,
  ) {}

  /**
   * Registers a one-shot wait on the queue (opening the connection first if needed). `unavailable`:
   * the server offers no channel. Throws when the connection or the registration fails.
   */
  async arm(signal?: AbortSignal): Promise<'armed' | 'unavailable'> {
    if (this.state === 'unavailable') return 'unavailable';
    let ws: WsSocket;
    try {
      ws = await this.connect(signal);
    } catch (e) {
      if (e instanceof Unavailable) return 'unavailable';
      throw e;
    }
    this.since = undefined;
    const id = String(++this.seq);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error('notifications: no answer to a wait registration'));
      }, ARM_TIMEOUT_MS);
      this.pending.set(id, {
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.send(ws, {
        action: 'wait',
        queue: this.queue,
        ...(this.group !== undefined ? { group: this.group } : {}),
        id,
      });
    });
    return 'armed';
  }

  /** Resolves on a wake-up since the last {@link arm}, after `ms`, on a closed connection, or on abort. */
  sleep(ms: number, signal?: AbortSignal): Promise<'work' | 'timeout' | 'closed' | 'aborted'> {
    // A wake-up or a close that came between arm() and this sleep must not be slept through.
    if (this.since) return Promise.resolve(this.since);
    if (signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const done = (why: 'work' | 'timeout' | 'closed' | 'aborted'): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        signal?.removeEventListener('abort', onAbort);
        resolve(why);
      };
      const wake = (why: 'work' | 'closed'): void => done(why);
      const onAbort = (): void => done('aborted');
      const timer = setTimeout(() => done('timeout'), ms);
      this.sleepers.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Tells the server that the last wake-up found work, so it wakes the next waiting consumers of
   * the group. Once per wake-up (later calls do nothing until the next one), without an answer;
   * false when there was nothing to relay (no wake-up, a server from before relays, a closed
   * connection).
   */
  relay(): boolean {
    const token = this.relayToken;
    const ws = this.live;
    this.relayToken = undefined;
    if (token === undefined || this.group === undefined || !ws || ws.readyState !== ws.OPEN) return false;
    this.send(ws, { action: 'relay', queue: this.queue, group: this.group, token });
    return true;
  }

  /** Closes the connection; the channel is not used again. */
  close(): void {
    this.closed = true;
    clearInterval(this.keepalive);
    void this.socket?.then((ws) => ws.close(1000)).catch(() => undefined);
    this.socket = undefined;
  }

  private async connect(signal?: AbortSignal): Promise<WsSocket> {
    if (this.closed) throw new Error('notifications: channel closed');
    this.socket ??= this.open(signal).catch((e: unknown) => {
      this.socket = undefined;
      throw e;
    });
    const ws = await this.socket;
    if (ws.readyState === ws.OPEN) return ws;
    this.socket = undefined;
    return this.connect(signal);
  }

  private async open(signal?: AbortSignal): Promise<WsSocket> {
    let t: Ticket | null;
    try {
      t = await this.http.json<Ticket>({
        method: 'POST',
        path: '/api/v1/notifications/ticket',
        body: { queues: [this.queue] },
        retry: 'idempotent',
        signal,
      });
    } catch (e) {
      // A server from before notifications has no such route: it long-polls.
      if (e instanceof SluiceApiError && (e.status === 404 || e.status === 405)) t = { available: false };
      else throw e;
    }
    if (!t?.available) {
      this.state = 'unavailable';
      throw new Unavailable();
    }
    this.state = 'available';
    const { WebSocket } = await import('ws');
    const url = `${t.url}${t.url.includes('?') ? '&' : '?'}ticket=${encodeURIComponent(t.ticket)}`;
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    this.live = ws;
    ws.on('error', () => undefined); // 'close' follows, which is what matters
    ws.on('message', (data: Buffer) => this.onMessage(data.toString('utf8')));
    ws.on('close', () => {
      clearInterval(this.keepalive);
      if (this.live === ws) this.since ??= 'closed'; // a late close of an old socket is no news
      for (const p of this.pending.values()) p.reject(new Error('notifications: connection closed'));
      this.pending.clear();
      for (const s of [...this.sleepers]) s('closed');
    });
    this.lastSent = Date.now();
    clearInterval(this.keepalive);
    this.keepalive = setInterval(() => {
      if (Date.now() - this.lastSent >= KEEPALIVE_MS - 1000 && ws.readyState === ws.OPEN)
        this.send(ws, { action: 'ping' });
    }, KEEPALIVE_MS / 3);
    this.keepalive.unref();
    return ws;
  }

  private send(ws: WsSocket, m: Record<string, unknown>): void {
    this.lastSent = Date.now();
    ws.send(JSON.stringify(m));
  }

  private onMessage(text: string): void {
    let m: { type?: string; queue?: string; id?: string; error?: string; relay?: unknown };
    try {
      m = JSON.parse(text) as typeof m;
    } catch {
      return;
    }
    if (m.type === 'work' && m.queue === this.queue) {
      this.relayToken = typeof m.relay === 'string' ? m.relay : undefined;
      this.since = 'work';
      for (const s of [...this.sleepers]) s('work');
    } else if ((m.type === 'waiting' || m.type === 'error') && m.id !== undefined) {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.type === 'waiting') p?.resolve();
      else p?.reject(new Error(`notifications: ${m.error ?? 'wait refused'}`));
    }
  }
}

/** The server offers no channel (thrown inside `open`, answered as `unavailable` by `arm`). */
class Unavailable extends Error {}
