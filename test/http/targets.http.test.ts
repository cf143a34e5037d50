// Targets' routes against the local server (docs/TARGETS.md): set, read, list, pause, resume,
// rotate and delete, with every refusal a caller can meet, each answer held to the contract;
// and `npm start`'s own dispatcher delivering pushed records to a receiver, signed.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyTargetSignature } from '../../client/target-signature.js';
import type { LocalServer } from '../../server/local/server.js';
import { LocalKeyProvider } from '../../server/service/encryption.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { call, startTestServer } from '../support/http.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';
import { testServices } from '../support/services.js';

interface View {
  queue: string;
  group: string;
  state: string;
  settings: Record<string, unknown>;
  signingSecret?: string;
  signingSecretSetAt: string | null;
}

describe('targets: the routes', () => {
  let dir: string;
  let storage: Storage;
  let server: LocalServer;
  let awsLike: LocalServer;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-targets-'));
    storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
    const keyProvider = new LocalKeyProvider(randomBytes(32));
    server = await startTestServer(
      testServices(storage, { build: { keyProvider, targets: { dispatcher: true, loopback: true } } }),
    );
    // A deployment without a dispatcher (the AWS stack, for now).
    awsLike = await startTestServer(testServices(storage, { build: { keyProvider } }));
  });
  afterAll(async () => {
    await server.close();
    await awsLike.close();
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  });

  const https = { kind: 'https', url: 'https://hooks.example.com/sluice' };

  it('sets a target with Lambda-style defaults; its signing secret is shown once, never read back', async () => {
    const put = await call<View>(server.url, 'PUT', '/api/v1/targets/orders/billing', {
      endpoint: https,
      mode: 'leases',
    });
    expect(put.status).toBe(201);
    expect(put.body.signingSecret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(put.body).toMatchObject({
      queue: 'orders',
      group: 'billing',
      state: 'active',
      settings: {
        batchSize: 100,
        maximumBatchingWindowInSeconds: 0,
        maximumConcurrency: 5,
        functionResponseTypes: [],
        bisectBatchOnFunctionError: false,
        maximumRecordAgeInSeconds: -1,
        timeoutSeconds: 60,
        startingPosition: 'TRIM_HORIZON',
      },
    });
    const again = await call<View>(server.url, 'PUT', '/api/v1/targets/orders/billing', {
      endpoint: https,
      mode: 'leases',
      batchSize: 10,
    });
    expect(again.status).toBe(200);
    expect(again.body.signingSecret).toBeUndefined();
    expect(again.body.settings.batchSize).toBe(10);
    const got = await call(server.url, 'GET', '/api/v1/targets/orders/billing');
    const list = await call<{ targets: View[] }>(server.url, 'GET', '/api/v1/targets');
    for (const r of [got, list]) {
      expect(r.status).toBe(200);
      expect(JSON.stringify(r.body)).not.toContain('whsec_');
      expect(JSON.stringify(r.body)).not.toContain('sealed');
    }
    expect(list.body.targets.map((t) => `${t.queue}/${t.group}`)).toContain('orders/billing');
  });

  it('pauses, resumes and rotates; the rotation answers a new secret and when the old one stops signing', async () => {
    await call(server.url, 'PUT', '/api/v1/targets/rot/g', { endpoint: https, mode: 'leases' });
    expect((await call<View>(server.url, 'POST', '/api/v1/targets/rot/g/pause')).body.state).toBe('paused');
    expect((await call<View>(server.url, 'GET', '/api/v1/targets/rot/g')).body.state).toBe('paused');
    expect((await call<View>(server.url, 'POST', '/api/v1/targets/rot/g/resume')).body.state).toBe('active');
    const before = Date.now();
    const rot = await call<{ signingSecret: string; previousValidUntil: string }>(
      server.url,
      'POST',
      '/api/v1/targets/rot/g/rotate-secret',
    );
    expect(rot.status).toBe(200);
    expect(rot.body.signingSecret).toMatch(/^whsec_/);
    const until = Date.parse(rot.body.previousValidUntil);
    expect(until).toBeGreaterThanOrEqual(before + 24 * 3_600_000 - 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 24 * 3_600_000 + 1000);
  });

  it.each([
    [
      'a Lambda function the local server cannot invoke',
      {
        endpoint: { kind: 'lambda', functionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:billing' },
        mode: 'leases',
      },
      /--target|https/,
    ],
    [
      'http:// to a host that is not loopback',
      { endpoint: { kind: 'https', url: 'http://hooks.example.com/x' }, mode: 'leases' },
      /https:\/\//,
    ],
    [
      'a scheme that is not http(s)',
      { endpoint: { kind: 'https', url: 'ftp://hooks.example.com/x' }, mode: 'leases' },
      /http\(s\)/,
    ],
    [
      'credentials in the URL',
      { endpoint: { kind: 'https', url: 'https://u:p@hooks.example.com/x' }, mode: 'leases' },
      /credentials/,
    ],
    ['a batch size of 0', { endpoint: https, mode: 'leases', batchSize: 0 }, /batchSize/],
    ['a batch size over 10,000', { endpoint: https, mode: 'leases', batchSize: 10_001 }, /batchSize/],
    [
      'a record age under 60 s',
      { endpoint: https, mode: 'leases', maximumRecordAgeInSeconds: 30 },
      /maximumRecordAgeInSeconds/,
    ],
    ['retrying forever (-1)', { endpoint: https, mode: 'leases', maximumRetryAttempts: -1 }, /maximumRetryAttempts/],
    [
      'AT_TIMESTAMP without a timestamp',
      { endpoint: https, mode: 'leases', startingPosition: 'AT_TIMESTAMP' },
      /startingPositionTimestamp/,
    ],
    [
      'an unknown knob',
      { endpoint: https, mode: 'leases', parallelizationFactor: 2 },
      /parallelizationFactor|unrecognized/i,
    ],
  ])('refuses %s with 400, storing nothing', async (_what, body, message) => {
    const r = await call<{ code: string; error: string }>(server.url, 'PUT', '/api/v1/targets/refused/g', body);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(message);
    expect((await call(server.url, 'GET', '/api/v1/targets/refused/g')).status).toBe(404);
  });

  it('refuses a mode the group does not consume by (409), and a deployment without a dispatcher (400)', async () => {
    expect((await call(server.url, 'POST', '/api/v1/push', { items: [{ queue: 'modes', payload: {} }] })).status).toBe(
      201,
    );
    const pop = await call(server.url, 'GET', '/api/v1/pop/queue/modes?consumerGroup=leasers&wait=false&autoAck=true');
    expect(pop.status).toBe(200); // registers a lease group
    const r = await call<{ code: string }>(server.url, 'PUT', '/api/v1/targets/modes/leasers', {
      endpoint: https,
      mode: 'claims',
    });
    expect([r.status, r.body.code]).toEqual([409, 'conflict']);
    const aws = await call<{ error: string }>(awsLike.url, 'PUT', '/api/v1/targets/orders/other', {
      endpoint: https,
      mode: 'leases',
    });
    expect(aws.status).toBe(400);
    expect(aws.body.error).toMatch(/delivers no targets/);
  });

  it('deletes a target (404 after); an unknown target is 404 on every route', async () => {
    await call(server.url, 'PUT', '/api/v1/targets/gone/g', { endpoint: https, mode: 'leases' });
    expect((await call(server.url, 'DELETE', '/api/v1/targets/gone/g')).body).toEqual({ deleted: true });
    for (const [method, path] of [
      ['GET', '/api/v1/targets/gone/g'],
      ['DELETE', '/api/v1/targets/gone/g'],
      ['POST', '/api/v1/targets/gone/g/pause'],
      ['POST', '/api/v1/targets/gone/g/resume'],
      ['POST', '/api/v1/targets/gone/g/rotate-secret'],
    ] as const)
      expect([method, path, (await call(server.url, method, path)).status]).toEqual([method, path, 404]);
  });
});

describe('targets: npm start delivers', () => {
  let dir: string;
  let proc: ServerProcess;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-targets-e2e-'));
    proc = await startServerProcess({ SLUICE_DATA_DIR: join(dir, 'data'), SLUICE_SYNC: 'normal' });
  });
  afterAll(async () => {
    await proc.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('pushed records reach an http://127.0.0.1 receiver in order, signed with the secret the PUT answered', async () => {
    const got: { offsets: number[]; signed: boolean }[] = [];
    let secret = '';
    const rx = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const e = JSON.parse(body) as { version: string; records: { offset: number; payload: { n: number } }[] };
        expect(e.version).toBe('sluice.target.v1');
        got.push({
          offsets: e.records.map((r) => r.offset),
          signed: verifyTargetSignature({ header: req.headers['sluice-signature'], body, secret }),
        });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => rx.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hook`;
      const put = await call<View>(proc.url, 'PUT', '/api/v1/targets/e2e/billing', {
        endpoint: { kind: 'https', url },
        mode: 'leases',
        batchSize: 8,
      });
      expect(put.status).toBe(201);
      secret = put.body.signingSecret!;
      const items = Array.from({ length: 20 }, (_, n) => ({ queue: 'e2e', payload: { n } }));
      expect((await call(proc.url, 'POST', '/api/v1/push', { items })).status).toBe(201);
      const end = Date.now() + 15_000;
      while (got.flatMap((g) => g.offsets).length < 20 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expect(got.flatMap((g) => g.offsets)).toEqual([...Array(20).keys()]);
      expect(got.every((g) => g.signed && g.offsets.length <= 8)).toBe(true);
      const view = await call<{ stats: { invocations: number; errors: number } }>(
        proc.url,
        'GET',
        '/api/v1/targets/e2e/billing',
      );
      expect(view.body.stats).toMatchObject({ invocations: got.length, errors: 0 });
      const metrics = await (await fetch(`${proc.url}/metrics`)).text();
      expect(metrics).toContain(`sluice_target_invocations_total{queue="e2e",group="billing"} ${got.length}`);
      expect(metrics).toContain('sluice_target_errors_total{queue="e2e",group="billing"} 0');
      expect(metrics).toContain('sluice_target_batches_in_flight{queue="e2e",group="billing"} 0');
    } finally {
      await new Promise<void>((r) => rx.close(() => r()));
    }
  });
});
