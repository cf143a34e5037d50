/**
 * Partition-lease consumer group commands: `groups` (lag table), `describe` (one group) and
 * `seek` (move a group's cursors). Record-claim groups are in claims.ts.
 */
import type { Command } from 'commander';
import { SluiceApiError } from '../../client/errors.js';
import type { ConsumerGroup } from '../../client/types.js';
import type { CommandContext } from '../command.js';
import { UsageError } from '../errors.js';
import { duration, table } from '../format.js';
import { requireQueue } from '../exists.js';
import { durationOption, groupOption } from '../options.js';

/** Registers `groups`, `describe` and `seek`. */
export function groupCommands(program: Command, ctx: CommandContext): void {
  const { io, out, printJson, json, client } = ctx;

  program
    .command('groups')
    .description(
      'Lag per partition-lease consumer group, queue and partition (record-claim groups: `sluice claims describe`).',
    )
    .option('-q, --queue <name>', 'only this queue')
    .addOption(groupOption('only this group'))
    .addOption(durationOption('--min-lag <duration>', 'only groups whose oldest unfinished message is this old'))
    .action(async (o: { queue?: string; group?: string; minLag?: number }, cmd: Command) => {
      const sluice = client(cmd);
      const list =
        o.minLag !== undefined ? await sluice.groups.lagging(Math.ceil(o.minLag / 1000)) : await sluice.groups.list();
      const names = list.map((g) => g.name).filter((n) => o.group === undefined || n === o.group);
      const views: ConsumerGroup[] = [];
      for (const n of names) views.push(await sluice.groups.describe(n));
      for (const v of views) v.queues = v.queues.filter((q) => o.queue === undefined || q.queue === o.queue);
      const shown = views.filter((v) => v.queues.length > 0);
      if (shown.length === 0 && o.queue !== undefined) await requireQueue(sluice, o.queue);
      if (json(cmd)) return printJson(shown);
      if (shown.length === 0) {
        io.stderr.write('no consumer groups (a group exists once it has popped)\n');
        return;
      }
      out(groupTable(shown));
    });

  program
    .command('describe')
    .description('One consumer group: cursor, lag and lease per queue and partition.')
    .argument('<group>')
    .action(async (group: string, _o: unknown, cmd: Command) => {
      const g = await client(cmd).groups.describe(group);
      if (json(cmd)) return printJson(g);
      if (g.queues.length === 0)
        throw new SluiceApiError(
          404,
          'not_found',
          `consumer group ${group} has no cursor on any queue (it never popped, or it was deleted)`,
        );
      out(`group ${g.name}: ${g.lagMessages} messages behind, oldest ${duration(g.maxLagSeconds)}\n`);
      out(groupTable([g]));
    });

  program
    .command('seek')
    .description("Move a consumer group's cursors on a queue to the end or to a time.")
    .argument('<group>')
    .argument('<queue>')
    .option('--to-end', 'skip everything pushed so far')
    .option('--to <timestamp>', 'the next delivery is the first message after this time (ISO-8601)')
    .action(async (group: string, queue: string, o: { toEnd?: boolean; to?: string }, cmd: Command) => {
      if (!o.toEnd === !o.to) throw new UsageError('seek needs exactly one of --to-end or --to <ISO-8601 timestamp>');
      if (o.to && !Number.isFinite(Date.parse(o.to)))
        throw new UsageError(
          `--to ${JSON.stringify(o.to)} is not a timestamp (use ISO-8601, e.g. 2026-05-01T12:00:00Z)`,
        );
      const r = await client(cmd).groups.seek(group, queue, o.toEnd ? { toEnd: true } : { timestamp: o.to as string });
      if (json(cmd)) return printJson(r);
      out(
        `${group} on ${queue}: ${r.partitionsUpdated} partition(s) moved ${r.seekToEnd ? 'to the end' : `to ${r.targetTimestamp}`}\n`,
      );
    });
}

/** One row per group, queue and partition (a queue without partition detail gets a `*` row). */
function groupTable(views: ConsumerGroup[]): string {
  const rows: (string | number | null)[][] = [
    ['GROUP', 'QUEUE', 'PARTITION', 'COMMITTED', 'NEXT', 'LAG', 'AGE', 'LEASED'],
  ];
  for (const g of views) {
    for (const q of g.queues) {
      if (!q.detail || q.detail.length === 0) {
        rows.push([
          g.name,
          q.queue,
          '*',
          null,
          null,
          q.lagMessages,
          duration(q.lagSeconds),
          q.leasedPartitions ?? null,
        ]);
        continue;
      }
      for (const p of q.detail)
        rows.push([
          g.name,
          q.queue,
          p.partition,
          p.committed,
          p.next,
          p.lagMessages,
          duration(p.lagSeconds),
          p.leaseExpiresAt ? 'yes' : 'no',
        ]);
    }
  }
  return table(rows);
}
