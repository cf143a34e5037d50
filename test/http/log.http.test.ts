import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../server/local/server.js';
import type { Services } from '../../server/service/runtime.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { startTestServer } from '../support/http.js';
import { storeFingerprint } from '../support/store-fingerprint.js';
import { testServices } from '../support/services.js';
import { defineLogRoutesSuite } from './suites/log.suite.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const limits = { maxBodyBytes: 64 * 1024, maxMessageBytes: 8 * 1024 };

describe.each(backends)('http: log routes on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let svc: Services;
  let server: LocalServer;
  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
    svc = testServices(storage, { config: limits });
    server = await startTestServer(svc);
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });

  defineLogRoutesSuite(() => ({ url: server.url }), {
    ...limits,
    backend: backend.name,
    storeFingerprint: () => storeFingerprint(storage),
  });

  it('stores each payload as the bytes it was sent as; invalid UTF-8 is stored as JSON.parse read it (U+FFFD)', async () => {
    // The local server hands the received bytes to the route when they are valid UTF-8, and
    // the route re-encodes the decoded text otherwise: both must store what the JSON means.
    const sent = '{ "s" : "grüße €😀",  "n": [1 ,2] }';
    const head = Buffer.from('{"items":[{"queue":"bytes","transactionId":"a","payload":');
    const bad = Buffer.from([0x22, 0x61, 0xff, 0xfe, 0x62, 0x22]); // "a\xff\xfeb"
    for (const [txid, payload] of [
      ['valid', Buffer.from(sent)],
      ['invalid', bad],
    ] as const) {
      const body = Buffer.concat([head, payload, Buffer.from('}]}')]);
      const res = await fetch(`${server.url}/api/v1/push`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(body.toString('latin1').replace('"a"', JSON.stringify(txid)), 'latin1'),
      });
      expect(res.status).toBe(201);
      const [result] = (await res.json()) as { partition_id: string }[];
      const stored = await svc.messageLookup.findByTransactionId(result?.partition_id ?? '', txid);
      expect(Buffer.from(stored?.payload ?? []).toString('latin1')).toBe(
        txid === 'valid' ? Buffer.from(sent).toString('latin1') : Buffer.from('"a\ufffd\ufffdb"').toString('latin1'),
      );
    }
  });
});
