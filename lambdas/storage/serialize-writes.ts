import type { ItemStore } from './port.js';

/**
 * A readers-writer lock around an ItemStore: writes (put, delete, writeEach, transact) run one
 * at a time, reads run freely between them.
 *
 * Why: moto_server, the emulator the tests use, does not make DynamoDB's guarantees under
 * concurrency. Its conditional checks are not atomic with the write (two concurrent
 * put-if-absent on one key can both succeed, the second overwriting the first), and its
 * TransactWriteItems restores a snapshot when a condition fails, undoing other requests'
 * writes. Real DynamoDB (and LocalStack) need none of this; only the AWS adapter pointed at
 * moto (the test harness and the bench) turns it on. The services still race each other
 * logically (two pushers choosing one base offset still collide on the guard); only moto's
 * own data races are taken away.
 *
 * @example
 * ```ts
 * const items = serializeWrites(new DynamoItemStore(...));
 * ```
 */
export function serializeWrites(inner: ItemStore): ItemStore {
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
  const locked =
    <A extends unknown[], R>(write: boolean, fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      await new Promise<void>((go) => {
        waiting.push({ write, go });
        pump();
      });
      try {
        return await fn(...a);
      } finally {
        if (write) writer = false;
        else readers--;
        pump();
      }
    };
  return {
    get: locked(false, (t, k) => inner.get(t, k)),
    getMany: locked(false, (t, k) => inner.getMany(t, k)),
    query: locked(false, (t, pk, o) => inner.query(t, pk, o)),
    put: locked(true, (t, i, c) => inner.put(t, i, c)),
    delete: locked(true, (t, k, c) => inner.delete(t, k, c)),
    writeEach: locked(true, (ops) => inner.writeEach(ops)),
    transact: locked(true, (ops) => inner.transact(ops)),
  };
}
