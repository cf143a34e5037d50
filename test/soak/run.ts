/**
 * `npm run soak`: the long versions of the crash and race probes that `npm test` runs at a bounded
 * size (docs/SECURITY.md, "How it is tested"), one summary line per probe, exit status 1 when any
 * broke a rule (the lines after the summaries say which).
 *
 *   npm run soak                      # every probe
 *   npm run soak -- fuzz kill9        # some: fuzz, kill9, contention, slowloris
 *   SLUICE_SOAK_SCALE=0.1 npm run soak  # a tenth of each size
 *
 * A fuzz failure names its seed; SLUICE_FUZZ_SEED=<seed> replays it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildServer } from '../../scripts/build-server.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import { runContentionProbe } from '../support/contention-probe.js';
import { runCrashProbe } from '../support/crash-probe.js';
import { startTestServer } from '../support/http.js';
import { startServerProcess } from '../support/process.js';
import { fuzzSeed, runRouteFuzz } from '../support/route-fuzz.js';
import { testServices } from '../support/services.js';
import { runSlowloris } from '../support/slowloris.js';

const scale = Number(process.env.SLUICE_SOAK_SCALE ?? 1);
const size = (n: number): number => Math.max(1, Math.round(n * scale));

interface Summary {
  cycles: number | '-';
  requests: number;
  lost: number | '-';
  duplicated: number | '-';
  fiveXx: number;
  extra?: string;
  violations: string[];
}

const withDir = async <T>(prefix: string, f: (dir: string) => Promise<T>): Promise<T> => {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    return await f(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

const PROBES: Record<string, () => Promise<Summary>> = {
  async fuzz() {
    const seed = fuzzSeed();
    const r = await runRouteFuzz({ requests: size(20_000), seed });
    return {
      cycles: '-',
      requests: r.requests,
      lost: '-',
      duplicated: '-',
      fiveXx: r.fiveXx,
      extra: `changed-on-4xx=${r.changedOn4xx} seed=${seed}`,
      violations: r.violations,
    };
  },
  async kill9() {
    const r = await withDir('sluice-soak-kill9-', (dataDir) => runCrashProbe({ cycles: size(300), dataDir }));
    return { ...r, extra: `acknowledged=${r.acknowledged}` };
  },
  async contention() {
    return withDir('sluice-soak-contention-', async (dir) => {
      const storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
      const server = await startTestServer(testServices(storage));
      try {
        const r = await runContentionProbe({ url: server.url, consumeRequests: size(20_000) });
        return { cycles: '-', ...r, extra: `pushed=${r.pushed}` };
      } finally {
        await server.close();
        await storage.close();
      }
    });
  },
  async slowloris() {
    return withDir('sluice-soak-slowloris-', async (dir) => {
      const server = await startServerProcess({ SLUICE_DATA_DIR: dir });
      try {
        const r = await runSlowloris({ url: server.url, connections: 200, holdMs: size(30_000) });
        const violations = [
          ...(r.connections < 200 ? [`only ${r.connections} of 200 slow connections were accepted`] : []),
          ...(r.failed > 0 ? [`${r.failed} requests of the other client failed`] : []),
          ...(r.maxMs > 2_000 ? [`the other client waited ${r.maxMs} ms for an answer`] : []),
        ];
        return {
          cycles: '-',
          requests: r.requests,
          lost: '-',
          duplicated: '-',
          fiveXx: r.fiveXx,
          extra: `connections=${r.connections} slowest=${r.maxMs}ms`,
          violations,
        };
      } finally {
        await server.stop();
      }
    });
  },
};

const chosen = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(PROBES);
for (const name of chosen)
  if (!(name in PROBES)) throw new Error(`unknown probe ${name}; pick from ${Object.keys(PROBES).join(', ')}`);
await buildServer();
let failed = false;
for (const name of chosen) {
  const started = Date.now();
  const s = await (PROBES[name] as () => Promise<Summary>)();
  const ok = s.violations.length === 0 && s.fiveXx === 0;
  failed ||= !ok;
  // The summaries are this script's output (stdout); the servers' logs do not go there.
  process.stdout.write(
    `soak ${name}: cycles=${s.cycles} requests=${s.requests} lost=${s.lost} duplicated=${s.duplicated} 5xx=${s.fiveXx}` +
      `${s.extra ? ` ${s.extra}` : ''} time=${Math.round((Date.now() - started) / 1000)}s ${ok ? 'ok' : 'FAILED'}\n`,
  );
  for (const v of s.violations) process.stdout.write(`  ${v}\n`);
}
process.exit(failed ? 1 : 0);
