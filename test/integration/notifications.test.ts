/**
 * Idle consumers on the AWS backend wait on the notification channel, not a long poll: DynamoDB
 * Local holds the data, the notifier runs in process on an emulated DynamoDB Streams feed of the
 * `log` table (`stream-tap.ts`), and a local WebSocket server stands in for API Gateway's
 * WebSocket API (`ws-gateway.ts`), so the client's real `ws` code is exercised end to end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Transport } from '../../client/http.js';
import { Sluice } from '../../client/index.js';
import { WakeChannel } from '../../client/wake-channel.js';
import { loadConfig } from '../../server/config.js';
import { makeHandler } from '../../server/http/handler.js';
import { SERVER_ROUTES } from '../../server/http/routes.js';
import { Grants, parseGrants } from '../../server/http/grants.js';
import type { HttpEvent } from '../../server/http/types.js';
import type { LocalServer } from '../../server/local/server.js';
import { WAIT_PK_PREFIX } from '../../server/service/notifications/notification-store.js';
import { buildServices, type Services } from '../../server/service/runtime.js';
import type { Storage } from '../../server/storage/port.js';
import { newAwsTestStorage } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { startTestServer } from '../support/http.js';
import { tapLogStream } from '../support/stream-tap.js';
import { startWsGateway, type WsGateway } from '../support/ws-gateway.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

let storage: Storage;
let cleanup: () => Promise<void>;
let svc: Services;
let gateway: WsGateway;
let server: LocalServer;
/** Pops the client sent, by their `wait` flag. */
const pops = { waiting: 0, immediate: 0 };
const notifierErrors: unknown[] = [];

beforeAll(async () => {
  ({ storage, cleanup } = await newAwsTestStorage(awsEndpoints()));
  gateway = await startWsGateway(() => svc);
  const tapped = tapLogStream(storage, (pks) => svc.notifications.onSequencerWrites(pks), {
    onError: (e) => notifierErrors.push(e),
  });
  svc = buildServices(
    tapped,
    { ...loadConfig({}), queueCacheMs: 0, notifyUrl: gateway.url },
    { poster: async () => gateway.poster },
  );
  server = await startTestServer(svc);
});
afterAll(async () => {
  await server?.close();
  await gateway?.close();
  await cleanup?.();
});

function client(): Sluice {
  return new Sluice({
    endpoint: server.url,
    fetch: (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      if (url.pathname.startsWith('/api/v1/pop/'))
        pops[url.searchParams.get('wait') === 'true' ? 'waiting' : 'immediate']++;
      return fetch(input, init);
    },
  });
}

/** Resolves once `n` waits are registered on `queue`. */
async function waitsOn(queue: string, n = 1): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const page = await storage.items.query('meta', `${WAIT_PK_PREFIX}${queue}`);
    if (page.items.length >= n) return;
    await pause(20);
  }
  throw new Error(`no wait registered on ${queue}`);
}

describe('notifications: an idle consumer on AWS', () => {
  it('is woken by a push and never long-polls', async () => {
    const queue = `idle-${Date.now()}`;
    const sluice = client();
    await sluice.queue(queue).push([{ data: { warm: true } }]);
    const received: { at: number; data: unknown }[] = [];
    const ctl = new AbortController();
    const consuming = sluice
      .queue(queue)
      .group('g')
      .consume(
        (m) => {
          received.push({ at: Date.now(), data: m.data });
        },
        { signal: ctl.signal, each: true, safetyPollMs: 60_000 },
      );
    const latencies: number[] = [];
    try {
      for (let i = 0; i < 15; i++) {
        await waitsOn(queue);
        await pause(30); // the consumer's second look has answered: it sleeps on the channel
        const pushedAt = Date.now();
        await sluice.queue(queue).push([{ data: { i } }]);
        while (!received.some((r) => (r.data as { i?: number }).i === i)) await pause(5);
        latencies.push(received.find((r) => (r.data as { i?: number }).i === i)!.at - pushedAt);
      }
    } finally {
      ctl.abort();
      await consuming;
    }
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.ceil(latencies.length * 0.99) - 1]!;
    // Woken, not found by the 60 s safety poll; the latency target is measured by
    // `npm run bench -- --only wake`, not asserted by a timed test on a shared CI machine.
    expect(p99).toBeLessThan(10_000);
    expect(pops.waiting).toBe(0); // every wait happened on the channel, none in a Lambda
    expect(pops.immediate).toBeGreaterThan(15);
    expect(notifierErrors).toEqual([]);
    expect(gateway.invocations.get('$connect')).toBeGreaterThanOrEqual(1);
  });

  it('reconnects when API Gateway closes the connection, and is woken again', async () => {
    const queue = `drop-${Date.now()}`;
    const sluice = client();
    const got: unknown[] = [];
    const ctl = new AbortController();
    const connects = gateway.invocations.get('$connect') ?? 0;
    const consuming = sluice
      .queue(queue)
      .group('g')
      .consume((m) => void got.push(m.data), { signal: ctl.signal, each: true, safetyPollMs: 60_000 });
    const registered = (): number => gateway.invocations.get('$default') ?? 0;
    try {
      await waitsOn(queue);
      expect(gateway.invocations.get('$connect')).toBe(connects + 1);
      const before = registered();
      gateway.dropAll(); // the 2-hour limit, or 10 idle minutes
      // The consumer looks again and registers a new wait on a new connection.
      // Generous bound: on a loaded CI machine the pop, ticket and new connection take seconds.
      for (let t = 0; t < 1000 && registered() === before; t++) await pause(10);
      expect(gateway.invocations.get('$connect')).toBe(connects + 2);
      expect(gateway.open()).toBe(1);
      await pause(50);
      await sluice.queue(queue).push([{ data: 'after the drop' }]);
      for (let t = 0; t < 1000 && got.length === 0; t++) await pause(10);
      expect(got).toEqual(['after the drop']);
    } finally {
      ctl.abort();
      await consuming;
    }
  });
});

describe('notifications: the wake channel', () => {
  it('a close between registering a wait and sleeping is not slept through', async () => {
    const queue = `gap-${Date.now()}`;
    const channel = new WakeChannel(new Transport({ endpoint: server.url }), queue);
    try {
      expect(await channel.arm()).toBe('armed');
      const open = gateway.invocations.get('$connect') ?? 0;
      gateway.dropAll(); // lands while the consumer is making its second pop
      for (let t = 0; t < 500 && gateway.open() > 0; t++) await pause(10);
      await pause(50); // the client has seen the close
      const started = Date.now();
      expect(await channel.sleep(60_000)).toBe('closed');
      expect(Date.now() - started).toBeLessThan(1000);
      expect(gateway.invocations.get('$connect')).toBe(open); // nothing reconnected by itself
    } finally {
      channel.close();
    }
  });
});

describe('notifications: a group of waiters', () => {
  it('a push wakes the two longest-waiting; the one holding the rest relays, and the third wakes', async () => {
    const queue = `relay-${Date.now()}`;
    const transport = new Transport({ endpoint: server.url });
    const channels = [0, 1, 2].map(() => new WakeChannel(transport, queue, 'g'));
    try {
      for (const ch of channels) {
        expect(await ch.arm()).toBe('armed');
        await pause(5); // registration order: who waited longest
      }
      const sleeps = channels.map((ch) => ch.sleep(60_000));
      await svc.pushes.push([{ queue, payload: Buffer.from('1') }]);
      expect(await Promise.all(sleeps.slice(0, 2))).toEqual(['work', 'work']);
      // The first holds the third's share (a relay token); the second holds none.
      expect(channels.slice(0, 2).map((ch) => ch.relay())).toEqual([true, false]);
      expect(channels[0]!.relay()).toBe(false); // once per wake-up
      expect(await sleeps[2]).toBe('work');
    } finally {
      for (const ch of channels) ch.close();
    }
  });
});

describe('notifications: a channel that cannot be reached', () => {
  it('the consumer reports it and long-polls meanwhile: work is still delivered', async () => {
    // The ticket names a WebSocket URL nothing listens on.
    const broken = buildServices(storage, { ...loadConfig({}), queueCacheMs: 0, notifyUrl: 'ws://127.0.0.1:9' });
    const other = await startTestServer(broken);
    const waits: boolean[] = [];
    const sluice = new Sluice({
      endpoint: other.url,
      fetch: (input, init) => {
        const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
        if (url.pathname.startsWith('/api/v1/pop/')) waits.push(url.searchParams.get('wait') === 'true');
        return fetch(input, init);
      },
    });
    const queue = `broken-${Date.now()}`;
    const errors: unknown[] = [];
    const got: unknown[] = [];
    try {
      const consuming = sluice
        .queue(queue)
        .group('g')
        .consume((m) => void got.push(m.data), { each: true, limit: 1, onError: (e) => void errors.push(e) });
      for (let t = 0; t < 1000 && !waits.includes(true); t++) await pause(10);
      await sluice.queue(queue).push([{ data: 'still delivered' }]);
      await consuming;
      expect(got).toEqual(['still delivered']);
      expect(errors.length).toBeGreaterThan(0);
      expect(waits).toContain(true);
    } finally {
      await other.close();
    }
  });
});

describe('notifications: tickets and waits', () => {
  it('a ticket opens one connection, once, and only for the queues it names', async () => {
    const { WebSocket } = await import('ws');
    const ticket = await svc.notifications.issueTicket('alice', ['t-orders']);
    if (!ticket.available) throw new Error('expected a channel');
    const open = (t: string) =>
      new Promise<InstanceType<typeof WebSocket>>((resolve, reject) => {
        const ws = new WebSocket(`${gateway.url}/?ticket=${t}`);
        ws.once('open', () => resolve(ws));
        ws.once('error', reject);
      });
    const ws = await open(ticket.ticket);
    await expect(open(ticket.ticket)).rejects.toThrow(/401/); // used
    await expect(open('made-up')).rejects.toThrow(/401/);
    const answer = (m: unknown) =>
      new Promise<unknown>((resolve) => {
        ws.once('message', (d: Buffer) => resolve(JSON.parse(d.toString('utf8'))));
        ws.send(JSON.stringify(m));
      });
    expect(await answer({ action: 'wait', queue: 't-bills', id: '1' })).toMatchObject({
      type: 'error',
      error: 'the ticket did not name this queue',
    });
    expect(await answer({ action: 'wait', queue: 't-orders', id: '2' })).toEqual({
      type: 'waiting',
      queue: 't-orders',
      id: '2',
    });
    expect(await answer({ action: 'ping', id: '3' })).toEqual({ type: 'pong', id: '3' });
    // A push wakes the wait once: the wait is gone after it.
    const work = new Promise((resolve) => ws.once('message', (d: Buffer) => resolve(JSON.parse(d.toString('utf8')))));
    await svc.pushes.push([{ queue: 't-orders', payload: Buffer.from('1') }]);
    expect(await work).toEqual({ type: 'work', queue: 't-orders' });
    expect((await storage.items.query('meta', `${WAIT_PK_PREFIX}t-orders`)).items).toEqual([]);
    ws.close();
  });

  it('the ticket route answers only callers granted consume on every queue named', async () => {
    const handler = makeHandler(SERVER_ROUTES, {
      services: async () => svc,
      grants: Grants.from(
        parseGrants({ grants: [{ principal: 'user-42', actions: ['consume'], queues: ['orders.*'] }] }, 'test'),
      ),
    });
    const event = (sub: string, queues: string[]) =>
      ({
        version: '2.0',
        rawPath: '/api/v1/notifications/ticket',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ queues }),
        requestContext: {
          http: { method: 'POST', path: '/api/v1/notifications/ticket' },
          authorizer: { jwt: { claims: { sub }, scopes: [] } },
        },
      }) as unknown as HttpEvent;
    const ok = await handler(event('user-42', ['orders.eu']), {});
    expect(ok.statusCode).toBe(200);
    expect(JSON.parse(ok.body as string)).toMatchObject({ available: true, url: gateway.url, queues: ['orders.eu'] });
    expect((await handler(event('user-42', ['orders.eu', 'payroll']), {})).statusCode).toBe(403);
    expect((await handler(event('user-7', ['orders.eu']), {})).statusCode).toBe(403);
  });
});
