/**
 * Makes one DynamoDB table hold what another holds: the copy-back step of a point-in-time
 * restore (docs/DEPLOYING.md, "Restoring from a point in time"). A restore always creates a new
 * table; the stack's functions, roles, stream, TTL and alarms stay on the stack's own tables, so
 * the restored items are written back into them instead of the stack being pointed elsewhere.
 *
 * Every item of `--from` is put into `--to` as it is (attribute values untouched); with
 * `--prune`, items of `--to` whose key `--from` lacks are deleted first, so `--to` ends equal to
 * `--from`. Run it with every Sluice function paused: a write landing meanwhile is overwritten or
 * deleted. It can be run again after a failure: each pass leaves the same result.
 *
 * The caller needs `dynamodb:DescribeTable` on both tables, `dynamodb:Scan` on `--from` (and on
 * `--to` with `--prune`), `dynamodb:BatchWriteItem` on `--to` and, with `--prune`,
 * `dynamodb:BatchGetItem` on `--from`. It costs a write unit per KB of each item put, one per
 * item deleted, and the scans' reads (half a unit per 4 KB, eventually consistent).
 *
 * @example
 * ```sh
 * npx tsx scripts/copy-table.ts --from Sluice-LogTable-restored --to Sluice-SluiceLogTable1A2B3C-XYZ --prune
 * npx tsx scripts/copy-table.ts --from A --to B --prune --dry-run   # counts, writes nothing
 * ```
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ScanCommand,
  type AttributeValue,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';

type Item = Record<string, AttributeValue>;

export interface CopyTableOptions {
  /** The table read (a restored one). */
  from: string;
  /** The table written (the stack's). */
  to: string;
  /** Also delete what `to` holds and `from` does not, so that `to` ends equal to `from`. */
  prune?: boolean;
  /** Count what would be put and deleted, and write nothing. */
  dryRun?: boolean;
  /** Parallel scan segments (default 4). */
  segments?: number;
  /** Most items a scan page reads (default: DynamoDB's 1 MB page); smaller pages write in smaller bursts. */
  pageSize?: number;
  /** Called after each page with the running totals. */
  onProgress?: (totals: CopyTableReport) => void;
}

export interface CopyTableReport {
  /** Items put into `to` (or that would be, with `dryRun`). */
  copied: number;
  /** Items deleted from `to` (or that would be). */
  deleted: number;
  /** Write capacity units DynamoDB reported for the writes. */
  writeUnits: number;
}

/** BatchWriteItem's and BatchGetItem's per-request limits. */
const WRITE_BATCH = 25;
const GET_BATCH = 100;
/** Rounds of unprocessed items retried before giving up (the SDK retries throttling itself first). */
const MAX_ROUNDS = 12;

/**
 * Copies every item of `from` into `to` (see the module comment), answering what it did.
 *
 * @example
 * ```ts
 * const report = await copyTable(new DynamoDBClient({}), { from: 'restored', to: 'live', prune: true });
 * ```
 */
export async function copyTable(client: DynamoDBClient, o: CopyTableOptions): Promise<CopyTableReport> {
  if (o.from === o.to) throw new Error('--from and --to name the same table');
  const keys = await keyNames(client, o.to);
  const fromKeys = await keyNames(client, o.from);
  if (keys.join() !== fromKeys.join())
    throw new Error(
      `${o.from} is keyed by ${fromKeys.join(', ')} and ${o.to} by ${keys.join(', ')}: not a restore of it`,
    );
  const totals: CopyTableReport = { copied: 0, deleted: 0, writeUnits: 0 };
  const scan = { segments: o.segments ?? 4, pageSize: o.pageSize };
  const write = async (requests: WriteRequest[]): Promise<void> => {
    if (!o.dryRun) totals.writeUnits += await writeAll(client, o.to, requests);
  };

  // Deletes first: a key `from` lacks is found by asking `from` for the keys `to` holds.
  if (o.prune)
    await scanAll(client, o.to, scan, keys, async (page) => {
      for (let i = 0; i < page.length; i += GET_BATCH) {
        const batch = page.slice(i, i + GET_BATCH);
        const present = new Set((await getAll(client, o.from, batch, keys)).map((k) => keyText(k, keys)));
        const gone = batch.filter((k) => !present.has(keyText(k, keys)));
        for (let j = 0; j < gone.length; j += WRITE_BATCH)
          await write(gone.slice(j, j + WRITE_BATCH).map((Key) => ({ DeleteRequest: { Key } })));
        totals.deleted += gone.length;
      }
      o.onProgress?.(totals);
    });
  await scanAll(client, o.from, scan, undefined, async (page) => {
    for (let i = 0; i < page.length; i += WRITE_BATCH)
      await write(page.slice(i, i + WRITE_BATCH).map((Item) => ({ PutRequest: { Item } })));
    totals.copied += page.length;
    o.onProgress?.(totals);
  });
  return totals;
}

/** The table's key attribute names, partition key first. */
async function keyNames(client: DynamoDBClient, table: string): Promise<string[]> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
  const schema = Table?.KeySchema ?? [];
  return [...schema]
    .sort((a, b) => (a.KeyType === 'HASH' ? -1 : b.KeyType === 'HASH' ? 1 : 0))
    .map((k) => k.AttributeName!);
}

const keyText = (item: Item, keys: string[]): string => JSON.stringify(keys.map((k) => item[k]));

/** Scans `table` in `segments` parallel segments, handing each page (only `keys`, when given) to `page`. */
async function scanAll(
  client: DynamoDBClient,
  table: string,
  { segments, pageSize }: { segments: number; pageSize: number | undefined },
  keys: string[] | undefined,
  page: (items: Item[]) => Promise<void>,
): Promise<void> {
  const projection = keys
    ? {
        ProjectionExpression: keys.map((_, i) => `#k${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(keys.map((k, i) => [`#k${i}`, k])),
      }
    : {};
  await Promise.all(
    Array.from({ length: segments }, async (_, segment) => {
      let start: Item | undefined;
      do {
        const r = await client.send(
          new ScanCommand({
            TableName: table,
            Segment: segment,
            TotalSegments: segments,
            ExclusiveStartKey: start,
            Limit: pageSize,
            ...projection,
          }),
        );
        await page(r.Items ?? []);
        start = r.LastEvaluatedKey;
      } while (start);
    }),
  );
}

/** The keys of `batch` (at most 100) that `table` holds, unprocessed keys asked again. */
async function getAll(client: DynamoDBClient, table: string, batch: Item[], keys: string[]): Promise<Item[]> {
  const found: Item[] = [];
  let pending: Item[] = batch.map((item) => Object.fromEntries(keys.map((k) => [k, item[k]!])));
  for (let round = 0; pending.length > 0; round++) {
    if (round >= MAX_ROUNDS) throw new Error(`${table}: ${pending.length} keys stayed unprocessed; run again`);
    if (round > 0) await backoff(round);
    const r = await client.send(
      new BatchGetItemCommand({
        RequestItems: {
          [table]: {
            Keys: pending,
            ProjectionExpression: keys.map((_, i) => `#k${i}`).join(', '),
            ExpressionAttributeNames: Object.fromEntries(keys.map((k, i) => [`#k${i}`, k])),
          },
        },
      }),
    );
    found.push(...(r.Responses?.[table] ?? []));
    pending = r.UnprocessedKeys?.[table]?.Keys ?? [];
  }
  return found;
}

/** Writes `requests` (at most 25) to `table`, unprocessed ones sent again; answers the units consumed. */
async function writeAll(client: DynamoDBClient, table: string, requests: WriteRequest[]): Promise<number> {
  let units = 0;
  let pending = requests;
  for (let round = 0; pending.length > 0; round++) {
    if (round >= MAX_ROUNDS) throw new Error(`${table}: ${pending.length} writes stayed unprocessed; run again`);
    if (round > 0) await backoff(round);
    const r = await client.send(
      new BatchWriteItemCommand({ RequestItems: { [table]: pending }, ReturnConsumedCapacity: 'TOTAL' }),
    );
    units += (r.ConsumedCapacity ?? []).reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
    pending = r.UnprocessedItems?.[table] ?? [];
  }
  return units;
}

/** Waits before round `n` of a retry: 50 ms doubling, at most 5 s. */
const backoff = (n: number): Promise<void> =>
  new Promise((ok) => setTimeout(ok, Math.min(5_000, 50 * 2 ** (n - 1)) * (0.5 + Math.random() / 2)));

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      prune: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      segments: { type: 'string', default: '4' },
      region: { type: 'string' },
    },
  });
  const segments = Number(values.segments);
  if (!values.from || !values.to || !Number.isInteger(segments) || segments < 1 || segments > 1_000_000) {
    console.error(
      'usage: npx tsx scripts/copy-table.ts --from RESTORED --to LIVE [--prune] [--dry-run] [--segments 4] [--region R]',
    );
    process.exit(2);
  }
  const client = new DynamoDBClient(values.region ? { region: values.region } : {});
  let last = 0;
  const report = await copyTable(client, {
    from: values.from,
    to: values.to,
    prune: values.prune,
    dryRun: values['dry-run'],
    segments,
    onProgress: (t) => {
      if (Date.now() - last < 5_000) return;
      last = Date.now();
      console.error(`… ${t.deleted} deleted, ${t.copied} copied`);
    },
  });
  const verb = values['dry-run'] ? 'would be' : 'were';
  console.log(
    `${report.deleted} items ${verb} deleted from ${values.to} and ${report.copied} ${verb} copied from ${values.from}` +
      (values['dry-run'] ? '' : ` (${report.writeUnits} write units)`),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
