// The producer stamp on POST /api/v1/push (docs/DELIVERY.md): `producerId` and `sequence`
// beside `items`; a repeat answers with the same body, a stale one 409 `stale_sequence`, a
// malformed stamp 400 before anything is written. And our client end to end: a push whose answer
// is lost is retried under the same stamp and stored once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice } from '../../client/index.js';
import type { LocalServer } from '../../server/local/server.js';
import type { Services } from '../../server/service/runtime.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { startTestServer } from '../support/http.js';
import { rawRequest } from '../support/raw-http.js';
import { testServices } from '../support/services.js';
import { journaled, type WriteJournal } from '../support/write-journal.js';

let dir: string;
let storage: Storage;
let journal: WriteJournal;
let svc: Services;
let server: LocalServer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-stamp-'));
  storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  journal = journaled(storage);
  svc = testServices(journal.storage);
  server = await startTestServer(svc);
});
afterAll(async () => {
  await server.close();
  await storage.close();
  await rm(dir, { recursive: true, force: true });
});

const push = (body: unknown) =>
  rawRequest(server.url, 'POST', '/api/v1/push', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const stored = async (queue: string) => {
  const part = (await svc.queues.getPartition(queue, 'Default'))!;
  return (await svc.segments.read(part.id, 0, { maxCount: 100 })).length;
};

describe('the producer stamp on POST /api/v1/push', () => {
  it('answers a repeat with the same body and stores it once; a stale sequence is 409', async () => {
    const items = [
      { queue: 'stamp-http', payload: { n: 1 } },
      { queue: 'stamp-http', payload: { n: 2 } },
    ];
    const first = await push({ producerId: 'aB3-x_y.0', sequence: 12, items });
    expect(first.status).toBe(201);
    expect((first.json as { status: string; offset: number }[]).map((r) => [r.status, r.offset])).toEqual([
      ['queued', 0],
      ['queued', 1],
    ]);
    const again = await push({ producerId: 'aB3-x_y.0', sequence: 12, items });
    expect([again.status, again.text]).toEqual([201, first.text]);
    expect(await stored('stamp-http')).toBe(2);
    // Queen's shape, without a stamp, stores as before.
    expect((await push({ items })).status).toBe(201);
    expect(await stored('stamp-http')).toBe(4);
    await push({ producerId: 'aB3-x_y.0', sequence: 13, items });
    journal.begin();
    const stale = await push({ producerId: 'aB3-x_y.0', sequence: 12, items });
    expect([stale.status, stale.json]).toEqual([
      409,
      expect.objectContaining({ code: 'stale_sequence', lastSequence: 13, producerId: 'aB3-x_y.0', sequence: 12 }),
    ]);
    expect(await journal.changes()).toEqual([]);
  });

  it('refuses a malformed stamp with a 400 that says why, before anything is written', async () => {
    const items = [{ queue: 'stamp-bad', payload: 1 }];
    const cases: [unknown, RegExp][] = [
      [{ producerId: 'p', items }, /send both or neither/],
      [{ sequence: 1, items }, /send both or neither/],
      [{ producerId: 'has space', sequence: 1, items }, /producerId must be 1 to 64 characters/],
      [{ producerId: 'x'.repeat(65), sequence: 1, items }, /producerId must be 1 to 64 characters/],
      [{ producerId: 'p', sequence: -1, items }, /must not be negative/],
      [{ producerId: 'p', sequence: 1.5, items }, /whole number/],
      [{ producerId: 'p', sequence: '1', items }, /sequence must be a number/],
      [{ producerId: 'p', sequence: 2 ** 53, items }, /at most 2\^53 - 1/],
    ];
    for (const [body, why] of cases) {
      journal.begin();
      const r = await push(body);
      expect([r.status, (r.json as { code: string }).code]).toEqual([400, 'invalid_request']);
      expect((r.json as { error: string }).error).toMatch(why);
      expect(await journal.changes()).toEqual([]);
    }
  });

  it('our client retries a push whose answer was lost under the same stamp, and it is stored once', async () => {
    let drop = true;
    const lossy: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (drop && init?.method === 'POST') {
        drop = false;
        await res.arrayBuffer();
        throw new TypeError('fetch failed', {
          cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
        });
      }
      return res;
    };
    const client = new Sluice({ endpoint: server.url, fetch: lossy, sleep: async () => undefined });
    const results = await client.queue('stamp-client').push([{ data: 1 }, { data: 2 }, { data: 3 }]);
    expect(drop).toBe(false);
    expect(results.map((r) => [r.status, r.offset])).toEqual([
      ['queued', 0],
      ['queued', 1],
      ['queued', 2],
    ]);
    expect(await stored('stamp-client')).toBe(3);
  });
});
