/**
 * DynamoDB Streams on the `log` table, in process: every key a write to `log` touches (puts,
 * deletes, transactions, takes, as the stream's KEYS_ONLY records would carry them) is
 * collected and handed to `deliver` after `windowMs`, in one batch, as Lambda's event-source
 * mapping hands a shard's records to the notifier. `deliver` gets every key; the notifier keeps
 * the sequencer's (the CDK stack's filter does the same on AWS).
 *
 * @example
 * ```ts
 * const tapped = tapLogStream(storage, (pks) => svc.notifications.onSequencerWrites(pks), { windowMs: 0 });
 * ```
 */
import type { Storage, WriteOp } from '../../server/storage/port.js';
import { withItems } from './storage.js';

export function tapLogStream(
  inner: Storage,
  deliver: (pks: string[]) => Promise<unknown>,
  opts: { windowMs?: number; onError?: (e: unknown) => void } = {},
): Storage & { batches: () => number } {
  let pending: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  let batches = 0;
  const record = (pks: string[]): void => {
    if (pks.length === 0) return;
    pending.push(...pks);
    timer ??= setTimeout(() => {
      const batch = pending;
      pending = [];
      timer = undefined;
      batches++;
      deliver(batch).catch((e: unknown) => opts.onError?.(e));
    }, opts.windowMs ?? 0);
  };
  const logKeys = (ops: WriteOp[]): string[] =>
    ops.filter((o) => o.table === 'log').map((o) => (o.op === 'put' ? o.item.pk : o.key.pk));
  const i = inner.items;
  const tapped = withItems(inner, {
    put: async (t, item, c) => {
      await i.put(t, item, c);
      if (t === 'log') record([item.pk]);
    },
    delete: async (t, k, c) => {
      await i.delete(t, k, c);
      if (t === 'log') record([k.pk]);
    },
    writeEach: async (ops, o) => {
      const r = await i.writeEach(ops, o);
      record(logKeys(ops.filter((_, n) => r[n]?.ok && ops[n]?.op !== 'check')));
      return r;
    },
    transact: async (ops) => {
      await i.transact(ops);
      record(logKeys(ops.filter((op) => op.op !== 'check')));
    },
    take: async (t, k, n, then, o) => {
      let built: WriteOp[] = [];
      const r = await i.take(t, k, n, then && ((taken) => (built = then(taken))), o);
      record([...(t === 'log' ? [k.pk] : []), ...logKeys(built)]);
      return r;
    },
  });
  return Object.assign(tapped, { batches: () => batches });
}
