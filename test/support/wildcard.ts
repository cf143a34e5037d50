// Wildcard pops and the work index's state, for the work-repair tests: one lease group `g`
// popping a queue the way `GET /api/v1/pop/queue/:queue` does, and what the index says of a
// partition (its sequencer's has-work flag, whether its work item exists).
import { expect } from 'vitest';
import { ackAll, popReq } from '../../bench/leases.js';
import { leaseKeys } from '../../server/service/leases/lease-store.js';
import { WORK_FLAG } from '../../server/service/leases/work-index.js';
import { logKeys, type PartitionRef } from '../../server/service/log/log-store.js';
import type { Services } from '../../server/service/runtime.js';
import { json, text } from './services.js';

/** Pops (and acks) everything group `g` gets by wildcard pops; the empty pop at the end may clear. */
export async function drain(svc: Services, queue: string): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; i < 20; i++) {
    const p = await svc.leasePops.pop(popReq(queue));
    if (!p) break;
    seen.push(...p.messages.map((m) => text(m.payload)));
    await ackAll(svc, p);
  }
  return seen;
}

/** The partition's sequencer flag and whether its work item exists. */
export async function indexState(
  svc: Services,
  queue: string,
  part: PartitionRef,
): Promise<{ flag: unknown; item: boolean }> {
  const q = (await svc.queues.getQueue(queue))!;
  const [seq, item] = await Promise.all([
    svc.storage.items.get('log', logKeys.sequencer(part.id)),
    svc.storage.items.get('leases', leaseKeys.work(q.queueId, part.id)),
  ]);
  return { flag: seq?.attrs[WORK_FLAG], item: item !== undefined };
}

/** A queue with one message pushed, consumed by `g` and the partition cleared: `w` unset, no item. */
export async function drainedQueue(svc: Services, queue: string): Promise<PartitionRef> {
  await svc.pushes.push([{ queue, payload: json('first') }]);
  expect(await drain(svc, queue)).toEqual(['"first"']);
  const part = (await svc.queues.getPartition(queue, 'Default'))!;
  expect(await indexState(svc, queue, part)).toEqual({ flag: false, item: false });
  return part;
}
