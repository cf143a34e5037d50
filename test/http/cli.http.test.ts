/**
 * The real `sluice` binary against the real local server (both child processes): pushes
 * 10,000 lines from a file and tails them, pops, lists and redrives the DLQ with progress,
 * polls and acks claims; exit codes and `--json` output.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sluice, type Message } from '../../client/index.js';
import { sluiceCli, sluiceCliReader } from '../support/cli.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';

let dir: string;
let server: ServerProcess;
let env: Record<string, string>;
let sluice: Sluice;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-cli-'));
  server = await startServerProcess({ SLUICE_DATA_DIR: join(dir, 'data'), SLUICE_SYNC: 'normal' });
  env = { SLUICE_ENDPOINT: server.url };
  sluice = new Sluice({ endpoint: server.url });
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const lines = (s: string): string[] => s.split('\n').filter(Boolean);

describe('cli against the local server', () => {
  it('pushes 10,000 lines from a file and tails every one of them', async () => {
    const file = join(dir, 'orders.jsonl');
    await writeFile(
      file,
      Array.from({ length: 10_000 }, (_, i) => JSON.stringify({ n: i, region: i % 2 ? 'eu' : 'us' })).join('\n') + '\n',
    );
    const push = await sluiceCli(
      ['--json', 'push', 'cli-orders', '--partition', 'all', '--file', file, '--batch', '2000'],
      { env },
    );
    expect(push.stderr).toBe('');
    expect(push.code).toBe(0);
    expect(JSON.parse(push.stdout)).toEqual({
      queue: 'cli-orders',
      partition: 'all',
      lines: 10_000,
      queued: 10_000,
      duplicate: 0,
      failed: 0,
    });

    const again = await sluiceCli(['push', 'cli-orders', '--partition', 'all', '--file', file, '--id-field', 'n'], {
      env,
    });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('pushed 10000 messages to cli-orders/all: 10000 queued, 0 duplicate, 0 failed\n');

    const tail = await sluiceCli(
      ['--json', 'tail', 'cli-orders', '--group', 'audit', '--batch', '1000', '--limit', '20000'],
      { env, timeoutMs: 120_000 },
    );
    expect(tail.code).toBe(0);
    const got = lines(tail.stdout).map((l) => JSON.parse(l) as Message<{ n: number }>);
    expect(got).toHaveLength(20_000);
    expect(got.slice(0, 10_000).map((m) => m.data.n)).toEqual(Array.from({ length: 10_000 }, (_, i) => i));
    expect(got.every((m) => m.consumerGroup === 'audit' && m.queue === 'cli-orders')).toBe(true);

    const groups = await sluiceCli(['--json', 'groups', '--queue', 'cli-orders'], { env });
    expect(groups.code).toBe(0);
    const view = (
      JSON.parse(groups.stdout) as {
        name: string;
        queues: { queue: string; lagMessages: number; detail: { committed: number }[] }[];
      }[]
    ).find((g) => g.name === 'audit');
    expect(view?.queues[0]).toMatchObject({ queue: 'cli-orders', lagMessages: 0, detail: [{ committed: 19_999 }] });
    const table = await sluiceCli(['groups', '--group', 'audit'], { env });
    expect(lines(table.stdout)[0]).toMatch(/^GROUP\s+QUEUE\s+PARTITION\s+COMMITTED\s+NEXT\s+LAG\s+AGE\s+LEASED$/);
    expect(lines(table.stdout)[1]).toMatch(/^audit\s+cli-orders\s+all\s+19999\s+20000\s+0\s/);
  });

  it('pushes from stdin, pops, and stops a limited tail after exactly the limit', async () => {
    const push = await sluiceCli(['push', 'cli-small', '-p', 'a'], {
      env,
      stdin: '{"a":1}\n{"a":2}\n{"a":3}\n{"a":4}\n',
    });
    expect(push.code).toBe(0);
    const pop = await sluiceCli(['--json', 'pop', 'cli-small', '-p', 'a', '-b', '2', '-g', 'small'], { env });
    expect(pop.code).toBe(0);
    expect((JSON.parse(pop.stdout) as Message[]).map((m) => m.data)).toEqual([{ a: 1 }, { a: 2 }]);
    const tail = await sluiceCli(['tail', 'cli-small', '--group', 'small', '--limit', '1'], { env });
    expect(tail.code).toBe(0);
    expect(lines(tail.stdout)).toEqual([expect.stringMatching(/^a\t2\t\S+\t\{"a":3\}$/)]);
    expect(tail.stderr).toBe('tail: 1 messages written (1 acked)\n');
    const rest = await sluiceCli(['--json', 'pop', 'cli-small', '-b', '10', '-g', 'small'], { env });
    expect((JSON.parse(rest.stdout) as Message[]).map((m) => m.data)).toEqual([{ a: 4 }]);
    const none = await sluiceCli(['pop', 'cli-small', '-g', 'small'], { env });
    expect(none).toMatchObject({ code: 0, stdout: '', stderr: 'no messages available in cli-small\n' });
    const peek = await sluiceCli(['tail', 'cli-small', '-p', 'a', '--peek', '--idle', '300ms', '--from', '2'], { env });
    expect(lines(peek.stdout).map((l) => l.split('\t')[3])).toEqual(['{"a":3}', '{"a":4}']);
  });

  it('describes a group, seeks it to the end, and configures a queue', async () => {
    await sluice
      .queue('cli-seek')
      .partition('a')
      .push([{ data: 1 }, { data: 2 }]);
    expect((await sluiceCli(['pop', 'cli-seek', '-g', 'sg', '-b', '10'], { env })).code).toBe(0);
    await sluice
      .queue('cli-seek')
      .partition('a')
      .push([{ data: 3 }, { data: 4 }, { data: 5 }]);

    const described = await sluiceCli(['--json', 'describe', 'sg'], { env });
    expect(described.code).toBe(0);
    expect(JSON.parse(described.stdout)).toMatchObject({
      name: 'sg',
      queues: [
        { queue: 'cli-seek', lagMessages: 3, detail: [{ partition: 'a', committed: 1, next: 5, lagMessages: 3 }] },
      ],
    });
    const text = await sluiceCli(['describe', 'sg'], { env });
    expect(lines(text.stdout)[0]).toMatch(/^group sg: 3 messages behind, oldest \d+s$/);
    expect(lines(text.stdout)[2]).toMatch(/^sg\s+cli-seek\s+a\s+1\s+5\s+3\s/);

    const seek = await sluiceCli(['--json', 'seek', 'sg', 'cli-seek', '--to-end'], { env });
    expect(seek.code).toBe(0);
    expect(JSON.parse(seek.stdout)).toMatchObject({ success: true, seekToEnd: true, partitionsUpdated: 1 });
    expect(await sluiceCli(['pop', 'cli-seek', '-g', 'sg'], { env })).toMatchObject({
      code: 0,
      stdout: '',
      stderr: 'no messages available in cli-seek\n',
    });

    const configured = await sluiceCli(
      ['--json', 'configure', 'cli-seek', '--set', 'leaseTime=30', '--set', 'retryLimit=5'],
      { env },
    );
    expect(configured.code).toBe(0);
    expect(JSON.parse(configured.stdout)).toMatchObject({
      configured: true,
      queue: 'cli-seek',
      options: { leaseTime: 30, retryLimit: 5 },
    });
    const refused = await sluiceCli(['configure', 'cli-seek', '--set', 'leaseTime=soon'], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^sluice: .*leaseTime.*\[HTTP 400 invalid_request\]\n$/);
    // --merge changes one option and keeps the others; without it the others go back to defaults.
    const merged = await sluiceCli(['--json', 'configure', 'cli-seek', '--merge', '--set', 'ttl=600'], { env });
    expect(merged.code).toBe(0);
    expect(JSON.parse(merged.stdout)).toMatchObject({ options: { leaseTime: 30, retryLimit: 5, ttl: 600 } });
    expect((JSON.parse(merged.stdout) as { explicitOptions: string[] }).explicitOptions).toEqual([
      'leaseTime',
      'retryLimit',
      'ttl',
    ]);
    const replaced = await sluiceCli(['--json', 'configure', 'cli-seek', '--set', 'ttl=600'], { env });
    expect(JSON.parse(replaced.stdout)).toMatchObject({ options: { leaseTime: 300, retryLimit: 3, ttl: 600 } });
    const nowhere = await sluiceCli(['configure', 'cli-no-such', '--merge', '--set', 'ttl=1'], { env });
    expect(nowhere.code).toBe(3); // EXIT.notFound
    expect(nowhere.stderr).toMatch(/cli-no-such.*does not exist/);
  });

  it('lists the DLQ and redrives it with a progress bar and a rate limit', async () => {
    const q = sluice.queue('cli-dlq').partition('a');
    await q.push(Array.from({ length: 30 }, (_, i) => ({ data: i })));
    for (let i = 0; i < 30; i++)
      await sluice.ack(await q.group('g').wait(false).pop(), 'dlq', { error: `bad input ${i}` });

    const list = await sluiceCli(['--json', 'dlq', 'list', 'cli-dlq', '--group', 'g', '-b', '50'], { env });
    expect(list.code).toBe(0);
    const rows = JSON.parse(list.stdout) as { errorMessage: string; consumerGroup: string }[];
    expect(rows).toHaveLength(30);
    expect(rows.every((r) => r.consumerGroup === 'g' && /^bad input \d+$/.test(r.errorMessage))).toBe(true);
    const text = await sluiceCli(['dlq', 'list', 'cli-dlq', '--limit', '2'], { env });
    expect(lines(text.stdout)[0]).toMatch(/^FAILED_AT\s+GROUP\s+PARTITION_ID\s+TRANSACTION_ID\s+RETRIES\s+ERROR$/);
    expect(lines(text.stdout)).toHaveLength(3);

    const started = Date.now();
    const redrive = await sluiceCli(['dlq', 'redrive-all', 'cli-dlq', '--batch', '10', '--rate', '40'], { env });
    expect(redrive.code).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(500); // 30 at 40/s: at least 0.5 s of pacing
    expect(redrive.stdout).toBe('redrove 30 dead letters of cli-dlq\n');
    const progress = lines(redrive.stderr);
    expect(progress[0]).toMatch(/^redrive \[\.+\] 0\/30 0%/);
    expect(progress.at(-1)).toMatch(/^redrive \[#+\] 30\/30 100% [\d.]+\/s$/);
    expect(
      (JSON.parse((await sluiceCli(['--json', 'dlq', 'list', 'cli-dlq'], { env })).stdout) as unknown[]).length,
    ).toBe(0);
    const back = await q.group('g').batch(100).wait(false).pop();
    expect(back.map((m) => m.data)).toEqual(Array.from({ length: 30 }, (_, i) => i));

    const replay = await sluice.ack(back.slice(0, 1), 'dlq');
    expect(replay[0]?.dlq).toBe(true);
    const [row] = (await sluice.dlq('cli-dlq').list()).messages;
    const one = await sluiceCli(['--json', 'dlq', 'retry', row!.partitionId, row!.transactionId], { env });
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({ replayed: true, dlqRowRemoved: true });
  });

  it('polls, acks, describes and redrives claims', async () => {
    await sluice
      .queue('cli-jobs')
      .partition('p0')
      .push(Array.from({ length: 5 }, (_, i) => ({ data: { job: i } })));
    const missing = await sluiceCli(['claims', 'poll', 'cli-jobs', 'p0', 'workers'], { env });
    expect(missing).toMatchObject({ code: 3, stdout: '' });
    expect(missing.stderr).toBe(
      'sluice: record-claim group "workers" does not exist on cli-jobs/p0 (create it: sluice claims create cli-jobs p0 workers)\n',
    );
    expect((await sluiceCli(['claims', 'create', 'cli-jobs', 'p0', 'workers'], { env })).stdout).toBe(
      'created workers at offset 0\n',
    );
    const poll = await sluiceCli(['--json', 'claims', 'poll', 'cli-jobs', 'p0', 'workers', '--batch', '3'], { env });
    expect(poll.code).toBe(0);
    const polled = JSON.parse(poll.stdout) as {
      records: { offset: number; attempts: number; data: unknown }[];
      capped: boolean;
    };
    expect(polled.records.map((r) => [r.offset, r.attempts, r.data])).toEqual([
      [0, 1, { job: 0 }],
      [1, 1, { job: 1 }],
      [2, 1, { job: 2 }],
    ]);
    const ack = await sluiceCli(['--json', 'claims', 'ack', 'cli-jobs', 'p0', 'workers', '0', '1', '2'], { env });
    expect(JSON.parse(ack.stdout)).toEqual({ committed: 3 });
    const text = await sluiceCli(['claims', 'poll', 'cli-jobs', 'p0', 'workers', '-b', '5', '--ack'], { env });
    expect(lines(text.stdout)[0]).toMatch(/^OFFSET\s+ATTEMPTS\s+TRANSACTION_ID\s+DATA$/);
    expect(lines(text.stdout)).toHaveLength(3);
    expect(text.stderr).toContain("the group's position is now 5");
    const describe = await sluiceCli(['--json', 'claims', 'describe', 'cli-jobs', 'p0', 'workers'], { env });
    expect(JSON.parse(describe.stdout)).toMatchObject({ committed: 5, tail: 5, lag: 0, inFlight: 0, deadLetters: 0 });

    await sluice
      .queue('cli-jobs')
      .partition('p0')
      .push([{ data: { job: 5 } }, { data: { job: 6 } }]);
    const g = sluice.queue('cli-jobs').partition('p0').claimGroup('workers');
    for (const r of (await g.poll({ max: 2 })).records) await g.deadLetter(r.offset, { attempts: r.attempts });
    const dead = await sluiceCli(['--json', 'claims', 'dead-letters', 'cli-jobs', 'p0', 'workers'], { env });
    expect(JSON.parse(dead.stdout)).toEqual({ offsets: [5, 6] });
    const redrive = await sluiceCli(['claims', 'redrive', 'cli-jobs', 'p0', 'workers', '--all'], { env });
    expect(redrive.code).toBe(0);
    expect(redrive.stdout).toBe('redrove 2 of 2 dead letters\n');
    expect(lines(redrive.stderr).at(-1)).toMatch(/^redrive \[#+\] 2\/2 100%/);
    expect((await g.poll({ max: 5 })).records.map((r) => r.offset)).toEqual([5, 6]);
  });

  it('authenticates with --token or SLUICE_TOKEN; refusals exit 4 with what to do', async () => {
    const token = 'cli-test-token-0123456789abcdef';
    const grantsFile = join(dir, 'grants.json');
    await writeFile(
      grantsFile,
      JSON.stringify({
        grants: [{ principal: 'ops', actions: ['push', 'consume', 'manage'], queues: ['cli-auth-*'] }],
        tokens: { [token]: 'ops' },
      }),
    );
    const guarded = await startServerProcess(
      { SLUICE_DATA_DIR: join(dir, 'guarded'), SLUICE_SYNC: 'normal' },
      ['--grants', grantsFile],
      { healthHeaders: { authorization: `Bearer ${token}` } },
    );
    try {
      const at = { SLUICE_ENDPOINT: guarded.url };
      const pushed = await sluiceCli(['--token', token, 'push', 'cli-auth-a'], { env: at, stdin: '{"k":1}\n' });
      expect(pushed).toMatchObject({
        code: 0,
        stdout: 'pushed 1 messages to cli-auth-a/Default: 1 queued, 0 duplicate, 0 failed\n',
      });
      const popped = await sluiceCli(['--json', 'pop', 'cli-auth-a'], { env: { ...at, SLUICE_TOKEN: token } });
      expect(popped.code).toBe(0);
      expect((JSON.parse(popped.stdout) as Message[]).map((m) => m.data)).toEqual([{ k: 1 }]);
      const anonymous = await sluiceCli(['groups'], { env: at });
      expect(anonymous.code).toBe(4);
      expect(anonymous.stderr).toMatch(/^sluice: missing bearer token.*\[HTTP 401 unauthorized\].*--token/);
      const elsewhere = await sluiceCli(['--token', token, 'push', 'payroll'], { env: at, stdin: '{"k":2}\n' });
      expect(elsewhere.code).toBe(4);
      expect(elsewhere.stderr).toMatch(/^sluice: ops may not push on queue "payroll".*\[HTTP 403 forbidden\]/);
    } finally {
      await guarded.stop();
    }
  });

  it('says when a queue or a claim group does not exist (exit 3), not "no messages"; a new lease group is fine', async () => {
    for (const args of [
      ['pop', 'cli-nowhere'],
      ['tail', 'cli-nowhere', '--group', 'new', '--idle', '200ms'],
      ['dlq', 'list', 'cli-nowhere'],
    ]) {
      const r = await sluiceCli(args, { env });
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({
        args,
        code: 3,
        stderr: 'sluice: queue "cli-nowhere" does not exist (a push creates it, or `sluice configure cli-nowhere`)\n',
      });
    }
    await sluice.queue('cli-exists').push([{ data: 1 }]);
    // Partition-lease groups are created by naming them (as in Queen).
    const fresh = await sluiceCli(['--json', 'tail', 'cli-exists', '--group', 'brand-new', '--idle', '500ms'], { env });
    expect(fresh.code).toBe(0);
    expect(lines(fresh.stdout).map((l) => (JSON.parse(l) as Message).data)).toEqual([1]);
    const claims = await sluiceCli(['claims', 'describe', 'cli-exists', 'Default', 'nobody'], { env });
    expect(claims.code).toBe(3);
    expect(claims.stderr).toContain('record-claim group "nobody" does not exist on cli-exists/Default');
    const partition = await sluiceCli(['claims', 'poll', 'cli-exists', 'eu', 'g'], { env });
    expect(partition).toMatchObject({ code: 3, stderr: 'sluice: queue "cli-exists" has no partition "eu"\n' });
  });

  it('says when a named partition does not exist (exit 3) on every command, and pops an existing one as before', async () => {
    await sluice
      .queue('cli-parts')
      .partition('eu')
      .push([{ data: 'e1' }]);
    const missing = 'sluice: queue "cli-parts" has no partition "nopart" (it has eu; a push creates one)\n';
    for (const args of [
      ['pop', 'cli-parts', '-p', 'nopart'],
      ['tail', 'cli-parts', '-p', 'nopart', '--idle', '200ms'],
      ['tail', 'cli-parts', '-p', 'nopart', '--group', 'new', '--idle', '200ms'],
      ['tail', 'cli-parts', '-p', 'nopart', '--peek', '--idle', '200ms'],
      ['peek', 'cli-parts', '-p', 'nopart'],
    ]) {
      const r = await sluiceCli(args, { env });
      expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
        args,
        code: 3,
        stdout: '',
        stderr: missing,
      });
    }
    // A missing queue is still named as such when a partition is given too.
    const noQueue = await sluiceCli(['pop', 'cli-nowhere', '-p', 'eu'], { env });
    expect(noQueue.code).toBe(3);
    expect(noQueue.stderr).toContain('queue "cli-nowhere" does not exist');
    // The partition exists: its message, then (emptied) "no messages" with exit 0.
    const got = await sluiceCli(['--json', 'pop', 'cli-parts', '-p', 'eu'], { env });
    expect(got.code).toBe(0);
    expect((JSON.parse(got.stdout) as Message[]).map((m) => m.data)).toEqual(['e1']);
    const empty = await sluiceCli(['pop', 'cli-parts', '-p', 'eu'], { env });
    expect(empty).toMatchObject({ code: 0, stderr: 'no messages available in cli-parts/eu\n' });
  });

  it('replays a claim group from an instant (claims seek <ISO-8601>)', async () => {
    const q = sluice.queue('cli-replay').partition('p0');
    await q.push([{ data: 'before' }]);
    await new Promise((r) => setTimeout(r, 20));
    const at = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await q.push([{ data: 'after' }]);
    expect((await sluiceCli(['claims', 'create', 'cli-replay', 'p0', 'g', '--start', 'latest'], { env })).code).toBe(0);
    const seek = await sluiceCli(['claims', 'seek', 'cli-replay', 'p0', 'g', at], { env });
    expect(seek).toMatchObject({ code: 0, stdout: 'g now at offset 1\n' });
    const polled = await sluiceCli(['--json', 'claims', 'poll', 'cli-replay', 'p0', 'g'], { env });
    expect((JSON.parse(polled.stdout) as { records: { data: unknown }[] }).records.map((r) => r.data)).toEqual([
      'after',
    ]);
  });

  it("runs the README's CLI session as written", async () => {
    const readme = await readFile('README.md', 'utf8');
    const block = /## CLI\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'README.md has a "## CLI" section with a sh block').toBeDefined();
    const commands = block!
      .split('\n')
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter((l) => l.startsWith('npx sluice '));
    expect(commands.length).toBeGreaterThanOrEqual(5);
    // The session's input file: 10,000 JSON lines.
    const cwd = join(dir, 'readme');
    await mkdir(cwd, { recursive: true });
    await writeFile(
      join(cwd, 'orders.jsonl'),
      Array.from({ length: 10_000 }, (_, i) => `{"n":${i + 1}}`).join('\n') + '\n',
    );
    const readmeServer = await startServerProcess({ SLUICE_DATA_DIR: join(dir, 'readme-data'), SLUICE_SYNC: 'normal' });
    try {
      for (const command of commands) {
        expect(command, 'README commands are plain words (no quoting)').not.toMatch(/["'`$\\|;&<>]/);
        const r = await sluiceCli(command.split(/\s+/).slice(2), {
          env: { SLUICE_ENDPOINT: readmeServer.url },
          cwd,
          timeoutMs: 120_000,
        });
        expect({ command, code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({
          command,
          code: 0,
          stderr: '',
        });
      }
    } finally {
      await readmeServer.stop();
    }
  }, 240_000);

  it('exits with codes and messages a person can act on', async () => {
    const notFound = await sluiceCli(['describe', 'nobody'], { env });
    expect(notFound.code).toBe(3);
    expect(notFound.stderr).toMatch(/^sluice: .*nobody.* \[HTTP 404 not_found\]\n$/);
    const bad = await sluiceCli(['--json', 'claims', 'ack', 'cli-jobs', 'p0', 'workers', '999'], { env });
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stderr)).toMatchObject({ code: 'invalid_request', status: 400 });
    const usage = await sluiceCli(['push'], { env });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("missing required argument 'queue'");
    const down = await sluiceCli(['groups'], { env: { SLUICE_ENDPOINT: 'http://127.0.0.1:9' } });
    expect(down.code).toBe(5);
    expect(down.stderr).toContain('Is the server running');
    const help = await sluiceCli(['dlq', '--help'], { env });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('redrive-all');
  });
});

/**
 * `tail` acknowledged what nobody saw (docs/CLI.md, "`sluice tail`"):
 * `tail payments --group viewer | head -3` printed 3 lines, crashed on EPIPE, and the group had
 * acked 2,000; a bare `tail` consumed as the queue-mode group.
 */
describe('cli tail: nothing acknowledged that nobody saw', () => {
  /** The messages `group` has acked on `queue`'s only partition. */
  const ackedBy = async (group: string, queue: string): Promise<number> => {
    const g = await sluice.groups.describe(group);
    const committed = g.queues.find((x) => x.queue === queue)?.detail?.[0]?.committed;
    return committed === null || committed === undefined ? 0 : committed + 1;
  };
  const stackTrace = /\n\s+at |EPIPE|Error:/;

  it('tail --group into a reader that closes after 3 lines: exit 0, no stack, no more acked than written', async () => {
    // Lines of about 1 KB: the pipe's buffer (64 KiB) holds some 60 of them.
    const pad = 'x'.repeat(1000);
    await sluice
      .queue('cli-pipe')
      .partition('p')
      .push(Array.from({ length: 2000 }, (_, n) => ({ data: { n, pad } })));
    const r = await sluiceCliReader(['tail', 'cli-pipe', '--group', 'viewer'], { lines: 3, env });
    expect({ code: r.code, stack: stackTrace.test(r.stderr) }).toEqual({ code: 0, stack: false });
    const summary = /^tail: (\d+) messages written \((\d+) acked\); the reader closed the output\n$/.exec(r.stderr);
    expect({ summary: summary !== null, stderr: r.stderr }).toMatchObject({ summary: true });
    const [written, reported] = [Number(summary?.[1]), Number(summary?.[2])];
    const acked = await ackedBy('viewer', 'cli-pipe');
    expect(acked).toBe(reported);
    expect(acked).toBeLessThanOrEqual(written);
    // Written means taken by the pipe: what the reader got, or what sat in the pipe's buffer.
    expect(written).toBeLessThanOrEqual(r.linesReceived + Math.ceil(65_536 / pad.length));
    expect(r.linesReceived).toBeGreaterThanOrEqual(3);
    // The rest is still the group's to read, from where the acks stopped.
    const next = await sluice.queue('cli-pipe').group('viewer').batch(1).wait(false).pop<{ n: number }>();
    expect(next.map((m) => m.data.n)).toEqual([acked]);
  });

  it('a bare tail consumes nothing: it follows every partition, says so, and acks nothing', async () => {
    const q = sluice.queue('cli-look');
    await q.partition('a').push([{ data: 'a0' }, { data: 'a1' }]);
    await q.partition('b').push([{ data: 'b0' }]);
    const seen: string[][] = [];
    const r = await sluiceCliReader(['--json', 'tail', 'cli-look', '--idle', '3s'], {
      lines: 4,
      env,
      onLines: (got) => {
        // Once it printed what was there, push one more: the follow picks up the new offset.
        if (got.length === 3 && seen.length === 0) {
          seen.push(got);
          void q.partition('b').push([{ data: 'b1' }]);
        }
      },
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(
      /^tail: following cli-look without consuming it \(nothing is acked; --group <name> consumes\)\n/,
    );
    expect(stackTrace.test(r.stderr)).toBe(false);
    const data = lines(r.stdout).map((l) => (JSON.parse(l) as Message).data);
    expect([...data.slice(0, 3)].sort()).toEqual(['a0', 'a1', 'b0']);
    expect(data[3]).toBe('b1');
    // No group has a cursor on the queue, and queue mode (what a bare tail used to consume)
    // still has every message.
    expect((await sluice.groups.list()).some((g) => g.queues.some((x) => x.queue === 'cli-look'))).toBe(false);
    expect((await q.partition('a').batch(10).wait(false).pop()).map((m) => m.data)).toEqual(['a0', 'a1']);
    expect((await q.partition('b').batch(10).wait(false).pop()).map((m) => m.data)).toEqual(['b0', 'b1']);
  });

  it('refuses a duration without a unit, and --group with --peek or --from, before reading anything', async () => {
    const idle = await sluiceCli(['tail', 'cli-look', '--idle', '5'], { env });
    expect(idle).toMatchObject({ code: 2, stdout: '' });
    expect(idle.stderr).toContain('idle needs a unit: 5s or 5ms?');
    const peek = await sluiceCli(['tail', 'cli-look', '--group', 'g', '--peek'], { env });
    expect(peek).toMatchObject({ code: 2, stderr: 'sluice: tail --peek consumes nothing: drop --group, or --peek\n' });
    const from = await sluiceCli(['tail', 'cli-look', '--from', '3'], { env });
    expect(from).toMatchObject({ code: 2 });
    expect(from.stderr).toContain('add --partition');
  });
});
