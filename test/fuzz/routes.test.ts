// The route fuzz (docs/SECURITY.md, "Bad input") at CI size: random values of every schema field at
// every route, no 5xx against a healthy store and nothing stored changed by a 4xx. `npm run soak`
// runs it ten times longer. A failure names its seed: SLUICE_FUZZ_SEED=<seed> replays it.
import { describe, expect, it } from 'vitest';
import { fuzzSeed, runRouteFuzz } from '../support/route-fuzz.js';

/** At least 2,000 requests in CI; SLUICE_FUZZ_REQUESTS for a longer run. */
const REQUESTS = Number(process.env.SLUICE_FUZZ_REQUESTS ?? 2500);

describe('route fuzz', () => {
  it(`answers ${REQUESTS} random requests without a 5xx, and no 4xx changes anything stored`, async () => {
    const seed = fuzzSeed();
    console.error(`route fuzz: seed ${seed} (replay with SLUICE_FUZZ_SEED=${seed})`);
    const report = await runRouteFuzz({ requests: REQUESTS, seed });
    expect(report.requests).toBeGreaterThanOrEqual(REQUESTS);
    expect({ seed, violations: report.violations }).toEqual({ seed, violations: [] });
    // Enough of the requests got through validation to reach the services.
    expect(Object.entries(report.statuses).filter(([s]) => s.startsWith('2')).length).toBeGreaterThan(0);
    expect((report.statuses['200'] ?? 0) + (report.statuses['201'] ?? 0)).toBeGreaterThan(REQUESTS / 5);
  }, 180_000);
});
