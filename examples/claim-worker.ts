/**
 * A claim-group worker: the `workers` group reads partition `p0` of `jobs` as a shared work
 * queue. Several workers may run at once; each record is held by one of them at a time. The
 * client keeps each claim alive while its job runs, acks when the handler resolves, and
 * hands the record back when it throws. Here a job that fails is retried after a back-off
 * and given up on (dead-lettered) at its third attempt.
 *
 * The worker names itself (CONSUMER), so after a crash its replacement takes back at once
 * what the old process still held, instead of waiting for the claims to lapse.
 *
 *   SLUICE_ENDPOINT=http://127.0.0.1:6632 npx tsx examples/claim-worker.ts
 *   LIMIT=50 IDLE_MS=3000 CONSUMER=worker-1 npx tsx examples/claim-worker.ts
 */
import { Sluice } from '@sluice/client';

interface Job {
  id: number;
  fail?: boolean;
}

const sluice = new Sluice({ endpoint: process.env.SLUICE_ENDPOINT, token: process.env.SLUICE_TOKEN });
const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
process.once('SIGTERM', () => stop.abort());

const workers = sluice
  .queue(process.env.QUEUE ?? 'jobs')
  .partition(process.env.PARTITION ?? 'p0')
  .claimGroup(process.env.GROUP ?? 'workers');
await workers.create('earliest'); // a no-op when the group exists

const stats = await workers.consume<Job>(
  async (record, ctx) => {
    if (record.data.fail) {
      // Give up for good on the third delivery; otherwise retry after a back-off.
      if (record.attempts >= 3) return ctx.deadLetter();
      return ctx.nackAfter(200 * 2 ** record.attempts);
    }
    // ... do the work; long jobs are fine, the claim is extended while this runs.
    await new Promise((r) => setTimeout(r, 5));
  },
  {
    signal: stop.signal,
    consumer: process.env.CONSUMER ?? 'worker-1',
    concurrency: 4,
    visibilityMs: 10_000,
    ...(process.env.LIMIT ? { limit: Number(process.env.LIMIT) } : {}),
    ...(process.env.IDLE_MS ? { idleMs: Number(process.env.IDLE_MS) } : {}),
    onError: (e, { phase, offset }) =>
      console.error(
        `${phase}${offset !== undefined ? ` @${offset}` : ''}: ${e instanceof Error ? e.message : String(e)}`,
      ),
  },
);
const state = await workers.describe();
console.log(
  `done: ${stats.acked} acked, ${stats.nacked} retried, ${stats.deadLettered} dead-lettered; ` +
    `group at ${state.committed} of ${state.tail}, ${state.deadLetters} dead letters`,
);
