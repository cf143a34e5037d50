import type { ItemStore } from './port.js';

/**
 * A readers-writer lock around an ItemStore: each `transact` runs alone, everything else runs
 * freely alongside other non-transactional calls.
 *
 * Why: moto_server's TransactWriteItems takes no lock and, when a condition fails, restores a
 * snapshot of the tables it touched, undoing writes other requests made meanwhile (and letting
 * them read writes that are then rolled back). Real DynamoDB and LocalStack need none of this;
 * only the AWS adapter pointed at moto (the test harness and the bench) turns it on.
 *
 * @example
 * ```ts
 * const items = isolateTransactions(new DynamoItemStore(...));
 * ```
 */
export function isolateTransactions(inner: ItemStore): ItemStore {
  let readers = 0;
  let writer = false;
  const waiting: { write: boolean; go: () => void }[] = [];
  const pump = (): void => {
    while (waiting.length > 0 && !writer) {
      const next = waiting[0] as { write: boolean; go: () => void };
      if (next.write) {
        if (readers > 0) return;
        waiting.shift();
        writer = true;
        next.go();
        return;
      }
      waiting.shift();
      readers++;
      next.go();
    }
  };
  const acquire = (write: boolean): Promise<void> =>
    new Promise((go) => {
      waiting.push({ write, go });
      pump();
    });
  const release = (write: boolean): void => {
    if (write) writer = false;
    else readers--;
    pump();
  };
  const shared =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      await acquire(false);
      try {
        return await fn(...a);
      } finally {
        release(false);
      }
    };
  return {
    get: shared((t, k) => inner.get(t, k)),
    getMany: shared((t, k) => inner.getMany(t, k)),
    query: shared((t, pk, o) => inner.query(t, pk, o)),
    put: shared((t, i, c) => inner.put(t, i, c)),
    delete: shared((t, k, c) => inner.delete(t, k, c)),
    writeEach: shared((ops) => inner.writeEach(ops)),
    transact: async (ops) => {
      await acquire(true);
      try {
        return await inner.transact(ops);
      } finally {
        release(true);
      }
    },
  };
}
