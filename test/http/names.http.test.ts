// Names that URLs cannot carry (docs/SECURITY.md, "Names URLs cannot carry"): `.` and `..` are
// refused for new queues, partitions and groups with a clear 400; ones made before stay readable
// and deletable by a client that sends the path as is (`curl --path-as-is`, here a raw request).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  dir = await mkdtemp(join(tmpdir(), 'sluice-names-'));
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

const send = (method: string, path: string, body?: unknown) =>
  rawRequest(server.url, method, path, {
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe('names . and ..', () => {
  it('are refused for new queues, partitions and groups, with a 400 that says why, and nothing is written', async () => {
    await send('POST', '/api/v1/push', { items: [{ queue: 'names-ok', payload: 1 }] });
    const attempts: [string, string, unknown?][] = [
      ['POST', '/api/v1/configure', { queue: '.' }],
      ['POST', '/api/v1/push', { items: [{ queue: '..', payload: 1 }] }],
      ['POST', '/api/v1/push', { items: [{ queue: 'names-ok', partition: '.', payload: 1 }] }],
      ['POST', '/api/v1/transaction', { operations: [{ type: 'push', items: [{ queue: '..', payload: 1 }] }] }],
      ['GET', '/api/v1/pop/queue/names-ok?consumerGroup=..'],
      ['POST', '/api/v1/consumer-groups/./queues/names-ok/seek', { toEnd: true }],
      ['PUT', '/api/v1/queues/names-ok/partitions/Default/groups/..', { start: 'earliest' }],
      ['POST', '/api/v1/queues/names-ok/partitions/Default/groups/./poll', {}],
    ];
    for (const [method, path, body] of attempts) {
      journal.begin();
      const r = await send(method, path, body);
      expect({ method, path, status: r.status, code: (r.json as { code?: string }).code }).toEqual({
        method,
        path,
        status: 400,
        code: 'invalid_request',
      });
      expect((r.json as { error: string }).error).toMatch(/must not be "\." or "\.\."/);
      expect(await journal.changes()).toEqual([]);
    }
  });

  it('with C1 controls or line separators are refused for new queues, partitions and groups, writing nothing', async () => {
    await send('POST', '/api/v1/push', { items: [{ queue: 'names-ok', payload: 1 }] });
    const attempts: [string, string, unknown?][] = [
      ['POST', '/api/v1/configure', { queue: 'a\u2028b' }],
      ['POST', '/api/v1/push', { items: [{ queue: 'next\u0085line', payload: 1 }] }],
      ['POST', '/api/v1/push', { items: [{ queue: 'names-ok', partition: 'p\u2029q', payload: 1 }] }],
      ['GET', `/api/v1/pop/queue/names-ok?consumerGroup=${encodeURIComponent('g\u0085')}`],
    ];
    for (const [method, path, body] of attempts) {
      journal.begin();
      const r = await send(method, path, body);
      expect({ method, path, status: r.status }).toEqual({ method, path, status: 400 });
      expect((r.json as { error: string }).error).toMatch(/control characters/);
      expect(await journal.changes()).toEqual([]);
    }
  });

  it('made before the rule, stay readable and deletable by a client that sends the path as is', async () => {
    // Made the way the routes allowed until now (the services take them).
    await svc.pushes.push([{ queue: '..', partition: '.', payload: Buffer.from('{"old":true}') }]);
    await svc.leasePops.pop({
      queue: '..',
      group: '.',
      batch: 1,
      partitions: 1,
      autoAck: false,
      wait: false,
      timeoutMs: 0,
    });

    const read = await send('GET', '/api/v1/queues/../partitions/./messages');
    expect(read.status).toBe(200);
    expect((read.json as { messages: { data: unknown }[] }).messages.map((m) => m.data)).toEqual([{ old: true }]);
    const group = await send('GET', '/api/v1/consumer-groups/.');
    expect(group.status).toBe(200);
    expect((group.json as { queues: { queue: string }[] }).queues.map((q) => q.queue)).toEqual(['..']);

    expect((await send('DELETE', '/api/v1/consumer-groups/.')).json).toMatchObject({ success: true });
    expect((await send('DELETE', '/api/v1/resources/queues/..')).json).toEqual({
      deleted: true,
      queue: '..',
      existed: true,
    });
    expect((await send('GET', '/api/v1/queues/../partitions/./messages')).status).toBe(404);
  });

  it('stay allowed inside longer names', async () => {
    for (const queue of ['.hidden', 'a..b', '...', 'v1.2']) {
      const r = await send('POST', '/api/v1/push', { items: [{ queue, partition: `${queue}.p`, payload: 1 }] });
      expect(r.status).toBe(201);
    }
  });
});
