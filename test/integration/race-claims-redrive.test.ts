// Found by the redrive race (test/race): a poll that lost its dead-letter write to another
// poll remembers the pointer it collided with, and takes the record as "listed already" on
// its retries. When the record is redriven (its pointer deleted) and runs out of attempts
// again while that poll is still retrying, the poll must list it again — not drop it unlisted.
// Here the interleaving is forced, on both backends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveQueueOptions } from '../../server/core/queue-options.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { TestClock, json, testServices } from '../support/services.js';
import { withItems } from '../support/storage.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const P = 'Default';

describe.each(backends)('integration: a redrive racing a retried poll on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('a record redriven and exhausted again while a poll retries is dead-lettered again, not dropped', async () => {
    const clock = new TestClock();
    const q = 'redrive-race';
    const other = testServices(storage, { clock });
    await other.queues.configure({
      queue: q,
      options: resolveQueueOptions({ maxAttempts: 1 }, other.config.claimDefaults),
    });
    await other.pushes.push([
      { queue: q, payload: json({ n: 0 }) },
      { queue: q, payload: json({ n: 1 }) },
    ]);
    const opts = { max: 1, principal: 'p' };
    // Offset 0 is handed out once (the bound) and handed back: the next poll dead-letters it.
    expect((await other.claims.poll(q, P, 'g', opts)).records.map((r) => r.offset)).toEqual([0]);
    await other.claims.nack(q, P, 'g', { offset: 0, attempts: 1 });

    let step = 0;
    const racing = withItems(storage, {
      transact: async (ops) => {
        if (step++ !== 0) return storage.items.transact(ops);
        // The poll below decided to dead-letter offset 0; another instance does it first.
        await other.claims.poll(q, P, 'g', { ...opts, max: 0 });
        try {
          return await storage.items.transact(ops); // loses: the state and the pointer moved
        } finally {
          // Before it retries: offset 0 is redriven, handed out again, handed back: out of attempts again.
          await other.claims.redrive(q, P, 'g', 0);
          expect((await other.claims.poll(q, P, 'g', opts)).records.map((r) => r.offset)).toEqual([0]);
          await other.claims.nack(q, P, 'g', { offset: 0, attempts: 1 });
        }
      },
    });
    const poller = testServices(racing, { clock });
    const got = await poller.claims.poll(q, P, 'g', opts);
    expect(got.records.map((r) => r.offset)).toEqual([1]);
    expect(step).toBeGreaterThan(1);
    expect((await other.claims.listDeadLetters(q, P, 'g')).offsets).toEqual([0]);
    expect(await other.claims.describe(q, P, 'g')).toMatchObject({ deadLetters: 1, owed: 0, inFlight: 1 });
  });
});
