/**
 * `npm run bench -- --only targets`: targets on the local server (`npm start`, SLUICE_SYNC=full)
 * delivering to an HTTP receiver on loopback in this process (docs/TARGETS.md): push-to-delivery
 * latency for one producer of single messages at a steady rate, window 0; and the batches per
 * second one partition sustains when the receiver takes 10 ms per event (one batch in flight
 * per partition, so that is the ceiling the one-lease rule sets).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startServerProcess } from '../test/support/process.js';
import { httpLoad, oneKiBPayload } from './push.js';

const pct = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? NaN;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A receiver that notes when each record arrived and answers after `delayMs`. */
async function receiver(delayMs: number) {
  const arrived = new Map<number, number>();
  let events = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = performance.now();
      events++;
      const e = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { records: { payload: { n: number } }[] };
      for (const r of e.records) if (!arrived.has(r.payload.n)) arrived.set(r.payload.n, now);
      setTimeout(() => res.writeHead(200).end(), delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrived,
    events: () => events,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

async function withTarget<T>(
  delayMs: number,
  settings: Record<string, unknown>,
  fn: (x: {
    push: (body: string) => Promise<void>;
    rx: Awaited<ReturnType<typeof receiver>>;
    target: (action: 'pause' | 'resume') => Promise<void>;
  }) => Promise<T>,
): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-targets-'));
  const server = await startServerProcess({ SLUICE_DATA_DIR: dataDir, SLUICE_SYNC: 'full' });
  const rx = await receiver(delayMs);
  // Enough sockets that a push never waits for one (the producer, not the server, would set the pace).
  const load = httpLoad(server.url, 64);
  try {
    const put = await fetch(`${server.url}/api/v1/targets/tb/g`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: { kind: 'https', url: rx.url }, mode: 'leases', ...settings }),
    });
    if (put.status !== 201) throw new Error(`PUT target answered ${put.status}: ${await put.text()}`);
    const push = async (body: string) => {
      const r = await load.post('/api/v1/push', body);
      if (r.status !== 201) throw new Error(`push answered ${r.status}: ${r.body.slice(0, 200)}`);
    };
    const target = async (action: 'pause' | 'resume') => {
      const r = await fetch(`${server.url}/api/v1/targets/tb/g/${action}`, { method: 'POST' });
      if (r.status !== 200) throw new Error(`${action} answered ${r.status}`);
    };
    return await fn({ push, rx, target });
  } finally {
    load.agent.destroy();
    await rx.close();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const item = (n: number, payload: string) => `{"queue":"tb","payload":{"n":${n},"body":${payload}}}`;

/** Single messages at `rate`/s for `seconds`, one producer: push-to-delivery percentiles (ms). */
async function latencyRow(rate: number, seconds: number): Promise<string> {
  return withTarget(0, { batchSize: 100, maximumBatchingWindowInSeconds: 0 }, async ({ push, rx }) => {
    for (let n = -50; n < 0; n++) await push(`{"items":[${item(n, '{}')}]}`); // warm-up
    await pause(500);
    const sent = new Map<number, number>();
    const total = rate * seconds;
    const start = performance.now();
    for (let n = 0; n < total; n++) {
      const due = start + (n * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await pause(wait);
      sent.set(n, performance.now());
      void push(`{"items":[${item(n, oneKiBPayload(n))}]}`);
    }
    const end = performance.now() + 10_000;
    while ([...sent.keys()].some((n) => !rx.arrived.has(n)) && performance.now() < end) await pause(50);
    const lat = [...sent].filter(([n]) => rx.arrived.has(n)).map(([n, t]) => rx.arrived.get(n)! - t);
    lat.sort((a, b) => a - b);
    const lost = total - lat.length;
    return `| ${rate}/s single messages, 1 KiB, window 0 | ${total} | ${pct(lat, 0.5).toFixed(1)} | ${pct(lat, 0.99).toFixed(1)} | ${rx.events()} | ${lost} |`;
  });
}

/** A backlog of `total` messages in one partition, a receiver taking `delayMs` per event. */
async function throughputRow(total: number, delayMs: number): Promise<string> {
  return withTarget(delayMs, { batchSize: 100, maximumConcurrency: 5 }, async ({ push, rx, target }) => {
    // The backlog is written while the target is paused, then drained.
    await target('pause');
    for (let b = 0; b < total / 100; b++)
      await push(`{"items":[${Array.from({ length: 100 }, (_, i) => item(b * 100 + i, oneKiBPayload(i))).join(',')}]}`);
    await target('resume');
    const start = performance.now();
    const startEvents = rx.events();
    const got0 = rx.arrived.size;
    while (rx.arrived.size < total && performance.now() - start < 60_000) await pause(20);
    const s = (performance.now() - start) / 1000;
    const batches = (rx.events() - startEvents) / s;
    return `| one partition, receiver ${delayMs} ms per event, batch 100 | ${total} | ${batches.toFixed(0)} | ${((rx.arrived.size - got0) / s).toFixed(0)} |`;
  });
}

export async function targetsBench(): Promise<string> {
  const latency = [await latencyRow(1000, 3), await latencyRow(250, 4)];
  const through = [await throughputRow(20_000, 10)];
  return [
    '## Targets',
    '',
    'Command: `npm run bench -- --only targets`',
    '',
    'The local server (`npm start`, `SLUICE_SYNC=full`) delivering a partition-lease target to an HTTP receiver on loopback in the bench process, on the same two cores. Push-to-delivery is from the push being sent to the event reaching the receiver. Target (issue 26): p50 ≤ 20 ms, p99 ≤ 100 ms at 1,000/s.',
    '',
    '| load | messages | p50 ms | p99 ms | events | not delivered |',
    '|---|---:|---:|---:|---:|---:|',
    ...latency,
    '',
    'One partition delivers one batch at a time (the one-lease rule), so its ceiling is one event per receiver round trip:',
    '',
    '| load | messages | events/s | messages/s |',
    '|---|---:|---:|---:|',
    ...through,
  ].join('\n');
}
