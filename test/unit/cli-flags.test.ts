// The CLI's flags and answers (docs/CLI.md, "Conventions"), with a scripted fetch: one flag per
// concept (batch is -b/--batch, every duration takes units through one parser), a missing queue or
// record-claim group said as such (exit 3) rather than "no messages", and push's progress line on a
// terminal only.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Command, Option } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Io } from '../../cli/command.js';
import { EXIT } from '../../cli/errors.js';
import { pushStatus } from '../../cli/format.js';
import { buildProgram, run } from '../../cli/main.js';
import { fakeFetch, jsonResponse, type Answer, type Recorded } from '../support/fake-fetch.js';

function io(
  answers: Answer[] | ((req: Recorded) => Response),
  opts: { stdin?: string; tty?: boolean; stdinBytes?: number } = {},
): { io: Io; out: () => string; err: () => string; calls: Recorded[] } {
  let out = '';
  let err = '';
  const f = fakeFetch(answers);
  return {
    io: {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s), ...(opts.tty ? { isTTY: true } : {}) },
      stdin: Readable.from([opts.stdin ?? '']),
      ...(opts.stdinBytes !== undefined ? { stdinBytes: opts.stdinBytes } : {}),
      env: { SLUICE_ENDPOINT: 'http://cli.test' },
      fetch: f.fetch,
      sleep: async () => undefined,
    },
    out: () => out,
    err: () => err,
    calls: f.calls,
  };
}

const noContent = (): Response => new Response(null, { status: 204 });
const missing = (what: string): Response =>
  jsonResponse(404, { error: `${what} is missing`, code: 'not_found', missing: what });
const pushEcho = (req: Recorded): Response =>
  jsonResponse(
    201,
    (req.body as { items: unknown[] }).items.map((_, index) => ({
      index,
      status: 'queued',
      transaction_id: `t${index}`,
    })),
  );

/** Every command of the program with its path (`claims poll`). */
function commands(program: Command): { path: string; cmd: Command }[] {
  const out: { path: string; cmd: Command }[] = [];
  const visit = (c: Command, path: string): void => {
    for (const sub of c.commands) {
      const p = path ? `${path} ${sub.name()}` : sub.name();
      out.push({ path: p, cmd: sub });
      visit(sub, p);
    }
  };
  visit(program, '');
  return out;
}

describe('unit: cli flags, one per concept', () => {
  const program = buildProgram(io([]).io, () => undefined);
  const options = [
    ...program.options.map((o) => ({ path: '(global)', o })),
    ...commands(program).flatMap(({ path, cmd }) => cmd.options.map((o: Option) => ({ path, o }))),
  ];

  it('spells batch -b/--batch on every command that takes one, and -b means nothing else', () => {
    const batch = options.filter(({ o }) => o.long === '--batch');
    expect(batch.map(({ path }) => path).sort()).toEqual([
      'claims poll',
      'dlq list',
      'dlq redrive-all',
      'pop',
      'push',
      'tail',
    ]);
    expect(batch.every(({ o }) => o.short === '-b')).toBe(true);
    expect(options.filter(({ o }) => o.short === '-b' && o.long !== '--batch')).toEqual([]);
    expect(options.filter(({ o }) => ['--max', '--lease-seconds'].includes(o.long ?? ''))).toEqual([]);
  });

  it('takes every duration as a <duration> with units, through the one parser', () => {
    const unitless = options
      .filter(({ o }) => /<(ms|s|seconds)>/.test(o.flags))
      .map(({ path, o }) => `${path} ${o.flags}`);
    expect(unitless).toEqual([]);
    const durations = options
      .filter(({ o }) => o.flags.includes('<duration>'))
      .map(({ path, o }) => `${path} ${o.long}`);
    expect(durations.sort()).toEqual(
      [
        '(global) --timeout',
        'claims nack --delay',
        'claims poll --visibility',
        'claims poll --wait',
        'groups --min-lag',
        'peek --since',
        'pop --lease',
        'pop --wait',
        'tail --idle',
        'targets set --delivery-timeout',
        'targets set --max-age',
        'targets set --window',
      ].sort(),
    );
    // A bare number is refused by every one of them (it used to be milliseconds: `--idle 5` was
    // 5 ms), with a hint.
    for (const { path, o } of options.filter(({ o }) => o.flags.includes('<duration>'))) {
      const what = o.long?.slice(2) ?? '';
      expect(() => o.parseArg?.('5', undefined), `${path} ${o.long}`).toThrow(`${what} needs a unit: 5s or 5ms?`);
      expect(o.parseArg?.('5s', undefined), `${path} ${o.long}`).toBe(5000);
    }
  });

  it('sends what each duration flag says, in the unit the API takes', async () => {
    const pop = io([noContent(), jsonResponse(200, { queue: 'q' })]);
    expect(await run(['--timeout', '45s', 'pop', 'q', '-b', '7', '--wait', '5s', '--lease', '2m'], pop.io)).toBe(
      EXIT.ok,
    );
    expect(Object.fromEntries(pop.calls[0]!.url.searchParams)).toMatchObject({
      batch: '7',
      wait: 'true',
      timeout: '5000',
      leaseSeconds: '120',
    });
    const state = jsonResponse(200, { committed: 0, tail: 1, lag: 1, inFlight: 0, owed: 0, deadLetters: 0 });
    const poll = io([state, jsonResponse(200, { records: [], capped: false })]);
    expect(await run(['claims', 'poll', 'q', 'p', 'g', '-b', '3', '-w', '1s', '--visibility', '1m'], poll.io)).toBe(
      EXIT.ok,
    );
    expect(poll.calls[1]?.body).toEqual({ max: 3, waitMs: 1000, visibilityMs: 60_000 });
    const nack = io([state, jsonResponse(200, { offset: 0, delayMs: 500 })]);
    expect(await run(['claims', 'nack', 'q', 'p', 'g', '0', '--delay', '500ms'], nack.io)).toBe(EXIT.ok);
    expect(nack.calls[1]?.body).toEqual({ offset: 0, delayMs: 500 });
    expect(nack.out()).toBe('handed back 0 (owed again in 500ms)\n');
    const lag = io([jsonResponse(200, { consumerGroups: [] })]);
    expect(await run(['groups', '--min-lag', '1h'], lag.io)).toBe(EXIT.ok);
    expect(lag.calls[0]?.url.searchParams.get('minLagSeconds')).toBe('3600');
    const refused = io([]);
    expect(await run(['groups', '--min-lag', '3600'], refused.io)).toBe(EXIT.usage);
    expect(refused.err()).toContain('min-lag needs a unit: 3600s or 3600ms? (e.g. 500ms, 30s, 5m, 1h30m)');
    const idle = io([]);
    expect(await run(['tail', 'q', '--idle', '5'], idle.io)).toBe(EXIT.usage);
    expect(idle.calls).toEqual([]); // refused before any request
    const bad = io([]);
    expect(await run(['pop', 'q', '--wait', 'soon'], bad.io)).toBe(EXIT.usage);
    expect(bad.err()).toContain('wait must be a duration');
  });
});

describe('unit: targets set', () => {
  const answer = (req: Recorded): Response =>
    jsonResponse(201, {
      queue: 'q',
      group: 'g',
      settings: { ...(req.body as object), mode: 'leases' },
      state: 'active',
      signingSecret: 'whsec_x',
    });

  it('sends the settings its flags say, in seconds, and only those (the rest are the server defaults)', async () => {
    const t = io(answer);
    const args = ['targets', 'set', 'q', 'g', '--url', 'https://h.example.com/x', '--window', '1m', '--max-age', '2h'];
    expect(await run([...args, '--delivery-timeout', '90s', '--max-retries', '0'], t.io)).toBe(EXIT.ok);
    expect(t.calls.map((c) => [c.method, c.url.pathname, c.body])).toEqual([
      [
        'PUT',
        '/api/v1/targets/q/g',
        {
          endpoint: { kind: 'https', url: 'https://h.example.com/x' },
          mode: 'leases',
          maximumBatchingWindowInSeconds: 60,
          maximumRecordAgeInSeconds: 7200,
          timeoutSeconds: 90,
          maximumRetryAttempts: 0,
        },
      ],
    ]);
    expect(t.out()).toBe('whsec_x\n');
    expect(t.err()).toContain('it will not be shown again');
  });

  it('leaves ranges to the server but refuses a fraction of a second, a non-integer or an unknown mode first', async () => {
    for (const bad of [
      ['--window', '1500ms'],
      ['--delivery-timeout', '0.5s'],
      ['--batch-size', '2.5'],
      ['--concurrency', 'many'],
      ['--mode', 'push'],
      ['--start', '0'],
    ]) {
      const t = io(answer);
      expect(await run(['targets', 'set', 'q', 'g', '--url', 'https://h.example.com/x', ...bad], t.io)).toBe(
        EXIT.usage,
      );
      expect(t.calls).toEqual([]);
    }
    const t = io(answer);
    expect(await run(['targets', 'set', 'q', 'g', '--url', 'https://h.example.com/x', '--batch-size', '0'], t.io)).toBe(
      EXIT.ok,
    );
    expect(t.calls[0]?.body).toMatchObject({ batchSize: 0 });
  });
});

describe('unit: dlq list pages with -b/--batch', () => {
  const page = (n: number): Response =>
    jsonResponse(200, {
      messages: Array.from({ length: n }, (_, i) => ({ partitionId: 'p', transactionId: `t${i}`, consumerGroup: 'g' })),
      pagination: { total: n },
    });
  const limits = (calls: Recorded[]): (string | null)[] => calls.map((c) => c.url.searchParams.get('limit'));

  it('asks for --batch rows a request; --limit is the hidden old spelling; --all pages by --batch', async () => {
    const one = io([page(2)]);
    expect(await run(['dlq', 'list', 'q', '-b', '20'], one.io)).toBe(EXIT.ok);
    expect(limits(one.calls)).toEqual(['20']);
    const old = io([page(2)]);
    expect(await run(['dlq', 'list', 'q', '--limit', '7'], old.io)).toBe(EXIT.ok);
    expect(limits(old.calls)).toEqual(['7']);
    const dflt = io([page(2)]);
    expect(await run(['dlq', 'list', 'q'], dflt.io)).toBe(EXIT.ok);
    expect(limits(dflt.calls)).toEqual(['100']);
    const all = io([page(2), page(2), page(1)]);
    expect(await run(['--json', 'dlq', 'list', 'q', '--all', '--batch', '2'], all.io)).toBe(EXIT.ok);
    expect(limits(all.calls)).toEqual(['2', '2', '2']);
    expect((JSON.parse(all.out()) as unknown[]).length).toBe(5);
    const help = buildProgram(io([]).io, () => undefined)
      .commands.find((c) => c.name() === 'dlq')!
      .commands.find((c) => c.name() === 'list')!
      .helpInformation();
    expect(help).toContain('-b, --batch <n>');
    expect(help).not.toContain('--limit');
  });
});

describe('unit: cli says what does not exist', () => {
  it('pop -p: only an empty pop asks the partition listing, once; a missing partition is exit 3', async () => {
    const detail = jsonResponse(200, { name: 'q', partitions: [{ name: 'eu' }, { name: 'us' }] });
    const gone = io([noContent(), detail]);
    expect(await run(['pop', 'q', '-p', 'asia'], gone.io)).toBe(EXIT.notFound);
    expect(gone.err()).toBe('sluice: queue "q" has no partition "asia" (it has eu, us; a push creates one)\n');
    expect(gone.calls.map((c) => `${c.method} ${c.url.pathname}`)).toEqual([
      'GET /api/v1/pop/queue/q/partition/asia',
      'GET /api/v1/resources/queues/q',
    ]);
    const noQueue = io([noContent(), missing('queue')]);
    expect(await run(['pop', 'nope', '-p', 'eu'], noQueue.io)).toBe(EXIT.notFound);
    expect(noQueue.err()).toContain('queue "nope" does not exist');
    const empty = io([noContent(), detail]);
    expect(await run(['pop', 'q', '-p', 'eu'], empty.io)).toBe(EXIT.ok);
    expect(empty.err()).toBe('no messages available in q/eu\n');
    const msg = { partition: 'eu', offset: 0, transactionId: 't', leaseId: 'l', partitionId: 'pid', data: 1 };
    const got = io([jsonResponse(200, { messages: [msg] }), jsonResponse(200, { results: [{ success: true }] })]);
    expect(await run(['pop', 'q', '-p', 'eu', '--no-ack'], got.io)).toBe(EXIT.ok);
    expect(got.calls.length).toBe(1);
  });

  it('pop: an empty answer from a missing queue is exit 3, from an empty one "no messages"', async () => {
    const gone = io([noContent(), missing('queue')]);
    expect(await run(['pop', 'nope'], gone.io)).toBe(EXIT.notFound);
    expect(gone.err()).toBe('sluice: queue "nope" does not exist (a push creates it, or `sluice configure nope`)\n');
    const json = io([noContent(), missing('queue')]);
    expect(await run(['--json', 'pop', 'nope'], json.io)).toBe(EXIT.notFound);
    expect(JSON.parse(json.err())).toMatchObject({ code: 'not_found' });
  });

  it('tail, dlq list, dlq redrive-all and groups --queue check the queue before anything else', async () => {
    const tail = io([missing('queue')]);
    expect(await run(['tail', 'nope', '--group', 'new-group'], tail.io)).toBe(EXIT.notFound);
    expect(tail.calls.map((c) => c.url.pathname)).toEqual(['/api/v1/queues/nope']);
    const list = io([jsonResponse(200, { messages: [], pagination: { total: 0 } }), missing('queue')]);
    expect(await run(['dlq', 'list', 'nope'], list.io)).toBe(EXIT.notFound);
    expect(list.err()).toContain('queue "nope" does not exist');
    const redrive = io([missing('queue')]);
    expect(await run(['dlq', 'redrive-all', 'nope', '--no-progress'], redrive.io)).toBe(EXIT.notFound);
    const groups = io([jsonResponse(200, { consumerGroups: [] }), missing('queue')]);
    expect(await run(['groups', '--queue', 'nope'], groups.io)).toBe(EXIT.notFound);
  });

  it('claims: a missing group is exit 3 with how to create it, and poll does not create it unless --create', async () => {
    const poll = io([missing('group')]);
    expect(await run(['claims', 'poll', 'q', 'p', 'workrs'], poll.io)).toBe(EXIT.notFound);
    expect(poll.err()).toBe(
      'sluice: record-claim group "workrs" does not exist on q/p (create it: sluice claims create q p workrs)\n',
    );
    expect(poll.calls.map((c) => `${c.method} ${c.url.pathname}`)).toEqual([
      'GET /api/v1/queues/q/partitions/p/groups/workrs',
    ]);
    const created = io([
      jsonResponse(200, { offset: 0, moved: true }),
      jsonResponse(200, { records: [], capped: false }),
    ]);
    expect(await run(['claims', 'poll', 'q', 'p', 'g', '--create'], created.io)).toBe(EXIT.ok);
    expect(created.calls.map((c) => c.method)).toEqual(['PUT', 'POST']);
    for (const args of [
      ['ack', 'q', 'p', 'g', '1'],
      ['nack', 'q', 'p', 'g', '1'],
      ['dead-letters', 'q', 'p', 'g'],
      ['redrive', 'q', 'p', 'g', '--all'],
      ['describe', 'q', 'p', 'g'],
      ['seek', 'q', 'p', 'g', 'earliest'],
    ]) {
      const t = io([missing('group')]);
      expect(await run(['claims', ...args], t.io), `claims ${args.join(' ')}`).toBe(EXIT.notFound);
      expect(t.err()).toContain('record-claim group "g" does not exist on q/p');
    }
    const partition = io([missing('partition')]);
    expect(await run(['claims', 'describe', 'q', 'eu', 'g'], partition.io)).toBe(EXIT.notFound);
    expect(partition.err()).toBe('sluice: queue "q" has no partition "eu"\n');
    const deleted = io([jsonResponse(200, { existed: false })]);
    expect(await run(['claims', 'delete', 'q', 'p', 'g'], deleted.io)).toBe(EXIT.notFound);
  });

  it('claims create and seek take an ISO-8601 instant', async () => {
    const t = io([jsonResponse(200, { offset: 4, moved: true })]);
    expect(await run(['claims', 'seek', 'q', 'p', 'g', '2026-05-01T12:00:00Z'], t.io)).toBe(EXIT.ok);
    expect(t.calls[0]?.body).toEqual({ start: { at: '2026-05-01T12:00:00Z' } });
    const c = io([jsonResponse(200, { offset: 4, moved: true })]);
    expect(await run(['claims', 'create', 'q', 'p', 'g', '--start', '2026-05-01'], c.io)).toBe(EXIT.ok);
    expect(c.calls[0]?.body).toEqual({ start: { at: '2026-05-01' } });
    const bad = io([]);
    expect(await run(['claims', 'seek', 'q', 'p', 'g', 'yesterday'], bad.io)).toBe(EXIT.usage);
  });
});

describe('unit: push progress', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-cli-progress-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('draws count, rate, share and ETA on a terminal, from a file of known size', async () => {
    const file = join(dir, 'three.jsonl');
    await writeFile(file, '{"n":1}\n{"n":2}\n{"n":3}\n');
    const t = io(pushEcho, { tty: true });
    expect(await run(['push', 'q', '--file', file, '-b', '1'], t.io)).toBe(EXIT.ok);
    const frames = t.err().split('\r').filter(Boolean);
    expect(frames[0]).toMatch(/^push 1 messages [\d.]+\/s 33% of 24 B ETA \d+s\u001b\[K$/);
    expect(frames.at(-1)).toMatch(/^push 3 messages [\d.]+\/s 100% of 24 B\u001b\[K\n$/);
    expect(t.out()).toBe('pushed 3 messages to q/Default: 3 queued, 0 duplicate, 0 failed\n');
  });

  it('uses the size of stdin when it is a file; without a size, count and rate only', async () => {
    const sized = io(pushEcho, { tty: true, stdin: '{"n":1}\n{"n":2}\n', stdinBytes: 16 });
    expect(await run(['push', 'q', '-b', '1'], sized.io)).toBe(EXIT.ok);
    expect(sized.err()).toContain('50% of 16 B ETA');
    const piped = io(pushEcho, { tty: true, stdin: '{"n":1}\n' });
    expect(await run(['push', 'q'], piped.io)).toBe(EXIT.ok);
    expect(piped.err().split('\r').at(-1)).toMatch(/^push 1 messages [\d.]+\/s\u001b\[K\n$/);
  });

  it('draws nothing when stderr is not a terminal, or with --no-progress', async () => {
    const piped = io(pushEcho, { stdin: '{"n":1}\n{"n":2}\n' });
    expect(await run(['push', 'q', '-b', '1'], piped.io)).toBe(EXIT.ok);
    expect(piped.err()).toBe('');
    const off = io(pushEcho, { tty: true, stdin: '{"n":1}\n' });
    expect(await run(['push', 'q', '--no-progress'], off.io)).toBe(EXIT.ok);
    expect(off.err()).toBe('');
  });

  it('computes the ETA from the rate so far', () => {
    expect(pushStatus({ messages: 1200, bytesRead: 512, totalBytes: 1024, elapsedMs: 2000 })).toBe(
      'push 1200 messages 600/s 50% of 1.0 KB ETA 2s',
    );
    expect(pushStatus({ messages: 5, bytesRead: 10, elapsedMs: 1000 })).toBe('push 5 messages 5.0/s');
  });
});
