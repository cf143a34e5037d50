/**
 * `npm run soak:aws`: the race scenarios of `test/race/race.test.ts`, larger and longer, on
 * emulators this script starts (DynamoDB Local and moto_server; or `AWS_ENDPOINT_URL`).
 * Prints one summary line per scenario and exits 1 when any invariant broke.
 *
 *   SLUICE_SOAK_SCALE=10 (default) multiplies every scenario's size and time budget;
 *   arguments name the scenarios to run (default: all), e.g. `npm run soak:aws -- pops claims`.
 */
import { startAwsEmulators } from '../support/aws-emulator.js';
import { runRace, summaryLine } from './harness.js';
import type { ScenarioName } from './protocol.js';
import { SCENARIOS } from './scenarios.js';

const scale = Number(process.env['SLUICE_SOAK_SCALE'] ?? '10');
if (!Number.isInteger(scale) || scale < 1)
  throw new Error(`SLUICE_SOAK_SCALE must be a positive integer (got ${scale})`);
const all = Object.keys(SCENARIOS) as ScenarioName[];
const asked = process.argv.slice(2).filter((a) => a !== '--');
const unknown = asked.filter((a) => !all.includes(a as ScenarioName));
if (unknown.length > 0) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${all.join(', ')}`);
const names = asked.length > 0 ? (asked as ScenarioName[]) : all;

const out = (line: string): boolean => process.stdout.write(`${line}\n`);
const emulator = await startAwsEmulators();
let failed = false;
try {
  out(`soak:aws scale=${scale} scenarios=${names.join(',')}`);
  for (const name of names) {
    const r = await runRace(name, { endpoints: emulator.endpoints, scale });
    out(summaryLine(r));
    if (r.violations.length > 0 || r.errors.length > 0) {
      failed = true;
      for (const v of r.violations) out(`  violation: ${v}`);
      for (const e of r.errors.slice(0, 10)) out(`  error: ${e}`);
      if (r.logDir) out(`  logs: ${r.logDir}`);
    }
  }
} finally {
  await emulator.stop();
}
process.exit(failed ? 1 : 0);
