/**
 * A pushing process for test/integration/work-repair.test.ts that dies between its take and its
 * commit: one push through the real services on the AWS adapter, whose storage (wrapped here,
 * in the child, never in production code) stops the moment the take's UpdateItem on a
 * partition sequencer has answered: it prints `taken` and blocks until the parent kills it
 * with SIGKILL. What is left in DynamoDB is what a Lambda killed at that point leaves.
 *
 * argv[2] is JSON `{ endpoints, tables, bucket, queue, partition, payload }`. Exits 3 if nobody
 * kills it within 30 s, 4 if the push ended without reaching a take.
 *
 * @example
 * ```ts
 * spawn(process.execPath, ['--import', 'tsx', 'test/support/die-after-take.ts', JSON.stringify(config)]);
 * ```
 */
import { writeSync } from 'node:fs';
import { loadConfig } from '../../server/config.js';
import { buildServices } from '../../server/service/runtime.js';
import { createAwsStorage } from '../../server/storage/aws/index.js';
import type { TableName } from '../../server/storage/port.js';
import { emulatorClients, type AwsEndpoints } from './aws-emulator.js';
import { withItems } from './storage.js';

export interface DieAfterTakeConfig {
  endpoints: AwsEndpoints;
  tables: Record<TableName, string>;
  bucket: string;
  queue: string;
  partition: string;
  payload: string;
}

/** How long the child waits to be killed before giving up on its parent. */
const KILL_WAIT_MS = 30_000;

const config = JSON.parse(process.argv[2] ?? '') as DieAfterTakeConfig;
const { dynamodb, s3 } = emulatorClients(config.endpoints);
const inner = createAwsStorage({ tables: config.tables, bucket: config.bucket, dynamodb, s3 });
const storage = withItems(inner, {
  take: (t, k, n, then, o) =>
    inner.items.take(
      t,
      k,
      n,
      // Called once the take's UpdateItem answered, before the commit is sent.
      then && k.pk.startsWith('SEQ#')
        ? () => {
            writeSync(1, 'taken\n');
            // Synchronous: nothing else of this process runs until the SIGKILL lands.
            Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, KILL_WAIT_MS);
            process.exit(3);
          }
        : then,
      o,
    ),
});
const svc = buildServices(storage, { ...loadConfig({}), queueCacheMs: 0 });
await svc.pushes.push([{ queue: config.queue, partition: config.partition, payload: Buffer.from(config.payload) }]);
process.exit(4);
