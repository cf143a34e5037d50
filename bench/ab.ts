/**
 * `npm run bench:ab -- <revA> <revB> [pairs]`: compares the local server's main-thread CPU per
 * message between two git revisions, with runs interleaved (A B, B A, A B, …) so the host's
 * drift hits both alike. Throughput on these VMs moves ±20 % between runs; CPU per message
 * moves less, and interleaving cancels most of what is left.
 *
 * Each revision is checked out in `.bench/ab-<rev>` (a git worktree sharing this node_modules)
 * and built as `npm start` builds it. Rows: pushes of 100 × 1 KiB with transactionIds over 8
 * connections; single-message pushes, one in flight; wildcard pop + ack of 100 at a time by 8
 * workers. Prints every pair and the medians.
 *
 * @example
 * ```sh
 * npm run bench:ab -- HEAD~3 HEAD 7
 * ```
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startServerProcess, type ServerProcess } from '../test/support/process.js';
import { http, type Http } from './leases.js';
import { cpuMicros, oneKiBPayload } from './push.js';

const [revA, revB, pairsArg] = process.argv.slice(2);
if (!revA || !revB) {
  console.error('usage: npm run bench:ab -- <revA> <revB> [pairs]');
  process.exit(2);
}
const pairs = Number(pairsArg ?? 5);

/** A worktree of `rev` with the built server, reusing this checkout's node_modules. */
function checkout(rev: string): string {
  const sha = execFileSync('git', ['rev-parse', '--short', rev], { encoding: 'utf8' }).trim();
  const dir = resolve('.bench', `ab-${sha}`);
  if (!existsSync(dir)) {
    mkdirSync('.bench', { recursive: true });
    execFileSync('git', ['worktree', 'add', '--detach', dir, sha], { stdio: 'ignore' });
    symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
  }
  const built = spawnSync('npx', ['tsx', 'scripts/build-server.ts'], { cwd: dir, stdio: 'ignore' });
  if (built.status !== 0) throw new Error(`could not build ${rev} in ${dir}`);
  return dir;
}

async function withServer<T>(dir: string, sockets: number, fn: (s: ServerProcess, load: Http) => Promise<T>) {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-ab-'));
  const server = await startServerProcess({ SLUICE_DATA_DIR: dataDir }, [], {
    entry: join(dir, '.sluice-build/server/main.js'),
  });
  const load = http(server.url, sockets);
  try {
    return await fn(server, load);
  } finally {
    load.agent.destroy();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

let seq = 0;

/** Main-thread CPU µs per message for `total` messages pushed `batch` at a time over `connections`. */
async function pushRow(dir: string, batch: number, total: number, connections: number): Promise<number> {
  return withServer(dir, connections, async (server, load) => {
    const pid = server.child.pid as number;
    const per = Math.ceil(total / batch / connections);
    const bodies = Array.from({ length: connections }, (_, w) =>
      Array.from({ length: per }, () => {
        const items: string[] = [];
        for (let i = 0; i < batch; i++) {
          const n = seq++;
          items.push(`{"queue":"ab","partition":"p${w}","transactionId":"ab-${n}","payload":${oneKiBPayload(n)}}`);
        }
        return `{"items":[${items.join(',')}]}`;
      }),
    );
    await load.call('POST', '/api/v1/push', bodies[0]?.[0] ?? ''); // warm-up
    const before = cpuMicros(pid, pid);
    await Promise.all(
      bodies.map(async (mine) => {
        for (const body of mine.slice(1)) {
          const res = await load.call('POST', '/api/v1/push', body);
          if (res.status !== 201) throw new Error(`push answered ${res.status}: ${res.body.slice(0, 200)}`);
        }
      }),
    );
    return (cpuMicros(pid, pid) - before) / ((per - 1) * connections * batch);
  });
}

/** Main-thread CPU µs per message for 8 workers popping (wildcard, batch 100) and acking `total` messages. */
async function leaseRow(dir: string, total: number): Promise<number> {
  return withServer(dir, 8, async (server, load) => {
    const pid = server.child.pid as number;
    for (let b = 0; b * 100 < total; b++) {
      const items = Array.from(
        { length: 100 },
        (_, i) => `{"queue":"lq","partition":"p${b % 8}","payload":{"n":${i}}}`,
      );
      await load.call('POST', '/api/v1/push', `{"items":[${items.join(',')}]}`);
    }
    const before = cpuMicros(pid, pid);
    let got = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let empty = 0; got < total && empty < 10;) {
          const r = await load.call('GET', '/api/v1/pop/queue/lq?batch=100&wait=true&timeout=300&consumerGroup=g');
          if (r.status === 204) {
            empty++;
            continue;
          }
          const head = /"partitionId":"([^"]+)","leaseId":"([^"]*)"/.exec(r.body);
          const txids = [...r.body.matchAll(/"transactionId":"([^"]+)","traceId"/g)].map((m) => m[1] as string);
          const acks = txids.map(
            (t) =>
              `{"transactionId":"${t}","partitionId":"${head?.[1]}","leaseId":"${head?.[2]}","status":"completed"}`,
          );
          await load.call('POST', '/api/v1/ack/batch', `{"consumerGroup":"g","acknowledgments":[${acks.join(',')}]}`);
          got += txids.length;
        }
      }),
    );
    if (got < total) throw new Error(`consumers stopped at ${got} of ${total}`);
    return (cpuMicros(pid, pid) - before) / got;
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const dirs = { A: checkout(revA as string), B: checkout(revB as string) };
  const rows = ['push, batch 100', 'push, batch 1', 'pop + ack, batch 100'] as const;
  const got: Record<'A' | 'B', Record<(typeof rows)[number], number[]>> = {
    A: { 'push, batch 100': [], 'push, batch 1': [], 'pop + ack, batch 100': [] },
    B: { 'push, batch 100': [], 'push, batch 1': [], 'pop + ack, batch 100': [] },
  };
  for (let p = 0; p < pairs; p++) {
    for (const side of p % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
      const dir = dirs[side];
      const r = [await pushRow(dir, 100, 200_000, 8), await pushRow(dir, 1, 3_000, 1), await leaseRow(dir, 100_000)];
      rows.forEach((row, i) => got[side][row].push(r[i] as number));
      console.log(
        `pair ${p} ${side}: ${rows.map((row, i) => `${row} ${(r[i] as number).toFixed(1)} µs/msg`).join(' | ')}`,
      );
    }
  }
  console.log(
    `\n| row (main-thread CPU µs per message, median of ${pairs}) | ${revA} | ${revB} | B/A |\n|---|---:|---:|---:|`,
  );
  for (const row of rows) {
    const a = median(got.A[row]);
    const b = median(got.B[row]);
    console.log(`| ${row} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${(b / a).toFixed(3)} |`);
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
