/**
 * The race tests' invariants, as pure functions of the workers' event logs and the end state
 * read from storage. Each returns what it counted and a list of violations (empty when the
 * invariant held); `checks.test.ts` feeds them logs with a violation of each kind.
 *
 * Times: `t0`/`t1` bracket a call as its caller saw it, so a write it made landed in between.
 * A check only calls something a violation when the times prove it (no clock is trusted
 * beyond that, and all processes share one machine's clock). Lease checks also replay the
 * cursor rows' version chain, which orders every write to a row without any clock.
 */
import type {
  BeginEvent,
  ClaimAckEvent,
  DeleteEvent,
  NackEvent,
  PollEvent,
  PushEvent,
  RaceEvent,
  RedriveEvent,
  WriteEvent,
} from './protocol.js';

/** What one check found. */
export interface Tally {
  /** Acknowledged (or owed) things that are missing. */
  lost: number;
  /** Things stored, delivered or acked more often than allowed. */
  duplicated: number;
  violations: string[];
}

export const emptyTally = (): Tally => ({ lost: 0, duplicated: 0, violations: [] });

/** Adds `b` into `a`. */
export function addTally(a: Tally, b: Tally): Tally {
  a.lost += b.lost;
  a.duplicated += b.duplicated;
  a.violations.push(...b.violations);
  return a;
}

/**
 * Keeps a report readable: at most `max` violations of each kind (the same message but for its
 * numbers and ids), then how many more of that kind.
 */
function cap(v: string[], max = 5): string[] {
  const kinds = new Map<string, string[]>();
  for (const msg of v) {
    const kind = msg.replace(/[\w…-]*[\d…][\w…-]*/g, '#');
    kinds.set(kind, [...(kinds.get(kind) ?? []), msg]);
  }
  return [...kinds.values()].flatMap((msgs) =>
    msgs.length <= max ? msgs : [...msgs.slice(0, max), `... and ${msgs.length - max} more like the above`],
  );
}

/** Events of one kind. */
export function eventsOf<K extends RaceEvent['k']>(events: readonly RaceEvent[], k: K): Extract<RaceEvent, { k: K }>[] {
  return events.filter((e): e is Extract<RaceEvent, { k: K }> => e.k === k);
}

/** Calls that began but never logged their end: cut short by a kill. */
export function unfinished(events: readonly RaceEvent[]): BeginEvent[] {
  const ended = new Set<string>();
  for (const e of events) if (e.k !== 'begin' && e.k !== 'w' && e.k !== 'stats') ended.add(`${e.inst}#${e.seq}`);
  return eventsOf(events, 'begin').filter((b) => !ended.has(`${b.inst}#${b.seq}`));
}

// ------------------------------------------------------------------ pushes

/** A stored message, as read back from the partition. */
export interface StoredView {
  offset: number;
  txid: string;
  id: string;
}

/**
 * Pushes into one partition: offsets are exactly 0..N-1; every acknowledged message is
 * stored exactly once, where its push said; every `queued` report names the same offset;
 * nothing is stored that nobody pushed; each producer's messages are stored in its send order.
 * A message whose every push attempt failed (or was cut short) may be stored or not.
 */
export function checkPushes(pushes: readonly PushEvent[], partitionId: string, stored: readonly StoredView[]): Tally {
  const t = emptyTally();
  const v: string[] = [];
  stored.forEach((m, i) => {
    if (m.offset !== i) v.push(`offsets are not 0..N-1: position ${i} holds offset ${m.offset}`);
  });
  const at = new Map<string, StoredView[]>();
  for (const m of stored) at.set(m.txid, [...(at.get(m.txid) ?? []), m]);
  for (const [txid, ms] of at) {
    if (ms.length > 1) {
      t.duplicated += ms.length - 1;
      v.push(`${txid} stored ${ms.length} times (offsets ${ms.map((m) => m.offset).join(', ')})`);
    }
  }
  const attempted = new Set<string>();
  const acked = new Map<string, { producer: string; seq: number }>();
  for (const p of pushes) {
    p.items.forEach((it) => attempted.add(it.txid));
    if (p.outcome !== 'ok' || !p.results) continue;
    p.results.forEach((r, j) => {
      if (r.partitionId !== partitionId || r.status === 'failed') return;
      const it = p.items[j];
      if (!it || it.txid !== r.txid) {
        v.push(`push ${p.inst}#${p.seq}: result ${j} names ${r.txid}, not the item sent`);
        return;
      }
      acked.set(r.txid, { producer: p.producer, seq: it.seq });
      const m = at.get(r.txid)?.[0];
      if (!m) return;
      if (r.status === 'queued' && r.offset !== m.offset)
        v.push(`${r.txid} reported queued at ${r.offset} by ${p.inst}#${p.seq}, stored at ${m.offset}`);
      if (r.messageId !== m.id) v.push(`${r.txid} reported as message ${r.messageId}, stored as ${m.id}`);
    });
  }
  for (const txid of acked.keys()) {
    if (!at.has(txid)) {
      t.lost++;
      v.push(`${txid} acknowledged but not stored`);
    }
  }
  for (const txid of at.keys()) if (!attempted.has(txid)) v.push(`${txid} stored but never pushed`);
  const byProducer = new Map<string, { seq: number; offset: number }[]>();
  for (const [txid, a] of acked) {
    const m = at.get(txid)?.[0];
    if (m) byProducer.set(a.producer, [...(byProducer.get(a.producer) ?? []), { seq: a.seq, offset: m.offset }]);
  }
  for (const [producer, list] of byProducer) {
    list.sort((a, b) => a.seq - b.seq);
    for (let i = 1; i < list.length; i++) {
      const a = list[i - 1]!;
      const b = list[i]!;
      if (b.offset <= a.offset)
        v.push(`${producer}: message ${b.seq} stored at ${b.offset}, before message ${a.seq} at ${a.offset}`);
    }
  }
  t.violations = cap(v);
  return t;
}

/** Pushes answered 503 (too contended / aborted), counted and reported, never a failure. */
export const unavailableCount = (pushes: readonly PushEvent[]): number =>
  pushes.filter((p) => p.outcome === 'unavailable').length;

// ------------------------------------------------------------------ leases

export interface LeaseCheckInput {
  partitionId: string;
  group: string;
  leaseMs: number;
  /** Messages pushed to the partition, 0..N-1. */
  stored: readonly StoredView[];
  events: readonly RaceEvent[];
  /** The cursor row at the end. */
  final: { committed: number } | undefined;
  /** Instances whose process was killed (their last call's writes may be unlogged). */
  killed: ReadonlySet<string>;
}

/**
 * One (partition, group) lane under racing pops and acks:
 * - the cursor row's versions form one chain (no version written twice; gaps only where a
 *   killed instance's last write may be unlogged);
 * - a pop takes the lane only when the row it replaced had no live lease at the pop's `now`
 *   (`exp - leaseMs`), and leases the span right after the cursor;
 * - only an ack carrying the live lease's id moves the cursor, and only up to an offset it
 *   completed inside that lease: a stale holder never moves it past what the new one has not acked;
 * - seen from the callers' clocks alone, no pop got a span another pop held, unreleased and
 *   certainly unexpired;
 * - every pop delivered the messages stored at its offsets, and its lease is the one it wrote;
 * - in the end every message was delivered, the cursor is at N-1 and each offset was
 *   completed by exactly one successful ack (or by an ack a kill cut short).
 */
export function checkLeases(c: LeaseCheckInput): Tally {
  const t = emptyTally();
  const v: string[] = [];
  const writes = eventsOf(c.events, 'w').filter((w) => w.pk === c.partitionId && w.sk === c.group);
  const pops = eventsOf(c.events, 'pop').filter((p) => p.msgs[0]?.partitionId === c.partitionId);
  const acks = eventsOf(c.events, 'ack').filter((a) => a.partitionId === c.partitionId);
  const cut = unfinished(c.events);
  const opKey = (e: { inst: string; seq: number }): string => `${e.inst}#${e.seq}`;
  const ackByOp = new Map(acks.map((a) => [opKey(a), a]));
  const cutByOp = new Map(cut.map((b) => [opKey(b), b]));

  // The version chain.
  const byVer = new Map<number, WriteEvent>();
  for (const w of writes) {
    const other = byVer.get(w.ver);
    if (other) {
      t.duplicated++;
      v.push(`cursor version ${w.ver} written twice: by ${opKey(other)} and ${opKey(w)}`);
    } else byVer.set(w.ver, w);
  }
  const maxVer = Math.max(0, ...byVer.keys());
  let gaps = 0;
  for (let ver = 1; ver <= maxVer; ver++) if (!byVer.has(ver)) gaps++;
  if (gaps > c.killed.size)
    v.push(`cursor versions missing from the chain: ${gaps} (killed instances: ${c.killed.size})`);

  const leaseIds = new Set(writes.flatMap((w) => (w.lease ? [w.lease.id] : [])));
  for (const w of [...byVer.values()].sort((a, b) => a.ver - b.ver)) {
    const prev = byVer.get(w.ver - 1);
    const prevState = w.ver === 1 ? { committed: -1, lease: null } : prev;
    if (!prevState) continue;
    const newLease = w.lease !== null && w.lease.id !== prevState.lease?.id;
    if (newLease && w.lease) {
      const now = w.lease.exp - c.leaseMs;
      const held = prevState.lease;
      if (held && held.exp > now)
        v.push(
          `${opKey(w)} took the lane at ${now} (lease ${short(w.lease.id)} over ${w.lease.start}..${w.lease.end}) ` +
            `while ${short(held.id)} over ${held.start}..${held.end} was live until ${held.exp}`,
        );
      if (w.lease.start !== prevState.committed + 1)
        v.push(`${opKey(w)} leased from ${w.lease.start}, the cursor was at ${prevState.committed}`);
    }
    if (w.committed < prevState.committed)
      v.push(`${opKey(w)} moved the cursor back from ${prevState.committed} to ${w.committed}`);
    if (w.committed > prevState.committed) {
      const held = prevState.lease;
      const ack = ackByOp.get(opKey(w));
      const begun = cutByOp.get(opKey(w));
      const by = ack
        ? { leaseId: ack.leaseId, completed: ack.items.filter((i) => i.status === 'completed').map((i) => i.offset) }
        : begun?.op === 'ack'
          ? { leaseId: begun.leaseId ?? '', completed: begun.offsets ?? [] }
          : undefined;
      if (!by) v.push(`${opKey(w)} moved the cursor to ${w.committed} and is not an ack`);
      else if (!held) v.push(`${opKey(w)} moved the cursor to ${w.committed} with no lease on the lane`);
      else if (by.leaseId !== held.id)
        v.push(
          `${opKey(w)}, an ack with lease ${short(by.leaseId)}, moved the cursor to ${w.committed} ` +
            `while the lane was leased to ${short(held.id)}`,
        );
      else if (w.committed > held.end || !by.completed.includes(w.committed))
        v.push(
          `${opKey(w)} moved the cursor to ${w.committed}, which it did not complete inside its lease ` +
            `${short(held.id)} (${held.start}..${held.end})`,
        );
    }
  }

  // What the pops delivered.
  const stored = new Map(c.stored.map((m) => [m.offset, m]));
  const delivered = new Set<number>();
  for (const p of pops) {
    if (!leaseIds.has(p.leaseId)) v.push(`pop ${opKey(p)} answered lease ${short(p.leaseId)}, never written`);
    p.msgs.forEach((m, j) => {
      delivered.add(m.offset);
      const s = stored.get(m.offset);
      if (!s || s.txid !== m.txid)
        v.push(`pop ${opKey(p)} delivered ${m.txid} as offset ${m.offset}, stored: ${s?.txid}`);
      if (j > 0 && m.offset !== p.msgs[j - 1]!.offset + 1) v.push(`pop ${opKey(p)} delivered a span with a gap`);
    });
  }

  // Overlaps seen from the callers' clocks: B certainly began after A's lease landed and
  // certainly ended before it could expire, with no ack of A releasing it before.
  const releasedAt = new Map<string, number>();
  for (const a of acks)
    if (a.results?.some((r) => r.leaseReleased) || a.error !== undefined)
      releasedAt.set(a.leaseId, Math.min(releasedAt.get(a.leaseId) ?? Infinity, a.t0));
  // An ack a kill cut short may have released its lease.
  for (const b of cut)
    if (b.op === 'ack' && b.leaseId !== undefined)
      releasedAt.set(b.leaseId, Math.min(releasedAt.get(b.leaseId) ?? Infinity, b.t0));
  const sorted = [...pops].filter((p) => p.msgs.length > 0).sort((a, b) => a.t0 - b.t0);
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    const aFirst = a.msgs[0]!.offset;
    const aLast = a.msgs.at(-1)!.offset;
    for (let j = i + 1; j < sorted.length && sorted[j]!.t0 < a.t0 + c.leaseMs; j++) {
      const b = sorted[j]!;
      if (!(a.t1 < b.t0 && b.t1 < a.t0 + c.leaseMs)) continue;
      const bFirst = b.msgs[0]!.offset;
      const bLast = b.msgs.at(-1)!.offset;
      if (bLast < aFirst || bFirst > aLast) continue;
      if ((releasedAt.get(a.leaseId) ?? Infinity) < b.t1) continue;
      v.push(
        `pops ${opKey(a)} (${aFirst}..${aLast}, ${a.t0}-${a.t1}) and ${opKey(b)} (${bFirst}..${bLast}, ` +
          `${b.t0}-${b.t1}) held overlapping spans at once`,
      );
    }
  }

  // The end: every message delivered and completed exactly once.
  const completions = new Map<number, number>();
  for (const a of acks)
    a.items.forEach((it, j) => {
      if (it.status === 'completed' && a.results?.[j]?.success)
        completions.set(it.offset, (completions.get(it.offset) ?? 0) + 1);
    });
  const cutShort = new Set(cut.filter((b) => b.op === 'ack').flatMap((b) => b.offsets ?? []));
  for (const m of c.stored) {
    if (!delivered.has(m.offset)) {
      t.lost++;
      v.push(`offset ${m.offset} never delivered`);
    }
    const n = completions.get(m.offset) ?? 0;
    if (n > 1) {
      t.duplicated += n - 1;
      v.push(`offset ${m.offset} completed by ${n} successful acks`);
    } else if (n === 0 && !cutShort.has(m.offset)) {
      t.lost++;
      v.push(`offset ${m.offset} never acked`);
    }
  }
  const last = c.stored.length - 1;
  if (c.final?.committed !== last) v.push(`the cursor ended at ${c.final?.committed}, not ${last}`);
  t.violations = cap(v);
  return t;
}

const short = (id: string): string => (id.length > 12 ? `${id.slice(0, 6)}…${id.slice(-4)}` : id);

// ------------------------------------------------------------------ claims

export interface ClaimCheckInput {
  stored: readonly StoredView[];
  events: readonly RaceEvent[];
  /** Offsets consumers never ack (nacked until dead-lettered, then redriven). */
  poison: ReadonlySet<number>;
  /** The group's attempt bound: another record may end dead only after that many deliveries in its last life. */
  maxAttempts: number;
  /** `describe` and the dead-letter list at the end. */
  final: { committed: number; inFlight: number; owed: number; deadLetters: number; dead: number[] };
  killed: ReadonlySet<string>;
}

/**
 * One (partition, group) of record claims under racing polls, acks, nacks, lapses and redrives:
 * - every record handed out is the one stored at its offset;
 * - no two holders at once: within one life of a record (a redrive starts another) each
 *   attempt number is handed out once, and attempts count up without gaps; and, seen from the
 *   callers' clocks, no record went to a second holder while the first one's claim certainly
 *   stood and had not been handed back;
 * - nothing is handed out again after an ack of it finished (unless redriven);
 * - the position never passes an unfinished record: an ack's `committed` only covers offsets
 *   some ack had begun to finish (or dead letters), and positions never go back;
 * - each redrive is followed by a delivery of that record as attempt 1;
 * - in the end: everything finished (`committed` = N), nothing in flight or owed, every
 *   non-poison record acked, and the dead letters are exactly the poison records.
 */
export function checkClaims(c: ClaimCheckInput): Tally {
  const t = emptyTally();
  const v: string[] = [];
  const polls = eventsOf(c.events, 'poll');
  const acks = eventsOf(c.events, 'cack').filter((a) => a.error === undefined);
  const nacks = eventsOf(c.events, 'nack').filter((n) => n.ok);
  const redrives = eventsOf(c.events, 'redrive').filter((r) => r.ok);
  const cut = unfinished(c.events);
  const opKey = (e: { inst: string; seq: number }): string => `${e.inst}#${e.seq}`;
  const stored = new Map(c.stored.map((m) => [m.offset, m]));

  interface Delivery {
    poll: PollEvent;
    attempts: number;
  }
  const deliveries = new Map<number, Delivery[]>();
  for (const p of polls)
    for (const r of p.records) {
      const s = stored.get(r.offset);
      if (!s || s.txid !== r.txid)
        v.push(`poll ${opKey(p)} handed out ${r.txid} as offset ${r.offset}, stored: ${s?.txid}`);
      deliveries.set(r.offset, [...(deliveries.get(r.offset) ?? []), { poll: p, attempts: r.attempts }]);
    }
  const redrivesOf = new Map<number, RedriveEvent[]>();
  for (const r of redrives) redrivesOf.set(r.offset, [...(redrivesOf.get(r.offset) ?? []), r]);
  const acksOf = new Map<number, ClaimAckEvent[]>();
  for (const a of acks) for (const o of a.offsets) acksOf.set(o, [...(acksOf.get(o) ?? []), a]);
  const nacksOf = new Map<string, NackEvent[]>();
  for (const n of nacks)
    nacksOf.set(`${n.offset}@${n.attempts}`, [...(nacksOf.get(`${n.offset}@${n.attempts}`) ?? []), n]);
  const cutPolls = cut.filter((b) => b.op === 'poll').length;

  /** Whether the holder of delivery `d` handed it back, or someone finished it, in a call begun before `by`. */
  const settledBefore = (o: number, d: Delivery, by: number): boolean =>
    (nacksOf.get(`${o}@${d.attempts}`) ?? []).some((n) => n.t0 < by) || (acksOf.get(o) ?? []).some((a) => a.t0 < by);

  for (const [o, ds] of deliveries) {
    const lives = 1 + (redrivesOf.get(o)?.length ?? 0);
    const counts = new Map<number, number>();
    for (const d of ds) counts.set(d.attempts, (counts.get(d.attempts) ?? 0) + 1);
    for (const [a, n] of counts)
      if (n > lives) {
        t.duplicated += n - lives;
        v.push(`offset ${o} handed out ${n} times as attempt ${a} (${lives} life/lives)`);
      }
    const top = Math.max(...counts.keys());
    const missing = Array.from({ length: top }, (_, i) => i + 1).filter((a) => !counts.has(a));
    if (missing.length > cutPolls) v.push(`offset ${o}: attempts ${missing.join(', ')} never handed out`);
    if ((counts.get(1) ?? 0) < lives && !c.killed.size)
      v.push(`offset ${o} redriven ${lives - 1} times, handed out as attempt 1 only ${counts.get(1) ?? 0} times`);

    // Two holders at once, as the callers' clocks prove it.
    const byT0 = [...ds].sort((x, y) => x.poll.t0 - y.poll.t0);
    for (let i = 0; i < byT0.length; i++) {
      const a = byT0[i]!;
      for (let j = i + 1; j < byT0.length; j++) {
        const b = byT0[j]!;
        const stood = a.poll.t0 + a.poll.vis;
        if (b.poll.t0 >= stood) break;
        const clash =
          a.poll.t1 < b.poll.t0
            ? b.poll.t1 < stood && !settledBefore(o, a, b.poll.t1)
            : Math.max(a.poll.t1, b.poll.t1) < stood &&
              !settledBefore(o, a, Math.max(a.poll.t1, b.poll.t1)) &&
              !settledBefore(o, b, Math.max(a.poll.t1, b.poll.t1));
        if (clash)
          v.push(
            `offset ${o} held twice at once: attempt ${a.attempts} by ${opKey(a.poll)} (${a.poll.t0}-${a.poll.t1}) ` +
              `and attempt ${b.attempts} by ${opKey(b.poll)} (${b.poll.t0}-${b.poll.t1}), visibility ${a.poll.vis} ms`,
          );
      }
    }
    // Handed out after an ack finished it (a redrive begun after that ack may bring it back).
    for (const d of ds) {
      const finishedBy = (acksOf.get(o) ?? []).find((a) => a.t1 < d.poll.t0);
      if (finishedBy && !(redrivesOf.get(o) ?? []).some((r) => r.t1 > finishedBy.t0))
        v.push(`offset ${o} handed out by ${opKey(d.poll)} after ack ${opKey(finishedBy)} finished it`);
    }
  }
  // Each redrive is followed by a delivery as attempt 1.
  for (const [o, rs] of redrivesOf) {
    const firsts = (deliveries.get(o) ?? []).filter((d) => d.attempts === 1).map((d) => d.poll.t1);
    for (const r of rs)
      if (!firsts.some((t1) => t1 > r.t0) && !c.killed.size) {
        t.lost++;
        v.push(`offset ${o} redriven by ${opKey(r)} and never handed out again`);
      }
  }

  // Dead letters besides the poison ones: only records handed out `maxAttempts` times in a life.
  const exhausted = new Set(
    c.final.dead.filter((o) => !c.poison.has(o) && (deliveries.get(o) ?? []).some((d) => d.attempts >= c.maxAttempts)),
  );
  const deadAtEnd = new Set([...c.poison, ...exhausted]);

  // The position: never past an unfinished record, never back.
  const ackBegins = new Map<number, number>();
  for (const a of acks) for (const o of a.offsets) ackBegins.set(o, Math.min(ackBegins.get(o) ?? Infinity, a.t0));
  for (const b of cut)
    if (b.op === 'cack')
      for (const o of b.offsets ?? []) ackBegins.set(o, Math.min(ackBegins.get(o) ?? Infinity, b.t0));
  let passedOk = 0;
  const sortedAcks = [...acks].sort((x, y) => x.t1 - y.t1);
  for (const a of sortedAcks) {
    const committed = a.committed ?? 0;
    for (let o = passedOk; o < committed; o++) {
      if (deadAtEnd.has(o)) continue;
      if (!((ackBegins.get(o) ?? Infinity) < a.t1))
        v.push(`ack ${opKey(a)} answered committed ${committed}, past offset ${o} nobody had acked`);
    }
    passedOk = Math.max(passedOk, committed);
  }
  for (const a of acks)
    for (const b of acks)
      if (a.t1 < b.t0 && (b.committed ?? 0) < (a.committed ?? 0))
        v.push(`the position went back: ${opKey(a)} answered ${a.committed}, the later ${opKey(b)} ${b.committed}`);

  // The end.
  const n = c.stored.length;
  const f = c.final;
  if (f.committed !== n) v.push(`the group ended at committed ${f.committed}, not ${n}`);
  if (f.inFlight !== 0 || f.owed !== 0) v.push(`the group ended with ${f.inFlight} in flight and ${f.owed} owed`);
  const expectedDead = [...deadAtEnd].sort((x, y) => x - y);
  if (JSON.stringify(f.dead) !== JSON.stringify(expectedDead) || f.deadLetters !== expectedDead.length)
    v.push(
      `dead letters at the end: ${JSON.stringify(f.dead)} (${f.deadLetters}), expected ${JSON.stringify(expectedDead)}`,
    );
  for (const m of c.stored) {
    if (!deliveries.has(m.offset)) {
      t.lost++;
      v.push(`offset ${m.offset} never handed out`);
    } else if (!deadAtEnd.has(m.offset) && !ackBegins.has(m.offset)) {
      t.lost++;
      v.push(`offset ${m.offset} never acked`);
    }
  }
  t.violations = cap(v);
  return t;
}

// ------------------------------------------------------------------ queue delete

export interface DeleteCheckInput {
  events: readonly RaceEvent[];
  /** Queue-cache lifetime of the instances: how long a process may push into a deleted incarnation. */
  queueCacheMs: number;
  /** Partition ids of the incarnations, and what each held before maintenance. */
  storedBefore: ReadonlyMap<string, readonly StoredView[]>;
  /** The incarnation that exists at the end. */
  finalPartitionId: string;
  /** The queue incarnation (`queueId`) each partition was created in, where storage still tells. */
  queueIdOf: ReadonlyMap<string, string>;
  /** What the final incarnation holds after maintenance. */
  finalAfter: readonly StoredView[];
  /** Items and blobs of deleted incarnations left after maintenance, as `table pk` lines. */
  leftovers: readonly string[];
  tombstonesLeft: number;
}

/**
 * Queue delete racing pushes and pops from other processes:
 * - per incarnation, the push invariants ({@link checkPushes});
 * - a call begun after a delete returned plus the queue-cache lifetime (the documented
 *   window) never lands in, or reads from, an incarnation that existed before that delete;
 * - nothing acknowledged into a deleted incarnation shows up in the final one;
 * - pops deliver what is stored where they say;
 * - maintenance removes every deleted incarnation's data and tombstones, and nothing of the
 *   final incarnation.
 */
export function checkQueueDelete(c: DeleteCheckInput): Tally {
  const t = emptyTally();
  const v: string[] = [];
  const pushes = eventsOf(c.events, 'push');
  const pops = eventsOf(c.events, 'pop');
  const deletes = eventsOf(c.events, 'delete').sort((a, b) => a.t0 - b.t0);
  for (const [pid, stored] of c.storedBefore) {
    const r = checkPushes(pushes, pid, stored);
    t.lost += r.lost;
    t.duplicated += r.duplicated;
    v.push(...r.violations.map((x) => `incarnation ${pid.slice(-6)}: ${x}`));
  }
  // Partition ids seen before each delete began are of incarnations it (or an earlier one) deleted.
  const seen: { pid: string; t1: number }[] = [];
  for (const p of pushes)
    for (const r of p.results ?? []) if (r.status !== 'failed') seen.push({ pid: r.partitionId, t1: p.t1 });
  for (const p of pops) for (const m of p.msgs) seen.push({ pid: m.partitionId, t1: p.t1 });
  const windowViolations = (d: DeleteEvent): void => {
    // A deleted incarnation's partitions: seen before the delete began, or created in a queueId deleted by then.
    const deleted = new Set(deletes.filter((x) => x.t0 <= d.t0).flatMap((x) => (x.queueId ? [x.queueId] : [])));
    const old = new Set(seen.filter((s) => s.t1 < d.t0).map((s) => s.pid));
    for (const [pid, qid] of c.queueIdOf) if (deleted.has(qid)) old.add(pid);
    const after = d.t1 + c.queueCacheMs + 5;
    for (const p of pushes)
      if (p.t0 > after)
        for (const r of p.results ?? [])
          if (old.has(r.partitionId))
            v.push(
              `push ${p.inst}#${p.seq} began ${p.t0 - d.t1} ms after a delete returned and landed in the deleted incarnation`,
            );
    for (const p of pops)
      if (p.t0 > after && p.msgs.some((m) => old.has(m.partitionId)))
        v.push(
          `pop ${p.inst}#${p.seq} began ${p.t0 - d.t1} ms after a delete returned and read the deleted incarnation`,
        );
  };
  deletes.forEach(windowViolations);
  if (c.storedBefore.size < 2) v.push(`${c.storedBefore.size} incarnation(s) received pushes: the race did not happen`);
  // Nothing of a deleted incarnation in the final one.
  const finalTx = new Set(c.storedBefore.get(c.finalPartitionId)?.map((m) => m.txid) ?? []);
  for (const p of pushes)
    for (const r of p.results ?? [])
      if (r.status === 'queued' && r.partitionId !== c.finalPartitionId && finalTx.has(r.txid))
        v.push(`${r.txid}, acknowledged into incarnation ${r.partitionId.slice(-6)}, is in the final incarnation`);
  // Pops read what is stored.
  for (const p of pops)
    for (const m of p.msgs) {
      const s = c.storedBefore.get(m.partitionId)?.find((x) => x.offset === m.offset);
      if (!s || s.txid !== m.txid)
        v.push(`pop ${p.inst}#${p.seq} delivered ${m.txid} as ${m.offset}, stored: ${s?.txid}`);
    }
  // Maintenance.
  const before = c.storedBefore.get(c.finalPartitionId) ?? [];
  if (JSON.stringify(before) !== JSON.stringify(c.finalAfter)) {
    t.lost += Math.max(0, before.length - c.finalAfter.length);
    v.push(`maintenance changed the final incarnation: ${before.length} messages before, ${c.finalAfter.length} after`);
  }
  for (const l of c.leftovers) v.push(`left after maintenance: ${l}`);
  if (c.tombstonesLeft > 0) v.push(`${c.tombstonesLeft} tombstones left after maintenance`);
  t.violations = cap(v);
  return t;
}
