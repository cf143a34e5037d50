/**
 * Which caller policy each client method and CLI command needs (docs/DEPLOYING.md, "What each
 * function may do, and how that is proved"): every public method
 * of `@sluice/client` and every `sluice` command is run against a local server that records
 * what it was sent, and each recorded request is evaluated as API Gateway authorizes it on an
 * `auth=iam` deployment (`execute-api:Invoke` on its method and path) against the synthesized
 * Producer, Consumer and Admin policies. The roles whose policy allows every request of a
 * method must be exactly those its row in docs/CLIENT.md (or docs/CLI.md) names, under
 * "Which IAM policy each method needs".
 *
 * Requests made while a scenario sets up (queues, messages, groups) are not the method's. What
 * makes no request (builders, helpers, local commands) is listed with why, and shown to make
 * none where it can run here; the classes' prototypes and the command tree are enumerated, so a
 * method or command added without a scenario or a listing fails here.
 *
 * Longer than a module should be because it is one table: a scenario per method and command.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Io } from '../../cli/command.js';
import { buildProgram, run } from '../../cli/main.js';
import * as client from '../../client/index.js';
import { Browse, Sluice, type Message } from '../../client/index.js';
import { loadConfig } from '../../server/config.js';
import type { LocalServer } from '../../server/local/server.js';
import { buildServices } from '../../server/service/runtime.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import type { ApiRole } from '../../lib/api-access.js';
import { callerPolicies, ROLES, type CallerPolicies } from '../support/api-policies.js';
import { synthStack } from '../support/cdk.js';
import { startTestServer, type SeenRequest } from '../support/http.js';

// ------------------------------------------------------------------ the server and its log

let dir: string;
let storage: Storage;
let server: LocalServer;
let policies: CallerPolicies;
/** Every request the server got, in order; a scenario's are those after its setup. */
const seen: SeenRequest[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-caller-policies-'));
  storage = await openEmbeddedStorage({ dataDir: join(dir, 'data'), sync: 'normal' });
  server = await startTestServer(buildServices(storage, { ...loadConfig({}), queueCacheMs: 0 }), {
    onRequest: (r) => seen.push(r),
  });
  policies = callerPolicies(synthStack());
});
afterAll(async () => {
  await server?.close();
  await storage?.close();
  await rm(dir, { recursive: true, force: true });
});

// ------------------------------------------------------------------ scenarios

interface CliRun {
  code: number;
  out: string;
  err: string;
  /** Requests the CLI's client sent anywhere (the server's log only sees those to it). */
  fetched: string[];
}

interface Ctx {
  /** A client of the server; no retries, so each request is made once. */
  sluice: Sluice;
  /** A queue of this scenario's own. */
  queue: string;
  /** Runs `sluice --endpoint <server> ...args` in-process, `stdin` as its input. */
  cli(args: string[], stdin?: string): Promise<CliRun>;
}

/** Sets up (its requests are not the method's), then answers the call whose requests are. */
type Scenario = (c: Ctx) => Promise<() => Promise<unknown>>;

let scenarioCount = 0;
function newCtx(): Ctx {
  const n = ++scenarioCount;
  return {
    sluice: new Sluice({ endpoint: server.url, retry: { attempts: 1 } }),
    queue: `cp-${n}`,
    cli: (args, stdin = '') => cli(args, stdin),
  };
}

async function cli(args: string[], stdin = ''): Promise<CliRun> {
  const r: CliRun = { code: -1, out: '', err: '', fetched: [] };
  const io: Io = {
    stdout: { write: (s: string) => (r.out += s) },
    stderr: { write: (s: string) => (r.err += s) },
    stdin: Readable.from([stdin]),
    env: { XDG_CONFIG_HOME: join(dir, 'xdg') },
    fetch: (input, init) => {
      r.fetched.push(`${init?.method ?? 'GET'} ${input instanceof Request ? input.url : input.toString()}`);
      return fetch(input, init);
    },
  };
  r.code = await run(['--endpoint', server.url, ...args], io);
  return r;
}

/** A CLI run that must succeed. */
async function sh(c: Ctx, ...args: string[]): Promise<CliRun> {
  const r = await c.cli(args);
  if (r.code !== 0) throw new Error(`sluice ${args.join(' ')} exited ${r.code}: ${r.err}`);
  return r;
}

/** Pushes `n` messages to the scenario's queue. */
const pushed = (c: Ctx, n = 1, partition = 'p0') =>
  c.sluice
    .queue(c.queue)
    .partition(partition)
    .push(Array.from({ length: n }, (_, i) => ({ data: { n: i } })));

/** `n` messages pushed and leased (one pop), to `group` when given. */
async function leased(c: Ctx, n = 1, group?: string): Promise<Message[]> {
  await pushed(c, n);
  let q = c.sluice.queue(c.queue).batch(n).wait(false);
  if (group) q = q.group(group);
  const msgs = await q.pop();
  if (msgs.length !== n) throw new Error(`setup: popped ${msgs.length} of ${n}`);
  return msgs;
}

/** A dead letter of group `g` on the scenario's queue (its listing entry). */
async function deadLettered(c: Ctx): Promise<{ partitionId: string; transactionId: string }> {
  const [m] = await leased(c, 1, 'g');
  await c.sluice.ack(m!, 'dlq', { error: 'bad' });
  const [entry] = (await c.sluice.dlq(c.queue).list()).messages;
  if (!entry) throw new Error('setup: no dead letter');
  return entry;
}

/** A group `billing` that popped (and acked) on the scenario's queue. */
async function leaseGroup(c: Ctx): Promise<void> {
  await c.sluice.ack(await leased(c, 2, 'billing'));
}

const claims = (c: Ctx) => c.sluice.queue(c.queue).partition('p0').claimGroup('workers');

/** A claim group `workers` on partition p0 over `n` records, created at earliest. */
async function claimGroup(c: Ctx, n = 3) {
  await pushed(c, n);
  const g = claims(c);
  await g.create('earliest');
  return g;
}

/** A claim group with `n` records claimed. */
async function claimedRecords(c: Ctx, n = 1) {
  const g = await claimGroup(c, n);
  const { records } = await g.poll({ max: n });
  if (records.length !== n) throw new Error(`setup: claimed ${records.length} of ${n}`);
  return { g, records };
}

/** A claim group with its first record dead-lettered. */
async function claimDeadLetter(c: Ctx) {
  const { g, records } = await claimedRecords(c, 1);
  await g.deadLetter(records[0]!.offset, { attempts: records[0]!.attempts });
  return { g, offset: records[0]!.offset };
}

/** Every client method that makes requests, by `Class.method`. */
const CLIENT: Record<string, Scenario> = {
  'Sluice.flush': async (c) => {
    const s = new Sluice({ endpoint: server.url, retry: { attempts: 1 }, lingerMs: 60_000 });
    const sent = s.queue(c.queue).send({ data: 1 });
    return async () => Promise.all([s.flush(), sent]);
  },
  'Sluice.close': async (c) => {
    const s = new Sluice({ endpoint: server.url, retry: { attempts: 1 }, lingerMs: 60_000 });
    const sent = s.queue(c.queue).send({ data: 1 });
    return async () => Promise.all([s.close(), sent]);
  },
  'Sluice.ack': async (c) => {
    const msgs = await leased(c, 3);
    return async () => {
      await c.sluice.ack(msgs[0]!); // one: /ack
      await c.sluice.ack(msgs.slice(1)); // several: /ack/batch
    };
  },
  'Sluice.renew': async (c) => {
    const msgs = await leased(c, 2);
    return async () => {
      await c.sluice.renew(msgs, 60);
      await c.sluice.renew(msgs[0]!.leaseId);
    };
  },
  'Sluice.retryMessage': async (c) => {
    const e = await deadLettered(c);
    return () => c.sluice.retryMessage(e.partitionId, e.transactionId, { consumerGroup: 'g' });
  },
  'Sluice.deleteMessage': async (c) => {
    const e = await deadLettered(c);
    return () => c.sluice.deleteMessage(e.partitionId, e.transactionId, { consumerGroup: 'g' });
  },
  'Sluice.getMessage': async (c) => {
    const [r] = await pushed(c);
    return () => c.sluice.getMessage(r!.partitionId!, r!.transactionId);
  },
  'Sluice.health': async (c) => () => c.sluice.health(),

  'QueueRef.create': async (c) => () => c.sluice.queue(c.queue).config({ leaseTime: 30 }).create(),
  'QueueRef.update': async (c) => {
    await c.sluice.queue(c.queue).create();
    return () => c.sluice.queue(c.queue).update({ options: { ttl: 600 } });
  },
  'QueueRef.describe': async (c) => {
    await c.sluice.queue(c.queue).create();
    return () => c.sluice.queue(c.queue).describe();
  },
  'QueueRef.delete': async (c) => {
    await c.sluice.queue(c.queue).create();
    return () => c.sluice.queue(c.queue).delete();
  },
  'QueueRef.push': async (c) => () =>
    c.sluice
      .queue(c.queue)
      .partition('eu')
      .push([{ data: 1 }, { data: 2 }]),
  'QueueRef.send': async (c) => () => c.sluice.queue(c.queue).partition('eu').send({ data: 1 }),
  'QueueRef.pop': async (c) => {
    await pushed(c, 2);
    return async () => {
      await c.sluice.queue(c.queue).partition('p0').wait(false).pop();
      await c.sluice.queue(c.queue).wait(false).pop({ autoAck: true });
    };
  },
  'QueueRef.ack': async (c) => {
    const msgs = await leased(c, 2);
    return () => c.sluice.queue(c.queue).ack(msgs);
  },
  'QueueRef.consume': async (c) => {
    await pushed(c, 2);
    // One message a pop: the second rides on the first's ack (ack-and-pop); an empty pop asks
    // for a notification ticket (none locally) and long-polls until idle.
    return () =>
      c.sluice
        .queue(c.queue)
        .group('billing')
        .consume(
          async (_msgs, ctx) => {
            await ctx.renew(30);
          },
          { popBatch: 1, idleMs: 300 },
        );
  },
  'QueueRef.read': async (c) => {
    await pushed(c, 2);
    return () => c.sluice.queue(c.queue).partition('p0').read({ from: 0, limit: 10 });
  },

  'ClaimGroup.poll': async (c) => {
    const g = await claimGroup(c);
    return () => g.poll({ max: 2, consumer: 'w1', session: 's1', reclaim: true });
  },
  'ClaimGroup.ack': async (c) => {
    const { g, records } = await claimedRecords(c, 2);
    return () => g.ack(records.map((r) => r.offset));
  },
  'ClaimGroup.nack': async (c) => {
    const { g, records } = await claimedRecords(c, 1);
    return () => g.nack(records[0]!.offset, { attempts: records[0]!.attempts, delayMs: 10 });
  },
  'ClaimGroup.extend': async (c) => {
    const { g, records } = await claimedRecords(c, 1);
    return () => g.extend(records[0]!.offset, records[0]!.attempts, 10_000);
  },
  'ClaimGroup.deadLetter': async (c) => {
    const { g, records } = await claimedRecords(c, 1);
    return () => g.deadLetter(records[0]!.offset, { attempts: records[0]!.attempts });
  },
  'ClaimGroup.deadLetters': async (c) => {
    const { g } = await claimDeadLetter(c);
    return () => g.deadLetters({ limit: 10 });
  },
  'ClaimGroup.allDeadLetters': async (c) => {
    const { g } = await claimDeadLetter(c);
    return () => g.allDeadLetters();
  },
  'ClaimGroup.redrive': async (c) => {
    const { g, offset } = await claimDeadLetter(c);
    return () => g.redrive(offset);
  },
  'ClaimGroup.discard': async (c) => {
    const { g, offset } = await claimDeadLetter(c);
    return () => g.discard(offset);
  },
  'ClaimGroup.create': async (c) => {
    await pushed(c);
    return () => claims(c).create('earliest');
  },
  'ClaimGroup.seek': async (c) => {
    const g = await claimGroup(c);
    return () => g.seek('latest');
  },
  'ClaimGroup.describe': async (c) => {
    const g = await claimGroup(c);
    return () => g.describe();
  },
  'ClaimGroup.delete': async (c) => {
    const g = await claimGroup(c);
    return () => g.delete();
  },
  'ClaimGroup.consume': async (c) => {
    const g = await claimGroup(c, 3);
    // Record 0 is extended then acked, 1 fails once (nacked) then is acked, 2 is dead-lettered.
    return () =>
      g.consume(
        async (rec, ctx) => {
          if (rec.offset === 0) await ctx.extend(5_000);
          if (rec.offset === 1 && rec.attempts === 1) throw new Error('once');
          if (rec.offset === 2) await ctx.deadLetter();
        },
        { max: 3, concurrency: 3, idleMs: 300 },
      );
  },
  'ClaimGroup.consumeBatches': async (c) => {
    const g = await claimGroup(c, 3);
    return () =>
      g.consumeBatches(
        async (records) => ({
          batchItemFailures: records
            .filter((r) => r.offset === 0 && r.attempts === 1)
            .map((r) => ({ itemIdentifier: r.transactionId })),
        }),
        { batch: 10, idleMs: 300 },
      );
  },

  'Transaction.commit': async (c) => {
    const msgs = await leased(c, 1);
    return () =>
      c.sluice
        .transaction()
        .queue(`${c.queue}-out`)
        .partition('eu')
        .push([{ data: { order: 7 } }])
        .ack(msgs, 'completed')
        .commit();
  },

  'Browse.queues': async (c) => {
    await pushed(c);
    return () => new Browse(c.sluice.http).queues({ limit: 10 });
  },
  'Browse.queue': async (c) => {
    await pushed(c);
    return () => new Browse(c.sluice.http).queue(c.queue);
  },
  'Browse.messages': async (c) => {
    await pushed(c);
    return () => new Browse(c.sluice.http).messages({ queue: c.queue, limit: 5, payload: true });
  },

  'DeadLetterQueue.list': async (c) => {
    await deadLettered(c);
    return () => c.sluice.dlq(c.queue).group('g').list({ limit: 10 });
  },
  'DeadLetterQueue.all': async (c) => {
    await deadLettered(c);
    return async () => {
      for await (const e of c.sluice.dlq(c.queue).all({ pageSize: 10 })) void e;
    };
  },
  'DeadLetterQueue.count': async (c) => {
    await deadLettered(c);
    return () => c.sluice.dlq(c.queue).count();
  },
  'DeadLetterQueue.redrive': async (c) => {
    await deadLettered(c);
    return () => c.sluice.dlq(c.queue).redrive({ limit: 10 });
  },
  'DeadLetterQueue.redriveAll': async (c) => {
    await deadLettered(c);
    return () => c.sluice.dlq(c.queue).group('g').redriveAll({ batch: 10, rate: 1000 });
  },

  'GroupAdmin.list': async (c) => {
    await leaseGroup(c);
    return () => c.sluice.groups.list();
  },
  'GroupAdmin.describe': async (c) => {
    await leaseGroup(c);
    return () => c.sluice.groups.describe('billing');
  },
  'GroupAdmin.lagging': async (c) => {
    await leaseGroup(c);
    return () => c.sluice.groups.lagging(0);
  },
  'GroupAdmin.delete': async (c) => {
    await leaseGroup(c);
    return async () => {
      await c.sluice.groups.delete('billing', { queue: c.queue });
      await c.sluice.groups.delete('billing-elsewhere');
    };
  },
  'GroupAdmin.seek': async (c) => {
    await leaseGroup(c);
    return async () => {
      await c.sluice.groups.seek('billing', c.queue, { toEnd: true });
      await c.sluice.groups.seek('billing', c.queue, { timestamp: new Date(0) });
    };
  },
  'GroupAdmin.subscription': async (c) => {
    await leaseGroup(c);
    return () => c.sluice.groups.subscription('billing', new Date());
  },
};

/**
 * Every CLI command that makes requests, by its path under `sluice`. A command whose options
 * change what it needs has a row per variant (`claims poll --create`).
 */
const CLI: Record<string, Scenario> = {
  push: async (c) => async () => {
    const r = await c.cli(['push', c.queue, '--partition', 'eu'], '{"n":1}\n{"n":2}\n');
    if (r.code !== 0) throw new Error(r.err);
  },
  pop: async (c) => {
    await pushed(c, 1, 'eu');
    return async () => {
      await sh(c, 'pop', c.queue); // one message, acked
      await sh(c, 'pop', c.queue, '--no-ack'); // empty: the queue is looked up
      await sh(c, 'pop', c.queue, '-p', 'eu', '--batch', '5'); // empty: the partition is looked up
    };
  },
  tail: async (c) => {
    await pushed(c, 2, 'eu');
    return async () => {
      await sh(c, 'tail', c.queue, '--limit', '2');
      await sh(c, 'tail', c.queue, '-p', 'eu', '--from', '1', '--limit', '1');
      await sh(c, 'tail', c.queue, '--group', 'audit', '--limit', '2');
    };
  },
  groups: async (c) => {
    await leaseGroup(c);
    return async () => {
      await sh(c, 'groups');
      await sh(c, 'groups', '--queue', c.queue, '--group', 'billing');
      await sh(c, 'groups', '--min-lag', '1s', '--queue', c.queue);
    };
  },
  describe: async (c) => {
    await leaseGroup(c);
    return () => sh(c, 'describe', 'billing');
  },
  seek: async (c) => {
    await leaseGroup(c);
    return async () => {
      await sh(c, 'seek', 'billing', c.queue, '--to-end');
      await sh(c, 'seek', 'billing', c.queue, '--to', '2020-01-01T00:00:00Z');
    };
  },
  configure: async (c) => async () => {
    await sh(c, 'configure', c.queue, '--set', 'leaseTime=30', '--namespace', 'shop');
    await sh(c, 'configure', c.queue, '--merge', '--set', 'ttl=600');
  },
  queues: async (c) => {
    await pushed(c);
    return () => sh(c, 'queues', '--namespace', 'nowhere');
  },
  partitions: async (c) => {
    await leaseGroup(c);
    return () => sh(c, 'partitions', c.queue, '--groups');
  },
  peek: async (c) => {
    await pushed(c, 2);
    return () => sh(c, 'peek', c.queue, '-p', 'p0', '-n', '5', '--status', 'pending');
  },
  'dlq list': async (c) => {
    await deadLettered(c);
    return async () => {
      await sh(c, 'dlq', 'list', c.queue, '--group', 'g');
      await sh(c, 'dlq', 'list', c.queue, '--all', '--batch', '10');
      await sh(c, 'dlq', 'list', `${c.queue}-empty`, '--offset', '0').catch(() => undefined); // not found: looked up
    };
  },
  'dlq retry': async (c) => {
    const e = await deadLettered(c);
    return () => sh(c, 'dlq', 'retry', e.partitionId, e.transactionId, '--group', 'g');
  },
  'dlq redrive-all': async (c) => {
    await deadLettered(c);
    return () => sh(c, 'dlq', 'redrive-all', c.queue, '--group', 'g', '--batch', '10');
  },
  'claims poll': async (c) => {
    await claimGroup(c);
    return () => sh(c, 'claims', 'poll', c.queue, 'p0', 'workers', '--batch', '2', '--ack');
  },
  'claims poll --create': async (c) => {
    await pushed(c);
    return () => sh(c, 'claims', 'poll', c.queue, 'p0', 'fresh', '--create');
  },
  'claims ack': async (c) => {
    const { records } = await claimedRecords(c, 2);
    return () => sh(c, 'claims', 'ack', c.queue, 'p0', 'workers', ...records.map((r) => String(r.offset)));
  },
  'claims nack': async (c) => {
    const { records } = await claimedRecords(c, 1);
    const r = records[0]!;
    return () => sh(c, 'claims', 'nack', c.queue, 'p0', 'workers', String(r.offset), '--attempts', String(r.attempts));
  },
  'claims describe': async (c) => {
    await claimGroup(c);
    return () => sh(c, 'claims', 'describe', c.queue, 'p0', 'workers');
  },
  'claims dead-letters': async (c) => {
    await claimDeadLetter(c);
    return () => sh(c, 'claims', 'dead-letters', c.queue, 'p0', 'workers');
  },
  'claims redrive': async (c) => {
    await claimDeadLetter(c);
    return () => sh(c, 'claims', 'redrive', c.queue, 'p0', 'workers', '--all', '--no-progress');
  },
  'claims create': async (c) => {
    await pushed(c);
    return () => sh(c, 'claims', 'create', c.queue, 'p0', 'workers', '--start', 'latest');
  },
  'claims seek': async (c) => {
    await claimGroup(c);
    return () => sh(c, 'claims', 'seek', c.queue, 'p0', 'workers', 'earliest');
  },
  'claims delete': async (c) => {
    await claimGroup(c);
    return () => sh(c, 'claims', 'delete', c.queue, 'p0', 'workers');
  },
};

/** What makes no request, and why; `call` or `args` (where it can run here) shows it makes none. */
interface NoRequest {
  why: string;
  /** A client call. */
  call?: (c: Ctx) => unknown;
  /** The CLI's arguments (after `--endpoint <server>`). */
  args?: string[];
}

/** A message as a pop hands it out (for calls that only hold it). */
const AMESSAGE: Message = {
  id: 'm',
  transactionId: 't',
  partitionId: 'p',
  partition: 'eu',
  queue: 'x',
  leaseId: 'l',
  consumerGroup: 'g',
  data: null,
  createdAt: new Date(0).toISOString(),
  traceId: null,
  offset: 0,
  producerSub: null,
};

const BUILDER = 'a builder: returns a new handle, sends nothing';
/** Targets: their requests go to routes no deployment serves yet, so no caller policy is asked. */
const LOCAL_ONLY =
  'targets are served by the local server only (routes never deployed, docs/TARGETS.md): no caller policy ' +
  'applies until the AWS routes come, and then these become scenarios';
/** Client members without a request of their own. */
const CLIENT_NO_REQUEST: Record<string, NoRequest> = {
  'Sluice.queue': { why: BUILDER, call: (c) => c.sluice.queue('x') },
  'Sluice.transaction': { why: 'starts a transaction; only commit() sends it', call: (c) => c.sluice.transaction() },
  'Sluice.dlq': { why: BUILDER, call: (c) => c.sluice.dlq('x') },
  'QueueRef.name': { why: 'a getter', call: (c) => c.sluice.queue('x').name },
  'QueueRef.with': { why: 'private: the builders copy the spec through it' },
  'QueueRef.partition': { why: BUILDER, call: (c) => c.sluice.queue('x').partition('p') },
  'QueueRef.group': { why: BUILDER, call: (c) => c.sluice.queue('x').group('g') },
  'QueueRef.batch': { why: BUILDER, call: (c) => c.sluice.queue('x').batch(2) },
  'QueueRef.wait': { why: BUILDER, call: (c) => c.sluice.queue('x').wait(false) },
  'QueueRef.timeout': { why: BUILDER, call: (c) => c.sluice.queue('x').timeout(1) },
  'QueueRef.partitions': { why: BUILDER, call: (c) => c.sluice.queue('x').partitions(2) },
  'QueueRef.leaseSeconds': { why: BUILDER, call: (c) => c.sluice.queue('x').leaseSeconds(5) },
  'QueueRef.subscriptionMode': { why: BUILDER, call: (c) => c.sluice.queue('x').subscriptionMode('new') },
  'QueueRef.subscriptionFrom': { why: BUILDER, call: (c) => c.sluice.queue('x').subscriptionFrom(new Date()) },
  'QueueRef.config': { why: BUILDER, call: (c) => c.sluice.queue('x').config({ leaseTime: 5 }) },
  'QueueRef.claimGroup': { why: BUILDER, call: (c) => c.sluice.queue('x').partition('p').claimGroup('g') },
  'QueueRef.dlq': { why: BUILDER, call: (c) => c.sluice.queue('x').group('g').dlq() },
  'Transaction.queue': { why: 'adds to the transaction', call: (c) => c.sluice.transaction().queue('x') },
  'Transaction.addPush': { why: '@internal: TransactionPush.push adds through it' },
  'Transaction.ack': {
    why: 'adds to the transaction',
    call: (c) => c.sluice.transaction().ack([AMESSAGE]),
  },
  'TransactionPush.partition': {
    why: 'adds to the transaction',
    call: (c) => c.sluice.transaction().queue('x').partition('p'),
  },
  'TransactionPush.push': { why: 'adds to the transaction', call: (c) => c.sluice.transaction().queue('x').push([1]) },
  'DeadLetterQueue.group': { why: BUILDER, call: (c) => c.sluice.dlq('x').group('g') },
  'ProducerStamps.acquire': {
    why: 'hands out a producer stamp, in memory',
    call: () => new client.ProducerStamps().acquire(),
  },
  'ProducerStamps.ids': { why: 'a getter', call: () => new client.ProducerStamps().ids },
  'Transport.url': { why: "builds a request's URL", call: (c) => c.sluice.http.url('/health') },
  'SluiceNetworkError.notSent': { why: 'a getter', call: () => new client.SluiceNetworkError('x', 'GET /').notSent },
  'authenticator()': {
    why: "builds the request signer (SigV4's credential chain may call AWS STS or IMDS, never the Sluice API)",
    call: () => client.authenticator({ type: 'none' }, new URL(server.url)),
  },
  'regionFromHost()': {
    why: 'a pure helper',
    call: () => client.regionFromHost('a.execute-api.eu-west-1.amazonaws.com'),
  },
  'isExecuteApiHost()': { why: 'a pure helper', call: () => client.isExecuteApiHost('localhost') },
  'backoffDelay()': { why: 'a pure helper', call: () => client.backoffDelay(1, client.DEFAULT_RETRY, Math.random) },
  'isRetryable()': { why: 'a pure helper', call: () => client.isRetryable(new Error('x'), 'idempotent') },
  'uuidv7()': { why: 'a pure helper', call: () => client.uuidv7() },
  'verifyTargetSignature()': {
    why: "a pure helper: checks a target request's signature where it is received",
    call: () => client.verifyTargetSignature({ header: 't=1,v1=00', body: '{}', secret: 'whsec_x' }),
  },
  'processTargetEvent()': {
    why: "a pure helper: runs a target's handler per record where the event is received",
    call: () =>
      client.processTargetEvent(
        { version: 'sluice.target.v1', queue: 'q', group: 'g', mode: 'claims', batchId: 'b', records: [] },
        () => undefined,
      ),
  },
  ...Object.fromEntries(
    ['set', 'get', 'list', 'delete', 'pause', 'resume', 'rotateSecret'].map((m) => [
      `Targets.${m}`,
      { why: LOCAL_ONLY },
    ]),
  ),
};

/** Transport members whose requests are their callers' (every method above sends through them). */
const CLIENT_TRANSPORT: Record<string, string> = {
  'Transport.send': 'sends the request it is given: each method above is one caller',
  'Transport.json': 'send() answering the body',
  'Transport.once': 'private: one attempt of send()',
  'Transport.pace': "private: sleeps a long poll's Retry-After",
  'Transport.networkError': 'private: the error for a failed attempt',
};

/** CLI commands (and flags) that make no request to the API. */
const CLI_NO_REQUEST: Record<string, NoRequest> = {
  '--help': { why: 'prints usage', args: ['--help'] },
  '--version': { why: 'prints the version', args: ['--version'] },
  completion: { why: 'prints a shell script', args: ['completion', 'bash'] },
  'context add': {
    why: 'writes the local config file',
    args: ['--endpoint', 'https://abc.execute-api.eu-west-1.amazonaws.com', 'context', 'add', 'prod'],
  },
  'context use': { why: 'writes the local config file', args: ['context', 'use', 'prod'] },
  'context list': { why: 'reads the local config file', args: ['context', 'list'] },
  'context remove': { why: 'writes the local config file', args: ['context', 'remove', 'prod'] },
  'token create': {
    why: "writes the token table in DynamoDB with the operator's AWS credentials, not through the API",
  },
  'token list': { why: "reads the token table in DynamoDB with the operator's AWS credentials, not through the API" },
  'token revoke': {
    why: "writes the token table in DynamoDB with the operator's AWS credentials, not through the API",
  },
  cost: {
    why:
      "on a deployment it reads CloudWatch (GetMetricData) with the operator's AWS credentials; only a local " +
      'server is asked, for /metrics, a route never deployed',
  },
  ...Object.fromEntries(
    ['list', 'get', 'set', 'delete', 'pause', 'resume', 'rotate-secret'].map((c) => [
      `targets ${c}`,
      { why: LOCAL_ONLY },
    ]),
  ),
  console: {
    why:
      'serves the console on localhost until stopped; the API requests are the console page’s, signed as the ' +
      'person using it sends them (each needs the policy of what they do)',
  },
};

// ------------------------------------------------------------------ the docs' tables

interface DocRow {
  roles: string[];
  line: number;
}

/** The rows under "Which IAM policy each method (command) needs": first cell → roles named. */
function docTable(text: string, file: string, prefix: string | RegExp = ''): Map<string, DocRow> {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => /^#{2,4} Which IAM policy each (method|command) needs$/.test(l));
  const rows = new Map<string, DocRow>();
  if (start < 0) return rows; // every method is then missing its row
  let i = start + 1;
  while (i < lines.length && !lines[i]!.startsWith('|')) i++;
  for (i += 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    const [name, roles] = lines[i]!.split('|')
      .slice(1, -1)
      .map((s) => s.trim());
    const key = (name ?? '').replace(/^`|`$/g, '').replace(prefix, '');
    if (rows.has(key)) throw new Error(`${file}:${i + 1}: ${key} has two rows`);
    rows.set(key, {
      roles: (roles ?? '')
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean),
      line: i + 1,
    });
  }
  return rows;
}

interface Doc {
  file: string;
  rows: Map<string, DocRow>;
  /** How its rows name a scenario. */
  label: (name: string) => string;
}
const docs: { client: Doc; cli: Doc } = {
  client: { file: 'docs/CLIENT.md', rows: new Map(), label: (n) => n },
  cli: { file: 'docs/CLI.md', rows: new Map(), label: (n) => `sluice ${n}` },
};
beforeAll(async () => {
  const read = (f: string) => readFile(new URL(`../../${f}`, import.meta.url), 'utf8');
  docs.client.rows = docTable(await read(docs.client.file), docs.client.file);
  docs.cli.rows = docTable(await read(docs.cli.file), docs.cli.file, /^sluice /);
});

// ------------------------------------------------------------------ evaluation

const target = (r: SeenRequest): string => `${r.method} ${r.path}${r.query ? `?${r.query}` : ''}`;

/** Runs a scenario; answers the requests its call made (not its setup's). */
async function record(s: Scenario): Promise<SeenRequest[]> {
  const call = await s(newCtx());
  const from = seen.length;
  await call();
  return seen.slice(from);
}

/** Each role and the first of `requests` its policy denies (undefined: it allows them all). */
function verdicts(requests: SeenRequest[]): Record<ApiRole, SeenRequest | undefined> {
  return Object.fromEntries(
    ROLES.map((role) => [role, requests.find((r) => !policies.allows(role, r.method, r.path))]),
  ) as Record<ApiRole, SeenRequest | undefined>;
}

/** What is wrong with the doc row for `name`, given its recorded requests ([] when nothing). */
function mismatches(doc: Doc, name: string, requests: SeenRequest[]): string[] {
  const row = doc.rows.get(name);
  const what = doc.label(name);
  if (!row) return [`${doc.file} has no row for ${what} in "Which IAM policy each method needs"`];
  const problems = row.roles
    .filter((r) => !(ROLES as string[]).includes(r))
    .map((r) => `${doc.file}:${row.line}: ${what}: "${r}" is not a role (${ROLES.join(', ')})`);
  const denied = verdicts(requests);
  for (const role of ROLES) {
    const listed = row.roles.includes(role);
    const d = denied[role];
    if (listed && d)
      problems.push(
        `${doc.file}:${row.line}: ${what} lists ${role}, but the ${role} policy denies its request ${target(d)}`,
      );
    if (!listed && !d)
      problems.push(
        `${doc.file}:${row.line}: ${what} does not list ${role}, but the ${role} policy allows all of its requests (${requests.map(target).join(', ')})`,
      );
  }
  return problems;
}

/** What each request-making scenario recorded, for the checks after them. */
const recorded = new Map<string, SeenRequest[]>();

describe.each([
  { kind: 'client method', scenarios: CLIENT, doc: docs.client },
  { kind: 'CLI command', scenarios: CLI, doc: docs.cli },
])('each $kind is allowed by the policies its doc row names, and only those', ({ scenarios, doc }) => {
  it.each(Object.keys(scenarios))('%s', async (name) => {
    const requests = await record(scenarios[name]!);
    recorded.set(name, requests);
    expect(requests.length, `${name} made no request: list it among those that make none`).toBeGreaterThan(0);
    const denied = verdicts(requests);
    const nobody = ROLES.every((r) => denied[r])
      ? [`${doc.label(name)} is denied to every role: ${ROLES.map((r) => `${r} by ${target(denied[r]!)}`).join('; ')}`]
      : [];
    expect([...nobody, ...mismatches(doc, name, requests)]).toEqual([]);
  });
});

describe('what is documented as a producer’s, the Producer policy allows', () => {
  // DEPLOYING.md: the Producer policy is for "roles that push (transactions included)".
  it.each(['QueueRef.push', 'QueueRef.send', 'Sluice.flush', 'Sluice.close', 'Transaction.commit', 'push'])(
    '%s',
    async (name) => {
      const requests = recorded.get(name) ?? (await record({ ...CLIENT, ...CLI }[name]!));
      const d = verdicts(requests).Producer;
      expect(d && `the Producer policy denies ${name}'s ${target(d)}`).toBeUndefined();
    },
  );
});

describe('the lists that make no request', () => {
  const clientCalls = Object.entries(CLIENT_NO_REQUEST).filter(([, e]) => e.call);
  it.each(clientCalls)('%s makes none', async (_name, e) => {
    const c = newCtx();
    const from = seen.length;
    await e.call!(c);
    expect(seen.slice(from).map(target)).toEqual([]);
  });

  const cliRuns = Object.entries(CLI_NO_REQUEST).filter(([, e]) => e.args);
  it.each(cliRuns)('sluice %s makes none', async (_name, e) => {
    const from = seen.length;
    const r = await cli(e.args!);
    expect({
      code: r.code,
      ...(r.code === 0 ? {} : { stderr: r.err }),
      server: seen.slice(from).map(target),
      anywhere: r.fetched,
    }).toEqual({ code: 0, server: [], anywhere: [] });
  });
});

// ------------------------------------------------------------------ completeness

/** `Class.member` for every method and accessor of the client's exported classes; `fn()` for its functions. */
function clientMembers(): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(client)) {
    if (typeof value !== 'function') continue;
    if (!/^class\b/.test(Function.prototype.toString.call(value))) {
      out.push(`${name}()`);
      continue;
    }
    for (const m of Object.getOwnPropertyNames(value.prototype as object))
      if (m !== 'constructor') out.push(`${name}.${m}`);
    for (const m of Object.getOwnPropertyNames(value))
      if (!['length', 'name', 'prototype'].includes(m)) out.push(`${name}.${m} (static)`);
  }
  return out;
}

/** The commands that run something (not the groups that only hold subcommands). */
function leaves(cmd: Command, path = ''): string[] {
  return cmd.commands.flatMap((c) => {
    const p = path ? `${path} ${c.name()}` : c.name();
    return c.commands.length > 0 ? leaves(c, p) : [p];
  });
}

describe('completeness', () => {
  it('every method of the client is a scenario or listed as making none of its own (and nothing listed is gone)', () => {
    const members = clientMembers();
    const known = [...Object.keys(CLIENT), ...Object.keys(CLIENT_NO_REQUEST), ...Object.keys(CLIENT_TRANSPORT)];
    expect(
      members.filter((m) => !known.includes(m)),
      'client members without a scenario (CLIENT) or a reason they make no request (CLIENT_NO_REQUEST)',
    ).toEqual([]);
    expect(
      known.filter((k) => !members.includes(k)),
      'listed but not in the client',
    ).toEqual([]);
  });

  it('every CLI command is a scenario or listed as making none (and nothing listed is gone)', () => {
    const io: Io = {
      stdout: { write: () => true },
      stderr: { write: () => true },
      stdin: Readable.from(['']),
      env: {},
    };
    const commands = leaves(buildProgram(io, () => undefined));
    const command = (key: string): string => key.replace(/ --.*$/, '');
    const known = [...Object.keys(CLI), ...Object.keys(CLI_NO_REQUEST)].filter((k) => !k.startsWith('--'));
    expect(
      commands.filter((c) => !known.map(command).includes(c)),
      'commands without a scenario (CLI) or a reason they make no request (CLI_NO_REQUEST)',
    ).toEqual([]);
    expect(
      known.filter((k) => !commands.includes(command(k))),
      'listed but not a command',
    ).toEqual([]);
  });

  it("the docs' tables have a row for each scenario and none for anything else", () => {
    for (const [doc, scenarios] of [
      [docs.client, CLIENT],
      [docs.cli, CLI],
    ] as const) {
      const unknown = [...doc.rows.keys()].filter((k) => !(k in scenarios));
      expect(
        unknown.map((k) => `${doc.file}:${doc.rows.get(k)!.line}: ${doc.label(k)}`),
        'rows naming no method that makes requests',
      ).toEqual([]);
      const missing = Object.keys(scenarios)
        .filter((k) => !doc.rows.has(k))
        .map(doc.label);
      expect(missing, `${doc.file}: no row`).toEqual([]);
    }
  });
});
