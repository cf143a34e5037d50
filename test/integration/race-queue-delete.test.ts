// Found by the queue-delete race (test/race): a partition name item removed by a queue delete
// and created again under the same key restarted at version 1, so a push that had read the
// deleted incarnation's item (version 1) and was replacing it replaced the new incarnation's
// partition instead — unretired, its acknowledged messages out of the queue's reach. Here the
// interleaving is forced, on both backends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logKeys } from '../../server/service/log/log-store.js';
import type { Storage, WriteOp } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { json, testServices } from '../support/services.js';
import { withItems } from '../support/storage.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const P = 'Default';
const writesName = (ops: WriteOp[], queue: string): boolean =>
  ops.some((o) => o.op === 'put' && o.item.pk === logKeys.partition(queue, P).pk && o.item.sk === `P#${P}`);
const deletesQueue = (ops: WriteOp[], queue: string): boolean =>
  ops.some((o) => o.op === 'delete' && o.key.pk === logKeys.queue(queue).pk && o.key.sk === 'config');

describe.each(backends)('integration: a push racing a queue delete and a new incarnation on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it("a push that read the deleted incarnation's partition never replaces the new incarnation's", async () => {
    const q = 'aba';
    await testServices(storage).pushes.push([{ queue: q, transactionId: 'old', payload: json({ n: 0 }) }]);

    // The late push: it finds the queue gone, creates it again, reads the deleted
    // incarnation's partition name item (to replace it) and is held just before writing.
    let arrived: () => void = () => {};
    const atWrite = new Promise<void>((r) => (arrived = r));
    let release: () => void = () => {};
    const released = new Promise<void>((r) => (release = r));
    const late = testServices(
      withItems(storage, {
        transact: async (ops) => {
          if (writesName(ops, q)) {
            arrived();
            await released;
          }
          return storage.items.transact(ops);
        },
      }),
    );
    let latePush: Promise<unknown> | undefined;
    // The delete: once the queue record is gone, the late push starts; then the delete
    // retires the old partition (its name item goes).
    const deleter = testServices(
      withItems(storage, {
        transact: async (ops) => {
          await storage.items.transact(ops);
          if (deletesQueue(ops, q)) {
            latePush = late.pushes.push([{ queue: q, transactionId: 'late', payload: json({ n: 2 }) }]);
            await atWrite;
          }
        },
      }),
    );
    expect(await deleter.deletion.deleteQueue(q)).toEqual({ existed: true });
    // Another instance pushes to the new incarnation: the name is free, so a new partition.
    const [first] = await testServices(storage).pushes.push([
      { queue: q, transactionId: 'new', payload: json({ n: 1 }) },
    ]);
    release();
    await latePush;

    const reader = testServices(storage);
    const part = await reader.queues.getPartition(q, P);
    expect(part?.id).toBe(first?.partitionId);
    const msgs = await reader.segments.read(part!.id, 0, { maxCount: 10 });
    expect(msgs.map((m) => m.transactionId)).toEqual(['new', 'late']);
  });
});
