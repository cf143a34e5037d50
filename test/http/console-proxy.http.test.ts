// `sluice console`: the console's files, and the page's API calls forwarded with the CLI's
// authentication (a bearer token here, SigV4 against a capturing server) — never the
// browser's — and refused when another host name or web origin sends them. Also the console
// as `npm start` serves it (the built server).
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticator } from '../../client/auth.js';
import { run } from '../../cli/main.js';
import { startConsoleProxy } from '../../cli/console-proxy.js';
import { Grants } from '../../server/http/grants.js';
import { makeHandler } from '../../server/http/handler.js';
import { SERVER_ROUTES } from '../../server/http/routes.js';
import { bearerAuthenticator, withBearerTokens } from '../../server/local/auth.js';
import type { ConsoleFiles } from '../../server/local/console-assets.js';
import { requestGate } from '../../server/local/edge.js';
import { startLocalServer, type LocalServer } from '../../server/local/server.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { buildConsole } from '../../scripts/build-console.js';
import { launchChromium, withPage } from '../support/browser.js';
import { startServerProcess } from '../support/process.js';
import { testServices } from '../support/services.js';

const TOKEN = 'console-admin-token-0123456789';

describe('http: sluice console, the signing proxy', () => {
  let dir: string;
  let storage: Storage;
  let server: LocalServer;
  let files: ConsoleFiles;
  let proxyUrl: string;
  const stop = new AbortController();
  let cli: Promise<number>;
  let stdout = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-console-proxy-'));
    storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
    const svc = testServices(storage);
    const tokens = { [TOKEN]: 'admin' };
    files = await buildConsole();
    // The local server in tokens mode, as `npm start -- --grants` runs it.
    server = await startLocalServer({
      handler: withBearerTokens(
        makeHandler(SERVER_ROUTES, {
          services: async () => svc,
          grants: Grants.from({
            grants: [{ principal: 'admin', actions: ['push', 'consume', 'manage'], queues: ['*'] }],
          }),
        }),
        tokens,
      ),
      gate: requestGate({
        allowedHosts: [],
        checkHost: false,
        corsOrigins: [],
        authenticate: bearerAuthenticator(tokens),
      }),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
      consoleFiles: files,
    });
    const pushed = await fetch(`${server.url}/api/v1/push`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ items: [{ queue: 'via-proxy', payload: { n: 1 } }] }),
    });
    if (pushed.status !== 201) throw new Error(`seeding failed: ${pushed.status}`);
    // The real command, in process: it prints its URL and serves until aborted.
    let announced: (url: string) => void = () => undefined;
    const url = new Promise<string>((r) => (announced = r));
    cli = run(['--endpoint', server.url, '--token', TOKEN, 'console', '--port', '0'], {
      stdout: {
        write: (s: string) => {
          stdout += s;
          const m = /(http:\/\/127\.0\.0\.1:\d+)\/console\//.exec(stdout);
          if (m) announced(m[1]!);
          return true;
        },
      },
      stderr: { write: (s: string) => (stdout += s) > '' },
      stdin: Readable.from(['']),
      env: {},
      signal: stop.signal,
    });
    proxyUrl = await Promise.race([
      url,
      cli.then((code) => Promise.reject(new Error(`sluice console exited ${code}: ${stdout}`))),
    ]);
  });
  afterAll(async () => {
    stop.abort();
    await cli;
    await server?.close();
    await storage?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('says where the console is and how it authenticates', () => {
    expect(stdout).toBe(
      `Sluice console for ${server.url} (API calls sent with this CLI's bearer token): ${proxyUrl}/console/\n`,
    );
  });

  it('a port in use is a usage error that says how to pick another', async () => {
    const port = Number(new URL(proxyUrl).port);
    let err = '';
    const io = {
      stdout: { write: () => true },
      stderr: { write: (s: string) => (err += s) > '' },
      stdin: Readable.from(['']),
      env: {},
    };
    const code = await run(['--endpoint', server.url, 'console', '--port', String(port)], io);
    expect(code).toBe(2);
    expect(err).toContain(`cannot listen on 127.0.0.1:${port}: the port is already in use; pick another with --port`);
  });

  it('serves the console page and its hashed files with their types and caching', async () => {
    const page = await fetch(`${proxyUrl}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const html = await page.text();
    const script = /src="\.\/(app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    const style = /href="\.\/(style-[A-Z0-9]+\.css)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const js = await fetch(`${proxyUrl}/console/${script}`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(Buffer.from(await js.arrayBuffer()).equals(files.get(script!)!)).toBe(true);
    expect((await fetch(`${proxyUrl}/console/${style}`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await fetch(`${proxyUrl}/console/nope.js`)).status).toBe(404);
    const bare = await fetch(`${proxyUrl}/console`, { redirect: 'manual' });
    expect([bare.status, bare.headers.get('location')]).toEqual([308, '/console/']);
  });

  it('adds the token to API calls itself, and drops any the browser sends', async () => {
    expect((await fetch(`${server.url}/api/v1/resources/queues`)).status).toBe(401);
    const viaProxy = await fetch(`${proxyUrl}/api/v1/resources/queues`);
    expect(viaProxy.status).toBe(200);
    const body = (await viaProxy.json()) as { queues: { name: string }[] };
    expect(body.queues.map((q) => q.name)).toEqual(['via-proxy']);
    const forged = await fetch(`${proxyUrl}/api/v1/resources/queues`, { headers: { authorization: 'Bearer wrong' } });
    expect(forged.status).toBe(200);
  });

  it('refuses other web origins and host names before forwarding, and paths that are not the API', async () => {
    const cross = await fetch(`${proxyUrl}/api/v1/resources/queues`, { headers: { origin: 'https://evil.example' } });
    expect(cross.status).toBe(403);
    const site = await fetch(`${proxyUrl}/api/v1/resources/queues`, { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(site.status).toBe(403);
    // fetch will not send another Host; a raw request does, as a page on a rebound DNS name would.
    const u = new URL(proxyUrl);
    const rebound = await new Promise<number>((resolve, reject) => {
      const headers = { host: 'evil.example' };
      request({ host: u.hostname, port: u.port, path: '/api/v1/resources/queues', headers }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(rebound).toBe(403);
    expect((await fetch(`${proxyUrl}/etc/passwd`)).status).toBe(404);
  });

  it('in Chromium: through the proxy the page sends no credentials; served by a tokens-mode server it needs one', async () => {
    const browser = await launchChromium();
    try {
      await withPage(browser, 'proxy', async (page) => {
        const sent: IncomingHttpHeaders[] = [];
        page.on('request', (r) => {
          if (r.url().includes('/api/')) sent.push(r.headers());
        });
        await page.goto(`${proxyUrl}/console/`);
        await page.getByTestId('queue-row-via-proxy').waitFor();
        expect(sent.length).toBeGreaterThan(0);
        expect(sent.filter((h) => 'authorization' in h)).toEqual([]);
      });
      await withPage(browser, 'tokens-mode', async (page) => {
        const sent: IncomingHttpHeaders[] = [];
        page.on('request', (r) => {
          if (r.url().includes('/api/')) sent.push(r.headers());
        });
        // The page loads without a token; its first API call is refused like any client's.
        await page.goto(`${server.url}/console/`);
        await page.getByTestId('error').waitFor();
        expect(await page.getByTestId('error').textContent()).toMatch(/token/i);
        await page.getByTestId('token-input').fill(TOKEN);
        await page.getByTestId('token-form').locator('button').click();
        await page.getByTestId('queue-row-via-proxy').waitFor();
        expect(sent.at(-1)?.authorization).toBe(`Bearer ${TOKEN}`);
      });
    } finally {
      await browser.close();
    }
  });
});

describe('http: the console proxy signs with SigV4', () => {
  let upstream: Server;
  let upstreamUrl: string;
  const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'a=b' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/prod`;
  });
  afterAll(() => new Promise<void>((r) => upstream.close(() => r())));

  it("forwards the page's call under the endpoint's stage path, signed with the user's credentials", async () => {
    const credentials = { accessKeyId: 'AKIDCONSOLETEST', secretAccessKey: 'secret-for-the-test' };
    const auth = { type: 'sigv4' as const, region: 'eu-west-1', credentials };
    const proxy = await startConsoleProxy({ endpoint: upstreamUrl, auth, files: await buildConsole(), port: 0 });
    try {
      const body = JSON.stringify({ queue: 'orders', limit: 10 });
      const res = await fetch(`${proxy.url}/api/v1/dlq/retry?x=1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer from-the-page' },
        body,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(seen).toHaveLength(1);
      const got = seen[0]!;
      expect([got.method, got.url, got.body]).toEqual(['POST', '/prod/api/v1/dlq/retry?x=1', body]);
      const date = got.headers['x-amz-date'] as string;
      expect(got.headers.authorization).toMatch(
        new RegExp(
          `^AWS4-HMAC-SHA256 Credential=AKIDCONSOLETEST/${date.slice(0, 8)}/eu-west-1/execute-api/aws4_request, `,
        ),
      );
      // The same signature the client library makes for exactly this request at that instant.
      const [y, mo, d, hh, mi, ss] = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(date)!.slice(1).map(Number);
      const at = new Date(Date.UTC(y!, mo! - 1, d, hh, mi, ss));
      const expected = await authenticator(auth, new URL(upstreamUrl), { now: () => at })({
        method: 'POST',
        url: new URL(`${upstreamUrl}/api/v1/dlq/retry?x=1`),
        headers: { 'content-type': 'application/json', accept: '*/*' },
        body,
      });
      expect(got.headers.authorization).toBe(expected['authorization']);
    } finally {
      await proxy.close();
    }
  });
});

describe('http: the console proxy when it cannot sign or reach the API', () => {
  it('answers 502 with the reason, and sends nothing unsigned', async () => {
    const calls: string[] = [];
    const noCredentials = async (): Promise<never> => {
      throw new Error('Could not load credentials from any providers');
    };
    const proxy = await startConsoleProxy({
      endpoint: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
      auth: { type: 'sigv4', credentials: noCredentials },
      files: await buildConsole(),
      port: 0,
      fetch: async (url) => {
        calls.push(url instanceof Request ? url.url : url.toString());
        throw new TypeError('fetch failed');
      },
    });
    try {
      const r = await fetch(`${proxy.url}/api/v1/resources/queues`);
      expect(r.status).toBe(502);
      expect(await r.json()).toEqual({
        code: 'signing_failed',
        error:
          'could not authenticate the call to https://abc123.execute-api.eu-west-1.amazonaws.com: Could not load credentials from any providers',
      });
      expect(calls).toEqual([]);
    } finally {
      await proxy.close();
    }
    const unreachable = await startConsoleProxy({
      endpoint: 'http://127.0.0.1:9',
      files: await buildConsole(),
      port: 0,
      fetch: async () => {
        throw new TypeError('fetch failed');
      },
    });
    try {
      const r = await fetch(`${unreachable.url}/health`);
      expect([r.status, ((await r.json()) as { code: string }).code]).toEqual([502, 'bad_gateway']);
    } finally {
      await unreachable.close();
    }
  });
});

describe('http: the console as npm start serves it', () => {
  it('the built server answers /console/ with the page and its script', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-console-built-'));
    const srv = await startServerProcess({ SLUICE_DATA_DIR: dir });
    try {
      const page = await fetch(`${srv.url}/console/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
      const script = /src="\.\/(app-[A-Z0-9]+\.js)"/.exec(await page.text())?.[1];
      const js = await fetch(`${srv.url}/console/${script}`);
      expect([js.status, js.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
      expect(srv.output()).toContain(`"console":"${srv.url}/console/"`);
    } finally {
      await srv.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
