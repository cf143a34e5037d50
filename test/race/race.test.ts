// Races on the AWS adapter (DynamoDB Local + moto S3): 3 OS processes of 4 service instances
// each, every instance with its own SDK clients and caches as a Lambda instance has, racing on
// one partition, one lease lane, one claim group, one queue name. Each worker logs every call;
// the checks (checks.ts) replay the logs against the invariants and the end state. The same
// scenarios run larger with `npm run soak:aws` (SLUICE_SOAK_SCALE, default 10).
import { describe, expect, it } from 'vitest';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { runRace, summaryLine } from './harness.js';
import type { ScenarioName } from './protocol.js';

const RACES: [ScenarioName, string][] = [
  ['pushes', 'pushes into one partition: offsets 0..N-1 once each, every producer in order, nothing lost'],
  ['pops', 'pops of one (partition, group): never two live leases, every message acked once'],
  ['wildcard', 'wildcard pops only while pushing: the work index always leads to the data, every message acked once'],
  ['expiry', 'ack vs lease expiry vs a new pop, a consumer process killed: a stale ack never moves the cursor'],
  ['claims', 'claim polls of one group, a consumer process killed: no record with two holders, no position past work'],
  ['redrive', 'dead letters redriven while polls run: each delivered again, never twice at once, listed again'],
  ['delete', 'queue delete vs push and pop: nothing of a deleted incarnation in the new one; maintenance clears it'],
];

describe('races on the AWS adapter: 3 processes x 4 service instances', () => {
  it.each(RACES)(
    '%s: %s',
    async (name) => {
      const report = await runRace(name, { endpoints: awsEndpoints(), scale: 1 });
      process.stdout.write(`${summaryLine(report)}\n`);
      const where = report.logDir ? ` (logs: ${report.logDir})` : '';
      expect(report.violations, `${summaryLine(report)}${where}`).toEqual([]);
      expect(report.errors, `errors${where}`).toEqual([]);
      expect({ lost: report.lost, duplicated: report.duplicated }).toEqual({ lost: 0, duplicated: 0 });
      // The race happened: each scenario counts what it exercised (leases, stale acks, redrives...).
      for (const [what, n] of Object.entries(report.exercised)) expect(n, `${what} in ${name}`).toBeGreaterThan(0);
    },
    240_000,
  );
});
