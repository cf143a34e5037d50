import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../server/config.js';
import { buildServices } from '../server/service/runtime.js';
import { startAwsEmulators } from '../test/support/aws-emulator.js';
import { startServerProcess } from '../test/support/process.js';
import { meteredAwsStorage } from './aws-meter.js';

function makePayload(n: number): string {
  const head = `{"n":${n},"user":"user-${n % 997}","event":"checkout","salt":"${randomBytes(64).toString('hex')}","note":"`;
  return `${head}${'lorem ipsum dolor sit amet '.repeat(40).slice(0, 1024 - head.length - 2)}"}`;
}
// Made ahead of time, so the load generator (on the same two cores) spends its CPU on sending.
const POOL = Array.from({ length: 1024 }, (_, i) => makePayload(i));

/** A 1 KiB JSON message body (its JSON text is exactly 1,024 bytes), partly random so zstd has real work. */
export function oneKiBPayload(n: number): string {
  return POOL[n % POOL.length] as string;
}

export interface HttpLoad {
  agent: Agent;
  post(path: string, body: string | Buffer): Promise<{ status: number; body: string }>;
}

/** Keep-alive HTTP client for load generation (fetch adds overhead that would cap the numbers). */
export function httpLoad(baseUrl: string, sockets: number): HttpLoad {
  const u = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: sockets });
  return {
    agent,
    post: (path, body) =>
      new Promise((resolve, reject) => {
        const req = request(
          {
            host: u.hostname,
            port: u.port,
            path,
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      }),
  };
}

/**
 * CPU time (user + system) a process, or one of its threads, has used, in microseconds
 * (Linux /proc; clock ticks are 10 ms). CPU per message says where a row's time went; it
 * moves with the host's speed as msgs/s does, so changes are compared by interleaved runs.
 */
export function cpuMicros(pid: number, tid?: number): number {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), counted from field 3 (state).
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/** Peak and current resident memory of a process, in MiB (Linux /proc). */
export function rssMiB(pid: number): { peak: number; now: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { peak: Math.round(kb('VmHWM') / 1024), now: Math.round(kb('VmRSS') / 1024) };
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

async function embeddedHttp(
  sync: 'full' | 'normal',
  plan: [batch: number, total: number, connections?: number, repeats?: number][],
): Promise<string[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  const server = await startServerProcess({ SLUICE_DATA_DIR: dataDir, SLUICE_SYNC: sync });
  const pid = server.child.pid as number;
  const maxConnections = Math.max(...plan.map(([, , c]) => c ?? 8));
  const load = httpLoad(server.url, maxConnections);
  const rows: string[] = [];
  try {
    let seq = 0;
    // Untimed: 10,000 messages into another queue, so every row meets a warmed-up server
    // (compiled code, prepared statements) whichever row comes first.
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let r = 0; r < 13; r++) {
          const items = Array.from(
            { length: 100 },
            (_, i) =>
              `{"queue":"warmup","partition":"p${w}","transactionId":"w-${r}-${i}","payload":${oneKiBPayload(i)}}`,
          );
          const res = await load.post('/api/v1/push', `{"items":[${items.join(',')}]}`);
          if (res.status !== 201) throw new Error(`warm-up push answered ${res.status}: ${res.body.slice(0, 200)}`);
        }
      }),
    );
    for (const [batch, total, connections = 8, repeats = 1] of plan) {
      // One connection per partition; every body is built before the clock starts (each has
      // fresh transactionIds), so the load generator, on the same two cores, only sends.
      const perConnection = Math.ceil(total / batch / connections);
      const msgs = perConnection * connections * batch;
      const rates: number[] = [];
      let bytes = 0;
      let mainCpu = 0;
      let allCpu = 0;
      let wallUs = 0;
      for (let r = 0; r < repeats; r++) {
        bytes = 0;
        const bodies = Array.from({ length: connections }, (_, w) =>
          Array.from({ length: perConnection }, () => {
            const items: string[] = [];
            for (let i = 0; i < batch; i++) {
              const n = seq++;
              const p = oneKiBPayload(n);
              bytes += p.length;
              items.push(`{"queue":"bench","partition":"p${w}","transactionId":"b${batch}-${n}","payload":${p}}`);
            }
            return Buffer.from(`{"items":[${items.join(',')}]}`);
          }),
        );
        const main0 = cpuMicros(pid, pid);
        const all0 = cpuMicros(pid);
        const started = process.hrtime.bigint();
        await Promise.all(
          bodies.map(async (mine) => {
            for (const body of mine) {
              const res = await load.post('/api/v1/push', body);
              if (res.status !== 201) throw new Error(`push answered ${res.status}: ${res.body.slice(0, 200)}`);
            }
          }),
        );
        const elapsedUs = Number(process.hrtime.bigint() - started) / 1e3;
        wallUs += elapsedUs;
        rates.push(msgs / (elapsedUs / 1e6));
        mainCpu += cpuMicros(pid, pid) - main0;
        allCpu += cpuMicros(pid) - all0;
      }
      const rate = median(rates);
      const rss = rssMiB(pid);
      const runs = repeats > 1 ? rates.map(fmt).join(' · ') : '';
      const perMsg = (us: number): string => (us / (msgs * repeats)).toFixed(1);
      rows.push(
        `| ${sync} | ${batch} | ${connections} | ${fmt(msgs)} | ${fmt(rate)} | ` +
          `${(((bytes / msgs) * rate) / 2 ** 20).toFixed(1)} | ${fmt(rate / batch)} | ${runs} | ` +
          `${perMsg(mainCpu)} | ${Math.round((100 * mainCpu) / wallUs)} % | ${perMsg(allCpu)} | ` +
          `${rss.now} | ${rss.peak} |`,
      );
    }
  } finally {
    load.agent.destroy();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

async function awsCounts(): Promise<string[]> {
  const emulator = await startAwsEmulators();
  const rows: string[] = [];
  try {
    const { storage, meter } = await meteredAwsStorage(emulator.endpoints);
    const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 60_000 });
    const cases: [label: string, batch: number, dedup: boolean][] = [
      ['10, dedup off', 10, false],
      ['100, dedup off', 100, false],
      ['10, dedup on', 10, true],
      ['100, dedup on', 100, true],
    ];
    let n = 0;
    for (const [label, batch, dedup] of cases) {
      const queue = `aws-${batch}-${dedup ? 'on' : 'off'}`;
      // Warm the process caches (queue, partition, tail) as a warm Lambda would have them.
      await svc.pushes.push([{ queue, payload: Buffer.from('{}') }]);
      meter.reset();
      const pushes = Math.ceil(1000 / batch);
      for (let r = 0; r < pushes; r++) {
        const items = Array.from({ length: batch }, () => {
          const i = n++;
          return { queue, payload: Buffer.from(oneKiBPayload(i)), transactionId: dedup ? `tx-${i}` : undefined };
        });
        const res = await svc.pushes.push(items);
        if (res.some((x) => x.status !== 'queued')) throw new Error('bench push not queued');
      }
      const msgs = pushes * batch;
      rows.push(
        `| ${label} | ${(meter.totalRequests() / pushes).toFixed(2)} | ` +
          `${fmt((meter.dynamoRequests() / msgs) * 1000)} | ${fmt((meter.writeUnits / msgs) * 1000)} | ` +
          `${(meter.writeUnits / msgs).toFixed(2)} | ${fmt((meter.s3Puts / msgs) * 1000)} |`,
      );
    }
    await storage.close();
  } finally {
    await emulator.stop();
  }
  return rows;
}

/** Push throughput (embedded, over HTTP) and storage requests per push (AWS backend on moto). */
export async function pushBench(): Promise<string> {
  const emb = [
    ...(await embeddedHttp('full', [
      [1, 4_000],
      [10, 30_000],
      [100, 200_000, 8, 5],
      [1000, 300_000],
      [100, 200_000, 16],
    ])),
    ...(await embeddedHttp('normal', [[100, 200_000]])),
  ];
  const aws = await awsCounts();
  return [
    '## Push',
    '',
    'Command: `npm run bench -- --only push`',
    '',
    '### Embedded backend, through HTTP',
    '',
    'The local server (`npm start`) in its own process, on the same two cores as the load ' +
      'generator; keep-alive connections, each pushing to its own partition, one push at a time; 1 ' +
      'KiB JSON messages, each with a transactionId (dedup on). Request bodies are built before the ' +
      'clock starts, so the load generator only sends; each server process first takes 10,400 untimed ' +
      'messages into another queue (warm-up). `SLUICE_SYNC=full` (the default) fsyncs every SQLite ' +
      'commit; `normal` survives a process crash but not a power loss. The batch-100 row at 8 ' +
      'connections is run 5 times (1,000,000 messages) and shows the median, with every run: the ' +
      'spread between runs on these VMs is ±20 % (fsync latency and neighbours), more than most ' +
      'changes being measured. The server CPU columns are CPU time per message over the timed runs, ' +
      'from /proc: its main thread (JavaScript, HTTP and SQLite, which all run there) and the whole ' +
      'process (adding zstd and file writes on the thread pool, and the GC helpers). They explain a ' +
      'row (the main thread is the bottleneck: its busy share is its CPU time over the wall time of ' +
      'the timed runs) but move with the host too: on one day the same code took 13.5 to 19.7 µs per ' +
      'message on the main thread at batch 100, and 44,856 to 63,590 msgs/s. Compare changes by ' +
      'interleaving runs of both. RSS is read from /proc after each row (rows run in order in one ' +
      'server process).',
    '',
    '| SLUICE_SYNC | batch | connections | messages per run | msgs/s (median) | MB/s (payload) | ' +
      'pushes/s | each run, msgs/s | server CPU µs/msg, main thread | main thread busy | server CPU ' +
      'µs/msg, all threads | server RSS after, MiB | peak so far, MiB |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|',
    ...emb,
    '',
    '### AWS backend (DynamoDB + S3 on moto): requests and units per push',
    '',
    '1,000 messages of 1 KiB per case from a warm process (queue, partition and tail cached). Write ' +
      'units are computed from the items sent, the way DynamoDB bills them (1 KB per unit per item, ' +
      'twice inside a transaction, failed conditions included).',
    '',
    '| batch, dedup | storage requests per push | DynamoDB requests per 1,000 msgs | DynamoDB write ' +
      'units per 1,000 msgs | write units per message | S3 PUTs per 1,000 msgs |',
    '|---|---:|---:|---:|---:|---:|',
    ...aws,
  ].join('\n');
}
