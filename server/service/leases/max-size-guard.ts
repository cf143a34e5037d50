import { SluiceError } from '../../core/errors.js';
import type { Storage } from '../../storage/port.js';
import type { PushGuard } from '../log/push.js';
import type { SegmentReader } from '../log/segments.js';
import { partitionCursors } from './lease-store.js';

/**
 * The `maxSize` queue option as a push guard (when > 0): refuses a push that would leave more
 * unconsumed messages in the partition than the limit — unconsumed meaning after the slowest
 * lease group's cursor, or everything past retention's floor when no group has read it (offsets
 * taken and not yet written included). Two reads per push on such queues. Exact under
 * concurrency: a push (plain or in a transaction) that passes gets the bound `floor + maxSize`
 * for its take from the partition's sequencer (offsets are handed out there), so of concurrent
 * pushes only those that still fit commit; the others are refused as if the check had failed.
 *
 * @example
 * ```ts
 * pushes.addPushGuard(maxSizeGuard({ storage, segments }));
 * ```
 */
export function maxSizeGuard(deps: { storage: Storage; segments: SegmentReader }): PushGuard {
  return async ({ queue, partition: part, count }) => {
    const max = queue.options.maxSize;
    if (!max || max <= 0) return;
    const [tail, cursors] = await Promise.all([
      deps.segments.readTail(part.id),
      partitionCursors(deps.storage, part.id),
    ]);
    const floors = cursors.map((c) => c.state.committed + 1);
    const floor = floors.length > 0 ? Math.min(...floors) : await deps.segments.readFloor(part.id);
    const pending = Math.max(0, tail.next - floor);
    const full = (held: number): SluiceError =>
      new SluiceError(
        'queue_full',
        `queue ${queue.name} partition ${part.name} holds ${held} unconsumed messages; maxSize is ${max}, so ${count} more do not fit`,
        { maxSize: max, pending: held },
      );
    if (pending + count > max) throw full(pending);
    // Pushes racing this one took offsets since the read: then at least max - count + 1 are held.
    return { atMost: floor + max, refusal: () => full(Math.max(pending, max - count + 1)) };
  };
}
