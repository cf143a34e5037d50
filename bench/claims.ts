/**
 * Record claims: embedded poll+ack throughput, and storage requests per poll and per batch
 * ack at batch sizes 1 / 10 / 100 / 1000 (embedded, counted at the storage port; AWS on moto,
 * counted at the SDK). `npm run bench -- --only claims`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../server/config.js';
import { resolveQueueOptions } from '../server/core/queue-options.js';
import { buildServices, type Services } from '../server/service/runtime.js';
import { openEmbeddedStorage } from '../server/storage/embedded/index.js';
import type { Storage } from '../server/storage/port.js';
import { startAwsEmulators } from '../test/support/aws-emulator.js';
import { meteredAwsStorage, type AwsMeter } from './aws-meter.js';
import { countingStorage } from './counting-storage.js';
import { oneKiBPayload } from './push.js';

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const P = 'Default';
const BATCHES = [1, 10, 100, 1000];

async function fill(svc: Services, queue: string, n: number, segment: number): Promise<void> {
  await svc.queues.configure({ queue, options: resolveQueueOptions({}, svc.config.claimDefaults) });
  for (let i = 0; i < n; i += segment) {
    const items = Array.from({ length: Math.min(segment, n - i) }, (_, j) => ({
      queue,
      payload: Buffer.from(oneKiBPayload(i + j)),
    }));
    await svc.pushes.push(items);
  }
}

/** Drains `total` records with `consumers` loops of poll(batch) + ack(list); msgs/s. */
async function drain(
  svc: Services,
  queue: string,
  total: number,
  batch: number,
  consumers: number,
): Promise<{ msgsPerS: number; ms: number }> {
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: consumers }, async () => {
      for (;;) {
        const got = await svc.claims.poll(queue, P, 'bench', { max: batch, principal: 'bench' });
        if (got.records.length === 0) {
          if (done >= total) return;
          continue;
        }
        await svc.claims.ack(
          queue,
          P,
          'bench',
          got.records.map((r) => r.offset),
        );
        done += got.records.length;
      }
    }),
  );
  const ms = performance.now() - t0;
  return { msgsPerS: (total / ms) * 1000, ms };
}

async function embeddedThroughput(): Promise<string[]> {
  const rows: string[] = [];
  for (const sync of ['full', 'normal'] as const) {
    for (const consumers of [1, 4]) {
      const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-claims-'));
      const storage = await openEmbeddedStorage({ dataDir: dir, sync });
      try {
        const svc = buildServices(storage, { ...loadConfig({}), sync, queueCacheMs: 60_000 });
        const total = 50_000;
        await fill(svc, 'tp', total, 1000);
        await svc.claims.create('tp', P, 'bench', 'earliest');
        const r = await drain(svc, 'tp', total, 100, consumers);
        rows.push(
          `| ${sync} | 100 | ${consumers} | ${fmt(total)} | ${fmt(r.msgsPerS)} | ${fmt((total / 100 / r.ms) * 1000)} |`,
        );
      } finally {
        await storage.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  return rows;
}

interface Counter {
  reset(): void;
  /** Requests since the last reset, and a breakdown. */
  read(): { total: number; detail: string };
}

/**
 * Requests per poll and per ack at each batch size, averaged over `rounds` cycles. Each case
 * has its own queue, pushed in segments of 1,000 (so a poll of up to 1,000 reads one
 * segment), and a group created beforehand (registration and process caches warm, as in a
 * warm Lambda; the segment itself is read by the measured polls).
 */
async function requestsPerCall(svc: Services, counter: Counter, rounds: number): Promise<string[]> {
  const rows: string[] = [];
  for (const n of BATCHES) {
    const queue = `req-${n}`;
    await fill(svc, queue, n * rounds, 1000);
    await svc.claims.create(queue, P, 'g', 'earliest');
    let pollReq = 0;
    let ackReq = 0;
    let pollDetail = '';
    let ackDetail = '';
    for (let r = 0; r < rounds; r++) {
      counter.reset();
      const got = await svc.claims.poll(queue, P, 'g', { max: n, principal: 'bench' });
      if (got.records.length !== n) throw new Error(`bench poll of ${n} returned ${got.records.length}`);
      const p = counter.read();
      pollReq += p.total;
      pollDetail = p.detail;
      counter.reset();
      await svc.claims.ack(
        queue,
        P,
        'g',
        got.records.map((x) => x.offset),
      );
      const a = counter.read();
      ackReq += a.total;
      ackDetail = a.detail;
    }
    rows.push(
      `| ${fmt(n)} | ${(pollReq / rounds).toFixed(2)} | ${(ackReq / rounds).toFixed(2)} | ${pollDetail} | ${ackDetail} |`,
    );
  }
  return rows;
}

async function embeddedRequests(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-claims-'));
  const inner: Storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  const counted = countingStorage(inner);
  try {
    const svc = buildServices(counted.storage, { ...loadConfig({}), queueCacheMs: 60_000 });
    const detail = (): string =>
      Object.entries(counted.counts)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
    return await requestsPerCall(
      svc,
      { reset: counted.reset, read: () => ({ total: counted.total(), detail: detail() }) },
      5,
    );
  } finally {
    await inner.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function awsRequests(): Promise<{ rows: string[]; units: string[] }> {
  const emulator = await startAwsEmulators();
  try {
    const { storage, meter } = await meteredAwsStorage(emulator.endpoints);
    const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 60_000 });
    const detail = (m: AwsMeter): string =>
      [...m.requests.entries()]
        .map(([k, v]) => `${k.replace(/^(dynamodb|s3):/, '').replace(/Command$/, '')} ${v}`)
        .join(', ');
    const rows = await requestsPerCall(
      svc,
      { reset: () => meter.reset(), read: () => ({ total: meter.totalRequests(), detail: detail(meter) }) },
      3,
    );
    // Units for a steady poll+ack cycle at batch 100.
    const units: string[] = [];
    for (const n of [10, 100]) {
      const queue = `units-${n}`;
      await fill(svc, queue, n * 5, 1000);
      await svc.claims.create(queue, P, 'g', 'earliest');
      meter.reset();
      for (let r = 0; r < 5; r++) {
        const got = await svc.claims.poll(queue, P, 'g', { max: n, principal: 'bench' });
        await svc.claims.ack(
          queue,
          P,
          'g',
          got.records.map((x) => x.offset),
        );
      }
      const msgs = n * 5;
      units.push(
        `| ${n} | ${fmt((meter.writeUnits / msgs) * 1000)} | ${fmt((meter.readUnits / msgs) * 1000)} | ${fmt((meter.totalRequests() / msgs) * 1000)} |`,
      );
    }
    await storage.close();
    return { rows, units };
  } finally {
    await emulator.stop();
  }
}

/** The claims section of docs/BENCHMARKS.md. */
export async function claimsBench(): Promise<string> {
  const tp = await embeddedThroughput();
  const emb = await embeddedRequests();
  const aws = await awsRequests();
  return [
    '## Record claims',
    '',
    'Command: `npm run bench -- --only claims`',
    '',
    '### Embedded backend: poll + ack throughput',
    '',
    'In-process services over SQLite (no HTTP), 50,000 records of 1 KiB pushed in segments of ' +
      '1,000, drained by consumers that each loop `poll(max 100)` then `ack(list)`. Every poll and ' +
      'every ack is one guarded transaction. Target: at least 20,000 msgs/s at batch 100.',
    '',
    '| SLUICE_SYNC | batch | consumers | records | msgs/s | poll+ack cycles/s |',
    '|---|---:|---:|---:|---:|---:|',
    ...tp,
    '',
    '### Storage requests per poll and per batch ack (embedded, counted at the storage port)',
    '',
    'Averaged over 5 cycles per batch size, each in its own queue pushed in segments of 1,000 ' +
      'records, after the group was created (process caches warm). A poll reads the group (one ' +
      'query), the records (the log index query and the segment) and writes one transaction; an ack ' +
      'reads the group and writes one transaction. Constant in the batch size.',
    '',
    '| batch | requests per poll | requests per ack | poll (last cycle) | ack (last cycle) |',
    '|---:|---:|---:|---|---|',
    ...emb,
    '',
    '### Storage requests per poll and per batch ack (AWS backend on moto, counted at the SDK)',
    '',
    'Same procedure, 3 cycles per batch size. A segment of 1,000 records of 1 KiB is an S3 object, ' +
      'so the record read is one S3 GET. Target: at most 4 per poll and per ack.',
    '',
    '| batch | requests per poll | requests per ack | poll (last cycle) | ack (last cycle) |',
    '|---:|---:|---:|---|---|',
    ...aws.rows,
    '',
    'DynamoDB units per 1,000 records for a steady poll+ack cycle (write units as billed: 1 KB per ' +
      'unit per item, twice inside a transaction; strongly consistent reads, 4 KB per unit):',
    '',
    '| batch | write units per 1,000 msgs | read units per 1,000 msgs | requests per 1,000 msgs |',
    '|---:|---:|---:|---:|',
    ...aws.units,
  ].join('\n');
}
