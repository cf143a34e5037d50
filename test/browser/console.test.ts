// The console (console/) in headless Chromium against a local server with seeded data: the
// views a user walks through and the actions that change state, each checked in the page and
// then through the API. One browser for the file; a screenshot under test-results/browser/ when
// a scenario fails.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../server/local/server.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { buildConsole } from '../../scripts/build-console.js';
import { launchChromium, withPage } from '../support/browser.js';
import { call, startTestServer } from '../support/http.js';
import type { DlqPageReply, PopReply } from '../support/replies.js';
import { testServices } from '../support/services.js';

describe('browser: the console in Chromium', () => {
  let dir: string;
  let storage: Storage;
  let server: LocalServer;
  // Every scenario awaits it: without Chromium each one fails with the message saying how to get it.
  let browser: Promise<Browser>;
  const http = <T = unknown>(method: string, path: string, body?: unknown) => call<T>(server.url, method, path, body);

  /** Pushes `n` messages to `queue` and dead-letters each (queue mode), returning their transactionIds. */
  async function deadLetters(queue: string, n: number): Promise<string[]> {
    const items = Array.from({ length: n }, (_, i) => ({ queue, payload: { bad: i }, transactionId: `${queue}-${i}` }));
    expect((await http('POST', '/api/v1/push', { items })).status).toBe(201);
    const ids: string[] = [];
    // One at a time, as a consumer giving up on each would.
    for (let i = 0; i < n; i++) {
      const [m] = (await http<PopReply>('GET', `/api/v1/pop/queue/${queue}?batch=1&wait=false`)).body.messages;
      const dead = await http<{ dlq: boolean }[]>('POST', '/api/v1/ack', {
        transactionId: m!.transactionId,
        partitionId: m!.partitionId,
        leaseId: m!.leaseId,
        status: 'dlq',
        error: 'cannot parse',
      });
      expect(dead.body[0]?.dlq).toBe(true);
      ids.push(m!.transactionId);
    }
    return ids;
  }

  beforeAll(async () => {
    browser = launchChromium();
    browser.catch(() => undefined); // reported by each scenario
    dir = await mkdtemp(join(tmpdir(), 'sluice-console-'));
    storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
    server = await startTestServer(testServices(storage), { consoleFiles: await buildConsole() });
    // orders: p0 with 3 messages (a lease group holding two, a record-claim group), p1 with 2.
    await http('POST', '/api/v1/configure', { queue: 'orders', options: { leaseTime: 300 } });
    const items = [
      ...[0, 1, 2].map((n) => ({ queue: 'orders', partition: 'p0', payload: { n }, transactionId: `o-${n}` })),
      ...[3, 4].map((n) => ({ queue: 'orders', partition: 'p1', payload: { n }, transactionId: `o-${n}` })),
    ];
    const seeded = [
      await http('POST', '/api/v1/push', { items }),
      await http('GET', '/api/v1/pop/queue/orders/partition/p0?batch=2&wait=false&consumerGroup=billing'),
    ];
    if (seeded.some((r) => r.status >= 300)) throw new Error(`seeding failed: ${JSON.stringify(seeded)}`);
  });
  afterAll(async () => {
    await (await browser.catch(() => undefined))?.close();
    await server?.close();
    await storage?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const open = async (page: Page, hash = ''): Promise<void> => {
    await page.goto(`${server.url}/console/${hash}`);
  };

  it('list → queue → partition → messages, and a lookup by transactionId', async () => {
    await withPage(await browser, 'browse', async (page) => {
      await open(page);
      await expect.poll(() => page.getByTestId('queue-row-orders').textContent()).toContain('orders');
      await page.getByTestId('queue-link-orders').click();
      await page.getByTestId('queue-title').waitFor();
      expect(await page.getByTestId('partitions').locator('tbody tr').count()).toBeGreaterThanOrEqual(2);
      // The lease group on p0: two behind its cursor, a live lease.
      expect(await page.getByTestId('consumer-p0-billing').textContent()).toMatch(
        /billing \(lease\) lag 3, leased until/,
      );

      await page.getByTestId('partition-link-p0').click();
      await page.getByTestId('partition-title').waitFor();
      expect(await page.getByTestId('group-lag-billing').textContent()).toBe('3');
      expect(await page.getByTestId('group-state-billing').textContent()).toMatch(/^leased until/);
      const rows = page.getByTestId('messages').locator('tbody tr');
      expect(await rows.count()).toBe(3);
      expect(await page.getByTestId('message-1').textContent()).toContain('o-1');
      expect(await page.getByTestId('message-1').textContent()).toContain('"n": 1');

      await page.getByTestId('from-input').fill('2');
      await page.getByTestId('from-submit').click();
      await expect.poll(() => rows.count()).toBe(1);
      expect(await page.getByTestId('message-2').isVisible()).toBe(true);
      expect(page.url()).toContain('#/queues/orders/partitions/p0?from=2');

      await page.getByTestId('lookup-input').fill('o-1');
      await page.getByTestId('lookup-submit').click();
      const found = page.getByTestId('lookup-result').getByTestId('message-1');
      await found.waitFor();
      expect(await found.textContent()).toContain('"n": 1');
      await page.getByTestId('lookup-input').fill('no-such-transaction');
      await page.getByTestId('lookup-submit').click();
      await page.getByTestId('lookup-result').getByTestId('error').waitFor();

      // Every group, with its lag over the queue (3 on p0, 2 on p1), from the header's link.
      await page.getByTestId('nav-groups').click();
      await page.getByTestId('cg-row-billing-orders').waitFor();
      expect(await page.getByTestId('cg-row-billing-orders').textContent()).toContain('partition lease');
      expect(await page.getByTestId('cg-lag-billing-orders').textContent()).toBe('5');
    });
  });

  it('Refresh reloads the view; Live reloads list views by itself, and is remembered', async () => {
    await withPage(await browser, 'live', async (page) => {
      await open(page);
      await page.getByTestId('queue-row-orders').waitFor();
      await http('POST', '/api/v1/push', { items: [{ queue: 'fresh-1', payload: { n: 1 } }] });
      await page.getByTestId('refresh').click();
      await page.getByTestId('queue-row-fresh-1').waitFor();

      await page.getByTestId('live').check();
      await http('POST', '/api/v1/push', { items: [{ queue: 'fresh-2', payload: { n: 2 } }] });
      // No click: the list reloads within its 5 s period.
      await page.getByTestId('queue-row-fresh-2').waitFor({ timeout: 15_000 });
      await page.reload();
      expect(await page.getByTestId('live').isChecked()).toBe(true);
    });
  });

  it('DLQ: retry one dead letter, delete another', async () => {
    const [first, second, third] = await deadLetters('poison', 3);
    await withPage(await browser, 'dlq-retry', async (page) => {
      await open(page, '#/dlq?queue=poison');
      await page.getByTestId(`dlq-row-${first}`).waitFor();
      expect(await page.getByTestId('dlq').locator('tbody tr').count()).toBe(3);

      await page.getByTestId(`dlq-retry-${first}`).click();
      await expect.poll(() => page.getByTestId('dlq-status').textContent()).toContain(`Retried ${first}`);
      await expect.poll(() => page.getByTestId(`dlq-row-${first}`).count()).toBe(0);

      await page.getByTestId(`dlq-delete-${second}`).click();
      await expect.poll(() => page.getByTestId('dlq-status').textContent()).toContain(`Deleted ${second}`);
      expect(await page.getByTestId('dlq').locator('tbody tr').count()).toBe(1);

      // Deleted elsewhere meanwhile: the API answers 200 success:false (Queen's shape), shown as an error.
      const rows = await http<{ messages: { transactionId: string; partitionId: string }[] }>(
        'GET',
        '/api/v1/dlq?queue=poison',
      );
      const row = rows.body.messages.find((m) => m.transactionId === third)!;
      expect((await http('DELETE', `/api/v1/messages/${row.partitionId}/${third}`)).status).toBe(200);
      await page.getByTestId(`dlq-delete-${third}`).click();
      await expect.poll(() => page.getByTestId('dlq-status').textContent()).toContain('no dead-letter row');
    });
    const left = await http<{ messages: { transactionId: string }[] }>('GET', '/api/v1/dlq?queue=poison');
    expect(left.body.messages.map((m) => m.transactionId)).toEqual([]);
    // The retried one is back on the queue under a fresh transactionId.
    const again = await http<PopReply>('GET', '/api/v1/pop/queue/poison?batch=10&wait=false');
    expect(again.body.messages.map((m) => m.data)).toEqual([{ bad: 0 }]);
  });

  it('bulk redrive pages through every dead letter and shows its progress', async () => {
    await deadLetters('bulk', 25);
    await withPage(await browser, 'bulk-redrive', async (page) => {
      await open(page, '#/dlq?queue=bulk');
      await expect.poll(() => page.getByTestId('dlq').locator('tbody tr').count()).toBe(25);
      // Every text the progress line shows, in order.
      await page.evaluate(`(() => {
        const el = document.querySelector('[data-testid="redrive-progress-text"]');
        window.seen = [];
        new MutationObserver(() => window.seen.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
      })()`);
      const pages: string[] = [];
      page.on('request', (r) => {
        if (r.url().endsWith('/api/v1/dlq/retry')) pages.push(r.postData() ?? '');
      });
      await page.getByTestId('redrive-all').click();
      await page.locator('[data-testid="redrive-progress-text"][data-done="true"]').waitFor();
      expect(await page.getByTestId('redrive-progress-text').textContent()).toBe('Redrive done: 25 redriven');
      expect(await page.getByTestId('redrive-progress').getAttribute('max')).toBe('25');
      expect(await page.getByTestId('redrive-progress').getAttribute('value')).toBe('25');
      const seen = await page.evaluate<string[]>('window.seen');
      expect(seen.slice(0, 2)).toEqual(['10 of 25 redriven', '20 of 25 redriven']);
      expect(pages).toHaveLength(3);
      expect(JSON.parse(pages[1]!)).toMatchObject({ queue: 'bulk', limit: 10, after: expect.any(String) as string });
      await page.getByTestId('dlq-reload').click();
      await page.getByTestId('dlq-empty').waitFor();
    });
    expect((await http<DlqPageReply>('GET', '/api/v1/dlq?queue=bulk')).body.messages).toHaveLength(0);
    const redriven = await http<PopReply>('GET', '/api/v1/pop/queue/bulk?batch=100&wait=false');
    expect(redriven.body.messages).toHaveLength(25);
  });

  it('claim group view: in flight, owed, dead letters, and a redrive', async () => {
    const group = '/api/v1/queues/orders/partitions/p1/groups/workers';
    expect((await http('PUT', group, { start: 'earliest' })).status).toBe(200);
    const polled = await http<{ records: { offset: number }[] }>('POST', `${group}/poll`, {
      max: 2,
      visibilityMs: 600_000,
    });
    expect(polled.body.records.map((r) => r.offset)).toEqual([0, 1]);
    expect((await http('POST', `${group}/dead-letter`, { offset: 1 })).status).toBe(200);
    await withPage(await browser, 'claim-group', async (page) => {
      await open(page, '#/queues/orders/partitions/p1');
      await page.getByTestId('claim-link-workers').click();
      await page.getByTestId('group-title').waitFor();
      expect(page.url()).toContain('#/queues/orders/partitions/p1/groups/workers');
      const card = (k: string) => page.getByTestId(`claim-${k}`).locator('b').textContent();
      expect(await card('inFlight')).toBe('1');
      expect(await card('deadLetters')).toBe('1');
      expect(await card('owed')).toBe('0');
      const dead = page.getByTestId('claim-dead-1');
      expect(await dead.textContent()).toContain('o-4');
      expect(await dead.textContent()).toContain('"n": 4');

      await page.getByTestId('claim-redrive-1').click();
      await page.getByTestId('claim-dead-empty').waitFor();
      expect(await card('deadLetters')).toBe('0');
      expect(await card('owed')).toBe('1');
    });
    const described = await http<{ owed: number; deadLetters: number }>('GET', group);
    expect(described.body).toMatchObject({ owed: 1, deadLetters: 0 });
  });
});
