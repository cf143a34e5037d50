/**
 * The contention probe (docs/SECURITY.md, "How it is tested"): consumers racing each other over
 * HTTP, pops of one lease group on a few partitions and claim polls of one claim group on one
 * partition, while a producer keeps pushing. Each consumer acks all it gets at once, so every
 * message must be handed out exactly once per group: a second delivery means two consumers held it
 * at once (leases last 5 minutes and claims 5 minutes here, so nothing expires on its own).
 *
 * @example
 * ```ts
 * const r = await runContentionProbe({ consumeRequests: 2000, url: server.url });
 * expect(r.violations).toEqual([]);
 * ```
 */
import { rawRequest, type RawReply } from './raw-http.js';

export interface ContentionOptions {
  url: string;
  /** Pops plus claim polls to send before the producer stops (then both groups drain). */
  consumeRequests: number;
  /** Consumers of each kind. */
  consumers?: number;
}

export interface ContentionReport {
  /** Pops and claim polls sent. */
  requests: number;
  pushed: number;
  /** Messages never delivered (after the drain). */
  lost: number;
  /** Messages delivered more than once. */
  duplicated: number;
  fiveXx: number;
  violations: string[];
}

const LEASE_QUEUE = 'contend-lease';
const CLAIM_QUEUE = 'contend-claim';
const CLAIM_GROUP = `/api/v1/queues/${CLAIM_QUEUE}/partitions/Default/groups/racers`;
const PARTITIONS = ['p0', 'p1', 'p2'];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runContentionProbe(opts: ContentionOptions): Promise<ContentionReport> {
  const consumers = opts.consumers ?? 6;
  const report: ContentionReport = { requests: 0, pushed: 0, lost: 0, duplicated: 0, fiveXx: 0, violations: [] };
  const send = async (method: string, path: string, body?: unknown): Promise<RawReply> => {
    const r = await rawRequest(opts.url, method, path, {
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (r.status >= 500) {
      report.fiveXx++;
      if (report.violations.length < 25)
        report.violations.push(`${method} ${path} → ${r.status} ${r.text.slice(0, 200)}`);
    }
    return r;
  };
  /** Deliveries per message: `lease:<partitionId>:<offset>` or `claim:<offset>`. */
  const delivered = new Map<string, number>();
  const deliver = (key: string): void => {
    const n = (delivered.get(key) ?? 0) + 1;
    delivered.set(key, n);
    if (n === 2 && report.violations.length < 25) report.violations.push(`${key} was handed out twice`);
  };
  const expected = new Set<string>();

  await send('POST', '/api/v1/configure', { queue: LEASE_QUEUE, options: { leaseTime: 300 } });
  await send('POST', '/api/v1/configure', { queue: CLAIM_QUEUE, options: { visibilityTimeoutMs: 300_000 } });
  await send('PUT', CLAIM_GROUP, { start: 'earliest' });

  let producing = true;
  const producer = async (): Promise<void> => {
    for (let i = 0; producing; i++) {
      const lease = i % 2 === 0;
      const r = await send('POST', '/api/v1/push', {
        items: Array.from({ length: 5 }, (_, j) => ({
          queue: lease ? LEASE_QUEUE : CLAIM_QUEUE,
          partition: lease ? PARTITIONS[i % PARTITIONS.length] : 'Default',
          payload: { i, j },
        })),
      });
      if (r.status !== 201) continue;
      for (const item of r.json as { partition_id: string; offset: number }[]) {
        expected.add(lease ? `lease:${item.partition_id}:${item.offset}` : `claim:${item.offset}`);
        report.pushed++;
      }
      await sleep(2);
    }
  };
  /** A consumer stops once the producer has and it found nothing this many times in a row. */
  const IDLE_ROUNDS = 3;
  const leaseConsumer = async (): Promise<void> => {
    for (let idle = 0; producing || idle < IDLE_ROUNDS;) {
      report.requests++;
      const r = await send('GET', `/api/v1/pop/queue/${LEASE_QUEUE}?consumerGroup=racers&batch=2`);
      if (r.status !== 200) {
        idle = producing ? 0 : idle + 1;
        await sleep(5);
        continue;
      }
      idle = 0;
      const messages = (r.json as { messages: { partitionId: string; offset: number; transactionId: string }[] })
        .messages;
      for (const m of messages) deliver(`lease:${m.partitionId}:${m.offset}`);
      const acks = await send('POST', '/api/v1/ack/batch', {
        consumerGroup: 'racers',
        acknowledgments: messages.map((m) => ({ ...m, status: 'completed' })),
      });
      for (const a of (acks.json as { success: boolean; error: string | null }[] | undefined) ?? [])
        if (!a.success && report.violations.length < 25) report.violations.push(`a lease ack failed: ${a.error}`);
    }
  };
  const claimConsumer = async (): Promise<void> => {
    for (let idle = 0; producing || idle < IDLE_ROUNDS;) {
      report.requests++;
      const r = await send('POST', `${CLAIM_GROUP}/poll`, { max: 2 });
      const records = r.status === 200 ? (r.json as { records: { offset: number }[] }).records : [];
      if (records.length === 0) {
        idle = producing ? 0 : idle + 1;
        await sleep(5);
        continue;
      }
      idle = 0;
      for (const rec of records) deliver(`claim:${rec.offset}`);
      await send('POST', `${CLAIM_GROUP}/ack`, { offsets: records.map((x) => x.offset) });
    }
  };
  const pushing = producer();
  const consuming = [
    ...Array.from({ length: consumers }, leaseConsumer),
    ...Array.from({ length: consumers }, claimConsumer),
  ];
  while (report.requests < opts.consumeRequests) await sleep(20);
  producing = false;
  await pushing;
  await Promise.all(consuming);

  for (const key of expected) if (!delivered.has(key)) report.lost++;
  report.duplicated = [...delivered.values()].filter((n) => n > 1).length;
  if (report.lost > 0) report.violations.push(`${report.lost} pushed messages were never handed out`);
  const group = await send('GET', CLAIM_GROUP);
  const { committed, tail } = group.json as { committed: number; tail: number };
  if (committed !== tail) report.violations.push(`the claim group stands at ${committed}, the tail at ${tail}`);
  return report;
}
