/**
 * The races: for each, its size (times a scale: 1 in `npm test`, more with
 * `npm run soak:aws`), what the parent prepares, what each service instance does, when it is
 * over, and what is checked against the workers' logs and the end state.
 *
 * Each runs over 3 OS processes of 4 service instances each (12 "Lambda instances", each with
 * its own SDK clients and caches). Where a scenario kills a process (`kill`), that process
 * holds consumers only, SIGKILLed mid-run: what it held must come back to the others.
 */
import { ERR_LEASE } from '../../server/core/leases.js';
import { QUEUE_OPTION_DEFAULTS } from '../../server/core/queue-options.js';
import type { SluiceConfig } from '../../server/config.js';
import { leaseKeys } from '../../server/service/leases/lease-store.js';
import { TOMBSTONE_PK, logKeys } from '../../server/service/log/log-store.js';
import type { Services } from '../../server/service/runtime.js';
import {
  addTally,
  checkClaims,
  checkLeases,
  checkPushes,
  checkQueueDelete,
  emptyTally,
  eventsOf,
  unavailableCount,
} from './checks.js';
import type { StoredView, Tally } from './checks.js';
import type { RaceEvent, ScenarioName, WorkerSpec } from './protocol.js';
import {
  consumeClaims,
  consumeLeases,
  deleteRepeatedly,
  popAutoAck,
  produce,
  produceUntilStopped,
  redriveDeadLetters,
  type AckStyle,
  type RoleContext,
} from './roles.js';

export interface Role {
  name: string;
  /** Ends by itself (the parent waits for it); otherwise it runs until the parent says stop. */
  selfEnding: boolean;
  run(ctx: RoleContext): Promise<void>;
}

export interface ScenarioResult {
  tally: Tally;
  /** State-changing calls the instances made. */
  ops: number;
  /** Pushes answered 503 (retried with the same transactionIds). */
  unavailable: number;
  /** How much of the race happened (the test asserts each is above 0, so a race that degenerates fails). */
  exercised: Record<string, number>;
}

type Params = Record<string, unknown>;

export interface Scenario {
  name: ScenarioName;
  procs: number;
  instances: number;
  /** Sizes for a scale (1 = the CI run). */
  params(scale: number): Params;
  /** Service settings of every instance. */
  config?: Partial<SluiceConfig>;
  /** SIGKILL this process this long after the workers started. */
  kill?: { proc: number; afterMs: number };
  /** Longest the run may take at scale 1 (scaled linearly); past it the run fails. */
  budgetMs: number;
  setup?(svc: Services, p: Params): Promise<void>;
  role(spec: WorkerSpec, index: number): Role;
  /** Besides every self-ending role having ended: whether the run is complete (read from storage). */
  done?(svc: Services, p: Params): Promise<boolean>;
  check(events: readonly RaceEvent[], svc: Services, p: Params, killed: ReadonlySet<string>): Promise<ScenarioResult>;
}

const PARTITION = 'Default';

/** Every message of a partition, in offset order. */
export async function readAll(svc: Services, partitionId: string): Promise<StoredView[]> {
  const out: StoredView[] = [];
  for (;;) {
    const page = await svc.segments.readRaw(partitionId, out.length, { maxCount: 1000 });
    out.push(...page.map((m) => ({ offset: m.offset, txid: m.transactionId, id: m.id })));
    if (page.length < 1000) return out;
  }
}

async function partitionId(svc: Services, queue: string): Promise<string> {
  const part = await svc.queues.getPartition(queue, PARTITION);
  if (!part) throw new Error(`queue ${queue} has no partition ${PARTITION}`);
  return part.id;
}

/** How often consecutive stored messages come from different producers: the pushes did interleave. */
const producerSwitches = (stored: readonly StoredView[]): number =>
  stored.filter((m, i) => i > 0 && m.txid.split('-')[0] !== stored[i - 1]!.txid.split('-')[0]).length;

async function blobCount(svc: Services, prefix: string): Promise<number> {
  let n = 0;
  let after: string | undefined;
  do {
    const page = await svc.storage.blobs.list(prefix, { after, limit: 1000 });
    n += page.blobs.length;
    after = page.next;
  } while (after !== undefined);
  return n;
}

const opsOf = (events: readonly RaceEvent[]): number =>
  events.filter((e) => e.k !== 'begin' && e.k !== 'w' && e.k !== 'stats').length;

/** Producers: instance 0 of the first `n` processes. */
const isProducer = (spec: WorkerSpec, index: number, n: number): boolean =>
  index % spec.instances === 0 && Math.floor(index / spec.instances) < n;

// ------------------------------------------------------------------ pushes

const pushes: Scenario = {
  name: 'pushes',
  procs: 3,
  instances: 4,
  budgetMs: 60_000,
  params: (scale) => ({ queues: ['plain', 'grouped'], perProducer: 24 * scale, maxBatch: 4 }),
  // One queue has no group; the other has a lease group, whose commits that find the partition
  // drained also write its has-work item (in a transaction with the segment).
  async setup(svc) {
    await svc.queues.ensureQueue('grouped');
    await svc.groups.register('grouped', 'watchers', 'lease', { mode: 'all', from: null });
  },
  role(spec, index) {
    const p = spec.params as { queues: string[]; perProducer: number; maxBatch: number };
    const queue = p.queues[index % p.queues.length]!;
    return {
      name: 'producer',
      selfEnding: true,
      run: (ctx) => produce(ctx, { queue, partition: PARTITION, producer: `P${index}` }, p.perProducer, p.maxBatch),
    };
  },
  async check(events, svc, p) {
    const q = p as { queues: string[]; perProducer: number };
    const all = eventsOf(events, 'push');
    const tally = emptyTally();
    let interleavings = 0;
    for (const queue of q.queues) {
      const pid = await partitionId(svc, queue);
      const stored = await readAll(svc, pid);
      const r = checkPushes(
        all.filter((e) => e.queue === queue),
        pid,
        stored,
      );
      addTally(tally, { ...r, violations: r.violations.map((x) => `${queue}: ${x}`) });
      interleavings += producerSwitches(stored);
    }
    const acked = new Set(all.flatMap((e) => (e.outcome === 'ok' ? (e.results ?? []).map((r) => r.txid) : [])));
    const expected = 12 * q.perProducer;
    if (acked.size !== expected) tally.violations.push(`${acked.size} of ${expected} messages acknowledged`);
    return {
      tally,
      ops: opsOf(events),
      unavailable: unavailableCount(all),
      exercised: { interleaved: interleavings, blobSegments: await blobCount(svc, 'segments/') },
    };
  },
};

// ------------------------------------------------------------------ pops

interface LeaseParams {
  queue: string;
  group: string;
  producers: number;
  perProducer: number;
  leaseSeconds: number;
  styles: AckStyle[];
  lateMs: [number, number];
  wildcardOnly?: boolean;
}

function leaseScenario(
  name: 'pops' | 'expiry' | 'wildcard',
  p: (scale: number) => LeaseParams,
  extra: Partial<Scenario>,
): Scenario {
  return {
    name,
    procs: 3,
    instances: 4,
    budgetMs: 60_000,
    params: (scale) => ({ ...p(scale) }),
    role(spec, index) {
      const q = spec.params as unknown as LeaseParams;
      if (isProducer(spec, index, q.producers))
        return {
          name: 'producer',
          selfEnding: true,
          run: (ctx) =>
            produce(ctx, { queue: q.queue, partition: PARTITION, producer: `P${index}` }, q.perProducer, 5, 30),
        };
      return {
        name: 'consumer',
        selfEnding: false,
        run: (ctx) =>
          consumeLeases(ctx, {
            queue: q.queue,
            partition: PARTITION,
            group: q.group,
            leaseSeconds: q.leaseSeconds,
            maxBatch: 8,
            styles: q.styles,
            lateMs: q.lateMs,
            wildcardOnly: q.wildcardOnly,
          }),
      };
    },
    async done(svc, p) {
      const q = p as unknown as LeaseParams;
      const part = await svc.queues.getPartition(q.queue, PARTITION);
      if (!part) return false;
      const row = await svc.storage.items.get('leases', leaseKeys.cursor(part.id, q.group));
      return row?.attrs['committed'] === q.producers * q.perProducer - 1;
    },
    async check(events, svc, p, killed) {
      const q = p as unknown as LeaseParams;
      const pid = await partitionId(svc, q.queue);
      const stored = await readAll(svc, pid);
      const all = eventsOf(events, 'push');
      const tally = checkPushes(all, pid, stored);
      if (stored.length !== q.producers * q.perProducer)
        tally.violations.push(`${stored.length} messages stored, ${q.producers * q.perProducer} pushed`);
      const row = await svc.storage.items.get('leases', leaseKeys.cursor(pid, q.group));
      addTally(
        tally,
        checkLeases({
          partitionId: pid,
          group: q.group,
          leaseMs: q.leaseSeconds * 1000,
          stored,
          events,
          final: row ? { committed: row.attrs['committed'] as number } : undefined,
          killed,
        }),
      );
      const pops = eventsOf(events, 'pop');
      const staleAcks = eventsOf(events, 'ack').filter((a) => a.results?.some((r) => r.error === ERR_LEASE)).length;
      return {
        tally,
        ops: opsOf(events),
        unavailable: unavailableCount(all),
        exercised: {
          leases: pops.length,
          redelivered: pops.reduce((n, p) => n + p.msgs.length, 0) - stored.length,
          ...(q.leaseSeconds <= 1 ? { staleAcksRefused: staleAcks } : {}),
          ...(killed.size > 0 ? { killedInstances: killed.size } : {}),
        },
      };
    },
    ...extra,
  };
}

/** Pops of one (partition, group) while it is pushed to: long leases, acks in one go, in halves, or with a retry. */
const pops = leaseScenario(
  'pops',
  (scale) => ({
    queue: 'work',
    group: 'billing',
    producers: 2,
    perProducer: 90 * scale,
    leaseSeconds: 30,
    styles: ['prompt', 'prompt', 'split', 'retry'],
    lateMs: [0, 0],
  }),
  {},
);

/**
 * Wildcard pops only, while producers push: every message must be found through the work index,
 * whose item pushes write when they find the partition drained and consumers clear when they
 * drain it, so flips and clears race each other (and pushes) across processes.
 */
const wildcard = leaseScenario(
  'wildcard',
  (scale) => ({
    queue: 'work',
    group: 'billing',
    producers: 2,
    perProducer: 90 * scale,
    leaseSeconds: 30,
    styles: ['prompt', 'prompt', 'split', 'retry'],
    lateMs: [0, 0],
    wildcardOnly: true,
  }),
  {},
);

/** Ack vs lease expiry vs a new pop: 1 s leases, acks around the expiry, and a consumer process killed mid-run. */
const expiry = leaseScenario(
  'expiry',
  (scale) => ({
    queue: 'work',
    group: 'billing',
    producers: 2,
    perProducer: 60 * scale,
    leaseSeconds: 1,
    styles: ['prompt', 'late', 'split', 'retry'],
    lateMs: [700, 1400],
  }),
  { kill: { proc: 2, afterMs: 3000 } },
);

// ------------------------------------------------------------------ claims

interface ClaimParams {
  queue: string;
  group: string;
  producers: number;
  perProducer: number;
  visibilityMs: number;
  maxAttempts: number;
  nack: number;
  late: number;
  abandon: number;
  /** Every `poisonEvery`-th offset (from 3) is never acked; 0: none. */
  poisonEvery: number;
  redrives: number;
}

const poisonOf = (q: ClaimParams, n: number): number[] =>
  q.poisonEvery > 0 ? Array.from({ length: n }, (_, o) => o).filter((o) => o % q.poisonEvery === 3) : [];

function claimScenario(
  name: 'claims' | 'redrive',
  p: (scale: number) => ClaimParams,
  extra: Partial<Scenario>,
): Scenario {
  const total = (q: ClaimParams): number => q.producers * q.perProducer;
  return {
    name,
    procs: 3,
    instances: 4,
    budgetMs: 60_000,
    params: (scale) => ({ ...p(scale) }),
    async setup(svc, p) {
      const q = p as unknown as ClaimParams;
      await svc.queues.configure({
        queue: q.queue,
        options: { ...QUEUE_OPTION_DEFAULTS, maxAttempts: q.maxAttempts, visibilityTimeoutMs: q.visibilityMs },
      });
    },
    role(spec, index) {
      const q = spec.params as unknown as ClaimParams;
      if (isProducer(spec, index, q.producers))
        return {
          name: 'producer',
          selfEnding: true,
          run: (ctx) =>
            produce(ctx, { queue: q.queue, partition: PARTITION, producer: `P${index}` }, q.perProducer, 5, 30),
        };
      if (q.redrives > 0 && index === 1)
        return {
          name: 'redriver',
          selfEnding: true,
          run: (ctx) =>
            redriveDeadLetters(ctx, {
              queue: q.queue,
              partition: PARTITION,
              group: q.group,
              expected: poisonOf(q, total(q)),
              times: q.redrives,
            }),
        };
      const poison = new Set(poisonOf(q, total(q)));
      return {
        name: 'consumer',
        selfEnding: false,
        run: (ctx) =>
          consumeClaims(ctx, {
            queue: q.queue,
            partition: PARTITION,
            group: q.group,
            visibilityMs: q.visibilityMs,
            maxBatch: 5,
            poison: (o) => poison.has(o),
            nack: q.nack,
            late: q.late,
            abandon: q.abandon,
          }),
      };
    },
    async done(svc, p) {
      const q = p as unknown as ClaimParams;
      try {
        const d = await svc.claims.describe(q.queue, PARTITION, q.group);
        return (
          d.committed === total(q) && d.inFlight === 0 && d.owed === 0 && d.deadLetters >= poisonOf(q, total(q)).length
        );
      } catch {
        return false; // not polled yet
      }
    },
    async check(events, svc, p, killed) {
      const q = p as unknown as ClaimParams;
      const pid = await partitionId(svc, q.queue);
      const stored = await readAll(svc, pid);
      const all = eventsOf(events, 'push');
      const tally = checkPushes(all, pid, stored);
      if (stored.length !== total(q)) tally.violations.push(`${stored.length} messages stored, ${total(q)} pushed`);
      const d = await svc.claims.describe(q.queue, PARTITION, q.group);
      const dead = await svc.claims.listDeadLetters(q.queue, PARTITION, q.group);
      addTally(
        tally,
        checkClaims({
          stored,
          events,
          poison: new Set(poisonOf(q, total(q))),
          maxAttempts: q.maxAttempts,
          final: { ...d, dead: dead.offsets },
          killed,
        }),
      );
      if (q.redrives > 0) {
        const redriven = eventsOf(events, 'redrive').filter((r) => r.ok).length;
        const expected = poisonOf(q, total(q)).length * q.redrives;
        if (redriven !== expected) tally.violations.push(`${redriven} redrives, ${expected} planned`);
      }
      const records = eventsOf(events, 'poll').flatMap((e) => e.records);
      return {
        tally,
        ops: opsOf(events),
        unavailable: unavailableCount(all),
        exercised: {
          handedOut: records.length,
          handedOutAgain: records.filter((r) => r.attempts > 1).length,
          ...(q.redrives > 0 ? { nacks: eventsOf(events, 'nack').filter((n) => n.ok).length } : {}),
          ...(q.redrives > 0 ? { redrives: eventsOf(events, 'redrive').filter((r) => r.ok).length } : {}),
          ...(killed.size > 0 ? { killedInstances: killed.size } : {}),
        },
      };
    },
    ...extra,
  };
}

/** Claim polls of one group: acks, nacks, late acks and abandoned claims, and a consumer process killed mid-run. */
const claims = claimScenario(
  'claims',
  (scale) => ({
    queue: 'jobs',
    group: 'workers',
    producers: 2,
    perProducer: 80 * scale,
    visibilityMs: 1000,
    maxAttempts: 100,
    nack: 0.1,
    late: 0.05,
    abandon: 0.05,
    poisonEvery: 0,
    redrives: 0,
  }),
  { kill: { proc: 2, afterMs: 3000 } },
);

/** Dead letters redriven while polls run: poison records are nacked to the attempt bound, redriven twice each. */
const redrive = claimScenario(
  'redrive',
  (scale) => ({
    queue: 'jobs',
    group: 'workers',
    producers: 2,
    perProducer: 40 * scale,
    visibilityMs: 3000,
    maxAttempts: 2,
    nack: 0,
    late: 0,
    abandon: 0,
    poisonEvery: 8,
    redrives: 2,
  }),
  {},
);

// ------------------------------------------------------------------ queue delete

interface DeleteParams {
  queue: string;
  group: string;
  deletes: number;
  everyMs: number;
  tailMs: number;
}

/** Pushes (and auto-acked pops) from every process while one instance deletes the queue again and again. */
const deleteRace: Scenario = {
  name: 'delete',
  procs: 3,
  instances: 4,
  budgetMs: 60_000,
  config: { queueCacheMs: 300 },
  params: (scale) => ({ queue: 'doomed', group: 'watch', deletes: 4 * scale, everyMs: 1200, tailMs: 1500 }),
  role(spec, index) {
    const q = spec.params as unknown as DeleteParams;
    if (index === 0)
      return {
        name: 'deleter',
        selfEnding: true,
        run: (ctx) => deleteRepeatedly(ctx, { queue: q.queue, times: q.deletes, everyMs: q.everyMs, tailMs: q.tailMs }),
      };
    if (index === spec.instances + 1)
      return {
        name: 'popper',
        selfEnding: false,
        run: (ctx) => popAutoAck(ctx, { queue: q.queue, partition: PARTITION, group: q.group }),
      };
    return {
      name: 'producer',
      selfEnding: false,
      run: (ctx) => produceUntilStopped(ctx, { queue: q.queue, partition: PARTITION, producer: `P${index}` }, 3),
    };
  },
  async check(events, svc, p) {
    const q = p as unknown as DeleteParams;
    const all = eventsOf(events, 'push');
    const pids = new Set<string>();
    for (const e of all) for (const r of e.results ?? []) if (r.status !== 'failed') pids.add(r.partitionId);
    for (const e of eventsOf(events, 'pop')) for (const m of e.msgs) pids.add(m.partitionId);
    const finalPid = await partitionId(svc, q.queue);
    pids.add(finalPid);
    const storedBefore = new Map<string, StoredView[]>();
    const queueIdOf = new Map<string, string>();
    /** What each partition was before maintenance: told in a leftover's report. */
    const before = new Map<string, string>();
    const nameItem = await svc.storage.items.get('meta', logKeys.partition(q.queue, PARTITION));
    for (const pid of pids) {
      storedBefore.set(pid, await readAll(svc, pid));
      // The partition's record, or (once it is retired) its tombstone, names its incarnation.
      const byId = await svc.storage.items.get('meta', logKeys.partitionById(pid));
      const tomb = await svc.storage.items.get('meta', logKeys.partitionTombstone(pid));
      const qid = (byId ?? tomb)?.attrs['queueId'];
      if (typeof qid === 'string') queueIdOf.set(pid, qid);
      const named = nameItem?.attrs['id'] === pid ? 'the name item' : 'not named';
      before.set(
        pid,
        `queueId ${typeof qid === 'string' ? qid : '?'}, ${byId ? 'a record' : 'no record'}, ${tomb ? 'a tombstone' : 'no tombstone'}, ${named}`,
      );
    }
    // Maintenance, with no grace period: everything of the deleted incarnations goes.
    let removed = 0;
    for (let pass = 0; pass < 30; pass++) {
      const r = await svc.deletion.run();
      removed += r.removed;
      if (r.tombstones === 0) break;
    }
    const leftovers: string[] = [];
    for (const pid of pids) {
      if (pid === finalPid) continue;
      const left: string[] = [];
      for (const table of ['log', 'dedup', 'leases', 'claims'] as const) {
        const page = await svc.storage.items.query(table, pid, { limit: 100 });
        if (page.items.length > 0) left.push(`${page.items.length} ${table} items`);
      }
      const qid = queueIdOf.get(pid);
      if (qid && (await svc.storage.items.get('leases', leaseKeys.work(qid, pid)))) left.push('a work item');
      const blobs = await svc.storage.blobs.list(`segments/${pid}/`, { limit: 100 });
      if (blobs.blobs.length > 0) left.push(`${blobs.blobs.length} blobs`);
      if (await svc.queues.partitionById(pid)) left.push('its record (it still resolves by id)');
      if (left.length > 0) leftovers.push(`partition ${pid} (before: ${before.get(pid)}): ${left.join(', ')}`);
    }
    const tombs = await svc.storage.items.query('meta', TOMBSTONE_PK, { limit: 100 });
    const tally = checkQueueDelete({
      events,
      queueCacheMs: deleteRace.config?.queueCacheMs ?? 1000,
      storedBefore,
      finalPartitionId: finalPid,
      queueIdOf,
      finalAfter: await readAll(svc, finalPid),
      leftovers,
      tombstonesLeft: tombs.items.length,
    });
    const deletes = eventsOf(events, 'delete');
    if (deletes.filter((d) => d.existed).length !== q.deletes)
      tally.violations.push(`${deletes.filter((d) => d.existed).length} of ${q.deletes} deletes found the queue`);
    return {
      tally,
      ops: opsOf(events),
      unavailable: unavailableCount(all),
      exercised: {
        incarnations: storedBefore.size,
        popped: eventsOf(events, 'pop').reduce((n, p) => n + p.msgs.length, 0),
        removedByMaintenance: removed,
      },
    };
  },
};

export const SCENARIOS: Record<ScenarioName, Scenario> = {
  pushes,
  pops,
  wildcard,
  expiry,
  claims,
  redrive,
  delete: deleteRace,
};
