/**
 * One of the two OS processes of the AWS atomicity test (test/integration/aws-atomicity.test.ts):
 * a writer on the AWS adapter that, for each command line on stdin, races the other writer
 * for a set of keys and reports on stdout which it won.
 *
 * argv[2] is JSON `{ endpoints, tables, bucket, writer }`. It prints `{"ready":true}` once,
 * then per command `{ round, kind, keys }` (kind `put`: put-if-absent; `transact`: a
 * transaction of a put-if-absent and an unconditional marker put) one line
 * `{ round, won: number[], lost: { key, holder }[], contention: number[] }`, where `holder` is
 * the writer named by the item the failed guard reported.
 *
 * @example
 * ```ts
 * spawn(process.execPath, ['--import', 'tsx', 'test/support/race-writer.ts', JSON.stringify(config)]);
 * ```
 */
import { createInterface } from 'node:readline';
import { createAwsStorage } from '../../server/storage/aws/index.js';
import { ConditionFailedError, ContentionError, type TableName } from '../../server/storage/port.js';
import { emulatorClients, type AwsEndpoints } from './aws-emulator.js';

export interface RaceConfig {
  endpoints: AwsEndpoints;
  tables: Record<TableName, string>;
  bucket: string;
  writer: string;
}

export interface RaceCommand {
  round: number;
  kind: 'put' | 'transact';
  keys: number;
}

export interface RaceReport {
  round: number;
  won: number[];
  lost: { key: number; holder: string | undefined }[];
  contention: number[];
}

const config = JSON.parse(process.argv[2] ?? '') as RaceConfig;
const { dynamodb, s3 } = emulatorClients(config.endpoints);
const storage = createAwsStorage({ tables: config.tables, bucket: config.bucket, dynamodb, s3 });
const me = config.writer;

async function race(cmd: RaceCommand, key: number): Promise<'won' | 'contention' | { holder: string | undefined }> {
  const pk = `${cmd.kind}#${cmd.round}`;
  const sk = `k${key}`;
  const claim = { pk, sk, ver: 1, attrs: { writer: me } };
  try {
    if (cmd.kind === 'put') await storage.items.put('claims', claim, { kind: 'absent' });
    else
      await storage.items.transact([
        { op: 'put', table: 'claims', item: claim, cond: { kind: 'absent' } },
        { op: 'put', table: 'claims', item: { pk, sk: `${sk}#by-${me}`, ver: 1, attrs: {} } },
      ]);
    return 'won';
  } catch (err) {
    if (err instanceof ContentionError) return 'contention';
    if (!(err instanceof ConditionFailedError)) throw err;
    const holder = err.failed[0]?.current?.attrs['writer'];
    return { holder: typeof holder === 'string' ? holder : undefined };
  }
}

const lines = createInterface({ input: process.stdin });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of lines) {
  const cmd = JSON.parse(line) as RaceCommand;
  const outcomes = await Promise.all(Array.from({ length: cmd.keys }, (_, key) => race(cmd, key)));
  const report: RaceReport = { round: cmd.round, won: [], lost: [], contention: [] };
  outcomes.forEach((o, key) => {
    if (o === 'won') report.won.push(key);
    else if (o === 'contention') report.contention.push(key);
    else report.lost.push({ key, holder: o.holder });
  });
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
await storage.close();
