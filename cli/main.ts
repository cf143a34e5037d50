/**
 * `sluice`: the command line for a Sluice API (see docs/CLIENT.md#cli).
 *
 *   sluice push orders --partition eu --file orders.jsonl
 *   sluice tail orders --group audit --json
 *   sluice groups
 *   sluice dlq redrive-all orders --rate 200
 *   sluice claims poll jobs p0 workers --max 10
 *
 * Exit codes: 0 ok; 1 the API refused or failed (its message is printed); 2 usage or bad
 * input; 3 not found; 4 not authenticated or not allowed; 5 the API could not be reached.
 */
import { Command, CommanderError } from 'commander';
import { DEFAULT_ENDPOINT } from '../client/http.js';
import type { ClaimStart } from '../client/types.js';
import { createContext, type CommandGroup, type Io } from './command.js';
import { groupCommands } from './commands/groups.js';
import { messageCommands } from './commands/messages.js';
import { queueCommands } from './commands/queues.js';
import { describeFailure, EXIT, UsageError } from './errors.js';
import { brief, Progress, table } from './format.js';
import { globalOptions, int, parseStart, positive, rate, type GlobalOpts } from './options.js';

/** The command groups, in the order `sluice --help` lists them: a new group is a cli/commands/ module and a line here. */
const GROUPS: readonly CommandGroup[] = [messageCommands, groupCommands, queueCommands];

/** The whole program; `run` parses and maps failures to exit codes. */
export function buildProgram(io: Io, setExit: (code: number) => void): Command {
  const ctx = createContext(io, setExit);
  const { out, printJson, json, client } = ctx;
  const program = new Command('sluice');
  program.description('Command line for a Sluice message queue API.').version('0.1.0');
  for (const option of globalOptions()) program.addOption(option);
  program
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .exitOverride();

  for (const register of GROUPS) register(program, ctx);

  // ------------------------------------------------------------------- dlq
  const dlq = program.command('dlq').description('Dead-letter queue of a queue (partition-lease groups).');
  dlq
    .command('list')
    .description('List dead letters, newest first.')
    .argument('<queue>')
    .option('-g, --group <name>', 'only this consumer group')
    .option('--limit <n>', 'rows per page', positive('limit'), 100)
    .option('--offset <n>', 'rows to skip', int('offset'), 0)
    .option('--all', 'every page')
    .action(
      async (queue: string, o: { group?: string; limit: number; offset: number; all?: boolean }, cmd: Command) => {
        let d = client(cmd).dlq(queue);
        if (o.group) d = d.group(o.group);
        const rows = [];
        if (o.all) for await (const e of d.all()) rows.push(e);
        else rows.push(...(await d.list({ limit: o.limit, offset: o.offset })).messages);
        if (json(cmd)) return printJson(rows);
        if (rows.length === 0) {
          io.stderr.write(`no dead letters in ${queue}${o.group ? ` for group ${o.group}` : ''}\n`);
          return;
        }
        out(
          table([
            ['FAILED_AT', 'GROUP', 'PARTITION_ID', 'TRANSACTION_ID', 'RETRIES', 'ERROR'],
            ...rows.map((e) => [
              e.failedAt,
              e.consumerGroup,
              e.partitionId,
              e.transactionId,
              e.retryCount,
              brief(e.errorMessage, 60).replace(/^"|"$/g, ''),
            ]),
          ]),
        );
      },
    );
  dlq
    .command('retry')
    .description('Replay one dead letter (fresh transactionId) and remove its row.')
    .argument('<partitionId>')
    .argument('<transactionId>')
    .option('-g, --group <name>', "only this group's row")
    .action(async (partitionId: string, transactionId: string, o: { group?: string }, cmd: Command) => {
      const r = await client(cmd).retryMessage(partitionId, transactionId, o.group ? { consumerGroup: o.group } : {});
      if (json(cmd)) return printJson(r);
      out(
        `replayed ${transactionId} as ${String(r['transactionId'] ?? '?')}${r.dlqRowRemoved ? '' : ' (the dead-letter row could not be removed; it is listed still)'}\n`,
      );
    });
  dlq
    .command('redrive-all')
    .description(
      'Replay every dead letter of a queue, in calls of --batch, at most --rate per second (progress on stderr).',
    )
    .argument('<queue>')
    .option('-g, --group <name>', "only this group's dead letters")
    .option('-b, --batch <n>', 'dead letters per call (at most 500)', positive('batch'), 100)
    .option('--rate <n>', 'messages per second at most', rate)
    .option('--no-progress', 'no progress bar')
    .action(
      async (queue: string, o: { group?: string; batch: number; rate?: number; progress: boolean }, cmd: Command) => {
        let d = client(cmd).dlq(queue);
        if (o.group) d = d.group(o.group);
        const bar = o.progress ? new Progress(io.stderr, 'redrive', await d.count({ max: 1_000_000 })) : undefined;
        bar?.update(0);
        const stop = new AbortController();
        const onAbort = (): void => stop.abort();
        io.signal?.addEventListener('abort', onAbort, { once: true });
        try {
          const p = await d.redriveAll({
            batch: Math.min(o.batch, 500),
            ...(o.rate ? { rate: o.rate } : {}),
            signal: stop.signal,
            onProgress: (pr) => bar?.update(pr.moved, pr.failed ? `(${pr.failed} failed)` : ''),
          });
          bar?.finish(p.moved, p.failed ? `(${p.failed} failed)` : '');
          if (json(cmd))
            printJson({
              queue,
              group: o.group ?? null,
              moved: p.moved,
              failed: p.failed,
              calls: p.calls,
              complete: !p.more,
            });
          else
            out(
              `redrove ${p.moved} dead letters of ${queue}${p.failed ? `; ${p.failed} failed and stay listed` : ''}${p.more ? ' (stopped early: run again to continue)' : ''}\n`,
            );
          if (p.failed > 0) setExit(EXIT.api);
        } finally {
          io.signal?.removeEventListener('abort', onAbort);
        }
      },
    );

  // ---------------------------------------------------------------- claims
  const claims = program
    .command('claims')
    .description('Record-claim groups: one partition read as a shared work queue.');
  const claimArgs = (c: Command): Command => c.argument('<queue>').argument('<partition>').argument('<group>');
  claimArgs(claims.command('poll'))
    .description('Claim records and print them (with --ack, acknowledge them too).')
    .option('-n, --max <n>', 'records at most', positive('max'), 10)
    .option('-w, --wait <ms>', 'long-poll up to this long', int('wait'), 0)
    .option('--visibility <ms>', 'how long the claims stand', positive('visibility'))
    .option('--consumer <name>', 'member name')
    .option('--session <token>', "member session token (with --reclaim, takes back the name's older claims)")
    .option('--reclaim', 'reclaim what this member holds under older sessions')
    .option('--ack', 'acknowledge the records after printing them')
    .action(
      async (
        queue: string,
        partition: string,
        group: string,
        o: {
          max: number;
          wait: number;
          visibility?: number;
          consumer?: string;
          session?: string;
          reclaim?: boolean;
          ack?: boolean;
        },
        cmd: Command,
      ) => {
        const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
        const r = await g.poll({
          max: o.max,
          waitMs: o.wait,
          ...(o.visibility ? { visibilityMs: o.visibility } : {}),
          ...(o.consumer ? { consumer: o.consumer } : {}),
          ...(o.session ? { session: o.session } : {}),
          ...(o.reclaim ? { reclaim: true } : {}),
        });
        const committed =
          o.ack && r.records.length > 0 ? (await g.ack(r.records.map((x) => x.offset))).committed : undefined;
        if (json(cmd)) return printJson({ ...r, ...(committed !== undefined ? { committed } : {}) });
        if (r.records.length === 0)
          io.stderr.write(`no records to claim${r.capped ? ' (the group is at its in-flight cap)' : ''}\n`);
        else
          out(
            table([
              ['OFFSET', 'ATTEMPTS', 'TRANSACTION_ID', 'DATA'],
              ...r.records.map((x) => [x.offset, x.attempts, x.transactionId, brief(x.data, 80)]),
            ]),
          );
        if (committed !== undefined) io.stderr.write(`acked; the group's position is now ${committed}\n`);
      },
    );
  claimArgs(claims.command('ack'))
    .description('Acknowledge offsets (one call).')
    .argument('<offsets...>', 'offsets to finish')
    .action(async (queue: string, partition: string, group: string, offsets: string[], _o: unknown, cmd: Command) => {
      const list = offsets.map((s) => int('offset')(s));
      const r = await client(cmd).queue(queue).partition(partition).claimGroup(group).ack(list);
      if (json(cmd)) return printJson(r);
      out(`acked ${list.length} offset(s); committed ${r.committed}\n`);
    });
  claimArgs(claims.command('nack'))
    .description('Hand a record back (owed at once, or after --delay).')
    .argument('<offset>')
    .option(
      '--attempts <n>',
      'the delivery being handed back (refused if it lapsed and went out again)',
      positive('attempts'),
    )
    .option('--delay <ms>', 'owed again only after this long', int('delay'))
    .action(
      async (
        queue: string,
        partition: string,
        group: string,
        offset: string,
        o: { attempts?: number; delay?: number },
        cmd: Command,
      ) => {
        const r = await client(cmd)
          .queue(queue)
          .partition(partition)
          .claimGroup(group)
          .nack(int('offset')(offset), {
            ...(o.attempts ? { attempts: o.attempts } : {}),
            ...(o.delay ? { delayMs: o.delay } : {}),
          });
        if (json(cmd)) return printJson(r);
        out(`handed back ${offset}${o.delay ? ` (owed again in ${o.delay} ms)` : ''}\n`);
      },
    );
  claimArgs(claims.command('describe'))
    .description("The group's position, lag, in-flight, owed and dead-letter counts.")
    .action(async (queue: string, partition: string, group: string, _o: unknown, cmd: Command) => {
      const d = await client(cmd).queue(queue).partition(partition).claimGroup(group).describe();
      if (json(cmd)) return printJson(d);
      out(
        table([
          ['COMMITTED', 'TAIL', 'LAG', 'IN_FLIGHT', 'OWED', 'DELAYED', 'DEAD_LETTERS'],
          [d.committed, d.tail, d.lag, d.inFlight, d.owed, d.delayed ?? null, d.deadLetters],
        ]),
      );
    });
  claimArgs(claims.command('dead-letters'))
    .description("List the group's dead-lettered offsets.")
    .action(async (queue: string, partition: string, group: string, _o: unknown, cmd: Command) => {
      const offsets = await client(cmd).queue(queue).partition(partition).claimGroup(group).allDeadLetters();
      if (json(cmd)) return printJson({ offsets });
      if (offsets.length === 0) io.stderr.write('no dead letters\n');
      else out(`${offsets.join('\n')}\n`);
    });
  claimArgs(claims.command('redrive'))
    .description('Put dead letters back (attempts reset, owed again): the offsets given, or --all.')
    .argument('[offsets...]')
    .option('--all', 'every dead letter of the group')
    .option('--rate <n>', 'redrives per second at most', rate)
    .option('--no-progress', 'no progress bar')
    .action(
      async (
        queue: string,
        partition: string,
        group: string,
        offsets: string[],
        o: { all?: boolean; rate?: number; progress: boolean },
        cmd: Command,
      ) => {
        if (!o.all === (offsets.length === 0)) throw new UsageError('claims redrive needs offsets or --all (not both)');
        const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
        const list = o.all ? await g.allDeadLetters() : offsets.map((s) => int('offset')(s));
        const bar = o.progress ? new Progress(io.stderr, 'redrive', list.length) : undefined;
        const started = Date.now();
        let done = 0;
        const failed: { offset: number; error: string }[] = [];
        for (const off of list) {
          if (io.signal?.aborted) break;
          if (o.rate) {
            const ahead = started + (done / o.rate) * 1000 - Date.now();
            if (ahead > 0) await new Promise((r) => setTimeout(r, ahead));
          }
          try {
            await g.redrive(off);
          } catch (e) {
            failed.push({ offset: off, error: e instanceof Error ? e.message : String(e) });
          }
          done++;
          bar?.update(done - failed.length, failed.length ? `(${failed.length} failed)` : '');
        }
        bar?.finish(done - failed.length, failed.length ? `(${failed.length} failed)` : '');
        if (json(cmd)) printJson({ redriven: done - failed.length, failed });
        else {
          out(`redrove ${done - failed.length} of ${list.length} dead letters\n`);
          for (const f of failed.slice(0, 10)) io.stderr.write(`offset ${f.offset}: ${f.error}\n`);
        }
        if (failed.length > 0) setExit(EXIT.api);
      },
    );
  claimArgs(claims.command('create'))
    .description('Create the group at a start position (an existing group is left alone).')
    .option('--start <pos>', 'earliest, latest or an offset', parseStart, 'earliest' as ClaimStart)
    .action(async (queue: string, partition: string, group: string, o: { start: ClaimStart }, cmd: Command) => {
      const r = await client(cmd).queue(queue).partition(partition).claimGroup(group).create(o.start);
      if (json(cmd)) return printJson(r);
      out(
        r.moved ? `created ${group} at offset ${r.offset}\n` : `${group} already exists (at ${r.offset}); left alone\n`,
      );
    });
  claimArgs(claims.command('seek'))
    .description('Move the group (voids standing claims).')
    .argument('<start>', 'earliest, latest or an offset', parseStart)
    .action(async (queue: string, partition: string, group: string, start: ClaimStart, _o: unknown, cmd: Command) => {
      const r = await client(cmd).queue(queue).partition(partition).claimGroup(group).seek(start);
      if (json(cmd)) return printJson(r);
      out(`${group} now at offset ${r.offset}${r.moved ? '' : ' (unchanged)'}\n`);
    });
  claimArgs(claims.command('delete'))
    .description("Delete the group's position, claims and dead letters on this partition.")
    .action(async (queue: string, partition: string, group: string, _o: unknown, cmd: Command) => {
      const r = await client(cmd).queue(queue).partition(partition).claimGroup(group).delete();
      if (json(cmd)) return printJson(r);
      out(r.existed ? `deleted ${group}\n` : `${group} did not exist\n`);
    });

  return program;
}
/** Runs the CLI; resolves with the exit code (never calls process.exit). */
export async function run(argv: string[], io: Io): Promise<number> {
  let exit: number = EXIT.ok;
  const program = buildProgram(io, (c) => (exit = c));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exit;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Commander printed the message (or the help) already.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const g = program.opts<GlobalOpts>();
    const f = describeFailure(e, g.endpoint ?? io.env['SLUICE_ENDPOINT'] ?? DEFAULT_ENDPOINT);
    const asJson = argv.includes('--json');
    io.stderr.write(asJson ? `${JSON.stringify(f.json)}\n` : `sluice: ${f.message}\n`);
    return f.code;
  }
}
