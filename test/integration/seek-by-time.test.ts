/**
 * Seeking by time on both backends: a record-claim group created or moved `at` an instant
 * lands where a partition-lease seek to the same instant puts its next delivery (one rule,
 * docs/STORAGE.md "Seeking by time"), also when commit times are out of offset order; a bad
 * instant is refused before anything is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Services } from '../../server/service/runtime.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { call, startTestServer } from '../support/http.js';
import type { ErrorReply } from '../support/replies.js';
import { json, TestClock, testServices } from '../support/services.js';
import { journaled } from '../support/write-journal.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const P = 'Default';

/** Pushes one message per entry of `atMs`, each committed by a process whose clock reads that time. */
async function pushAt(storage: Storage, queue: string, atMs: readonly number[]): Promise<void> {
  for (const [i, at] of atMs.entries()) {
    const svc = testServices(storage, { clock: new TestClock(at) });
    await svc.pushes.push([{ queue, partition: P, payload: json(i) }]);
  }
}

/** The next offset a lease group delivers after a seek to `at`. */
async function leaseSeekTo(svc: Services, queue: string, group: string, at: number): Promise<number> {
  await svc.leaseGroups.seek(group, queue, { timestamp: at });
  const view = await svc.leaseGroups.describe(group);
  const committed = view.queues.find((q) => q.queue === queue)?.detail?.[0]?.committed;
  if (committed === null || committed === undefined) throw new Error('no cursor after the seek');
  return committed + 1;
}

describe.each(backends)('integration: seeking by time on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('starts a claim group at the first record committed after the instant, as a lease seek does', async () => {
    const t0 = Date.now();
    await pushAt(storage, 'by-time', [t0, t0 + 1000, t0 + 2000, t0 + 3000]);
    const svc = testServices(storage, { clock: new TestClock(t0 + 10_000) });
    const cases: [number, number][] = [
      [t0 - 1, 0],
      [t0, 1], // committed at the instant: not after it
      [t0 + 999, 1],
      [t0 + 1000, 2],
      [t0 + 2500, 3],
      [t0 + 3000, 4], // after everything: the tail
    ];
    for (const [i, [at, first]] of cases.entries()) {
      expect(await svc.claims.create('by-time', P, `c${i}`, { at })).toEqual({ offset: first, moved: true });
      expect(await leaseSeekTo(svc, 'by-time', `l${i}`, at)).toBe(first);
    }
  });

  it('replays a claim group from an instant: a seek back by time hands the records out again', async () => {
    const t0 = Date.now();
    await pushAt(storage, 'replay', [t0, t0 + 1000, t0 + 2000]);
    const svc = testServices(storage, { clock: new TestClock(t0 + 10_000) });
    const offsets = async (): Promise<number[]> =>
      (await svc.claims.poll('replay', P, 'g', { max: 10, principal: 'p' })).records.map((r) => r.offset);
    expect(await offsets()).toEqual([0, 1, 2]);
    await svc.claims.ack('replay', P, 'g', [0, 1, 2]);
    expect(await svc.claims.seek('replay', P, 'g', { at: t0 + 500 })).toEqual({ offset: 1, moved: true });
    expect(await offsets()).toEqual([1, 2]);
  });

  it('with commit times out of offset order, lands on a crossing, the same for both kinds of group', async () => {
    const t0 = Date.now();
    // Two pushing processes whose clocks are 4 s apart, taking turns.
    const times = Array.from({ length: 12 }, (_, i) => t0 + i * 1000 + (i % 2 ? 4000 : 0));
    await pushAt(storage, 'skewed', times);
    const svc = testServices(storage, { clock: new TestClock(t0 + 60_000) });
    for (const [i, at] of [t0 + 3500, t0 + 6200, t0 + 8000].entries()) {
      const { offset } = await svc.claims.create('skewed', P, `c${i}`, { at });
      expect(await leaseSeekTo(svc, 'skewed', `l${i}`, at)).toBe(offset);
      // The rule: the record before the position was committed at or before the instant, the one at it after.
      expect(times[offset - 1]).toBeLessThanOrEqual(at);
      expect(times[offset]).toBeGreaterThan(at);
      // Seeking earlier by the clocks' difference replays everything committed after the instant.
      const { offset: early } = await svc.claims.create('skewed', P, `e${i}`, { at: at - 4000 });
      expect(early).toBeLessThanOrEqual(times.findIndex((t) => t > at));
    }
  });

  it('refuses an instant out of range or unreadable before writing anything, and a seek of a missing group', async () => {
    const journal = journaled(storage);
    const svc = testServices(journal.storage);
    await svc.pushes.push([{ queue: 'checked', partition: P, payload: json(1) }]);
    const server = await startTestServer(svc);
    try {
      const G = `/api/v1/queues/checked/partitions/${P}/groups`;
      journal.begin();
      for (const at of ['10000-01-01T00:00:00Z', 'yesterday', 9e15, -9e15]) {
        const put = await call<ErrorReply>(server.url, 'PUT', `${G}/fresh`, { start: { at } });
        expect(put.status).toBe(400);
        expect(put.body.error).toMatch(/start\.at: (not a timestamp|timestamp .* outside the years 0000 to 9999)/);
        const seek = await call<ErrorReply>(server.url, 'POST', `${G}/fresh/seek`, { start: { at } });
        expect(seek.status).toBe(400);
      }
      expect(await journal.changes()).toEqual([]);
      const missing = await call<ErrorReply>(server.url, 'POST', `${G}/fresh/seek`, {
        start: { at: '2026-01-01T00:00:00Z' },
      });
      expect(missing.status).toBe(404);
      expect(await journal.changes()).toEqual([]);
      const ok = await call(server.url, 'PUT', `${G}/fresh`, { start: { at: '2000-01-01T00:00:00Z' } });
      expect(ok).toMatchObject({ status: 200, body: { offset: 0, moved: true } });
    } finally {
      await server.close();
    }
  });
});
