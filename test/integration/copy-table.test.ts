// The copy-back step of a point-in-time restore (scripts/copy-table.ts; docs/DEPLOYING.md,
// "Restoring from a point in time") on DynamoDB Local: the live table ends equal to the
// restored one, attribute values untouched, a dry run writes nothing, a second pass changes
// nothing; and a Sluice deployment whose six tables are written back from copies taken at T
// answers as it did at T (what was pushed and acked after T is gone, what was owed at T is owed).
import {
  CreateTableCommand,
  DeleteTableCommand,
  PutItemCommand,
  ScanCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTables } from '../../server/storage/aws/index.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { copyTable } from '../../scripts/copy-table.js';
import { emulatorClients, newAwsTestStorage } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { json, testServices, text } from '../support/services.js';

type Item = Record<string, AttributeValue>;
let dynamodb: DynamoDBClient;
const made: string[] = [];
const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(() => {
  dynamodb = emulatorClients(awsEndpoints()).dynamodb;
});
afterAll(async () => {
  await Promise.allSettled(made.map((TableName) => dynamodb.send(new DeleteTableCommand({ TableName }))));
  dynamodb.destroy();
});

async function table(name: string, keys: string[] = ['pk', 'sk']): Promise<string> {
  const TableName = `copy-${suffix}-${name}`;
  await dynamodb.send(
    new CreateTableCommand({
      TableName,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: keys.map((k, i) => ({ AttributeName: k, KeyType: i === 0 ? 'HASH' : 'RANGE' })),
      AttributeDefinitions: keys.map((k) => ({ AttributeName: k, AttributeType: 'S' })),
    }),
  );
  made.push(TableName);
  return TableName;
}
const put = (TableName: string, Item: Item) => dynamodb.send(new PutItemCommand({ TableName, Item }));
const contents = async (TableName: string): Promise<Item[]> => {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const r = await dynamodb.send(new ScanCommand({ TableName, ExclusiveStartKey: start }));
    items.push(...(r.Items ?? []));
    start = r.LastEvaluatedKey;
  } while (start);
  return items.sort((a, b) => (JSON.stringify([a['pk'], a['sk']]) < JSON.stringify([b['pk'], b['sk']]) ? -1 : 1));
};

describe('scripts/copy-table.ts', () => {
  it('makes the live table equal to the restored one, in pages and segments; a dry run writes nothing', async () => {
    const restored = await table('restored');
    const live = await table('live');
    const item = (i: number, v: string): Item => ({
      pk: { S: `P#${i % 7}` },
      sk: { S: `s${i}` },
      v: { S: v },
      n: { N: String(i) },
      bin: { B: new Uint8Array([i, 0, 255]) },
      m: { M: { list: { L: [{ BOOL: true }, { NULL: true }] }, set: { SS: ['a', 'b'] } } },
    });
    for (let i = 0; i < 60; i++) await put(restored, item(i, 'then'));
    // After T: some items changed, some new ones, some deleted.
    for (let i = 0; i < 60; i += 3) await put(live, item(i, 'now'));
    for (let i = 60; i < 75; i++) await put(live, item(i, 'new'));
    const before = await contents(live);

    const dry = await copyTable(dynamodb, { from: restored, to: live, prune: true, dryRun: true, pageSize: 7 });
    expect(dry).toEqual({ copied: 60, deleted: 15, writeUnits: 0 });
    expect(await contents(live)).toEqual(before);

    const seen: number[] = [];
    const done = await copyTable(dynamodb, {
      from: restored,
      to: live,
      prune: true,
      pageSize: 7,
      segments: 3,
      onProgress: (t) => seen.push(t.copied),
    });
    expect(done).toMatchObject({ copied: 60, deleted: 15 });
    // As DynamoDB reports them (DynamoDB Local reports fewer than AWS bills: only that there were some).
    expect(done.writeUnits).toBeGreaterThan(0);
    expect(seen.length).toBeGreaterThan(3); // page by page
    expect(await contents(live)).toEqual(await contents(restored));

    // Again: the same result, nothing left to delete.
    expect(await copyTable(dynamodb, { from: restored, to: live, prune: true })).toMatchObject({ deleted: 0 });
    expect(await contents(live)).toEqual(await contents(restored));
  });

  it('without --prune, keeps what only the live table has', async () => {
    const restored = await table('restored2');
    const live = await table('live2');
    await put(restored, { pk: { S: 'a' }, sk: { S: '1' }, v: { S: 'then' } });
    await put(live, { pk: { S: 'a' }, sk: { S: '1' }, v: { S: 'now' } });
    await put(live, { pk: { S: 'b' }, sk: { S: '1' } });
    expect(await copyTable(dynamodb, { from: restored, to: live })).toMatchObject({ copied: 1, deleted: 0 });
    expect((await contents(live)).map((i) => [i['pk']?.S, i['v']?.S])).toEqual([
      ['a', 'then'],
      ['b', undefined],
    ]);
  });

  it('refuses one table twice, and tables keyed differently', async () => {
    const a = await table('a');
    const other = await table('other', ['id']);
    await expect(copyTable(dynamodb, { from: a, to: a })).rejects.toThrow(/same table/);
    await expect(copyTable(dynamodb, { from: other, to: a })).rejects.toThrow(/keyed by id and .* by pk, sk/);
  });
});

describe('a Sluice deployment written back from its tables as they were at T', () => {
  it('answers as it did at T: pushes and acks after T are undone', async () => {
    const { storage, tables, cleanup } = await newAwsTestStorage(awsEndpoints());
    try {
      const svc = testServices(storage);
      const pop = (s: typeof svc, batch: number) =>
        s.leasePops.pop({
          queue: 'pitr',
          group: 'g',
          batch,
          partitions: 1,
          autoAck: true,
          wait: false,
          timeoutMs: 0,
        });
      await svc.pushes.push([0, 1, 2, 3, 4].map((n) => ({ queue: 'pitr', payload: json(n) })));
      expect((await pop(svc, 2))?.messages).toHaveLength(2);

      // T: what a restore-table-to-point-in-time of each table would hold.
      const restored = Object.fromEntries(TABLES.map((t) => [t, `${tables[t]}-restored-${t}`])) as Record<
        TableName,
        string
      >;
      made.push(...Object.values(restored));
      await ensureTables(dynamodb, restored);
      for (const t of TABLES) await copyTable(dynamodb, { from: tables[t], to: restored[t] });

      await svc.pushes.push([5, 6].map((n) => ({ queue: 'pitr', payload: json(n) })));
      expect((await pop(svc, 10))?.messages).toHaveLength(5);

      // Paused, every table is written back; a fresh process (no caches) reads it.
      for (const t of TABLES) await copyTable(dynamodb, { from: restored[t], to: tables[t], prune: true });
      const after = testServices(storage);
      const owed = await pop(after, 10);
      expect(owed?.messages.map((m) => text(m.payload))).toEqual(['2', '3', '4']);
      expect(await pop(after, 10)).toBeNull();
    } finally {
      await cleanup();
    }
  });
});
