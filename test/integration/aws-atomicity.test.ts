// The property the AWS backend's correctness rests on, checked on the emulator the AWS tests
// run on: guarded writes and transactions are atomic under concurrency. Two OS processes race
// for the same keys through the adapter, command by command so their requests overlap, and
// never both win one. (moto_server fails the transaction half: a cancelled transaction can
// leave its unconditional writes behind.)
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsStorage, ensureBucket, ensureTables } from '../../server/storage/aws/index.js';
import { TABLES, type Item, type Storage, type TableName } from '../../server/storage/port.js';
import { emulatorClients } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import type { RaceCommand, RaceConfig, RaceReport } from '../support/race-writer.js';

/** Rounds of racing per kind of write, and keys raced for at once in each round. */
const ROUNDS = 25;
const KEYS_PER_ROUND = 8;

const writerScript = fileURLToPath(new URL('../support/race-writer.ts', import.meta.url));

interface Writer {
  name: string;
  send(cmd: RaceCommand): Promise<RaceReport>;
  close(): Promise<void>;
}

/** Starts a race-writer process and waits until it is ready. */
async function startWriter(config: RaceConfig): Promise<Writer> {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ['--import', 'tsx', writerScript, JSON.stringify(config)],
    { stdio: 'pipe' },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4_000)));
  const waiting: ((line: string) => void)[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    for (const w of waiting.splice(0)) w(`{"error":"writer ${config.writer} exited: ${JSON.stringify(stderr)}"}`);
  });
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.(line));
  const next = (): Promise<unknown> =>
    new Promise((resolve, reject) =>
      waiting.push((line) => {
        const msg = JSON.parse(line) as { error?: string };
        if (msg.error !== undefined) reject(new Error(msg.error));
        else resolve(msg);
      }),
    );
  await next(); // {"ready":true}
  return {
    name: config.writer,
    async send(cmd) {
      const reply = next();
      child.stdin.write(`${JSON.stringify(cmd)}\n`);
      return (await reply) as RaceReport;
    },
    async close() {
      child.stdin.end();
      await exited;
    },
  };
}

describe('AWS backend: writes are atomic under concurrency (two processes racing)', () => {
  const endpoints = awsEndpoints();
  const suffix = randomUUID().slice(0, 8);
  const tables = Object.fromEntries(TABLES.map((t) => [t, `race-${suffix}-${t}`])) as Record<TableName, string>;
  const bucket = `race-${suffix}`;
  const writers: Writer[] = [];
  let reader: Storage;

  beforeAll(async () => {
    const clients = emulatorClients(endpoints);
    await Promise.all([ensureTables(clients.dynamodb, tables), ensureBucket(clients.s3, bucket)]);
    reader = createAwsStorage({ tables, bucket, ...clients });
    writers.push(
      ...(await Promise.all(['a', 'b'].map((writer) => startWriter({ endpoints, tables, bucket, writer })))),
    );
  }, 120_000);
  afterAll(async () => {
    await Promise.all(writers.map((w) => w.close()));
    await reader?.close();
  });

  /** Sends each round to both writers at once; returns, per round and key, who won and what losers saw. */
  async function raceAll(kind: RaceCommand['kind']): Promise<{ reports: RaceReport[][]; contended: number }> {
    const reports: RaceReport[][] = [];
    let contended = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const both = await Promise.all(writers.map((w) => w.send({ round, kind, keys: KEYS_PER_ROUND })));
      contended += both.reduce((n, r) => n + r.contention.length, 0);
      reports.push(both);
    }
    return { reports, contended };
  }

  const winners = (both: RaceReport[], key: number): string[] =>
    both.flatMap((r, i) => (r.won.includes(key) ? [writers[i]!.name] : []));

  it('put-if-absent on one key: exactly one process succeeds, the other sees its item', async () => {
    const { reports, contended } = await raceAll('put');
    expect(contended).toBe(0); // single-item writes never report contention
    for (const [round, both] of reports.entries()) {
      const stored = await reader.items.query('claims', `put#${round}`);
      for (let key = 0; key < KEYS_PER_ROUND; key++) {
        const won = winners(both, key);
        expect(won, `round ${round} key ${key}`).toHaveLength(1);
        const item = stored.items.find((i: Item) => i.sk === `k${key}`);
        expect(item?.attrs['writer'], `round ${round} key ${key}`).toBe(won[0]);
        // The loser's failed guard reported the winner's item (ReturnValuesOnConditionCheckFailure).
        const lost = both.flatMap((r) => r.lost.filter((l) => l.key === key));
        expect(lost).toEqual([{ key, holder: won[0] }]);
      }
    }
  });

  it('TransactWriteItems on one item: never both commit, and a loser writes nothing', async () => {
    const { reports } = await raceAll('transact');
    let decided = 0;
    for (const [round, both] of reports.entries()) {
      const stored = await reader.items.query('claims', `transact#${round}`);
      for (let key = 0; key < KEYS_PER_ROUND; key++) {
        const won = winners(both, key);
        expect(won.length, `round ${round} key ${key}`).toBeLessThanOrEqual(1);
        // Each committed transaction left its marker; a cancelled one left none (all or nothing).
        const markers = stored.items.filter((i) => i.sk.startsWith(`k${key}#by-`)).map((i) => i.sk);
        expect(markers).toEqual(won.map((w) => `k${key}#by-${w}`));
        const item = stored.items.find((i) => i.sk === `k${key}`);
        expect(item?.attrs['writer']).toBe(won[0]);
        if (won.length === 1) decided++;
      }
    }
    // Both losing to TransactionConflict after every retry is allowed, but not the rule.
    expect(decided).toBeGreaterThan((ROUNDS * KEYS_PER_ROUND) / 2);
  });
});
