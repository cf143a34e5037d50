/**
 * One service instance of a race: what a Lambda instance has — its own SDK clients, its own
 * storage adapter, its own services and caches (queue records, partitions, segments, work-index
 * pages, group registrations) — over the scenario's shared emulator tables.
 *
 * The storage is wrapped by a recorder that logs every cursor row write (`leases` table) that
 * landed, with the version it wrote: across all instances those versions form one chain per
 * row (every write is guarded by the version it read), which is what the lease checks replay.
 * The instance runs one operation at a time, so each write is logged with the operation that
 * made it.
 */
import { loadConfig, type SluiceConfig } from '../../server/config.js';
import { buildServices, type Services } from '../../server/service/runtime.js';
import { createAwsStorage } from '../../server/storage/aws/index.js';
import type { Item, Storage, WriteOp } from '../../server/storage/port.js';
import { withItems } from '../support/storage.js';
import { emulatorClients } from '../support/aws-emulator.js';
import type { LeaseView, RaceEnv, RaceEvent, WriteEvent } from './protocol.js';

export interface RaceInstance {
  /** `p<process>i<instance>`. */
  id: string;
  svc: Services;
  /** Starts the next operation: its number, under which its events and writes are logged. */
  next(): number;
  log(e: RaceEvent): void;
  close(): Promise<void>;
}

/** A cursor row (not a work item or scan state) of the `leases` table. */
function cursorWrite(table: string, item: Item): boolean {
  return table === 'leases' && typeof item.attrs['committed'] === 'number';
}

function leaseOf(attrs: Item['attrs']): LeaseView | null {
  const l = attrs['lease'] as { id: string; exp: number; start: number; end: number } | null | undefined;
  return l ? { id: l.id, exp: l.exp, start: l.start, end: l.end } : null;
}

/** The storage, with every cursor row write that landed reported to `onWrite`. */
export function recording(inner: Storage, onWrite: (item: Item) => void): Storage {
  const i = inner.items;
  const report = (ops: readonly WriteOp[]): void => {
    for (const op of ops) if (op.op === 'put' && cursorWrite(op.table, op.item)) onWrite(op.item);
  };
  return withItems(inner, {
    put: async (t, item, c) => {
      await i.put(t, item, c);
      if (cursorWrite(t, item)) onWrite(item);
    },
    transact: async (ops) => {
      await i.transact(ops);
      report(ops);
    },
    writeEach: async (ops, o) => {
      const res = await i.writeEach(ops, o);
      report(ops.filter((_, j) => res[j]?.ok));
      return res;
    },
  });
}

/**
 * Builds one instance. `log` receives its events (the worker writes them to its file).
 *
 * @example
 * ```ts
 * const inst = createInstance('p0i1', env, (e) => writeSync(fd, JSON.stringify(e) + '\n'));
 * await inst.svc.pushes.push([{ queue: 'q', payload: Buffer.from('{}') }]);
 * ```
 */
export function createInstance(
  id: string,
  env: RaceEnv,
  log: (e: RaceEvent) => void,
  config: Partial<SluiceConfig> = {},
): RaceInstance {
  const { dynamodb, s3 } = emulatorClients(env.endpoints);
  let seq = 0;
  const storage = recording(createAwsStorage({ tables: env.tables, bucket: env.bucket, dynamodb, s3 }), (item) => {
    const e: WriteEvent = {
      k: 'w',
      inst: id,
      seq,
      at: Date.now(),
      pk: item.pk,
      sk: item.sk,
      ver: item.ver,
      committed: item.attrs['committed'] as number,
      lease: leaseOf(item.attrs),
    };
    log(e);
  });
  const svc = buildServices(storage, { ...loadConfig({}), ...config });
  return {
    id,
    svc,
    next: () => ++seq,
    log,
    async close() {
      await storage.close();
      dynamodb.destroy();
      s3.destroy();
    },
  };
}
