/**
 * Limits of the AWS backend, measured on DynamoDB Local (atomic conditional writes under
 * concurrency, as DynamoDB; docs/STORAGE.md "What the tests run against"): how hot each
 * workload runs the DynamoDB partition keys it shares, in write and read units per operation,
 * collisions included (a refused conditional write is billed). DynamoDB serves one partition
 * key at most 1,000 write and 3,000 read units a second, and does not split a key whose sort
 * keys only grow, so units per operation on the hottest key bound operations per second on
 * DynamoDB whatever the emulator's own speed; docs/DEPLOYING.md ("Limits") derives its table
 * from these rows.
 *
 * Every producer or consumer is its own services instance (its own caches, as a Lambda
 * instance has) over one metered storage. Rates are the emulator's on this machine: they
 * show the collisions a workload causes, not DynamoDB's speed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '../server/config.js';
import { buildServices, type Services } from '../server/service/runtime.js';
import type { PushItem } from '../server/service/log/push.js';
import { startAwsEmulators, type AwsEndpoints } from '../test/support/aws-emulator.js';
import { meteredAwsStorage, type AwsMeter } from './aws-meter.js';
import { ackAll } from './leases.js';

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const fx = (n: number, d = 1): string => n.toFixed(d);
/** DynamoDB's ceilings per partition key, per second (docs: aws-limits-and-prices.md). */
const KEY_WCU = 1_000;
const KEY_RCU = 3_000;
/** How long each concurrent case runs. */
const CASE_MS = 4_000;

/** A ~256-byte JSON event. */
const payload = (n: number): Uint8Array =>
  Buffer.from(
    `{"n":${n},"salt":"${randomBytes(16).toString('hex')}","note":"${'lorem ipsum '.repeat(18).slice(0, 190)}"}`,
  );

const items = (queue: string, partition: string, n: number, dedup: boolean): PushItem[] =>
  Array.from({ length: n }, (_, i) => ({
    queue,
    partition,
    payload: payload(i),
    ...(dedup ? { transactionId: randomUUID() } : {}),
  }));

const instance = (storage: Awaited<ReturnType<typeof meteredAwsStorage>>['storage']): Services =>
  buildServices(storage, { ...loadConfig({}), queueCacheMs: 60_000 });

/** Units per operation on the keys whose name starts with one of `prefixes` (`<table> <pk>`), the hottest of each. */
function hottest(units: Map<string, number>, prefix: string): number {
  let max = 0;
  // The partition's sequencer (`log SEQ#<id>`) is a key of its own, not one of its segments.
  for (const [k, v] of units)
    if (k.startsWith(prefix) && (prefix !== 'log ' || !k.startsWith('log SEQ#')) && v > max) max = v;
  return max;
}

interface Hot {
  label: string;
  perOp: number;
}

/** The keys a case is about, with units per operation on the hottest of each. */
function hotKeys(meter: AwsMeter, ops: number, keys: { label: string; prefix: string }[]): Hot[] {
  return keys.map(({ label, prefix }) => ({ label, perOp: hottest(meter.keyWriteUnits, prefix) / ops }));
}

const ceiling = (hot: Hot[]): string => {
  const top = hot.reduce((a, b) => (b.perOp > a.perOp ? b : a));
  return `${fmt(KEY_WCU / top.perOp)} (${top.label})`;
};

// ------------------------------------------------------------------ push commits

interface PushCase {
  label: string;
  producers: number;
  partitions: number;
  dedup: boolean;
  leaseGroup: boolean;
}

const PUSH_CASES: PushCase[] = [
  { label: 'dedup off, no group', producers: 1, partitions: 1, dedup: false, leaseGroup: false },
  { label: 'dedup off, no group', producers: 8, partitions: 1, dedup: false, leaseGroup: false },
  { label: 'dedup off, no group', producers: 32, partitions: 1, dedup: false, leaseGroup: false },
  { label: 'dedup on', producers: 1, partitions: 1, dedup: true, leaseGroup: false },
  { label: 'dedup on', producers: 8, partitions: 1, dedup: true, leaseGroup: false },
  { label: 'dedup off, one lease group', producers: 1, partitions: 1, dedup: false, leaseGroup: true },
  { label: 'dedup off, one lease group', producers: 8, partitions: 1, dedup: false, leaseGroup: true },
  { label: 'dedup off, one lease group, 8 partitions', producers: 8, partitions: 8, dedup: false, leaseGroup: true },
];

async function pushCase(endpoints: AwsEndpoints, c: PushCase, n: number): Promise<string> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  const queue = `limits-${n}`;
  const producers = Array.from({ length: c.producers }, () => instance(storage));
  const first = producers[0] as Services;
  // A wildcard pop registers the lease group (on a queue that exists).
  if (c.leaseGroup) {
    await first.queues.ensureQueue(queue);
    await first.leasePops.pop({ ...POP, queue });
  }
  // Warm every producer's caches (queue, partition, tail hint), as warm Lambda instances have them.
  await Promise.all(producers.map((p, i) => p.pushes.push(items(queue, `p${i % c.partitions}`, 1, false))));
  meter.reset();
  let commits = 0;
  const latencies: number[] = [];
  const end = performance.now() + CASE_MS;
  const started = performance.now();
  await Promise.all(
    producers.map(async (p, i) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const r = await p.pushes.push(items(queue, `p${i % c.partitions}`, 10, c.dedup));
        if (!r.every((x) => x.status === 'queued')) throw new Error('bench: a push was not queued');
        latencies.push(performance.now() - t0);
        commits++;
      }
    }),
  );
  const secs = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? 0;
  const hot = hotKeys(meter, commits / c.partitions, [
    { label: 'log', prefix: 'log ' },
    { label: 'sequencer', prefix: 'log SEQ#' },
    ...(c.dedup ? [{ label: 'dedup', prefix: 'dedup ' }] : []),
  ]);
  // Queue-wide keys: every commit on any of the queue's partitions writes them.
  const queueHot = c.leaseGroup ? hotKeys(meter, commits, [{ label: 'WORK', prefix: 'leases WORK#' }]) : [];
  const units = [...hot, ...queueHot].map((h) => `${h.label} ${fx(h.perOp)}`).join(', ');
  const queueCeiling = queueHot.length ? ceiling(queueHot) : '—';
  return (
    `| ${c.label} | ${c.partitions} | ${c.producers} | ${fmt(commits / secs)} | ${fmt(p99)} | ` +
    `${fx(meter.failedWrites / commits, 2)} | ${units} | ${ceiling(hot)} | ${queueCeiling} |`
  );
}

const POP = {
  queue: '',
  group: 'g',
  batch: 100,
  partitions: 1,
  autoAck: false,
  wait: false,
  timeoutMs: 0,
} as const;

// ------------------------------------------------------------------ largest pushes

async function bigPush(endpoints: AwsEndpoints, count: number, dedup: boolean): Promise<string> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  const svc = instance(storage);
  await svc.pushes.push(items('big', 'p', 1, false));
  meter.reset();
  const batch = items('big', 'p', count, dedup);
  const t0 = performance.now();
  const r = await svc.pushes.push(batch);
  const ms = performance.now() - t0;
  if (!r.every((x) => x.status === 'queued')) throw new Error('bench: a big push was not queued');
  const dedupUnits = hottest(meter.keyWriteUnits, 'dedup ');
  const logUnits = hottest(meter.keyWriteUnits, 'log ');
  return (
    `| ${fmt(count)} × 256 B, dedup ${dedup ? 'on' : 'off'} | ${fmt(ms)} | ${fmt(meter.dynamoRequests())} | ` +
    `${fmt(meter.s3Puts)} | ${fmt(dedupUnits)} | ${fmt(logUnits)} | ${fx(Math.max(dedupUnits, logUnits) / KEY_WCU, 2)} |`
  );
}

// ------------------------------------------------------------------ consumers of one partition

async function leaseConsumers(endpoints: AwsEndpoints, groups: number): Promise<string> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  const producer = instance(storage);
  const queue = 'consumed';
  const names = Array.from({ length: groups }, (_, g) => `g${g}`);
  const consumers = names.map(() => instance(storage));
  for (const [g, svc] of consumers.entries()) await svc.leasePops.pop({ ...POP, queue, group: names[g] as string });
  for (let b = 0; b < 20; b++) await producer.pushes.push(items(queue, 'Default', 100, false));
  meter.reset();
  let cycles = 0;
  const started = performance.now();
  await Promise.all(
    consumers.map(async (svc, g) => {
      for (;;) {
        const r = await svc.leasePops.pop({ ...POP, queue, partition: 'Default', group: names[g] as string });
        if (!r) return;
        await ackAll(svc, r);
        cycles++;
      }
    }),
  );
  const secs = (performance.now() - started) / 1000;
  const w = hottest(meter.keyWriteUnits, 'leases ') / cycles;
  const rd = hottest(meter.keyReadUnits, 'log ') / cycles;
  return (
    `| pop + ack of 100, ${groups} lease group${groups > 1 ? 's' : ''} | ${fmt(cycles / secs)} | ` +
    `${fx(meter.failedWrites / cycles, 2)} | leases (cursor rows) ${fx(w)} | log ${fx(rd)} | ` +
    `${fmt(Math.min(KEY_WCU / w, KEY_RCU / rd))} |`
  );
}

async function claimConsumers(endpoints: AwsEndpoints, consumers: number): Promise<string> {
  const { storage, meter } = await meteredAwsStorage(endpoints);
  const producer = instance(storage);
  const queue = 'claimed';
  await producer.queues.ensurePartition(await producer.queues.ensureQueue(queue), 'Default');
  await producer.claims.create(queue, 'Default', 'g', 'earliest');
  for (let b = 0; b < 20; b++) await producer.pushes.push(items(queue, 'Default', 100, false));
  const svcs = Array.from({ length: consumers }, () => instance(storage));
  meter.reset();
  let cycles = 0;
  const started = performance.now();
  await Promise.all(
    svcs.map(async (svc) => {
      for (;;) {
        const got = await svc.claims.poll(queue, 'Default', 'g', { max: 10, principal: 'bench' });
        if (got.records.length === 0) return;
        await svc.claims.ack(
          queue,
          'Default',
          'g',
          got.records.map((r) => r.offset),
        );
        cycles++;
      }
    }),
  );
  const secs = (performance.now() - started) / 1000;
  const w = hottest(meter.keyWriteUnits, 'claims ') / cycles;
  const rd = hottest(meter.keyReadUnits, 'log ') / cycles;
  return (
    `| claim poll + ack of 10, one group, ${consumers} consumer${consumers > 1 ? 's' : ''} | ${fmt(cycles / secs)} | ` +
    `${fx(meter.failedWrites / cycles, 2)} | claims (the group's state) ${fx(w)} | log ${fx(rd)} | ` +
    `${fmt(Math.min(KEY_WCU / w, KEY_RCU / rd))} |`
  );
}

// ------------------------------------------------------------------ the section

export async function limitsBench(): Promise<string> {
  const emulator = await startAwsEmulators();
  try {
    const pushRows: string[] = [];
    for (const [n, c] of PUSH_CASES.entries()) pushRows.push(await pushCase(emulator.endpoints, c, n));
    const bigRows = [
      await bigPush(emulator.endpoints, 1_000, false),
      await bigPush(emulator.endpoints, 1_000, true),
      await bigPush(emulator.endpoints, 10_000, true),
    ];
    const consumerRows = [
      await leaseConsumers(emulator.endpoints, 1),
      await leaseConsumers(emulator.endpoints, 4),
      await claimConsumers(emulator.endpoints, 1),
      await claimConsumers(emulator.endpoints, 4),
    ];
    return [
      '## Limits: hot keys on the AWS backend',
      '',
      'Command: `npm run bench -- --only limits`',
      '',
      `Measured ${new Date().toISOString().slice(0, 10)} on DynamoDB Local (atomic conditional writes and transactions under concurrent requests, as DynamoDB) and moto for S3, with an SDK middleware counting write and read units per partition key as DynamoDB bills them (1 KB per write unit per item, twice inside a transaction, refused conditional writes included; 4 KB per strongly consistent read unit). Each producer or consumer is its own services instance with its own caches, as a Lambda instance is, all in one process. DynamoDB serves one partition key at most 1,000 write and 3,000 read units a second and does not split a key whose sort keys only grow (a partition’s segments), so **units per operation on the hottest key bound the operations per second on DynamoDB**, whatever the emulator’s speed; the ceiling columns divide. The rates are DynamoDB Local’s on this machine (it runs transactions one at a time, so it never answers \`TransactionConflict\`): they show the collisions a workload causes, not DynamoDB’s speed. [DEPLOYING.md](DEPLOYING.md#limits) turns these rows into the limits table.`,
      '',
      `### Pushes of 10 × 256 B into one queue (${CASE_MS / 1000} s per row)`,
      '',
      'Commit scheme 2: a push takes its offsets from the partition’s sequencer item (one unconditional `UpdateItem`), then puts its segment there, in one transaction with the push’s marker when there is one (dedup on, a blob); only the push whose take finds the partition drained also writes its has-work item (`WORK#<queueId>`) in that commit, whatever the number of lease groups (docs/STORAGE.md, “Offsets come from a sequencer”, “What a commit costs”). Units per commit on the hottest key of each kind: `log` (the partition’s segments and markers), `sequencer` (the partition’s `SEQ#` item), `dedup` (the partition’s transactionId reservations) and `WORK` (per queue: has-work items, written only when a partition goes from drained to having work). Collisions: refused conditional writes and cancelled transactions per commit.',
      '',
      '| case | partitions | producers | commits/s on DynamoDB Local | p99 ms | collisions per commit | write units per commit on the hottest key | commits/s per partition on DynamoDB (1,000 WCU/s per key) | commits/s per queue on DynamoDB |',
      '|---|---:|---:|---:|---:|---:|---|---:|---:|',
      ...pushRows,
      '',
      '### The largest pushes, into one partition',
      '',
      'One push from a warm process; the reservations of a push with transactionIds are independent conditional puts, 32 in flight (`writeConcurrency`). “Seconds of one key” is the write units it puts on its hottest key over 1,000: the share of a second of that key’s capacity one such push takes on DynamoDB.',
      '',
      '| push | ms on DynamoDB Local | DynamoDB requests | S3 PUTs | write units on the dedup key | write units on the log key | seconds of one key |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...bigRows,
      '',
      '### Consumers of one partition (2,000 messages, drained)',
      '',
      'Partition-lease groups keep their cursor rows under the partition’s id in the `leases` table (one key for every group of the partition); a record-claim group keeps its state under one key per (partition, group). Every consumer’s reads of the segments go to the partition’s `log` key (segments of 100 × 256 B are S3 objects: a pop reads them from S3, skipping the index query when the entries it remembers cover the batch). So the lease rows’ ceiling is for all lease groups of the partition together, the claim rows’ for one group.',
      '',
      '| case | cycles/s on DynamoDB Local | collisions per cycle | write units per cycle, hottest key | read units per cycle, hottest key | cycles/s on DynamoDB (1,000 WCU/s, 3,000 RCU/s per key) |',
      '|---|---:|---:|---|---|---:|',
      ...consumerRows,
    ].join('\n');
  } finally {
    await emulator.stop();
  }
}
