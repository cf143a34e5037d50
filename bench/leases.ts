/**
 * Partition leases: pop + ack throughput on the embedded backend through HTTP (the local
 * server in its own process), and storage requests per pop and per ack — counted at the
 * storage port (embedded) and as SDK requests (AWS backend on moto) — showing they stay flat
 * as the backlog, the number of groups and the number of idle partitions grow.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../server/config.js';
import { QUEUE_MODE_GROUP } from '../server/core/names.js';
import type { AckRequestItem } from '../server/service/leases/ack.js';
import type { PopRequest, PopResult } from '../server/service/leases/pop.js';
import { buildServices, type Services } from '../server/service/runtime.js';
import { openEmbeddedStorage } from '../server/storage/embedded/index.js';
import { startAwsEmulators } from '../test/support/aws-emulator.js';
import { startServerProcess } from '../test/support/process.js';
import { meteredAwsStorage, type AwsMeter } from './aws-meter.js';
import { countingStorage } from './counting-storage.js';

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const fx = (n: number, d = 2): string => n.toFixed(d);

/** A ~256-byte JSON event (its text is exactly 256 bytes), partly random. */
function payload(n: number): string {
  const head = `{"n":${n},"user":"user-${n % 997}","event":"checkout","salt":"${randomBytes(16).toString('hex')}","note":"`;
  return `${head}${'lorem ipsum dolor sit amet '.repeat(10).slice(0, 256 - head.length - 2)}"}`;
}

export interface Http {
  agent: Agent;
  call(method: string, path: string, body?: string): Promise<{ status: number; body: string }>;
}

/** Keep-alive HTTP client (fetch's overhead would cap the numbers on two cores). */
export function http(baseUrl: string, sockets: number): Http {
  const u = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: sockets });
  return {
    agent,
    call: (method, path, body) =>
      new Promise((resolve, reject) => {
        const headers: Record<string, string | number> =
          body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
        const req = request({ host: u.hostname, port: u.port, path, method, agent, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      }),
  };
}

// ------------------------------------------------------------------ throughput

async function pushAll(h: Http, queue: string, partitions: number, total: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (;;) {
        const b = next++;
        if (b * 100 >= total) return;
        const items = Array.from(
          { length: 100 },
          (_, i) => `{"queue":"${queue}","partition":"p${b % partitions}","payload":${payload(b * 100 + i)}}`,
        );
        const r = await h.call('POST', '/api/v1/push', `{"items":[${items.join(',')}]}`);
        if (r.status !== 201) throw new Error(`push answered ${r.status}: ${r.body.slice(0, 200)}`);
      }
    }),
  );
}

const TXID = /"transactionId":"([^"]+)","traceId"/g;

/** Workers per group pop (wildcard, batch 100) and ack each batch until the group has `total`. */
async function consume(
  h: Http,
  queue: string,
  groups: string[],
  workersPerGroup: number,
  total: number,
): Promise<number> {
  const got = new Map(groups.map((g) => [g, 0]));
  const started = process.hrtime.bigint();
  let finished = started;
  let done = 0;
  await Promise.all(
    groups.flatMap((g) =>
      Array.from({ length: workersPerGroup }, async () => {
        const q = g === QUEUE_MODE_GROUP ? '' : `&consumerGroup=${g}`;
        // Long polls, as Queen clients do by default: a lane released by an ack wakes a waiter.
        for (let empty = 0; (got.get(g) ?? 0) < total && empty < 20;) {
          const r = await h.call('GET', `/api/v1/pop/queue/${queue}?batch=100&wait=true&timeout=500${q}`);
          if (r.status === 204) {
            empty++;
            continue;
          }
          if (r.status !== 200) throw new Error(`pop answered ${r.status}: ${r.body.slice(0, 200)}`);
          // The generator shares the two cores with the server: it reads the ids with a regex
          // instead of parsing every message (one partition per pop, bench payloads only).
          const head = /"partitionId":"([^"]+)","leaseId":"([^"]*)"/.exec(r.body);
          if (!head) throw new Error(`unexpected pop answer: ${r.body.slice(0, 200)}`);
          const txids = [...r.body.matchAll(TXID)].map((m) => m[1] as string);
          const acks = txids.map(
            (t) => `{"transactionId":"${t}","partitionId":"${head[1]}","leaseId":"${head[2]}","status":"completed"}`,
          );
          const a = await h.call(
            'POST',
            '/api/v1/ack/batch',
            `{"consumerGroup":${g === QUEUE_MODE_GROUP ? 'null' : `"${g}"`},"acknowledgments":[${acks.join(',')}]}`,
          );
          if (a.status !== 200 || a.body.includes('"success":false'))
            throw new Error(`ack failed: ${a.body.slice(0, 200)}`);
          got.set(g, (got.get(g) ?? 0) + txids.length);
          if ((got.get(g) ?? 0) >= total && ++done === groups.length) finished = process.hrtime.bigint();
        }
      }),
    ),
  );
  // Timed to the last ack (idle long polls still open at the end do not count).
  const secs = Number(finished - started) / 1e9;
  const acked = [...got.values()].reduce((a, b) => a + b, 0);
  if (acked < total * groups.length) throw new Error(`consumers stopped at ${acked} of ${total * groups.length}`);
  return acked / secs;
}

const TOTAL = 100_000;

/** Pushes {@link TOTAL} messages to a server, then measures G groups consuming them all. */
async function throughputAt(url: string, g: number, onConsumeStart?: () => void): Promise<number> {
  const h = http(url, 16);
  try {
    await pushAll(h, 'lb', 8, TOTAL);
    onConsumeStart?.();
    const groups = g === 1 ? [QUEUE_MODE_GROUP] : Array.from({ length: g }, (_, i) => `g${i + 1}`);
    return await consume(h, 'lb', groups, g === 1 ? 8 : 4, TOTAL);
  } finally {
    h.agent.destroy();
  }
}

/** The same workload through the service API in one process (no HTTP, no load generator). */
async function leasesInProcess(g: number): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-leases-ip-'));
  const storage = await openEmbeddedStorage({ dataDir, sync: 'normal' });
  try {
    const svc = buildServices(storage, loadConfig({}));
    for (let b = 0; b < TOTAL / 100; b++)
      await svc.pushes.push(
        Array.from({ length: 100 }, (_, i) => ({
          queue: 'lb',
          partition: `p${b % 8}`,
          payload: Buffer.from(payload(b * 100 + i)),
        })),
      );
    const groups = g === 1 ? [QUEUE_MODE_GROUP] : Array.from({ length: g }, (_, i) => `g${i + 1}`);
    const got = new Map(groups.map((x) => [x, 0]));
    const started = process.hrtime.bigint();
    let finished = started;
    let done = 0;
    await Promise.all(
      groups.flatMap((group) =>
        Array.from({ length: g === 1 ? 8 : 4 }, async () => {
          for (let empty = 0; (got.get(group) ?? 0) < TOTAL && empty < 20;) {
            const r = await svc.leasePops.pop(popReq('lb', { group, wait: true, timeoutMs: 500 }));
            if (!r) {
              empty++;
              continue;
            }
            await ackAll(svc, r);
            got.set(group, (got.get(group) ?? 0) + r.messages.length);
            if ((got.get(group) ?? 0) >= TOTAL && ++done === groups.length) finished = process.hrtime.bigint();
          }
        }),
      ),
    );
    const secs = Number(finished - started) / 1e9;
    return [...got.values()].reduce((a, b) => a + b, 0) / secs;
  } finally {
    await storage.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function embeddedThroughput(): Promise<string[]> {
  const rows: string[] = [];
  for (const g of [1, 3]) {
    const rate = await leasesInProcess(g);
    rows.push(
      `| in-process (service API, no HTTP), normal | ${g} | ${fmt(TOTAL)} × ${g} | ${g === 1 ? 8 : 12} | **${fmt(rate)}** | ${fmt(rate / 100)} |`,
    );
  }
  for (const sync of ['normal', 'full'] as const) {
    for (const g of [1, 3]) {
      const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-leases-'));
      const server = await startServerProcess({ SLUICE_DATA_DIR: dataDir, SLUICE_SYNC: sync });
      try {
        const rate = await throughputAt(server.url, g);
        rows.push(
          `| HTTP, ${sync} | ${g} | ${fmt(TOTAL)} × ${g} | ${g === 1 ? 8 : 12} | **${fmt(rate)}** | ${fmt(rate / 100)} |`,
        );
      } finally {
        await server.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
  }
  return rows;
}

// ------------------------------------------------------ requests per pop / ack

/**
 * A pop for group `g` (up to 100 messages, not waiting); on the wildcard route unless `over`
 * names a partition.
 *
 * @example
 * ```ts
 * await svc.leasePops.pop(popReq('orders', { partition: 'Default' }));
 * ```
 */
export const popReq = (queue: string, over: Partial<PopRequest> = {}): PopRequest => ({
  queue,
  group: 'g',
  batch: 100,
  partitions: 1,
  autoAck: false,
  wait: false,
  timeoutMs: 0,
  ...over,
});

/** Acks every message of a pop as completed, in one call; throws if any ack failed. */
export async function ackAll(svc: Services, r: PopResult): Promise<void> {
  const res = await svc.leaseAcks.ack(completedAcks(r), r.group);
  if (!res.every((x) => x.success)) throw new Error('bench ack failed');
}

/** A pop's messages as `completed` ack items. */
export function completedAcks(r: PopResult): AckRequestItem[] {
  return r.messages.map((m, index) => ({
    index,
    partitionId: m.partitionId,
    transactionId: m.transactionId,
    status: 'completed' as const,
    leaseId: r.leaseId,
  }));
}

/** Average requests per pop and per ack over `cycles` pop+ack cycles of one group. */
async function measure(
  svc: Services,
  count: () => number,
  reset: () => void,
  req: PopRequest,
  cycles: number,
): Promise<{ pop: number; ack: number }> {
  // One warm-up cycle: process caches (queue, partition, group, segment hints) as a warm Lambda has them.
  const warm = await svc.leasePops.pop(req);
  if (!warm) throw new Error('bench: nothing to pop');
  await ackAll(svc, warm);
  let pops = 0;
  let acks = 0;
  for (let i = 0; i < cycles; i++) {
    reset();
    const r = await svc.leasePops.pop(req);
    pops += count();
    if (!r) throw new Error('bench: ran dry');
    reset();
    await ackAll(svc, r);
    acks += count();
  }
  return { pop: pops / cycles, ack: acks / cycles };
}

async function pushBatches(svc: Services, queue: string, partition: string, total: number): Promise<void> {
  for (let b = 0; b < total / 100; b++)
    await svc.pushes.push(
      Array.from({ length: 100 }, (_, i) => ({ queue, partition, payload: Buffer.from(payload(b * 100 + i)) })),
    );
}

async function embeddedCounts(): Promise<string[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-leases-c-'));
  const inner = await openEmbeddedStorage({ dataDir, sync: 'normal' });
  const c = countingStorage(inner);
  const rows: string[] = [];
  try {
    const svc = buildServices(c.storage, { ...loadConfig({}), queueCacheMs: 60_000 });
    const row = (what: string, m: { pop: number; ack: number }): string => `| ${what} | ${fx(m.pop)} | ${fx(m.ack)} |`;
    // Backlog depth.
    for (const depth of [1_000, 100_000]) {
      const q = `depth-${depth}`;
      await pushBatches(svc, q, 'Default', depth);
      rows.push(
        row(
          `partition pop, backlog ${fmt(depth)}`,
          await measure(svc, c.total, c.reset, popReq(q, { partition: 'Default' }), 5),
        ),
      );
    }
    // Number of groups on the queue (each has its own cursor; others are untouched).
    for (const groups of [1, 10]) {
      const q = `groups-${groups}`;
      await svc.queues.ensureQueue(q);
      for (let g = 1; g < groups; g++) await svc.leasePops.pop(popReq(q, { group: `other-${g}` }));
      await pushBatches(svc, q, 'Default', 1_000);
      rows.push(
        row(
          `wildcard pop, ${groups} group${groups > 1 ? 's' : ''} on the queue`,
          await measure(svc, c.total, c.reset, popReq(q), 5),
        ),
      );
    }
    // Idle partitions next to the one with work.
    for (const idle of [0, 10_000]) {
      const q = `idle-${idle}`;
      const rec = await svc.queues.ensureQueue(q);
      await svc.leasePops.pop(popReq(q)); // registers the group first
      for (let i = 0; i < idle; i += 100)
        await Promise.all(Array.from({ length: 100 }, (_, j) => svc.queues.ensurePartition(rec, `idle-${i + j}`)));
      await pushBatches(svc, q, 'busy', 1_000);
      rows.push(row(`wildcard pop, ${fmt(idle)} idle partitions`, await measure(svc, c.total, c.reset, popReq(q), 5)));
    }
  } finally {
    await inner.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

async function awsCounts(): Promise<string[]> {
  const emulator = await startAwsEmulators();
  const rows: string[] = [];
  try {
    const { storage, meter } = await meteredAwsStorage(emulator.endpoints);
    const config = { ...loadConfig({}), queueCacheMs: 60_000 };
    // Producer and consumer are different processes (Lambda functions): separate caches.
    const producer = buildServices(storage, config);
    const consumer = buildServices(storage, config);
    const by = (m: AwsMeter): string =>
      [...m.requests.entries()]
        .sort()
        .map(([k, v]) => `${k.replace(/^(dynamodb|s3):/, '').replace(/Command$/, '')} ${fx(v / 10, 1)}`)
        .join(', ');
    const run = async (label: string, queue: string, req: PopRequest): Promise<void> => {
      const warm = await consumer.leasePops.pop(req);
      if (!warm) throw new Error('bench: nothing to pop');
      await ackAll(consumer, warm);
      const pop = { n: 0, detail: '' };
      const ack = { n: 0, detail: '' };
      const popMeter = new Map<string, number>();
      const ackMeter = new Map<string, number>();
      let wru = 0;
      let rru = 0;
      let delivered = 0;
      for (let i = 0; i < 10; i++) {
        meter.reset();
        const r = await consumer.leasePops.pop(req);
        pop.n += meter.totalRequests();
        wru += meter.writeUnits;
        rru += meter.readUnits;
        delivered += r?.messages.length ?? 0;
        for (const [k, v] of meter.requests) popMeter.set(k, (popMeter.get(k) ?? 0) + v);
        if (!r) throw new Error(`bench: ${queue} ran dry`);
        meter.reset();
        await ackAll(consumer, r);
        ack.n += meter.totalRequests();
        wru += meter.writeUnits;
        rru += meter.readUnits;
        for (const [k, v] of meter.requests) ackMeter.set(k, (ackMeter.get(k) ?? 0) + v);
      }
      pop.detail = by({ ...meter, requests: popMeter });
      ack.detail = by({ ...meter, requests: ackMeter });
      rows.push(
        `| ${label} | ${fx(pop.n / 10)} | ${pop.detail} | ${fx(ack.n / 10)} | ${ack.detail} | ` +
          `${fmt((wru / delivered) * 1000)} | ${fmt((rru / delivered) * 1000)} |`,
      );
    };
    const small = (n: number): Buffer => Buffer.from(payload(n));
    // 1.2 KB of random hex: 100 of them compress to ~60 KB, stored as an S3 object.
    const big = (n: number): Buffer => Buffer.from(`{"blob":"${randomBytes(600).toString('hex')}","n":${n}}`);
    const fill = async (
      queue: string,
      partition: string,
      mk: (n: number) => Buffer,
      perPush = 100,
      total = 1200,
    ): Promise<void> => {
      for (let b = 0; b < total / perPush; b++)
        await producer.pushes.push(
          Array.from({ length: perPush }, (_, i) => ({ queue, partition, payload: mk(b * perPush + i) })),
        );
    };
    await fill('aws-inline', 'Default', small, 10);
    await run(
      'partition pop, inline segments (10 × 256 B per push: 10 segments per pop)',
      'aws-inline',
      popReq('aws-inline', { partition: 'Default' }),
    );
    // 400 per push: 100 of these compress to under the 8 KiB inline threshold.
    await fill('aws-s3', 'Default', small, 400);
    await run(
      'partition pop, S3 segments (400 × 256 B per push), backlog 1,200',
      'aws-s3',
      popReq('aws-s3', { partition: 'Default' }),
    );
    await fill('aws-s3-deep', 'Default', small, 400, 6000);
    await run(
      'partition pop, S3 segments (400 × 256 B per push), backlog 6,000',
      'aws-s3-deep',
      popReq('aws-s3-deep', { partition: 'Default' }),
    );
    await fill('aws-g1', 'Default', small, 10);
    await run('wildcard pop, G = 1, no idle partitions, inline segments', 'aws-g1', popReq('aws-g1'));
    await producer.queues.ensureQueue('aws-g3');
    await consumer.leasePops.pop(popReq('aws-g3', { group: 'g2' }));
    await consumer.leasePops.pop(popReq('aws-g3', { group: 'g3' }));
    await fill('aws-g3', 'Default', small, 10);
    await run('wildcard pop, G = 3 on the queue, inline segments', 'aws-g3', popReq('aws-g3'));
    await fill('aws-blob', 'Default', big);
    await run(
      'partition pop, S3 segments (100 × 1.2 KB per push)',
      'aws-blob',
      popReq('aws-blob', { partition: 'Default' }),
    );
    const rec = await producer.queues.ensureQueue('aws-idle');
    await consumer.leasePops.pop(popReq('aws-idle'));
    // One at a time: moto answers 500 to some concurrent transactions.
    for (let i = 0; i < 200; i++) await producer.queues.ensurePartition(rec, `idle-${i}`);
    await fill('aws-idle', 'busy', small, 10);
    await run('wildcard pop, 200 idle partitions, inline segments', 'aws-idle', popReq('aws-idle'));
    await fill('aws-idle-s3', 'busy', small, 400);
    await run('wildcard pop, S3 segments', 'aws-idle-s3', popReq('aws-idle-s3'));
    await storage.close();
  } finally {
    await emulator.stop();
  }
  return rows;
}

/** Section `leases` of `npm run bench`. */
export async function leasesBench(): Promise<string> {
  const thr = await embeddedThroughput();
  const emb = await embeddedCounts();
  const aws = await awsCounts();
  return [
    '## Partition leases: pop + ack',
    '',
    'Command: `npm run bench -- --only leases`',
    '',
    '### Embedded backend, through HTTP',
    '',
    'The local server (`npm start`) in its own process, on the same two cores as the load generator ' +
      '(which reads the ids from each pop answer with a regex rather than parsing it, to leave the ' +
      'CPU to the server). 100,000 messages of 256 B pushed first into 8 partitions (100 per push); ' +
      'then keep-alive workers loop on a long-polling wildcard pop (`batch=100&wait=true`, as Queen ' +
      'clients poll) and one `/ack/batch` of everything they got, timed until the last ack. G = 3 ' +
      'runs three groups at once over the same messages (4 workers each); the rate counts every acked ' +
      'delivery. `SLUICE_SYNC=normal` fsyncs SQLite at checkpoints (survives a process crash); `full` ' +
      'fsyncs every commit (the default, survives power loss) — each pop and each ack is one SQLite ' +
      'commit. The in-process rows run the same workload through the service API in one process (no ' +
      'HTTP, no load generator): the broker’s own cost. Other work on the machine moves these numbers ' +
      'by ±15 %.',
    '',
    '| path, SLUICE_SYNC | G | deliveries | workers | msgs/s (pop+ack) | pop+ack pairs/s |',
    '|---|---:|---:|---:|---:|---:|',
    ...thr,
    '',
    '### Storage requests per pop and per ack (embedded, counted at the storage port)',
    '',
    'Each port call counted as the AWS adapter would issue it (a `getMany` of up to 100 keys is one ' +
      'request). Average over 5 pop+ack cycles of batch 100, after one warm-up cycle. A partition pop ' +
      'reads the row, one page of segments from the row’s segment hint and writes the lease; a ' +
      'wildcard pop reads the work index, the candidates’ rows and their sequencers instead of the row; an ack reads ' +
      'the row and writes it.',
    '',
    '| case | requests per pop | requests per ack |',
    '|---|---:|---:|',
    ...emb,
    '',
    '### AWS backend (DynamoDB + S3 on moto): SDK requests per pop and per ack',
    '',
    '1,200 messages (6,000 in the deep-backlog row) pushed by one process; popped (batch 100) and ' +
      'acked by another (separate caches, as separate Lambda functions), so every S3 segment costs ' +
      'the consumer one GetObject (the segment index query is skipped when index entries an earlier ' +
      'query returned cover the batch). Segments up to 8 KiB compressed are stored inline (their ' +
      'bytes come with the query). Average over 10 cycles after a warm-up cycle; a wildcard pop ' +
      'reuses the work-index page it read within the last 250 ms. Targets: ≤ 5 per pop, ≤ 2 per ack call.',
    '',
    '| case | requests per pop | pop requests by kind | requests per ack | ack requests by kind | ' +
      'write units per 1,000 msgs (pop+ack) | read units per 1,000 msgs |',
    '|---|---:|---|---:|---|---:|---:|',
    ...aws,
  ].join('\n');
}
