/**
 * The plumbing `npm run test:localstack` relies on, run here against a local server: the
 * black-box suites take their base URL (and credentials) from the environment, exactly as they
 * do against a deployed API. The server is `npm start` with a grants file, so bearer tokens
 * and grants are exercised on the way.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployedTarget, testPrefix, type DeployedTarget } from '../support/deployed.js';
import { callTarget } from '../support/http.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { defineQueueSmokeSuite } from './suites/smoke.suite.js';
import { defineLogRoutesSuite } from './suites/log.suite.js';

const TOKEN = 'base-url-test-token-0123456789';
const limits = { maxBodyBytes: 64 * 1024, maxMessageBytes: 8 * 1024 };
const prefix = testPrefix({});

describe('http: suites against a base URL from the environment', () => {
  let dir: string;
  let server: ServerProcess;
  let deployed: DeployedTarget;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-base-url-'));
    const grantsFile = join(dir, 'grants.json');
    await writeFile(
      grantsFile,
      JSON.stringify({
        grants: [{ principal: 'ops', actions: ['push', 'consume', 'manage'], queues: [`${prefix}*`] }],
        tokens: { [TOKEN]: 'ops' },
      }),
    );
    server = await startServerProcess(
      {
        SLUICE_DATA_DIR: join(dir, 'data'),
        SLUICE_SYNC: 'normal',
        SLUICE_MAX_BODY_BYTES: String(limits.maxBodyBytes),
        SLUICE_MAX_MESSAGE_BYTES: String(limits.maxMessageBytes),
      },
      ['--grants', grantsFile],
      { healthHeaders: { authorization: `Bearer ${TOKEN}` } },
    );
    deployed = deployedTarget({ SLUICE_BASE_URL: `${server.url}/`, SLUICE_BEARER_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('takes the URL and token from the environment', () => {
    expect(deployed.target.url).toBe(server.url);
    expect(deployed.target.headers).toEqual({ authorization: `Bearer ${TOKEN}` });
    expect(deployed.behindGateway).toBe(false);
  });

  it('the grants limit the token to its prefix', async () => {
    const r = await callTarget(deployed.target, 'POST', '/api/v1/push', {
      items: [{ queue: 'elsewhere', payload: 1 }],
    });
    expect(r.status).toBe(403);
  });

  defineLogRoutesSuite(() => deployed.target, { ...limits, backend: 'embedded', prefix });
  defineQueueSmokeSuite(() => deployed.target, { prefix });
});
