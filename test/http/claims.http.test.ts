import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Grants } from '../../server/http/grants.js';
import { makeHandler } from '../../server/http/handler.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { withBearerTokens } from '../../server/local/auth.js';
import { startLocalServer, type LocalServer } from '../../server/local/server.js';
import type { Services } from '../../server/service/runtime.js';
import type { MemoryTelemetry } from '../../server/service/telemetry.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, type HttpReply } from '../support/http.js';
import { leaseCalls } from '../support/lease-calls.js';
import type { ErrorReply, PollReply } from '../support/replies.js';
import { TestClock, testServices } from '../support/services.js';
import { withItems } from '../support/storage.js';

// Every scenario the Felix design names, as a black box over HTTP on both backends. The
// server's services run on a TestClock, so claims lapse when the test moves the clock.

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const TOKENS = {
  alice: 'alice-token-0123456789abcdef',
  bob: 'bob-token-0123456789abcdefgh',
  worker: 'worker-token-0123456789abcd',
} as const;
type Who = keyof typeof TOKENS;

const enc = encodeURIComponent;
const G = (queue: string, group = 'workers', partition = 'Default'): string =>
  `/api/v1/queues/${enc(queue)}/partitions/${enc(partition)}/groups/${enc(group)}`;

interface Rec {
  offset: number;
  transactionId: string;
  data: unknown;
  attempts: number;
  skippedBefore?: number;
  createdAt: string;
}

/** The storage the server runs on, with a hook a test can use to hold the next transaction. */
function hookable(inner: Storage): {
  storage: Storage;
  holdNextTransact(): { arrived: Promise<void>; release(): void };
} {
  let hold: { gate: Promise<void>; arrived: () => void } | undefined;
  const storage = withItems(inner, {
    transact: async (ops) => {
      const h = hold;
      if (h && ops.some((o) => o.table === 'claims')) {
        hold = undefined;
        h.arrived();
        await h.gate;
      }
      return inner.items.transact(ops);
    },
  });
  return {
    storage,
    holdNextTransact() {
      let release: () => void = () => {};
      let arrivedResolve: () => void = () => {};
      const gate = new Promise<void>((r) => (release = r));
      const arrived = new Promise<void>((r) => (arrivedResolve = r));
      hold = { gate, arrived: arrivedResolve };
      return { arrived, release };
    },
  };
}

describe.each(backends)('http: record claims on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let svc: Services;
  let clock: TestClock;
  let server: LocalServer;
  let hooks: ReturnType<typeof hookable>;
  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
    clock = new TestClock();
    hooks = hookable(storage);
    svc = testServices(hooks.storage, { clock });
    // alice and bob may do anything; worker may push and consume, not manage.
    const grants = Grants.from({
      grants: [
        { principal: 'alice', actions: ['push', 'consume', 'manage'], queues: ['*'] },
        { principal: 'bob', actions: ['push', 'consume', 'manage'], queues: ['*'] },
        { principal: 'worker', actions: ['push', 'consume'], queues: ['*'] },
      ],
    });
    const tokens = Object.fromEntries(Object.entries(TOKENS).map(([who, token]) => [token, who]));
    server = await startLocalServer({
      handler: withBearerTokens(makeHandler(ALL_ROUTES, { services: async () => svc, grants }), tokens),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: svc.config.maxBodyBytes,
    });
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });

  /** Another server (another process, as far as claims go) over given services, same grants and tokens. */
  const serverOver = (services: Services): Promise<LocalServer> => {
    const grants = Grants.from({
      grants: [{ principal: 'alice', actions: ['push', 'consume', 'manage'], queues: ['*'] }],
    });
    const tokens = Object.fromEntries(Object.entries(TOKENS).map(([who, token]) => [token, who]));
    return startLocalServer({
      handler: withBearerTokens(makeHandler(ALL_ROUTES, { services: async () => services, grants }), tokens),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: services.config.maxBodyBytes,
    });
  };
  const http = <T = unknown>(method: string, path: string, body?: unknown, who: Who = 'alice'): Promise<HttpReply<T>> =>
    call<T>(server.url, method, path, body, { authorization: `Bearer ${TOKENS[who]}` });
  const ok = async (
    method: string,
    path: string,
    body?: unknown,
    who: Who = 'alice',
  ): Promise<Record<string, unknown>> => {
    const r = await http(method, path, body, who);
    expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(200);
    return r.body as Record<string, unknown>;
  };
  const leases = leaseCalls(() => ({ url: server.url, headers: { authorization: `Bearer ${TOKENS.alice}` } }));
  /** `n` messages `{ i }` as alice. */
  const push = async (queue: string, n: number): Promise<void> => {
    await leases.push(
      queue,
      Array.from({ length: n }, (_, i) => ({ i })),
    );
  };
  const configure = async (queue: string, options: Record<string, number>): Promise<void> => {
    await ok('POST', '/api/v1/configure', { queue, options });
  };
  const poll = async (
    queue: string,
    body: Record<string, unknown> = {},
    who: Who = 'alice',
    group = 'workers',
  ): Promise<Rec[]> => (await ok('POST', `${G(queue, group)}/poll`, body, who)).records as Rec[];
  const offsets = async (
    queue: string,
    body: Record<string, unknown> = {},
    who: Who = 'alice',
    group = 'workers',
  ): Promise<number[]> => (await poll(queue, body, who, group)).map((r) => r.offset);
  const ack = async (queue: string, list: number[]): Promise<number> =>
    (await ok('POST', `${G(queue)}/ack`, { offsets: list })).committed as number;
  const deadLetters = async (queue: string): Promise<number[]> =>
    (await ok('GET', `${G(queue)}/dead-letters`)).offsets as number[];
  const expectError = async (
    method: string,
    path: string,
    body: unknown,
    status: number,
    code: string,
    who: Who = 'alice',
  ): Promise<void> => {
    const r = await http<ErrorReply>(method, path, body, who);
    expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
    expect(r.body.code).toBe(code);
    expect(typeof r.body.error).toBe('string');
  };

  it('an_offset_in_flight_is_not_handed_out_again', async () => {
    await push('s-inflight', 4);
    expect(await offsets('s-inflight', { max: 2 })).toEqual([0, 1]);
    expect(await offsets('s-inflight', { max: 2 })).toEqual([2, 3]);
    expect(await http('POST', `${G('s-inflight')}/poll`, { max: 2 })).toMatchObject({
      status: 200,
      body: { records: [], capped: false },
    });
  });

  it('a_lapsed_claim_is_handed_out_again', async () => {
    await push('s-lapse', 3);
    const first = await poll('s-lapse', { max: 3 });
    expect(first.map((r) => [r.offset, r.attempts, r.data])).toEqual([
      [0, 1, { i: 0 }],
      [1, 1, { i: 1 }],
      [2, 1, { i: 2 }],
    ]);
    expect(first[0]!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(typeof first[0]!.transactionId).toBe('string');
    clock.advance(29_999);
    expect(await offsets('s-lapse', { max: 3 })).toEqual([]);
    clock.advance(1);
    expect((await poll('s-lapse', { max: 3 })).map((r) => [r.offset, r.attempts])).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
    ]);
  });

  it('the_cursor_does_not_advance_over_a_gap', async () => {
    await push('s-gap', 4);
    await poll('s-gap', { max: 4 });
    expect(await ack('s-gap', [1, 3])).toBe(0);
    expect(await ack('s-gap', [0])).toBe(2);
    expect(await ack('s-gap', [2])).toBe(4);
  });

  it('owed_records_go_out_before_new_ones', async () => {
    await push('s-owed', 2);
    await poll('s-owed', { max: 2 });
    await ok('POST', `${G('s-owed')}/nack`, { offset: 0 });
    await ok('POST', `${G('s-owed')}/nack`, { offset: 1, attempts: 1 });
    await push('s-owed', 3);
    expect(await offsets('s-owed', { max: 3 })).toEqual([0, 1, 2]);
  });

  it('a_record_is_given_up_on_after_the_attempt_bound', async () => {
    await configure('s-bound', { maxAttempts: 3 });
    await push('s-bound', 1);
    for (let i = 1; i <= 3; i++) {
      expect((await poll('s-bound')).map((r) => r.attempts)).toEqual([i]);
      clock.advance(30_000);
    }
    expect(await offsets('s-bound')).toEqual([]);
    expect(await deadLetters('s-bound')).toEqual([0]);
    expect(await ok('GET', G('s-bound'))).toMatchObject({ committed: 1, deadLetters: 1 });
  });

  it('a_redriven_record_is_handed_out_again', async () => {
    await configure('s-redrive', { maxAttempts: 1 });
    await push('s-redrive', 3);
    expect(await offsets('s-redrive', { max: 2 })).toEqual([0, 1]);
    clock.advance(30_000);
    expect(await offsets('s-redrive', { max: 3 })).toEqual([2]);
    expect(await ack('s-redrive', [2])).toBe(3);
    expect(await deadLetters('s-redrive')).toEqual([0, 1]);
    expect(await ok('POST', `${G('s-redrive')}/dead-letters/0/redrive`)).toEqual({ offset: 0, redriven: true });
    expect(await offsets('s-redrive', { max: 3 })).toEqual([0]);
    expect(await ok('GET', G('s-redrive'))).toMatchObject({ committed: 3 });
  });

  it('a_redriven_record_gets_its_attempts_back', async () => {
    await configure('s-attempts', { maxAttempts: 2 });
    await push('s-attempts', 1);
    await poll('s-attempts');
    clock.advance(30_000);
    expect((await poll('s-attempts'))[0]?.attempts).toBe(2);
    clock.advance(30_000);
    expect(await offsets('s-attempts')).toEqual([]);
    await ok('POST', `${G('s-attempts')}/dead-letters/0/redrive`);
    expect((await poll('s-attempts')).map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
  });

  it('a_redriven_record_is_still_owed_after_a_restart', async () => {
    await push('s-restart', 2);
    await poll('s-restart', { max: 1 });
    await ok('POST', `${G('s-restart')}/dead-letter`, { offset: 0 });
    await ok('POST', `${G('s-restart')}/dead-letters/0/redrive`);
    // Restart: a new server over new services (no memory kept), same storage.
    const second = await serverOver(testServices(storage, { clock }));
    try {
      const r = await call<PollReply>(
        second.url,
        'POST',
        `${G('s-restart')}/poll`,
        { max: 1 },
        { authorization: `Bearer ${TOKENS.alice}` },
      );
      expect(r.body.records.map((x) => [x.offset, x.attempts])).toEqual([[0, 1]]);
      const list = await call(second.url, 'GET', `${G('s-restart')}/dead-letters`, undefined, {
        authorization: `Bearer ${TOKENS.alice}`,
      });
      expect(list.body).toEqual({ offsets: [] });
    } finally {
      await second.close();
    }
  });

  it('an_extended_claim_outlasts_the_visibility_timeout', async () => {
    await push('s-extend', 1);
    await poll('s-extend');
    clock.advance(25_000);
    expect(await ok('POST', `${G('s-extend')}/extend`, { offset: 0, attempts: 1, extendMs: 120_000 })).toEqual({
      visibleMs: 120_000,
    });
    clock.advance(5_001);
    expect(await offsets('s-extend')).toEqual([]);
    clock.advance(120_000 - 5_001);
    expect((await poll('s-extend')).map((r) => [r.offset, r.attempts])).toEqual([[0, 2]]);
  });

  it('an_extend_after_the_record_was_handed_out_again_is_refused', async () => {
    await push('s-extend-late', 1);
    await poll('s-extend-late');
    clock.advance(30_000);
    expect((await poll('s-extend-late'))[0]?.attempts).toBe(2);
    await expectError(
      'POST',
      `${G('s-extend-late')}/extend`,
      { offset: 0, attempts: 1, extendMs: 60_000 },
      409,
      'stale_claim',
    );
    expect(await ok('GET', G('s-extend-late'))).toMatchObject({ inFlight: 1, owed: 0 });
    expect(await ok('POST', `${G('s-extend-late')}/extend`, { offset: 0, attempts: 2, extendMs: 60_000 })).toEqual({
      visibleMs: 60_000,
    });
    clock.advance(59_999);
    expect(await offsets('s-extend-late')).toEqual([]);
  });

  it('a_delayed_nack_is_redelivered_after_the_delay', async () => {
    await push('s-delay', 1);
    await poll('s-delay');
    expect(await ok('POST', `${G('s-delay')}/nack`, { offset: 0, attempts: 1, delayMs: 10_000 })).toEqual({
      offset: 0,
      delayMs: 10_000,
    });
    clock.advance(9_999);
    expect(await offsets('s-delay')).toEqual([]);
    clock.advance(1);
    expect((await poll('s-delay')).map((r) => [r.offset, r.attempts])).toEqual([[0, 2]]);
  });

  it('a_consumer_dead_letter_is_listed_finished_and_redrivable', async () => {
    await push('s-cdl', 2);
    await poll('s-cdl', { max: 2 });
    expect(await ok('POST', `${G('s-cdl')}/dead-letter`, { offset: 0, attempts: 1 })).toMatchObject({
      offset: 0,
      deadLettered: true,
    });
    expect(await ack('s-cdl', [1])).toBe(2);
    expect(await deadLetters('s-cdl')).toEqual([0]);
    expect(await offsets('s-cdl')).toEqual([]);
    await expectError('POST', `${G('s-cdl')}/dead-letter`, { offset: 1 }, 409, 'stale_claim');
    await ok('POST', `${G('s-cdl')}/dead-letters/0/redrive`);
    expect((await poll('s-cdl')).map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
  });

  it('a_tracker_with_a_standing_claim_is_not_evicted', async () => {
    await push('s-evict', 2);
    expect(await offsets('s-evict', { max: 1, visibilityMs: 12 * 3600_000 })).toEqual([0]);
    // Idle for an hour (Felix evicts idle trackers after ten minutes), with the clean-up pass run.
    clock.advance(3600_000);
    await svc.claims.sweep('s-evict', 'Default', 'workers');
    expect(await ok('GET', G('s-evict'))).toMatchObject({ inFlight: 1, committed: 0 });
    expect(await offsets('s-evict', { max: 2 })).toEqual([1]);
    // Once it lapses the record is owed again, not lost.
    clock.advance(11 * 3600_000);
    await svc.claims.sweep('s-evict', 'Default', 'workers');
    expect((await poll('s-evict', { max: 2 })).map((r) => [r.offset, r.attempts])).toEqual([
      [0, 2],
      [1, 2],
    ]);
  });

  it('a_consumer_extends_delays_and_dead_letters_its_claims', async () => {
    await push('s-control', 3);
    expect(await offsets('s-control', { max: 3 })).toEqual([0, 1, 2]);
    clock.advance(20_000);
    await ok('POST', `${G('s-control')}/extend`, { offset: 0, attempts: 1, extendMs: 60_000 });
    await ok('POST', `${G('s-control')}/nack`, { offset: 1, attempts: 1, delayMs: 5_000 });
    await ok('POST', `${G('s-control')}/dead-letter`, { offset: 2, attempts: 1 });
    clock.advance(10_001);
    expect((await poll('s-control', { max: 3 })).map((r) => [r.offset, r.attempts])).toEqual([[1, 2]]);
    expect(await deadLetters('s-control')).toEqual([2]);
    expect(await ack('s-control', [0, 1])).toBe(3);
  });

  it('a_seek_backwards_replays_what_the_group_finished', async () => {
    await push('s-replay', 3);
    await poll('s-replay', { max: 3 });
    expect(await ack('s-replay', [0, 1, 2])).toBe(3);
    expect(await ok('POST', `${G('s-replay')}/seek`, { start: { offset: 1 } })).toEqual({ offset: 1, moved: true });
    expect((await poll('s-replay', { max: 3 })).map((r) => r.data)).toEqual([{ i: 1 }, { i: 2 }]);
  });

  it('an_ack_for_a_claim_from_before_a_seek_is_refused', async () => {
    await push('s-stale', 3);
    await poll('s-stale', { max: 3 });
    await ok('POST', `${G('s-stale')}/seek`, { start: 'earliest' });
    await expectError('POST', `${G('s-stale')}/ack`, { offsets: [1] }, 409, 'stale_claim');
    expect(await offsets('s-stale', { max: 3 })).toEqual([0, 1, 2]);
  });

  it('an_ack_racing_a_seek_does_not_move_the_new_cursor', async () => {
    await push('s-race', 3);
    await poll('s-race', { max: 3 });
    // Two instances (as two Lambda containers) over one storage: the ack on this one has read
    // the group and decided, and its write is held until the seek on the other has landed.
    const other = await serverOver(testServices(storage, { clock }));
    try {
      const held = hooks.holdNextTransact();
      const settling = http<ErrorReply>('POST', `${G('s-race')}/ack`, { offsets: [0, 1, 2] });
      await held.arrived;
      let seek: HttpReply<Record<string, unknown>>;
      try {
        seek = await call(
          other.url,
          'POST',
          `${G('s-race')}/seek`,
          { start: { offset: 0 } },
          { authorization: `Bearer ${TOKENS.alice}` },
        );
      } finally {
        held.release();
      }
      // The position is where it was (nothing was finished), but every claim is void.
      expect(seek).toMatchObject({ status: 200, body: { offset: 0, moved: false } });
      const a = await settling;
      expect(a.status).toBe(409);
      expect(a.body.code).toBe('stale_claim');
      expect(await ok('GET', G('s-race'))).toMatchObject({ committed: 0, inFlight: 0 });
      expect(await offsets('s-race', { max: 3 })).toEqual([0, 1, 2]);
    } finally {
      await other.close();
    }
  });

  it('a_group_is_created_moved_described_and_deleted', async () => {
    await push('s-admin', 5);
    expect(await ok('PUT', G('s-admin'), { start: 'latest' })).toEqual({ offset: 5, moved: true });
    expect(await ok('PUT', G('s-admin'), { start: 'earliest' })).toEqual({ offset: 5, moved: false });
    await push('s-admin', 3);
    expect(await offsets('s-admin', { max: 2 })).toEqual([5, 6]);
    await ok('POST', `${G('s-admin')}/nack`, { offset: 6 });
    expect(await ok('GET', G('s-admin'))).toEqual({
      committed: 5,
      tail: 8,
      lag: 3,
      inFlight: 1,
      owed: 1,
      delayed: 0,
      deadLetters: 0,
    });
    await ok('POST', `${G('s-admin')}/dead-letter`, { offset: 5 });
    expect(await ok('GET', G('s-admin'))).toMatchObject({ deadLetters: 1, committed: 6 });
    expect(await ok('POST', `${G('s-admin')}/seek`, { start: { offset: 2 } })).toEqual({ offset: 2, moved: true });
    expect(await ok('GET', G('s-admin'))).toMatchObject({ committed: 2, lag: 6, inFlight: 0, owed: 0, deadLetters: 1 });
    expect(await ok('DELETE', G('s-admin'))).toEqual({ existed: true });
    await expectError('GET', G('s-admin'), undefined, 404, 'not_found');
    expect(await deadLetters('s-admin')).toEqual([]);
    expect(await ok('DELETE', G('s-admin'))).toEqual({ existed: false });
    // It starts over at offset 0.
    expect(await offsets('s-admin', { max: 2 })).toEqual([0, 1]);
  });

  // ------------------------------------------------------------- beyond the scenarios

  it('named members: a new session reclaims what its name holds; an older one and another principal do not', async () => {
    await push('m-reclaim', 8);
    expect(await offsets('m-reclaim', { max: 3, consumer: 'w1', session: 'boot-1' })).toEqual([0, 1, 2]);
    await ok('POST', `${G('m-reclaim')}/nack`, { offset: 2 }); // owed to the group
    // bob uses the same name: it is not his.
    expect(await offsets('m-reclaim', { max: 1, consumer: 'w1', session: 'boot-9', reclaim: true }, 'bob')).toEqual([
      2,
    ]);
    // The restarted process takes back 0 and 1 first, at another attempt.
    expect(
      (await poll('m-reclaim', { max: 3, consumer: 'w1', session: 'boot-2', reclaim: true })).map((r) => [
        r.offset,
        r.attempts,
      ]),
    ).toEqual([
      [0, 2],
      [1, 2],
      [3, 1],
    ]);
    // The older session never takes anything back.
    expect(await offsets('m-reclaim', { max: 1, consumer: 'w1', session: 'boot-1', reclaim: true })).toEqual([4]);
    await expectError('POST', `${G('m-reclaim')}/poll`, { reclaim: true, consumer: 'w1' }, 400, 'invalid_request');
    await expectError('POST', `${G('m-reclaim')}/poll`, { session: 's' }, 400, 'invalid_request');
    await expectError(
      'POST',
      `${G('m-reclaim')}/poll`,
      { consumer: 'x'.repeat(129), session: 's' },
      400,
      'invalid_request',
    );
  });

  it('named members, as item 6 says: a new session reclaims first (before owed), once; older sessions and other principals take nothing back', async () => {
    await configure('m-members', { maxAttempts: 3 });
    await push('m-members', 10);
    const got = async (body: Record<string, unknown>, who: Who = 'alice'): Promise<number[][]> =>
      (await poll('m-members', body, who)).map((r) => [r.offset, r.attempts]);
    const as = (session: string, max: number, reclaim = true): Record<string, unknown> => ({
      max,
      consumer: 'w',
      session,
      reclaim,
    });
    expect(await got(as('s1', 4, false))).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
    await ok('POST', `${G('m-members')}/nack`, { offset: 3, attempts: 1 }); // owed to the group
    await ok('POST', `${G('m-members')}/nack`, { offset: 2, attempts: 1, delayMs: 60_000 }); // nobody holds it
    // The first reclaiming poll of a new session: what the name holds, before the owed record.
    expect(await got(as('s2', 1))).toEqual([[0, 2]]);
    // Another principal under the same name gets nothing of it: the owed record, then new ones.
    expect(await got(as('b1', 3), 'bob')).toEqual([
      [3, 2],
      [4, 1],
      [5, 1],
    ]);
    // The older session never takes anything back; it keeps working.
    expect(await got(as('s1', 1))).toEqual([[6, 1]]);
    // Later polls of s2 do not reclaim again: they finish taking what the first one reserved
    // (1), and leave alone what s1 claimed since (6) and the delayed nack (2).
    expect(await got(as('s2', 5))).toEqual([
      [1, 2],
      [7, 1],
      [8, 1],
      [9, 1],
    ]);
    // A newer session takes back everything the name holds under older ones.
    expect(await got(as('s3', 10))).toEqual([
      [0, 3],
      [1, 3],
      [6, 2],
      [7, 2],
      [8, 2],
      [9, 2],
    ]);
    // Out of attempts (0 and 1 had 3 deliveries): not handed back again, whatever the session.
    expect(await got(as('s4', 10))).toEqual([
      [6, 3],
      [7, 3],
      [8, 3],
      [9, 3],
    ]);
    expect(await ok('GET', G('m-members'))).toMatchObject({ inFlight: 10, delayed: 1, owed: 0 });
  });

  it('refuses to nack or dead-letter a redriven record before it is handed out again', async () => {
    await push('m-redriven', 1);
    await poll('m-redriven');
    await ok('POST', `${G('m-redriven')}/dead-letter`, { offset: 0, attempts: 1 });
    await ok('POST', `${G('m-redriven')}/dead-letters/0/redrive`);
    await expectError('POST', `${G('m-redriven')}/nack`, { offset: 0, delayMs: 60_000 }, 409, 'stale_claim');
    await expectError('POST', `${G('m-redriven')}/dead-letter`, { offset: 0 }, 409, 'stale_claim');
    expect(await ok('GET', G('m-redriven'))).toMatchObject({ inFlight: 0, owed: 1, delayed: 0, deadLetters: 0 });
    expect((await poll('m-redriven')).map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
  });

  it('a seek back over a redriven record hands it out once, with the replay', async () => {
    await push('m-seek-redriven', 5);
    expect(await offsets('m-seek-redriven', { max: 3 })).toEqual([0, 1, 2]);
    await ok('POST', `${G('m-seek-redriven')}/dead-letter`, { offset: 2, attempts: 1 });
    await ack('m-seek-redriven', [0, 1]);
    expect(await offsets('m-seek-redriven', { max: 2 })).toEqual([3, 4]);
    expect(await ack('m-seek-redriven', [3, 4])).toBe(5);
    await ok('POST', `${G('m-seek-redriven')}/dead-letters/2/redrive`);
    expect(await ok('POST', `${G('m-seek-redriven')}/seek`, { start: 'earliest' })).toEqual({ offset: 0, moved: true });
    expect((await poll('m-seek-redriven', { max: 10 })).map((r) => [r.offset, r.attempts])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 1],
    ]);
    expect(await offsets('m-seek-redriven', { max: 10 })).toEqual([]);
    expect(await ok('GET', G('m-seek-redriven'))).toMatchObject({ committed: 0, inFlight: 5, owed: 0, deadLetters: 0 });
  });

  it('counts delayed nacks under the in-flight cap, and counts capped polls', async () => {
    await configure('m-cap-delay', { maxInFlight: 2 });
    await push('m-cap-delay', 4);
    expect(await offsets('m-cap-delay', { max: 4 })).toEqual([0, 1]);
    await ok('POST', `${G('m-cap-delay')}/nack`, { offset: 0, attempts: 1, delayMs: 60_000 });
    await ack('m-cap-delay', [1]);
    expect(await offsets('m-cap-delay', { max: 4 })).toEqual([2]);
    const counters = (svc.telemetry as MemoryTelemetry).counters;
    const before = counters.get('ClaimPollsCapped') ?? 0;
    // The delayed nack still holds its slot: 0 (delayed) and 2 (claimed) fill the cap of 2.
    expect(await ok('POST', `${G('m-cap-delay')}/poll`, { max: 4 })).toEqual({ records: [], capped: true });
    expect(counters.get('ClaimPollsCapped')).toBe(before + 1);
    expect(await ok('GET', G('m-cap-delay'))).toMatchObject({ inFlight: 2, delayed: 1 });
  });

  it('the in-flight cap answers empty and capped', async () => {
    await configure('m-cap', { maxInFlight: 2 });
    await push('m-cap', 4);
    expect(await offsets('m-cap', { max: 4 })).toEqual([0, 1]);
    expect(await ok('POST', `${G('m-cap')}/poll`, { max: 4 })).toEqual({ records: [], capped: true });
    await ack('m-cap', [0]);
    expect(await offsets('m-cap', { max: 4 })).toEqual([2]);
  });

  it('refuses what was never handed out (400), stale claims (409), unknown dead letters (404), managing without the grant (403)', async () => {
    await push('m-errors', 3);
    await expectError('POST', `${G('m-errors')}/ack`, { offsets: [0] }, 400, 'invalid_request');
    await poll('m-errors', { max: 1 });
    await expectError('POST', `${G('m-errors')}/ack`, { offsets: [1] }, 400, 'invalid_request');
    await expectError('POST', `${G('m-errors')}/ack`, { offsets: [3] }, 400, 'invalid_request');
    await expectError('POST', `${G('m-errors')}/nack`, { offset: 7 }, 400, 'invalid_request');
    await expectError(
      'POST',
      `${G('m-errors')}/extend`,
      { offset: 0, attempts: 2, extendMs: 1000 },
      409,
      'stale_claim',
    );
    // Over maxVisibilityMs is capped, not refused (seed 000): the answer says what was granted.
    expect(await ok('POST', `${G('m-errors')}/extend`, { offset: 0, attempts: 1, extendMs: 43_200_001 })).toEqual({
      visibleMs: 43_200_000,
    });
    await expectError('POST', `${G('m-errors')}/poll`, { max: 0 }, 400, 'invalid_request');
    await expectError('POST', `${G('m-errors')}/poll`, { nonsense: true }, 400, 'invalid_request');
    await expectError('POST', `${G('m-errors')}/ack`, { offsets: [] }, 400, 'invalid_request');
    await expectError('POST', `${G('m-errors')}/dead-letters/0/redrive`, undefined, 404, 'not_found');
    await expectError('DELETE', `${G('m-errors')}/dead-letters/0`, undefined, 404, 'not_found');
    await expectError('POST', `${G('m-errors')}/seek`, { start: { offset: 99 } }, 400, 'invalid_request');
    await expectError('POST', `${G('nope')}/poll`, {}, 404, 'not_found');
    // worker may consume but not manage.
    expect((await http('POST', `${G('m-errors')}/poll`, { max: 1 }, 'worker')).status).toBe(200);
    await expectError('POST', `${G('m-errors')}/seek`, { start: 'earliest' }, 403, 'forbidden', 'worker');
    await expectError('DELETE', G('m-errors'), undefined, 403, 'forbidden', 'worker');
    await ok('POST', `${G('m-errors')}/dead-letter`, { offset: 0 });
    await expectError('POST', `${G('m-errors')}/dead-letters/0/redrive`, undefined, 403, 'forbidden', 'worker');
    expect(await ok('DELETE', `${G('m-errors')}/dead-letters/0`)).toEqual({ offset: 0, discarded: true });
    expect(await deadLetters('m-errors')).toEqual([]);
  });

  it('refuses a group that consumes by partition leases with 409, and the reverse', async () => {
    await push('m-mode', 1);
    await svc.groups.register('m-mode', 'leasers', 'lease', { mode: 'all', from: null });
    await expectError('POST', `${G('m-mode', 'leasers')}/poll`, {}, 409, 'conflict');
    await expectError('PUT', G('m-mode', 'leasers'), { start: 'earliest' }, 409, 'conflict');
    await poll('m-mode', {}, 'alice', 'claimers');
    await expect(svc.groups.register('m-mode', 'claimers', 'lease', { mode: 'all', from: null })).rejects.toMatchObject(
      { code: 'conflict' },
    );
  });

  it('pop (partition leases) refuses a claim group with 409, and a claim poll refuses a lease group', async () => {
    await push('m-pop', 2);
    await poll('m-pop', {}, 'alice', 'claimers');
    const pop = await http<ErrorReply>('GET', '/api/v1/pop/queue/m-pop/partition/Default?consumerGroup=claimers');
    expect(pop.status).toBe(409);
    expect(pop.body.code).toBe('conflict');
    const leased = await http('GET', '/api/v1/pop/queue/m-pop/partition/Default?consumerGroup=leasers&batch=1');
    expect(leased.status).toBe(200);
    await expectError('POST', `${G('m-pop', 'leasers')}/poll`, {}, 409, 'conflict');
  });

  it('takes URL-encoded names', async () => {
    await http('POST', '/api/v1/push', {
      items: [{ queue: 'orders v2', partition: 'eu west', payload: { ok: true } }],
    });
    const path = `${G('orders v2', 'billing team', 'eu west')}/poll`;
    expect(path).toContain('%20');
    expect((await ok('POST', path, {})).records).toMatchObject([{ offset: 0, data: { ok: true } }]);
  });

  it('long-polls until a push arrives', async () => {
    await push('m-wait', 0);
    await configure('m-wait', {});
    const t0 = Date.now();
    const waiting = poll('m-wait', { waitMs: 10_000 });
    setTimeout(() => void push('m-wait', 1), 150);
    expect((await waiting).map((r) => r.offset)).toEqual([0]);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});
