import { afterAll, beforeAll, describe } from 'vitest';
import type { LocalServer } from '../../lambdas/local/server.js';
import type { Services } from '../../lambdas/service/runtime.js';
import type { Storage } from '../../lambdas/storage/port.js';
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

  defineLogRoutesSuite(() => ({ url: server.url }), { ...limits, backend: backend.name, storeFingerprint: () => storeFingerprint(storage) });
});
