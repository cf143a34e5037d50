import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCrashProbe } from '../support/crash-probe.js';
import { startServerProcess } from '../support/process.js';

const dataDir = mkdtempSync(join(tmpdir(), 'sluice-restart-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('http: local server restart (embedded)', () => {
  it('keeps every acknowledged push across SIGTERM and a restart', async () => {
    const first = await startServerProcess({ SLUICE_DATA_DIR: dataDir });
    const acked: { partition: string; n: number }[] = [];
    let stopAt = 0;
    // Pushers keep going while the server is told to stop: whatever got a 201 must survive.
    const pushers = Array.from({ length: 4 }, async (_, w) => {
      for (let b = 0; ; b++) {
        const items = Array.from({ length: 20 }, (_, i) => ({
          queue: 'durable',
          partition: `w${w}`,
          payload: { n: b * 20 + i },
        }));
        try {
          const r = await fetch(`${first.url}/api/v1/push`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ items }),
          });
          if (r.status !== 201) return;
          const body = (await r.json()) as { status: string }[];
          body.forEach((x, i) => x.status === 'queued' && acked.push({ partition: `w${w}`, n: b * 20 + i }));
        } catch {
          return; // connection refused or reset: not acknowledged
        }
        if (b === 10) stopAt++;
      }
    });
    while (stopAt < 4) await new Promise((r) => setTimeout(r, 10));
    expect(await first.stop('SIGTERM')).toBe(0);
    await Promise.all(pushers);
    expect(acked.length).toBeGreaterThanOrEqual(4 * 11 * 20);

    const second = await startServerProcess({ SLUICE_DATA_DIR: dataDir });
    try {
      for (let w = 0; w < 4; w++) {
        const mine = acked.filter((a) => a.partition === `w${w}`).map((a) => a.n);
        const got: number[] = [];
        for (let from = 0; ;) {
          const r = await fetch(
            `${second.url}/api/v1/queues/durable/partitions/w${w}/messages?from=${from}&limit=1000`,
          );
          const body = (await r.json()) as { messages: { data: { n: number } }[]; next: number };
          if (body.messages.length === 0) break;
          got.push(...body.messages.map((m) => m.data.n));
          from = body.next;
        }
        // Every acknowledged message is there, in push order, once.
        expect(got.slice(0, mine.length)).toEqual(mine);
        expect(new Set(got).size).toBe(got.length);
      }
      // The series too: the stopping server stored its minute under way.
      const ops = (await (await fetch(`${second.url}/api/v1/analytics/queue-ops?queue=durable`)).json()) as {
        series: { pushMessages: number }[];
      };
      expect(ops.series.reduce((n, r) => n + r.pushMessages, 0)).toBeGreaterThanOrEqual(acked.length);
    } finally {
      await second.stop();
    }
  });

  // `npm run soak` runs hundreds of cycles (docs/SECURITY.md, "How it is tested").
  it('survives 20 kill -9s under push, pop, ack and claim load: nothing acknowledged lost, no hole, no repeat, no group ahead of its acks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-kill9-'));
    try {
      const r = await runCrashProbe({ cycles: 20, dataDir: dir });
      console.error(
        `kill -9 probe: cycles=${r.cycles} requests=${r.requests} acknowledged=${r.acknowledged} lost=${r.lost} duplicated=${r.duplicated} 5xx=${r.fiveXx}`,
      );
      expect(r.violations).toEqual([]);
      expect(r).toMatchObject({ lost: 0, duplicated: 0, fiveXx: 0 });
      expect(r.acknowledged).toBeGreaterThan(20);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
