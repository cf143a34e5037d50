/**
 * `sluice targets …`, the real binary against the real local server (both child processes, as
 * `npm start` runs it, its dispatcher delivering): set prints the signing secret once, alone on
 * stdout, and it is the secret deliveries are signed with; every flag reaches the settings;
 * list, get, pause, resume, rotate-secret and delete; a setting the server refuses exits 1 with
 * its message; a duration that is not whole seconds is refused before any request.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice, verifyTargetSignature, type GetTargetAnswer } from '../../client/index.js';
import { REFRESH_MS } from '../../server/service/targets/dispatcher.js';
import { sluiceCli } from '../support/cli.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';

let dir: string;
let server: ServerProcess;
let env: Record<string, string>;
let sluice: Sluice;
let receiver: Server;
let hook: string;
/** What the receiver got: each event's payloads and its signature header and body. */
const received: { queue: string; payloads: unknown[]; header: string | undefined; body: string }[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-cli-targets-'));
  server = await startServerProcess({ SLUICE_DATA_DIR: join(dir, 'data'), SLUICE_SYNC: 'normal' });
  env = { SLUICE_ENDPOINT: server.url };
  sluice = new Sluice({ endpoint: server.url });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const e = JSON.parse(body) as { queue: string; records: { payload: unknown }[] };
      const header = req.headers['sluice-signature'];
      received.push({
        queue: e.queue,
        payloads: e.records.map((r) => r.payload),
        header: Array.isArray(header) ? header[0] : header,
        body,
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const lines = (s: string): string[] => s.split('\n').filter(Boolean);
const SECRET = /^whsec_[A-Za-z0-9_-]{43}$/;

/** The events of `queue` the receiver got once `n` payloads have come (or 15 s passed). */
async function deliveries(queue: string, n: number): Promise<typeof received> {
  const of = () => received.filter((r) => r.queue === queue);
  const end = Date.now() + 15_000;
  while (of().flatMap((r) => r.payloads).length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return of();
}

describe('sluice targets against the local server', () => {
  it('sets a target: the secret once, alone on stdout, and deliveries are signed with it', async () => {
    const set = await sluiceCli(['targets', 'set', 'ct-orders', 'billing', '--url', hook], { env });
    expect(set.code).toBe(0);
    expect(lines(set.stdout)).toHaveLength(1);
    const secret = set.stdout.trim();
    expect(secret).toMatch(SECRET);
    expect(set.stderr).toContain(`target ct-orders/billing set: leases to ${hook}, active\n`);
    expect(set.stderr).toContain('it will not be shown again');
    expect(set.stderr).not.toContain('whsec_');

    await sluice.queue('ct-orders').push([{ data: { n: 1 } }, { data: { n: 2 } }]);
    const got = await deliveries('ct-orders', 2);
    expect(got.flatMap((r) => r.payloads)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(got.every((r) => verifyTargetSignature({ header: r.header, body: r.body, secret }))).toBe(true);

    // Never shown again: not by a read, not by setting it again (its settings replaced, the secret kept).
    const again = await sluiceCli(['targets', 'set', 'ct-orders', 'billing', '--url', hook, '--batch-size', '7'], {
      env,
    });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain('its signing secret is unchanged');
    for (const args of [
      ['targets', 'get', 'ct-orders', 'billing'],
      ['--json', 'targets', 'get', 'ct-orders', 'billing'],
      ['targets', 'list'],
      ['--json', 'targets', 'list'],
    ]) {
      const r = await sluiceCli(args, { env });
      expect(r.code).toBe(0);
      expect(r.stdout + r.stderr).not.toContain('whsec_');
    }
    const view = await sluice.targets.get('ct-orders', 'billing');
    expect(view.settings.batchSize).toBe(7);
    expect(view.signingSecretSetAt).not.toBeNull();
  });

  it('sends every flag as its setting', async () => {
    const r = await sluiceCli(
      [
        '--json',
        'targets',
        'set',
        'ct-knobs',
        'workers',
        '--url',
        hook,
        '--mode',
        'claims',
        '--batch-size',
        '25',
        '--window',
        '2s',
        '--concurrency',
        '3',
        '--report-failures',
        '--bisect',
        '--max-retries',
        '4',
        '--max-age',
        '1h',
        '--delivery-timeout',
        '2m',
        '--start',
        '2026-05-01T12:00:00Z',
      ],
      { env },
    );
    expect(r.code).toBe(0);
    const t = JSON.parse(r.stdout) as GetTargetAnswer & { signingSecret?: string };
    expect(t.signingSecret).toMatch(SECRET);
    expect(t.settings).toEqual({
      endpoint: { kind: 'https', url: hook },
      mode: 'claims',
      batchSize: 25,
      maximumBatchingWindowInSeconds: 2,
      maximumConcurrency: 3,
      functionResponseTypes: ['ReportBatchItemFailures'],
      bisectBatchOnFunctionError: true,
      maximumRetryAttempts: 4,
      maximumRecordAgeInSeconds: 3600,
      timeoutSeconds: 120,
      startingPosition: 'AT_TIMESTAMP',
      startingPositionTimestamp: Date.parse('2026-05-01T12:00:00Z'),
    });
    const latest = await sluiceCli(
      ['--json', 'targets', 'set', 'ct-knobs', 'latest', '--url', hook, '--start', 'latest'],
      {
        env,
      },
    );
    expect((JSON.parse(latest.stdout) as GetTargetAnswer).settings.startingPosition).toBe('LATEST');

    const text = await sluiceCli(['targets', 'get', 'ct-knobs', 'workers'], { env });
    expect(text.code).toBe(0);
    const rows = Object.fromEntries(
      lines(text.stdout).map((l) => {
        const [name = '', value = ''] = l.split(/\s{2,}/);
        return [name, value] as const;
      }),
    );
    expect(rows).toMatchObject({
      target: 'ct-knobs/workers',
      state: 'active',
      endpoint: hook,
      mode: 'claims',
      batchSize: '25',
      maximumBatchingWindowInSeconds: '2',
      maximumConcurrency: '3',
      functionResponseTypes: 'ReportBatchItemFailures',
      bisectBatchOnFunctionError: 'true',
      maximumRetryAttempts: '4',
      maximumRecordAgeInSeconds: '3600',
      timeoutSeconds: '120',
      startingPosition: 'AT_TIMESTAMP 2026-05-01T12:00:00.000Z',
    });
  });

  it('lists targets as a table and as JSON', async () => {
    await sluiceCli(['targets', 'set', 'ct-list', 'audit', '--url', hook], { env });
    await sluice.queue('ct-list').push([{ data: { a: 1 } }]);
    await deliveries('ct-list', 1);
    // The delivery's count is noted once it settles.
    const end = Date.now() + 10_000;
    while ((await sluice.targets.get('ct-list', 'audit')).stats.invocations < 1 && Date.now() < end)
      await new Promise((r) => setTimeout(r, 50));

    const table = await sluiceCli(['targets', 'list'], { env });
    expect(table.code).toBe(0);
    const [head, ...rows] = lines(table.stdout);
    expect(head).toMatch(/^QUEUE\s+GROUP\s+MODE\s+ENDPOINT\s+STATE\s+LAST_ERROR\s+INVOCATIONS\s+ERRORS$/);
    const row = rows.find((l) => l.startsWith('ct-list '));
    expect(row).toMatch(
      new RegExp(`^ct-list\\s+audit\\s+leases\\s+${hook.replace(/[.]/g, '\\.')}\\s+active\\s+-\\s+1\\s+0$`),
    );

    const listed = await sluiceCli(['--json', 'targets', 'list'], { env });
    expect(listed.code).toBe(0);
    const all = JSON.parse(listed.stdout) as GetTargetAnswer[];
    expect(all.find((t) => t.queue === 'ct-list')).toMatchObject({
      group: 'audit',
      state: 'active',
      settings: { mode: 'leases', endpoint: { kind: 'https', url: hook } },
      stats: { invocations: 1, errors: 0 },
    });
  });

  it('pauses and resumes a target; a paused target delivers nothing', async () => {
    await sluiceCli(['targets', 'set', 'ct-pause', 'billing', '--url', hook], { env });
    const paused = await sluiceCli(['targets', 'pause', 'ct-pause', 'billing'], { env });
    expect(paused).toMatchObject({
      code: 0,
      stdout: 'target ct-pause/billing paused: no new batch starts until it is resumed\n',
    });
    expect((await sluice.targets.get('ct-pause', 'billing')).state).toBe('paused');
    const listed = JSON.parse((await sluiceCli(['--json', 'targets', 'list'], { env })).stdout) as GetTargetAnswer[];
    expect(listed.find((t) => t.queue === 'ct-pause')?.state).toBe('paused');
    // The dispatcher reads the target list every REFRESH_MS: the pause holds from then on.
    await new Promise((r) => setTimeout(r, REFRESH_MS + 500));
    await sluice.queue('ct-pause').push([{ data: { p: 1 } }]);
    await new Promise((r) => setTimeout(r, 1500));
    expect(received.filter((r) => r.queue === 'ct-pause')).toEqual([]);

    const resumed = await sluiceCli(['--json', 'targets', 'resume', 'ct-pause', 'billing'], { env });
    expect(resumed.code).toBe(0);
    expect((JSON.parse(resumed.stdout) as GetTargetAnswer).state).toBe('active');
    expect((await deliveries('ct-pause', 1)).flatMap((r) => r.payloads)).toEqual([{ p: 1 }]);
  });

  it('rotates the secret: a new one, once, on stdout; deliveries carry its signature', async () => {
    const first = (await sluiceCli(['targets', 'set', 'ct-rotate', 'billing', '--url', hook], { env })).stdout.trim();
    const before = Date.now();
    const rot = await sluiceCli(['targets', 'rotate-secret', 'ct-rotate', 'billing'], { env });
    expect(rot.code).toBe(0);
    const next = rot.stdout.trim();
    expect(lines(rot.stdout)).toHaveLength(1);
    expect(next).toMatch(SECRET);
    expect(next).not.toBe(first);
    expect(rot.stderr).toContain('it will not be shown again');
    const until = /keeps signing until (\S+)\n$/.exec(rot.stderr)?.[1];
    expect(Date.parse(until ?? '')).toBeGreaterThanOrEqual(before + 24 * 3_600_000 - 1000);

    // The dispatcher signs with the new secret once it reads the target list again.
    await new Promise((r) => setTimeout(r, REFRESH_MS + 500));
    await sluice.queue('ct-rotate').push([{ data: { r: 1 } }]);
    const [d] = await deliveries('ct-rotate', 1);
    expect(verifyTargetSignature({ header: d?.header, body: d?.body ?? '', secret: next })).toBe(true);
    expect(verifyTargetSignature({ header: d?.header, body: d?.body ?? '', secret: first })).toBe(true); // its grace
  });

  it('deletes a target; the next read is not found (exit 3) with the server’s message', async () => {
    await sluiceCli(['targets', 'set', 'ct-gone', 'billing', '--url', hook], { env });
    const del = await sluiceCli(['targets', 'delete', 'ct-gone', 'billing'], { env });
    expect(del).toMatchObject({
      code: 0,
      stdout: 'deleted target ct-gone/billing (the group, its cursors and dead letters stay)\n',
    });
    for (const verb of ['get', 'delete', 'pause', 'resume', 'rotate-secret']) {
      const r = await sluiceCli(['targets', verb, 'ct-gone', 'billing'], { env });
      expect([verb, r.code]).toEqual([verb, 3]);
      expect(r.stderr).toMatch(
        /^sluice: no target for consumer group billing on queue ct-gone \[HTTP 404 not_found\]\n$/,
      );
    }
  });

  it('exits 1 with the server’s message for a setting it refuses, and stores nothing', async () => {
    const r = await sluiceCli(['targets', 'set', 'ct-refused', 'billing', '--url', hook, '--batch-size', '0'], { env });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^sluice: .*batchSize.*\[HTTP 400 invalid_request\]\n$/);
    const forever = await sluiceCli(['targets', 'set', 'ct-refused', 'billing', '--url', hook, '--max-retries', '-1'], {
      env,
    });
    expect(forever.code).toBe(1);
    expect(forever.stderr).toMatch(/maximumRetryAttempts/);
    const remote = await sluiceCli(['targets', 'set', 'ct-refused', 'billing', '--url', 'http://hooks.example.com/x'], {
      env,
    });
    expect(remote.code).toBe(1);
    expect(remote.stderr).toMatch(/must be https:\/\//);
    expect((await sluiceCli(['targets', 'get', 'ct-refused', 'billing'], { env })).code).toBe(3);
  });

  it('refuses a duration that is not whole seconds, a start it cannot read and no --url (exit 2, nothing stored)', async () => {
    const frac = await sluiceCli(['targets', 'set', 'ct-usage', 'g', '--url', hook, '--window', '1500ms'], { env });
    expect(frac.code).toBe(2);
    expect(frac.stderr).toContain('window must be whole seconds');
    const start = await sluiceCli(['targets', 'set', 'ct-usage', 'g', '--url', hook, '--start', 'yesterday'], { env });
    expect(start.code).toBe(2);
    expect(start.stderr).toContain('start must be trim-horizon, latest or an ISO-8601 instant');
    const noUrl = await sluiceCli(['targets', 'set', 'ct-usage', 'g'], { env });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain("required option '--url <url>' not specified");
    expect((await sluiceCli(['targets', 'get', 'ct-usage', 'g'], { env })).code).toBe(3);
  });
});
