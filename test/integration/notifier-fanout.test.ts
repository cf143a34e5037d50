/**
 * The notifier at scale, in process: 2,000 connections wait on one queue (embedded storage),
 * a fake PostToConnection records every post and how many calls are in flight, and the clock
 * is moved by hand, one wave (a wake-up's latency budget) at a time. The push wakes at most two
 * per group with at most WAKE_CONCURRENCY calls at once; consumers that find work relay, and
 * every waiter is woken within the stated bound (`wakeWaves`, core/wake-plan.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WAIT_HOLD_MS, type ServerMessage } from '../../server/core/notifications.js';
import { WAKES_PER_GROUP, wakeWaves } from '../../server/core/wake-plan.js';
import { answerSocketEvent } from '../../server/http/notification-socket.js';
import type { ConnectionPoster } from '../../server/service/notifications/connection-poster.js';
import {
  WAIT_PK_PREFIX,
  connectionItem,
  notificationKeys,
} from '../../server/service/notifications/notification-store.js';
import { WAKE_CONCURRENCY } from '../../server/service/notifications/wake-fanout.js';
import { MemoryTelemetry } from '../../server/service/telemetry.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { withItems } from '../support/storage.js';
import { TestClock, testServices } from '../support/services.js';

/** The latency budget of one wake-up (docs/DEPLOYING.md, "Idle consumers": p99 under 1 s). */
const WAVE_MS = 1_000;
const QUEUE = 'fan';

/** Calls (deletes and posts) in flight, and the most seen at once. */
const calls = { now: 0, max: 0 };
const enter = (): void => void (calls.max = Math.max(calls.max, ++calls.now));
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

let dataDir: string;
let storage: Storage;
let clock: TestClock;
let telemetry: MemoryTelemetry;
const posts: { connectionId: string; message: ServerMessage; at: number }[] = [];
const gone = new Set<string>();
const failing = new Set<string>();

const poster: ConnectionPoster = {
  async post(connectionId, message) {
    enter();
    await tick(); // a post takes a while: concurrent ones overlap
    calls.now--;
    if (failing.has(connectionId)) throw new Error('500 from the management API');
    if (gone.has(connectionId)) return 'gone';
    posts.push({ connectionId, message, at: clock.now() });
    return 'sent';
  },
};

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sluice-fanout-'));
  const inner = await openEmbeddedStorage({ dataDir, sync: 'normal' });
  storage = withItems(inner, {
    delete: async (t, k, c) => {
      enter();
      try {
        await tick();
        return await inner.items.delete(t, k, c);
      } finally {
        calls.now--;
      }
    },
  });
  clock = new TestClock();
  telemetry = new MemoryTelemetry();
  posts.length = 0;
  gone.clear();
  failing.clear();
  Object.assign(calls, { now: 0, max: 0 });
});
afterEach(async () => {
  await storage.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** The services, with `n` connections of each group open on QUEUE, and a partition to push to. */
async function setUp(groups: Record<string, number>) {
  const svc = testServices(storage, {
    clock,
    config: { notifyUrl: 'wss://example.execute-api.eu-west-1.amazonaws.com/live' },
    build: { poster: async () => poster, telemetry },
  });
  const [pushed] = await svc.pushes.push([{ queue: QUEUE, payload: Buffer.from('{}') }]);
  const groupOf = new Map<string, string>();
  const conns = Object.entries(groups).flatMap(([g, n]) =>
    Array.from({ length: n }, (_, i) => {
      // API Gateway's connection ids look like this (base64 of 12 bytes or so).
      const id = Buffer.from(`${g}:${i}`).toString('base64');
      groupOf.set(id, g);
      return id;
    }),
  );
  await storage.items.writeEach(
    conns.map((id) => ({
      op: 'put',
      table: 'meta',
      item: connectionItem(id, { principal: 'p', queues: [QUEUE], connectedAt: clock.now() }),
    })),
    { deferDurability: true },
  );
  return { svc, conns, groupOf, seq: `SEQ#${pushed!.partitionId}` };
}

/** `$default` with a body, as API Gateway invokes it. */
const socket = (svc: Parameters<typeof answerSocketEvent>[0], connectionId: string, body: unknown) =>
  answerSocketEvent(svc, { requestContext: { routeKey: '$default', connectionId }, body: JSON.stringify(body) });

describe('notifier: 2,000 waiters on one queue', () => {
  it('a push wakes at most k per group, c calls at a time; relays wake every waiter within the bound', async () => {
    const sizes: Record<string, number> = { big: 1_000 };
    for (let g = 0; g < 40; g++) sizes[`g${String(g).padStart(2, '0')}`] = 25;
    const { svc, conns, groupOf, seq } = await setUp(sizes);
    for (const id of conns) {
      clock.advance(1); // registration order decides who a push wakes first
      await svc.notifications.registerWait(id, QUEUE, groupOf.get(id));
    }

    clock.advance(WAVE_MS);
    const pushAt = clock.now();
    const push = await svc.notifications.onSequencerWrites([seq]);
    const perGroup = new Map<string, number>();
    for (const p of posts)
      perGroup.set(groupOf.get(p.connectionId)!, (perGroup.get(groupOf.get(p.connectionId)!) ?? 0) + 1);
    expect(Math.max(...perGroup.values())).toBe(WAKES_PER_GROUP);
    expect(perGroup.size).toBe(41);
    expect(push).toMatchObject({ queues: 1, woken: 41 * WAKES_PER_GROUP, dropped: 0 });
    expect(calls.max).toBeLessThanOrEqual(WAKE_CONCURRENCY);
    expect(calls.max).toBeGreaterThan(1);

    // Every woken consumer finds work (a backlog) and relays its token, one wave at a time.
    const waveOf = new Map<string, number>(posts.map((p) => [p.connectionId, 1]));
    let wave = posts.slice();
    for (let n = 2; wave.length > 0; n++) {
      clock.advance(WAVE_MS);
      const before = posts.length;
      const relayed = await Promise.all(
        wave
          .filter((p) => p.message.type === 'work' && p.message.relay !== undefined)
          .map((p) =>
            svc.notifications.relay(
              p.connectionId,
              QUEUE,
              groupOf.get(p.connectionId)!,
              (p.message as { relay: string }).relay,
            ),
          ),
      );
      expect(Math.max(0, ...relayed.map((r) => r.woken))).toBeLessThanOrEqual(WAKES_PER_GROUP);
      wave = posts.slice(before);
      for (const p of wave) waveOf.set(p.connectionId, n);
    }

    expect(posts).toHaveLength(2_000); // each woken once
    expect(new Set(posts.map((p) => p.connectionId)).size).toBe(2_000);
    for (const p of posts) {
      const bound = wakeWaves(sizes[groupOf.get(p.connectionId)!]!);
      expect(waveOf.get(p.connectionId)).toBeLessThanOrEqual(bound);
      expect(p.at - pushAt).toBeLessThanOrEqual((bound - 1) * WAVE_MS);
    }
    expect(Math.max(...waveOf.values())).toBe(wakeWaves(1_000)); // 9: the bound is met, not beaten by luck
    expect((await storage.items.query('meta', `${WAIT_PK_PREFIX}${QUEUE}`)).items).toEqual([]);
    expect(telemetry.counters.get('WakeUps')).toBe(2_000);
    expect(telemetry.counters.get('WakeUpsDropped')).toBeUndefined();
  });
});

describe('notifier: waits without a group, lost posts, stale waits', () => {
  it('an old client is woken k per push, longest-waiting first, with no token; failures are counted', async () => {
    const { svc, conns, seq } = await setUp({ old: 6, new: 3 });
    const [o0, o1, o2, o3, o4, o5, n0, n1, n2] = conns as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    // Old clients send no group; a new client's wait names one.
    for (const id of [o0, o1, o2, o3, o4, o5]) {
      clock.advance(1);
      expect(await socket(svc, id, { action: 'wait', queue: QUEUE, id: '1' })).toMatchObject({ statusCode: 200 });
    }
    for (const id of [n0, n1, n2]) {
      clock.advance(1);
      await socket(svc, id, { action: 'wait', queue: QUEUE, group: 'g' });
    }
    gone.add(o0); // closed since: its place goes to the next of its branch, and it is forgotten
    failing.add(n0); // the management API fails this one: a dropped wake-up, and n2 is woken instead
    clock.advance(1_000);
    await svc.notifications.onSequencerWrites([seq]);
    const first = posts.map((p) => p.connectionId);
    const stand = first.filter((c) => [o2, o3, o4, o5].includes(c));
    expect(stand).toHaveLength(1);
    expect(first.sort()).toEqual([o1, stand[0], n1, n2].sort());
    // Old clients cannot relay: their messages carry no token.
    expect(posts.filter((p) => [o1, ...stand].includes(p.connectionId)).map((p) => p.message)).toEqual([
      { type: 'work', queue: QUEUE },
      { type: 'work', queue: QUEUE },
    ]);
    expect(await storage.items.get('meta', notificationKeys.connection(o0))).toBeUndefined();
    expect(telemetry.counters.get('WakeUpsDropped')).toBe(1);

    // The next push wakes the next longest-waiting old clients; a stale wait is only removed.
    const rest = [o2, o3, o4, o5].filter((c) => c !== stand[0]);
    posts.length = 0;
    clock.advance(WAIT_HOLD_MS - 1_100); // still held
    await svc.notifications.onSequencerWrites([seq]);
    expect(posts.map((p) => p.connectionId).sort()).toEqual(rest.slice(0, 2).sort());
    clock.advance(60_000); // the last one's hold is over
    await svc.notifications.onSequencerWrites([seq]);
    expect(posts).toHaveLength(2);
    expect((await storage.items.query('meta', `${WAIT_PK_PREFIX}${QUEUE}`)).items).toEqual([]);

    // A relay is answered with nothing; a made-up token is not carried out.
    expect(await socket(svc, n1, { action: 'relay', queue: QUEUE, group: 'g', token: 'nope' })).toEqual({
      statusCode: 200,
    });
    expect(await socket(svc, n1, { action: 'relay', queue: QUEUE, group: 'a/b', token: 'x' })).toMatchObject({
      body: expect.stringContaining('"type":"error"') as unknown,
    });
  });
});
