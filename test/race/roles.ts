/**
 * What a race's service instances do: produce, pop and ack, poll and settle claims, redrive
 * dead letters, delete a queue. Each role runs on one instance, one call at a time, and logs
 * every call (see protocol.ts) for the parent's checks. Roles end by themselves (producers,
 * the redriver, the deleter) or when the parent says stop.
 */
import { randomBytes } from 'node:crypto';
import { SluiceError } from '../../server/core/errors.js';
import type { RaceInstance } from './instance.js';
import type { AckEvent, PopEvent, PushEvent } from './protocol.js';

export interface RoleContext {
  inst: RaceInstance;
  /** Stop asked for, or the deadline passed. */
  stopped(): boolean;
  stats: { emptyPops: number; emptyPolls: number; errors: string[] };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const between = (lo: number, hi: number): number => lo + Math.floor(Math.random() * (hi - lo + 1));
const describeError = (e: unknown): string =>
  e instanceof SluiceError ? `${e.code}: ${e.message}` : e instanceof Error ? `${e.name}: ${e.message}` : String(e);

function noteError(ctx: RoleContext, what: string, e: unknown): void {
  if (ctx.stats.errors.length < 20) ctx.stats.errors.push(`${what}: ${describeError(e)}`);
}

/** Every this many batches a producer's batch carries a large message. */
const LARGE_EVERY = 8;

/** A producer's transactionId for its n-th message. */
export const txidOf = (producer: string, n: number): string => `${producer}-${n}`;

/** One message's payload: small JSON, or ~12 KB that does not compress (past the 8 KiB inline threshold: its segment goes to S3). */
function payloadOf(producer: string, n: number, large: boolean): Buffer {
  const body: Record<string, unknown> = { p: producer, n };
  if (large) body['pad'] = randomBytes(9000).toString('base64');
  return Buffer.from(JSON.stringify(body));
}

/**
 * Pushes one batch until it is acknowledged: a 503 (or any error) is retried with the same
 * transactionIds (dedup is on), as a client would. Every attempt is logged.
 */
export async function pushUntilAcknowledged(
  ctx: RoleContext,
  target: { queue: string; partition: string; producer: string },
  ns: readonly number[],
  large = false,
): Promise<boolean> {
  const items = ns.map((n, j) => ({ seq: n, txid: txidOf(target.producer, n), large: large && j === 0 }));
  for (let attempt = 0; attempt < 200; attempt++) {
    if (attempt > 0 && ctx.stopped()) return false;
    const seq = ctx.inst.next();
    const t0 = Date.now();
    ctx.inst.log({ k: 'begin', inst: ctx.inst.id, seq, t0, op: 'push', txids: items.map((i) => i.txid) });
    const base = {
      k: 'push' as const,
      inst: ctx.inst.id,
      seq,
      t0,
      queue: target.queue,
      partition: target.partition,
      producer: target.producer,
      items: items.map(({ seq: s, txid }) => ({ seq: s, txid })),
    };
    try {
      const results = await ctx.inst.svc.pushes.push(
        items.map((i) => ({
          queue: target.queue,
          partition: target.partition,
          transactionId: i.txid,
          payload: payloadOf(target.producer, i.seq, i.large),
        })),
      );
      const ev: PushEvent = {
        ...base,
        t1: Date.now(),
        outcome: 'ok',
        results: results.map((r) => ({
          txid: r.transactionId,
          status: r.status,
          offset: r.offset,
          partitionId: r.partitionId,
          messageId: r.messageId,
        })),
      };
      ctx.inst.log(ev);
      if (results.every((r) => r.status !== 'failed')) return true;
    } catch (e) {
      const unavailable = e instanceof SluiceError && e.code === 'unavailable';
      ctx.inst.log({
        ...base,
        t1: Date.now(),
        outcome: unavailable ? 'unavailable' : 'error',
        error: describeError(e),
      });
    }
    await sleep(between(5, 40));
  }
  return false;
}

/** Pushes `count` messages in batches of 1..maxBatch, in order, each acknowledged before the next. */
export async function produce(
  ctx: RoleContext,
  target: { queue: string; partition: string; producer: string },
  count: number,
  maxBatch: number,
  pauseMs = 0,
): Promise<void> {
  for (let n = 0, batch = 0; n < count && !ctx.stopped(); batch++) {
    const size = Math.min(count - n, between(1, maxBatch));
    const ns = Array.from({ length: size }, (_, j) => n + j);
    if (!(await pushUntilAcknowledged(ctx, target, ns, batch % LARGE_EVERY === 2))) return;
    n += size;
    if (pauseMs > 0) await sleep(between(0, pauseMs));
  }
}

/** Pushes until stopped (the queue-delete race). */
export async function produceUntilStopped(
  ctx: RoleContext,
  target: { queue: string; partition: string; producer: string },
  maxBatch: number,
): Promise<void> {
  for (let n = 0, batch = 0; !ctx.stopped(); batch++) {
    const size = between(1, maxBatch);
    const ns = Array.from({ length: size }, (_, j) => n + j);
    await pushUntilAcknowledged(ctx, target, ns, batch % LARGE_EVERY === 2);
    n += size;
    await sleep(between(0, 10));
  }
}

// ------------------------------------------------------------------ leases

/** How a lease consumer treats a batch it popped. */
export type AckStyle =
  /** Ack everything at once. */
  | 'prompt'
  /** Ack the first half, then the rest (after `lateMs` when given). */
  | 'split'
  /** Ack everything, but only after `lateMs` (around the lease's expiry). */
  | 'late'
  /** Complete all but the last, `retry` the last: it comes back. */
  | 'retry';

export interface LeaseConsumer {
  queue: string;
  partition: string;
  group: string;
  leaseSeconds: number;
  maxBatch: number;
  /** Styles to draw from (uniformly). */
  styles: AckStyle[];
  /** [lo, hi] ms a late ack waits. */
  lateMs: [number, number];
  /** Only wildcard pops (the work index is then the only way to the partition); default: half each. */
  wildcardOnly?: boolean | undefined;
}

async function ackLease(
  ctx: RoleContext,
  c: LeaseConsumer,
  pop: PopEvent,
  msgs: PopEvent['msgs'],
  last: 'completed' | 'retry',
): Promise<void> {
  if (msgs.length === 0) return;
  const items = msgs.map((m, j) => ({
    txid: m.txid,
    offset: m.offset,
    status: j === msgs.length - 1 ? last : ('completed' as const),
  }));
  const seq = ctx.inst.next();
  const t0 = Date.now();
  ctx.inst.log({
    k: 'begin',
    inst: ctx.inst.id,
    seq,
    t0,
    op: 'ack',
    txids: items.map((i) => i.txid),
    offsets: items.filter((i) => i.status === 'completed').map((i) => i.offset),
    leaseId: pop.leaseId,
  });
  const partitionId = msgs[0]!.partitionId;
  const base = { k: 'ack' as const, inst: ctx.inst.id, seq, t0, leaseId: pop.leaseId, partitionId, items };
  try {
    const res = await ctx.inst.svc.leaseAcks.ack(
      items.map((i, index) => ({
        index,
        partitionId,
        transactionId: i.txid,
        status: i.status,
        leaseId: pop.leaseId,
      })),
      c.group,
    );
    const ev: AckEvent = {
      ...base,
      t1: Date.now(),
      results: res.map((r) => ({ success: r.success, error: r.error, leaseReleased: r.leaseReleased })),
    };
    ctx.inst.log(ev);
  } catch (e) {
    ctx.inst.log({ ...base, t1: Date.now(), error: describeError(e) });
  }
}

/** Pops (partition route or wildcard, at random) and acks in one of the given styles, until stopped. */
export async function consumeLeases(ctx: RoleContext, c: LeaseConsumer): Promise<void> {
  while (!ctx.stopped()) {
    const route = c.wildcardOnly || Math.random() < 0.5 ? 'wildcard' : 'partition';
    const seq = ctx.inst.next();
    const t0 = Date.now();
    ctx.inst.log({ k: 'begin', inst: ctx.inst.id, seq, t0, op: 'pop' });
    let r;
    try {
      r = await ctx.inst.svc.leasePops.pop({
        queue: c.queue,
        partition: route === 'partition' ? c.partition : undefined,
        group: c.group,
        batch: between(1, c.maxBatch),
        partitions: 1,
        autoAck: false,
        leaseSeconds: c.leaseSeconds,
        wait: false,
        timeoutMs: 0,
      });
    } catch (e) {
      noteError(ctx, 'pop', e);
      await sleep(20);
      continue;
    }
    if (!r) {
      ctx.stats.emptyPops++;
      await sleep(between(20, 60));
      continue;
    }
    const pop: PopEvent = {
      k: 'pop',
      inst: ctx.inst.id,
      seq,
      t0,
      t1: Date.now(),
      queue: c.queue,
      route,
      leaseMs: c.leaseSeconds * 1000,
      leaseId: r.leaseId,
      msgs: r.messages.map((m) => ({
        offset: m.offset,
        txid: m.transactionId,
        id: m.id,
        partitionId: m.partitionId,
      })),
    };
    ctx.inst.log(pop);
    const style = c.styles[Math.floor(Math.random() * c.styles.length)] ?? 'prompt';
    const late = (): Promise<void> => sleep(between(c.lateMs[0], c.lateMs[1]));
    if (style === 'prompt') await ackLease(ctx, c, pop, pop.msgs, 'completed');
    else if (style === 'late') {
      await late();
      await ackLease(ctx, c, pop, pop.msgs, 'completed');
    } else if (style === 'retry') await ackLease(ctx, c, pop, pop.msgs, 'retry');
    else {
      const half = Math.ceil(pop.msgs.length / 2);
      await ackLease(ctx, c, pop, pop.msgs.slice(0, half), 'completed');
      await late();
      await ackLease(ctx, c, pop, pop.msgs.slice(half), 'completed');
    }
  }
}

/** Auto-acked pops, logged (the queue-delete race: what a consumer can see). */
export async function popAutoAck(ctx: RoleContext, c: { queue: string; partition: string; group: string }) {
  while (!ctx.stopped()) {
    const seq = ctx.inst.next();
    const t0 = Date.now();
    try {
      const r = await ctx.inst.svc.leasePops.pop({
        queue: c.queue,
        partition: c.partition,
        group: c.group,
        batch: 20,
        partitions: 1,
        autoAck: true,
        wait: false,
        timeoutMs: 0,
      });
      if (!r) {
        ctx.stats.emptyPops++;
        await sleep(between(20, 60));
        continue;
      }
      ctx.inst.log({
        k: 'pop',
        inst: ctx.inst.id,
        seq,
        t0,
        t1: Date.now(),
        queue: c.queue,
        route: 'partition',
        leaseMs: 0,
        leaseId: r.leaseId,
        msgs: r.messages.map((m) => ({
          offset: m.offset,
          txid: m.transactionId,
          id: m.id,
          partitionId: m.partitionId,
        })),
      });
    } catch (e) {
      noteError(ctx, 'pop', e);
      await sleep(20);
    }
  }
}

// ------------------------------------------------------------------ claims

export interface ClaimConsumer {
  queue: string;
  partition: string;
  group: string;
  visibilityMs: number;
  maxBatch: number;
  /** Offsets this consumer always nacks (the redrive race's poison records). */
  poison?: (offset: number) => boolean;
  /** Share of polls whose records are nacked, acked late (after the claim lapsed), or abandoned. */
  nack: number;
  late: number;
  abandon: number;
}

const code = (e: unknown): string => (e instanceof SluiceError ? e.code : describeError(e));

async function claimAck(ctx: RoleContext, c: ClaimConsumer, offsets: number[]): Promise<void> {
  if (offsets.length === 0) return;
  const seq = ctx.inst.next();
  const t0 = Date.now();
  ctx.inst.log({ k: 'begin', inst: ctx.inst.id, seq, t0, op: 'cack', offsets });
  try {
    const r = await ctx.inst.svc.claims.ack(c.queue, c.partition, c.group, offsets);
    ctx.inst.log({ k: 'cack', inst: ctx.inst.id, seq, t0, t1: Date.now(), offsets, committed: r.committed });
  } catch (e) {
    ctx.inst.log({ k: 'cack', inst: ctx.inst.id, seq, t0, t1: Date.now(), offsets, error: code(e) });
  }
}

async function claimNack(ctx: RoleContext, c: ClaimConsumer, offset: number, attempts: number): Promise<void> {
  const seq = ctx.inst.next();
  const t0 = Date.now();
  ctx.inst.log({ k: 'begin', inst: ctx.inst.id, seq, t0, op: 'nack', offsets: [offset] });
  try {
    await ctx.inst.svc.claims.nack(c.queue, c.partition, c.group, { offset, attempts });
    ctx.inst.log({ k: 'nack', inst: ctx.inst.id, seq, t0, t1: Date.now(), offset, attempts, ok: true });
  } catch (e) {
    ctx.inst.log({
      k: 'nack',
      inst: ctx.inst.id,
      seq,
      t0,
      t1: Date.now(),
      offset,
      attempts,
      ok: false,
      error: code(e),
    });
  }
}

/** Polls and settles claims until stopped. */
export async function consumeClaims(ctx: RoleContext, c: ClaimConsumer): Promise<void> {
  while (!ctx.stopped()) {
    const seq = ctx.inst.next();
    const t0 = Date.now();
    ctx.inst.log({ k: 'begin', inst: ctx.inst.id, seq, t0, op: 'poll' });
    let records: { offset: number; attempts: number; txid: string }[];
    try {
      const r = await ctx.inst.svc.claims.poll(c.queue, c.partition, c.group, {
        max: between(1, c.maxBatch),
        visibilityMs: c.visibilityMs,
        principal: 'race',
      });
      records = r.records.map((x) => ({ offset: x.offset, attempts: x.attempts, txid: x.message.transactionId }));
      ctx.inst.log({ k: 'poll', inst: ctx.inst.id, seq, t0, t1: Date.now(), vis: c.visibilityMs, records });
    } catch (e) {
      ctx.inst.log({
        k: 'poll',
        inst: ctx.inst.id,
        seq,
        t0,
        t1: Date.now(),
        vis: c.visibilityMs,
        records: [],
        error: code(e),
      });
      await sleep(20);
      continue;
    }
    if (records.length === 0) {
      ctx.stats.emptyPolls++;
      await sleep(between(20, 60));
      continue;
    }
    const poisoned = records.filter((r) => c.poison?.(r.offset));
    for (const r of poisoned) await claimNack(ctx, c, r.offset, r.attempts);
    const rest = records.filter((r) => !c.poison?.(r.offset));
    const roll = Math.random();
    if (roll < c.nack) {
      for (const r of rest) await claimNack(ctx, c, r.offset, r.attempts);
    } else if (roll < c.nack + c.late) {
      await sleep(c.visibilityMs + between(50, 300));
      await claimAck(
        ctx,
        c,
        rest.map((r) => r.offset),
      );
    } else if (roll < c.nack + c.late + c.abandon) {
      // Lapses: somebody else gets it after the visibility timeout.
    } else
      await claimAck(
        ctx,
        c,
        rest.map((r) => r.offset),
      );
  }
}

/**
 * Redrives each of the `expected` dead letters up to `times` times, as it shows up in the list,
 * while the consumers poll; ends when every one was redriven that often.
 */
export async function redriveDeadLetters(
  ctx: RoleContext,
  c: { queue: string; partition: string; group: string; expected: number[]; times: number },
): Promise<void> {
  const done = new Map<number, number>();
  const finished = (): boolean => c.expected.every((o) => (done.get(o) ?? 0) >= c.times);
  while (!ctx.stopped() && !finished()) {
    let listed: number[];
    try {
      listed = (await ctx.inst.svc.claims.listDeadLetters(c.queue, c.partition, c.group)).offsets;
    } catch (e) {
      noteError(ctx, 'list', e);
      listed = [];
    }
    for (const offset of listed) {
      if (!c.expected.includes(offset) || (done.get(offset) ?? 0) >= c.times) continue;
      const seq = ctx.inst.next();
      const t0 = Date.now();
      try {
        await ctx.inst.svc.claims.redrive(c.queue, c.partition, c.group, offset);
        done.set(offset, (done.get(offset) ?? 0) + 1);
        ctx.inst.log({ k: 'redrive', inst: ctx.inst.id, seq, t0, t1: Date.now(), offset, ok: true });
      } catch (e) {
        ctx.inst.log({ k: 'redrive', inst: ctx.inst.id, seq, t0, t1: Date.now(), offset, ok: false, error: code(e) });
      }
    }
    await sleep(between(20, 60));
  }
}

// ------------------------------------------------------------------ queue delete

/** Deletes the queue `times` times, `everyMs` apart, then waits `tailMs` (pushes land in the last incarnation). */
export async function deleteRepeatedly(
  ctx: RoleContext,
  c: { queue: string; times: number; everyMs: number; tailMs: number },
): Promise<void> {
  for (let i = 0; i < c.times && !ctx.stopped(); i++) {
    await sleep(between(c.everyMs / 2, c.everyMs));
    const seq = ctx.inst.next();
    try {
      const queueId = (await ctx.inst.svc.queues.getQueue(c.queue, { fresh: true }))?.queueId;
      const t0 = Date.now();
      const r = await ctx.inst.svc.deletion.deleteQueue(c.queue);
      const t1 = Date.now();
      ctx.inst.log({ k: 'delete', inst: ctx.inst.id, seq, t0, t1, queue: c.queue, existed: r.existed, queueId });
    } catch (e) {
      noteError(ctx, 'delete', e);
    }
  }
  await sleep(c.tailMs);
}
