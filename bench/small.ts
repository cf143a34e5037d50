/**
 * Small requests on the local server: server CPU per request against a bare Node HTTP server,
 * single-message pushes at 1, 8 and 64 in flight, push-to-delivery latency at a fixed rate with
 * a long-polling consumer, and pushes with a consumer popping and acking the same partition.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sluice } from '../client/index.js';
import { freePort, startServerProcess, type ServerProcess } from '../test/support/process.js';
import { http, type Http } from './leases.js';
import { cpuMicros, oneKiBPayload } from './push.js';

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** The baseline: a bare `http.createServer` answering `{}`, in its own process like the server. */
async function bareServer(): Promise<{ url: string; pid: number; stop: () => void }> {
  const port = await freePort();
  const code =
    `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => {` +
    ` s.writeHead(200, { 'content-type': 'application/json' }); s.end('{}'); }); })` +
    `.listen(${port}, '127.0.0.1', () => console.log('up'));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return { url: `http://127.0.0.1:${port}`, pid: child.pid as number, stop: () => child.kill('SIGKILL') };
}

/** Server CPU (whole process, µs) per request over `n` requests, one in flight. */
async function cpuPerRequest(
  h: Http,
  pid: number,
  n: number,
  make: (i: number) => [method: string, path: string, body?: string],
  expect: number,
): Promise<number> {
  // Untimed warm-up: compiled code, prepared statements, caches.
  for (let i = 0; i < 500; i++) await h.call(...make(-1 - i));
  const c0 = cpuMicros(pid);
  for (let i = 0; i < n; i++) {
    const r = await h.call(...make(i));
    if (r.status !== expect) throw new Error(`answered ${r.status}, expected ${expect}: ${r.body.slice(0, 200)}`);
  }
  return (cpuMicros(pid) - c0) / n;
}

const pushBody = (queue: string, partition: string, txid: string, payload = oneKiBPayload(0)): string =>
  `{"items":[{"queue":"${queue}","partition":"${partition}","transactionId":"${txid}","payload":${payload}}]}`;

async function overheadRows(): Promise<string[]> {
  const n = 4000;
  const bare = await bareServer();
  const bh = http(bare.url, 1);
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-small-'));
  const server = await startServerProcess({ SLUICE_DATA_DIR: dataDir });
  const pid = server.child.pid as number;
  const h = http(server.url, 1);
  try {
    const base = await cpuPerRequest(bh, bare.pid, n, () => ['GET', '/health'], 200);
    const basePost = await cpuPerRequest(bh, bare.pid, n, () => ['POST', '/x', pushBody('q', 'p', 't')], 200);
    const health = await cpuPerRequest(h, pid, n, () => ['GET', '/health'], 200);
    // An empty pop: the queue exists and its one message is consumed.
    await h.call('POST', '/api/v1/push', pushBody('empty', 'Default', 'e-0'));
    await h.call('GET', '/api/v1/pop/queue/empty/partition/Default?batch=1&wait=false&autoAck=true');
    const emptyPop = await cpuPerRequest(
      h,
      pid,
      n,
      () => ['GET', '/api/v1/pop/queue/empty/partition/Default?batch=1&wait=false'],
      204,
    );
    const push = await cpuPerRequest(
      h,
      pid,
      n,
      (i) => ['POST', '/api/v1/push', pushBody('single', 'Default', `s-${i}`)],
      201,
    );
    const row = (what: string, us: number, b: number, target: string): string =>
      `| ${what} | ${us.toFixed(0)} | ${b.toFixed(0)} | ${(us - b).toFixed(0)} | ${target} |`;
    return [
      row('bare `http.createServer`, GET answering `{}` (baseline)', base, base, ''),
      row('bare `http.createServer`, POST of a one-message push body, answering `{}`', basePost, basePost, ''),
      row('`GET /health`', health, base, '≤ 25'),
      row('empty pop (`wait=false`, 204)', emptyPop, base, '≤ 25'),
      row('single-message push, dedup on, one partition', push, basePost, '≤ 100'),
    ];
  } finally {
    bh.agent.destroy();
    h.agent.destroy();
    bare.stop();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

interface PushRun {
  msgs: number;
  rate: number;
  unavailable: number;
  otherErrors: number;
  cpuPerMsg: number;
}

/** `total` single-message pushes from `inFlight` workers, over `partitions` partitions. */
async function singlePushes(
  server: ServerProcess,
  h: Http,
  queue: string,
  inFlight: number,
  partitions: number,
  total: number,
): Promise<PushRun> {
  const pid = server.child.pid as number;
  let next = 0;
  let unavailable = 0;
  let otherErrors = 0;
  const c0 = cpuMicros(pid);
  const t0 = nowMs();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, w) => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        const r = await h.call('POST', '/api/v1/push', pushBody(queue, `p${w % partitions}`, `${queue}-${i}`));
        if (r.status === 503) unavailable++;
        else if (r.status !== 201) otherErrors++;
      }
    }),
  );
  const secs = (nowMs() - t0) / 1000;
  return { msgs: total, rate: total / secs, unavailable, otherErrors, cpuPerMsg: (cpuMicros(pid) - c0) / total };
}

async function withServer<T>(fn: (s: ServerProcess, h: Http) => Promise<T>, sockets = 80): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-small-'));
  const server = await startServerProcess({ SLUICE_DATA_DIR: dataDir });
  const h = http(server.url, sockets);
  try {
    // Untimed warm-up.
    await singlePushes(server, h, 'warmup', 16, 4, 2000);
    return await fn(server, h);
  } finally {
    h.agent.destroy();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The same single messages through our client's `send()` (default `lingerMs` 5): `inFlight`
 * callers each awaiting their send before the next, as request handlers enqueueing a job do.
 */
async function clientSends(
  server: ServerProcess,
  queue: string,
  inFlight: number,
  partitions: number,
  total: number,
): Promise<PushRun> {
  const pid = server.child.pid as number;
  const sluice = new Sluice({ endpoint: server.url });
  let next = 0;
  let failed = 0;
  const c0 = cpuMicros(pid);
  const t0 = nowMs();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, w) => {
      const target = sluice.queue(queue).partition(`p${w % partitions}`);
      for (;;) {
        const i = next++;
        if (i >= total) return;
        await target
          .send({ data: JSON.parse(oneKiBPayload(i)) as unknown, transactionId: `${queue}-${i}` })
          .catch(() => {
            failed++;
          });
      }
    }),
  );
  await sluice.close();
  const secs = (nowMs() - t0) / 1000;
  return {
    msgs: total,
    rate: total / secs,
    unavailable: 0,
    otherErrors: failed,
    cpuPerMsg: (cpuMicros(pid) - c0) / total,
  };
}

async function concurrencyRows(): Promise<string[]> {
  return withServer(async (server, h) => {
    const rows: string[] = [];
    for (const partitions of [1, 8])
      for (const inFlight of [8, 64]) {
        const r = await clientSends(server, `k${partitions}x${inFlight}`, inFlight, partitions, 12_800);
        rows.push(
          `| ${partitions} | ${inFlight}, through the client's \`send()\` | ${fmt(r.msgs)} | ${fmt(r.rate)} | – | ` +
            `${r.otherErrors} | ${r.cpuPerMsg.toFixed(0)} | |`,
        );
      }
    for (const partitions of [1, 8])
      for (const inFlight of [1, 8, 64]) {
        const total = inFlight === 1 ? 2000 : inFlight === 8 ? 8000 : 12_800;
        const r = await singlePushes(server, h, `c${partitions}x${inFlight}`, inFlight, partitions, total);
        const target = partitions === 1 && inFlight === 64 ? '≥ 5,000 msgs/s, 0 × 503' : '';
        rows.push(
          `| ${partitions} | ${inFlight} | ${fmt(r.msgs)} | ${fmt(r.rate)} | ${r.unavailable} | ${r.otherErrors} | ` +
            `${r.cpuPerMsg.toFixed(0)} | ${target} |`,
        );
      }
    return rows;
  });
}

const TXID = /"transactionId":"([^"]+)","traceId"/g;

/**
 * One long-polling consumer of one partition: pops up to 100, acks them, and calls `seen` with
 * each transactionId when its pop answers. Stops when `stop()` returns true after an empty poll.
 */
async function consumer(
  h: Http,
  queue: string,
  partition: string,
  seen: (txid: string) => void,
  stop: () => boolean,
): Promise<void> {
  for (;;) {
    const r = await h.call('GET', `/api/v1/pop/queue/${queue}/partition/${partition}?batch=100&wait=true&timeout=500`);
    if (r.status === 204) {
      if (stop()) return;
      continue;
    }
    if (r.status !== 200) throw new Error(`pop answered ${r.status}: ${r.body.slice(0, 200)}`);
    const head = /"partitionId":"([^"]+)","leaseId":"([^"]*)"/.exec(r.body);
    if (!head) throw new Error(`unexpected pop answer: ${r.body.slice(0, 200)}`);
    const txids = [...r.body.matchAll(TXID)].map((m) => m[1] as string);
    for (const t of txids) seen(t);
    const acks = txids.map(
      (t) => `{"transactionId":"${t}","partitionId":"${head[1]}","leaseId":"${head[2]}","status":"completed"}`,
    );
    const a = await h.call('POST', '/api/v1/ack/batch', `{"acknowledgments":[${acks.join(',')}]}`);
    if (a.status !== 200 || a.body.includes('"success":false')) throw new Error(`ack failed: ${a.body.slice(0, 200)}`);
    if (stop()) return;
  }
}

/** One producer of single messages at `rate`/s for `secs`, open loop; one long-polling consumer. */
async function latencyRow(h: Http, rate: number, secs: number): Promise<string> {
  const queue = `lat-${rate}`;
  const total = rate * secs;
  const sent = new Map<string, number>();
  const latencies: number[] = [];
  let unavailable = 0;
  let otherErrors = 0;
  let producing = true;
  const consuming = consumer(
    h,
    queue,
    'Default',
    (t) => {
      const at = sent.get(t);
      if (at !== undefined) latencies.push(nowMs() - at);
    },
    () => !producing && latencies.length >= total - unavailable - otherErrors,
  );
  const pending: Promise<void>[] = [];
  const t0 = nowMs();
  for (let i = 0; i < total;) {
    // Every message whose time has come goes now: timers fire about once a millisecond.
    const due = Math.min(total, Math.floor(((nowMs() - t0) * rate) / 1000) + 1);
    for (; i < due; i++) {
      const txid = `${queue}-${i}`;
      sent.set(txid, nowMs());
      pending.push(
        h.call('POST', '/api/v1/push', pushBody(queue, 'Default', txid)).then((r) => {
          if (r.status === 503) unavailable++;
          else if (r.status !== 201) otherErrors++;
        }),
      );
    }
    await sleep(1);
  }
  await Promise.all(pending);
  producing = false;
  await consuming;
  const target = rate === 1000 ? 'p50 ≤ 5 ms, p99 ≤ 20 ms, 0 × 503' : '';
  return (
    `| ${fmt(rate)} | ${fmt(total)} | ${fmt(latencies.length)} | ${pct(latencies, 50).toFixed(2)} | ` +
    `${pct(latencies, 99).toFixed(2)} | ${unavailable} | ${otherErrors} | ${target} |`
  );
}

async function latencyRows(): Promise<string[]> {
  return withServer(async (_s, h) => {
    const rows: string[] = [];
    for (const rate of [250, 1000, 4000]) rows.push(await latencyRow(h, rate, 5));
    return rows;
  }, 200);
}

/** 64 single-message pushes in flight into one partition, alone and with a consumer popping and acking it. */
async function withConsumerRows(): Promise<string[]> {
  return withServer(async (server, h) => {
    const alone = await singlePushes(server, h, 'mix-alone', 64, 1, 12_800);
    let done = false;
    let consumed = 0;
    // singlePushes sends a one-partition run's pushes to p0.
    const consuming = consumer(
      h,
      'mix-consumed',
      'p0',
      () => consumed++,
      () => done,
    );
    const mixed = await singlePushes(server, h, 'mix-consumed', 64, 1, 12_800);
    done = true;
    await consuming;
    const row = (what: string, r: PushRun, extra: string): string =>
      `| ${what} | ${fmt(r.rate)} | ${r.unavailable} | ${extra} |`;
    return [
      row('pushes alone', alone, ''),
      row(
        'pushes with one consumer popping (batch 100, long poll) and acking the same partition',
        mixed,
        `${Math.round((100 * mixed.rate) / alone.rate)} % of alone (target ≥ 70 %); ${fmt(consumed)} consumed meanwhile`,
      ),
    ];
  });
}

/** Small requests on the local server (`npm run bench -- --only small`). */
export async function smallBench(): Promise<string> {
  const overhead = await overheadRows();
  const conc = await concurrencyRows();
  const lat = await latencyRows();
  const mix = await withConsumerRows();
  return [
    '## Small requests',
    '',
    'Command: `npm run bench -- --only small`',
    '',
    'The local server (`npm start`, `SLUICE_SYNC=full`) in its own process on the same two cores ' +
      'as the load generator; keep-alive connections; 1 KiB JSON messages with a transactionId each.',
    '',
    '### Server CPU per request, one request in flight',
    '',
    'CPU time of the whole server process (/proc, all threads) over 4,000 requests after 500 ' +
      'untimed ones, against a bare `http.createServer` in its own process answering `{}` ' +
      '(measured in the same run, the same way). The push row is compared with the bare ' +
      'server receiving the same body.',
    '',
    '| request | server CPU µs/request | baseline µs | over baseline µs | target over baseline |',
    '|---|---:|---:|---:|---:|',
    ...overhead,
    '',
    '### Single-message pushes in flight',
    '',
    'Each worker sends one single-message push at a time (dedup on), workers spread over the ' +
      'partitions; "503" counts answers of any 503. The rows "through the client" send the same ' +
      "messages with our client's `send()` at its defaults (gathered for up to 5 ms into one push " +
      'per partition), each caller awaiting its send before the next: what a user gets by default.',
    '',
    '| partitions | in flight | messages | msgs/s | 503 | other errors | server CPU µs/msg | target |',
    '|---:|---:|---:|---:|---:|---:|---:|---|',
    ...conc,
    '',
    '### Push-to-delivery latency at a fixed rate',
    '',
    'One producer sends single messages at a fixed rate for 5 s (open loop: a message whose time ' +
      'has come is sent whether or not earlier ones were answered), into one partition; one ' +
      'consumer long-polls it (`wait=true`, batch up to 100) and acks each batch. Latency is from ' +
      'sending the push to the pop that delivers it, measured in the load generator.',
    '',
    '| msgs/s | sent | delivered | p50 ms | p99 ms | 503 | other errors | target |',
    '|---:|---:|---:|---:|---:|---:|---:|---|',
    ...lat,
    '',
    '### Pushes with a consumer on the same partition',
    '',
    '64 single-message pushes in flight into one partition (12,800 messages), alone and with one ' +
      'consumer popping (batch 100, long poll) and acking the same partition meanwhile.',
    '',
    '| run | msgs/s | 503 | |',
    '|---|---:|---:|---|',
    ...mix,
  ].join('\n');
}
