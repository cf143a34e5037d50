import { afterAll, beforeAll, describe } from 'vitest';
import type { LocalServer } from '../../server/local/server.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { startTestServer } from '../support/http.js';
import { testServices, type TestClock } from '../support/services.js';
import { defineAdminSuite } from './suites/admin.suite.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

describe.each(backends)('http: the admin and read API on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  let clock: TestClock;
  let server: LocalServer;
  beforeAll(async () => {
    ({ storage, cleanup } = await backend.newStorage());
    const svc = testServices(storage);
    clock = svc.testClock;
    server = await startTestServer(svc);
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });

  defineAdminSuite(() => ({ url: server.url }), { advance: (ms) => clock.advance(ms) });
});
