/**
 * The kill -9 probe (docs/SECURITY.md, "How it is tested"): the local server as `npm start` runs
 * it, killed with SIGKILL over and over while clients push, pop and ack partition leases, and poll
 * and ack record claims. After the last cycle, on a fresh start: every acknowledged push is
 * readable, each partition's offsets run 0..n-1 with no hole or repeat, no message is stored twice,
 * and neither group's progress has passed a message its consumer never sent an ack for.
 *
 * @example
 * ```ts
 * const r = await runCrashProbe({ cycles: 20, dataDir });
 * expect(r.violations).toEqual([]);
 * ```
 */
import { startServerProcess, type ServerProcess } from './process.js';
import { rawRequest, type RawReply } from './raw-http.js';

export interface CrashOptions {
  cycles: number;
  /** The server's data directory (kept across cycles). */
  dataDir: string;
  /** How long load runs before each kill, in ms: a random time in this range. */
  loadMs?: [number, number];
}

export interface CrashReport {
  cycles: number;
  requests: number;
  /** Messages whose push was answered 201 queued. */
  acknowledged: number;
  /** Acknowledged messages not readable after the last restart. */
  lost: number;
  /** Messages stored more than once (by transactionId). */
  duplicated: number;
  fiveXx: number;
  /** One line per broken rule (the first 25). */
  violations: string[];
}

const QUEUE = 'crash';
const PARTITIONS = ['p0', 'p1'];
/** Clients pushing single messages into p1 at once. */
const SINGLE_PUSHERS = 8;
const JSON_TYPE = { 'content-type': 'application/json' };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Popped {
  partitionId: string;
  offset: number;
  transactionId: string;
  leaseId: string;
}

/** What the clients did and were told, across cycles. */
class Ledger {
  acknowledged = new Set<string>();
  /** `partitionId:offset` of every message a lease ack was sent for (answered or not). */
  leaseAcksSent = new Set<string>();
  /** Offsets of p0 a claim ack was sent for. */
  claimAcksSent = new Set<number>();
  requests = 0;
  fiveXx = 0;
}

/** One request; connection errors (the server was killed) come back as status 0. */
async function call(
  ledger: Ledger,
  server: ServerProcess,
  method: string,
  path: string,
  body?: unknown,
): Promise<RawReply> {
  ledger.requests++;
  try {
    const r = await rawRequest(server.url, method, path, {
      headers: JSON_TYPE,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      timeoutMs: 10_000,
    });
    if (r.status >= 500) ledger.fiveXx++;
    return r;
  } catch {
    return { status: 0, headers: {}, text: '', json: undefined };
  }
}

/** The clients of one cycle: they run until `stop` says so (the kill ends their requests anyway). */
function load(ledger: Ledger, server: ServerProcess, stop: { now: boolean }, cycle: number): Promise<void>[] {
  const pusher = async (w: number): Promise<void> => {
    for (let seq = 0; !stop.now; seq++) {
      const n = 1 + (seq % 5);
      const ids = Array.from({ length: n }, (_, i) => `c${cycle}-w${w}-${seq}-${i}`);
      const partition = PARTITIONS[w % PARTITIONS.length];
      const r = await call(ledger, server, 'POST', '/api/v1/push', {
        items: ids.map((transactionId) => ({ queue: QUEUE, partition, transactionId, payload: { w } })),
      });
      if (r.status === 0) return;
      if (r.status === 201)
        for (const item of r.json as { status: string; transaction_id: string }[])
          if (item.status === 'queued') ledger.acknowledged.add(item.transaction_id);
    }
  };
  // Single messages from many clients at once into one partition: the server coalesces them
  // into shared commits, so kills land in the middle of those too.
  const singlePusher = async (w: number): Promise<void> => {
    for (let seq = 0; !stop.now; seq++) {
      const transactionId = `c${cycle}-s${w}-${seq}`;
      const r = await call(ledger, server, 'POST', '/api/v1/push', {
        items: [{ queue: QUEUE, partition: 'p1', transactionId, payload: { s: w } }],
      });
      if (r.status === 0) return;
      if (r.status === 201 && (r.json as { status: string }[])[0]?.status === 'queued')
        ledger.acknowledged.add(transactionId);
    }
  };
  const leaseConsumer = async (): Promise<void> => {
    while (!stop.now) {
      const r = await call(ledger, server, 'GET', `/api/v1/pop/queue/${QUEUE}?consumerGroup=lg&batch=5&leaseSeconds=1`);
      if (r.status === 0) return;
      if (r.status !== 200) {
        await sleep(10);
        continue;
      }
      const messages = (r.json as { messages: Popped[] }).messages;
      for (const m of messages) ledger.leaseAcksSent.add(`${m.partitionId}:${m.offset}`);
      const acked = await call(ledger, server, 'POST', '/api/v1/ack/batch', {
        consumerGroup: 'lg',
        acknowledgments: messages.map((m) => ({ ...m, status: 'completed' })),
      });
      if (acked.status === 0) return;
    }
  };
  const claimConsumer = async (): Promise<void> => {
    const group = `/api/v1/queues/${QUEUE}/partitions/p0/groups/cg`;
    while (!stop.now) {
      const r = await call(ledger, server, 'POST', `${group}/poll`, { max: 5, visibilityMs: 500 });
      if (r.status === 0) return;
      const records = r.status === 200 ? (r.json as { records: { offset: number }[] }).records : [];
      if (records.length === 0) {
        await sleep(10);
        continue;
      }
      for (const rec of records) ledger.claimAcksSent.add(rec.offset);
      const acked = await call(ledger, server, 'POST', `${group}/ack`, { offsets: records.map((x) => x.offset) });
      if (acked.status === 0) return;
    }
  };
  const singles = Array.from({ length: SINGLE_PUSHERS }, (_, w) => singlePusher(w));
  return [pusher(0), pusher(1), pusher(2), ...singles, leaseConsumer(), leaseConsumer(), claimConsumer()];
}

/** Reads everything back on a clean start and checks the rules (see the module comment). */
async function verify(
  ledger: Ledger,
  server: ServerProcess,
  violations: string[],
): Promise<{ lost: number; duplicated: number }> {
  const seen = new Map<string, number>();
  const ids = new Map<string, string>();
  for (const partition of PARTITIONS) {
    for (let from = 0; ;) {
      const r = await call(
        ledger,
        server,
        'GET',
        `/api/v1/queues/${QUEUE}/partitions/${partition}/messages?from=${from}&limit=1000`,
      );
      if (r.status === 404) break;
      const page = r.json as {
        partitionId: string;
        messages: { offset: number; transactionId: string }[];
        next: number;
      };
      ids.set(partition, page.partitionId);
      page.messages.forEach((m, i) => {
        if (m.offset !== from + i)
          violations.push(`${partition}: offset ${m.offset} where ${from + i} was due (a hole or a repeat)`);
        seen.set(m.transactionId, (seen.get(m.transactionId) ?? 0) + 1);
      });
      if (page.messages.length === 0) break;
      from = page.next;
    }
  }
  let lost = 0;
  for (const id of ledger.acknowledged) if (!seen.has(id)) lost++;
  if (lost > 0) violations.push(`${lost} acknowledged messages are not readable`);
  const duplicated = [...seen.values()].filter((n) => n > 1).length;
  if (duplicated > 0) violations.push(`${duplicated} messages are stored more than once`);
  const lg = await call(ledger, server, 'GET', '/api/v1/consumer-groups/lg');
  if (lg.status === 200)
    for (const q of (lg.json as { queues: { detail: { partitionId: string; committed: number | null }[] }[] }).queues)
      for (const d of q.detail)
        for (let o = 0; o <= (d.committed ?? -1); o++)
          if (!ledger.leaseAcksSent.has(`${d.partitionId}:${o}`)) {
            violations.push(`lease group lg passed ${d.partitionId}:${o}, which its consumer never acked`);
            break;
          }
  const cg = await call(ledger, server, 'GET', `/api/v1/queues/${QUEUE}/partitions/p0/groups/cg`);
  if (cg.status === 200) {
    const { committed } = cg.json as { committed: number };
    for (let o = 0; o < committed; o++)
      if (!ledger.claimAcksSent.has(o)) {
        violations.push(`claim group cg passed p0:${o}, which its consumer never acked`);
        break;
      }
  }
  return { lost, duplicated };
}

/** Runs the probe (see the module comment); `dataDir` should be empty at the start. */
export async function runCrashProbe(opts: CrashOptions): Promise<CrashReport> {
  const [minMs, maxMs] = opts.loadMs ?? [300, 800];
  const ledger = new Ledger();
  const violations: string[] = [];
  const env = { SLUICE_DATA_DIR: opts.dataDir };
  for (let cycle = 0; cycle < opts.cycles; cycle++) {
    const server = await startServerProcess(env);
    try {
      if (cycle === 0) {
        // Redeliveries caused by the kills must never dead-letter anything (that would move a group on).
        await call(ledger, server, 'POST', '/api/v1/configure', {
          queue: QUEUE,
          options: { retryLimit: 1000, maxAttempts: 1000 },
        });
        for (const partition of PARTITIONS)
          await call(ledger, server, 'POST', '/api/v1/push', {
            items: [{ queue: QUEUE, partition, payload: 'first' }],
          });
        await call(ledger, server, 'PUT', `/api/v1/queues/${QUEUE}/partitions/p0/groups/cg`, { start: 'earliest' });
      }
      const stop = { now: false };
      const clients = load(ledger, server, stop, cycle);
      await sleep(minMs + Math.random() * (maxMs - minMs));
      await server.stop('SIGKILL');
      stop.now = true;
      await Promise.all(clients);
    } finally {
      await server.stop('SIGKILL');
    }
  }
  const last = await startServerProcess(env);
  try {
    const { lost, duplicated } = await verify(ledger, last, violations);
    return {
      cycles: opts.cycles,
      requests: ledger.requests,
      acknowledged: ledger.acknowledged.size,
      lost,
      duplicated,
      fiveXx: ledger.fiveXx,
      violations: violations.slice(0, 25),
    };
  } finally {
    await last.stop();
  }
}
