/**
 * Record-claim group commands (`claims …`): one partition read as a shared work queue. Poll,
 * ack and nack records; describe, create, seek and delete the group; list and redrive its dead letters.
 * A group is created by `claims create` (or `poll --create`) only: every other command on a group
 * that does not exist says so and exits 3, where the API would create it on a poll.
 */
import type { Command } from 'commander';
import type { ClaimStart } from '../../client/types.js';
import type { CommandContext } from '../command.js';
import { EXIT, NotFoundError, UsageError } from '../errors.js';
import { onClaimGroup, requireClaimGroup } from '../exists.js';
import { brief, millisText, Progress, table } from '../format.js';
import {
  batchOption,
  durationOption,
  int,
  noProgressOption,
  parseStart,
  positive,
  rateOption,
  waitOption,
} from '../options.js';

/** Registers `claims` and its subcommands. */
export function claimCommands(program: Command, ctx: CommandContext): void {
  const { io, out, printJson, json, client, setExit } = ctx;

  const claims = program
    .command('claims')
    .description('Record-claim groups: one partition read as a shared work queue.');
  // Every claims subcommand addresses one group on one partition, so these three arguments lead.
  const claimArgs = (c: Command): Command => c.argument('<queue>').argument('<partition>').argument('<group>');
  claimArgs(claims.command('poll'))
    .description('Claim records and print them (with --ack, acknowledge them too).')
    .addOption(batchOption('records at most', 10))
    .addOption(waitOption('long-poll up to this long'))
    .addOption(durationOption('--visibility <duration>', 'how long the claims stand', { min: 1 }))
    .option('--consumer <name>', 'member name')
    .option('--session <token>', "member session token (with --reclaim, takes back the name's older claims)")
    .option('--reclaim', 'reclaim what this member holds under older sessions')
    .option('--ack', 'acknowledge the records after printing them')
    .option('--create', 'create the group (at earliest) when it does not exist, as the API does on a poll')
    .action(
      async (
        queue: string,
        partition: string,
        group: string,
        o: {
          batch: number;
          wait: number;
          visibility?: number;
          consumer?: string;
          session?: string;
          reclaim?: boolean;
          ack?: boolean;
          create?: boolean;
        },
        cmd: Command,
      ) => {
        const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
        if (o.create) await onClaimGroup(g, () => g.create('earliest'));
        else await requireClaimGroup(g);
        const r = await g.poll({
          max: o.batch,
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
      const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
      await requireClaimGroup(g);
      const r = await g.ack(list);
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
    .addOption(durationOption('--delay <duration>', 'owed again only after this long'))
    .action(
      async (
        queue: string,
        partition: string,
        group: string,
        offset: string,
        o: { attempts?: number; delay?: number },
        cmd: Command,
      ) => {
        const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
        await requireClaimGroup(g);
        const r = await g.nack(int('offset')(offset), {
          ...(o.attempts ? { attempts: o.attempts } : {}),
          ...(o.delay ? { delayMs: o.delay } : {}),
        });
        if (json(cmd)) return printJson(r);
        out(`handed back ${offset}${o.delay ? ` (owed again in ${millisText(o.delay)})` : ''}\n`);
      },
    );
  claimArgs(claims.command('describe'))
    .description("The group's position, lag, in-flight, owed and dead-letter counts.")
    .action(async (queue: string, partition: string, group: string, _o: unknown, cmd: Command) => {
      const d = await requireClaimGroup(client(cmd).queue(queue).partition(partition).claimGroup(group));
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
      const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
      await requireClaimGroup(g);
      const offsets = await g.allDeadLetters();
      if (json(cmd)) return printJson({ offsets });
      if (offsets.length === 0) io.stderr.write('no dead letters\n');
      else out(`${offsets.join('\n')}\n`);
    });
  claimArgs(claims.command('redrive'))
    .description('Put dead letters back (attempts reset, owed again): the offsets given, or --all.')
    .argument('[offsets...]')
    .option('--all', 'every dead letter of the group')
    .addOption(rateOption('redrives per second at most'))
    .addOption(noProgressOption())
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
        await requireClaimGroup(g);
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
    .option(
      '--start <pos>',
      'earliest, latest, an offset, or an ISO-8601 instant (the first record committed after it)',
      parseStart,
      'earliest' as ClaimStart,
    )
    .action(async (queue: string, partition: string, group: string, o: { start: ClaimStart }, cmd: Command) => {
      const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
      const r = await onClaimGroup(g, () => g.create(o.start));
      if (json(cmd)) return printJson(r);
      out(
        r.moved ? `created ${group} at offset ${r.offset}\n` : `${group} already exists (at ${r.offset}); left alone\n`,
      );
    });
  claimArgs(claims.command('seek'))
    .description('Move the group (voids standing claims): back to replay, forward to skip.')
    .argument(
      '<start>',
      'earliest, latest, an offset, or an ISO-8601 instant (the first record committed after it)',
      parseStart,
    )
    .action(async (queue: string, partition: string, group: string, start: ClaimStart, _o: unknown, cmd: Command) => {
      const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
      const r = await onClaimGroup(g, () => g.seek(start));
      if (json(cmd)) return printJson(r);
      out(`${group} now at offset ${r.offset}${r.moved ? '' : ' (unchanged)'}\n`);
    });
  claimArgs(claims.command('delete'))
    .description("Delete the group's position, claims and dead letters on this partition.")
    .action(async (queue: string, partition: string, group: string, _o: unknown, cmd: Command) => {
      const g = client(cmd).queue(queue).partition(partition).claimGroup(group);
      const r = await onClaimGroup(g, () => g.delete());
      if (!r.existed)
        throw new NotFoundError(`record-claim group ${JSON.stringify(group)} does not exist on ${queue}/${partition}`);
      if (json(cmd)) return printJson(r);
      out(`deleted ${group}\n`);
    });
}
