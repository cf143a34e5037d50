/**
 * Looking inside without consuming: `queues` (every queue with its counters), `partitions`
 * (one queue's partitions, offsets and consumer positions) and `peek` (the newest messages,
 * with their status; nothing is leased). They call the admin read API (docs/QUEEN-COMPAT.md).
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { Browse, type BrowseStatus, type QueueDetail } from '../../client/browse.js';
import { SluiceApiError } from '../../client/errors.js';
import type { CommandContext } from '../command.js';
import { partitionMissing } from '../exists.js';
import { brief, duration, table } from '../format.js';
import { durationOption, positive } from '../options.js';

const STATUSES: BrowseStatus[] = ['pending', 'processing', 'completed', 'dead_letter'];

/** Age of an ISO instant, as `1m05s`; `-` when there is none. */
const age = (iso: string | null | undefined, now: number): string =>
  iso ? duration((now - Date.parse(iso)) / 1000) : '-';

/** One queue's detail; a queue that does not exist says so (exit 3), rather than showing nothing. */
async function queueOrFail(browse: Browse, queue: string): Promise<QueueDetail> {
  try {
    return await browse.queue(queue);
  } catch (e) {
    if (e instanceof SluiceApiError && e.status === 404)
      throw new SluiceApiError(
        404,
        'not_found',
        `queue ${JSON.stringify(queue)} does not exist (see \`sluice queues\`)`,
      );
    throw e;
  }
}

/** Registers `queues`, `partitions` and `peek`. */
export function browseCommands(program: Command, ctx: CommandContext): void {
  const { io, out, printJson, json, client } = ctx;
  const browse = (cmd: Command): Browse => new Browse(client(cmd).http);

  program
    .command('queues')
    .description('Every queue you may consume: partitions and message counts (pending, in flight, total).')
    .option('--namespace <name>', 'only queues of this namespace')
    .option('--task <name>', 'only queues of this task')
    .action(async (o: { namespace?: string; task?: string }, cmd: Command) => {
      const queues = await browse(cmd).queues(o);
      if (json(cmd)) return printJson(queues);
      if (queues.length === 0) {
        io.stderr.write('no queues (a queue exists once something is pushed to it, or after `sluice configure`)\n');
        return;
      }
      out(
        table([
          ['QUEUE', 'PARTITIONS', 'TOTAL', 'PENDING', 'IN FLIGHT', 'NAMESPACE', 'TASK'],
          ...queues.map((q) => [
            q.name,
            q.partitions,
            q.messages.total,
            q.messages.pending,
            q.messages.processing,
            q.namespace || null,
            q.task || null,
          ]),
        ]),
      );
    });

  program
    .command('partitions')
    .description("A queue's partitions: stored offsets, message counts, newest message, and each group's position.")
    .argument('<queue>')
    .option('--groups', "also list every consumer group's position per partition")
    .action(async (queue: string, o: { groups?: boolean }, cmd: Command) => {
      const q = await queueOrFail(browse(cmd), queue);
      if (json(cmd)) return printJson(q.partitions);
      const now = Date.now();
      out(
        table([
          ['PARTITION', 'FIRST', 'NEXT', 'TOTAL', 'PENDING', 'IN FLIGHT', 'DONE', 'DEAD', 'NEWEST'],
          ...q.partitions.map((p) => [
            p.name,
            p.firstOffset,
            p.nextOffset,
            p.stats.total,
            p.stats.pending,
            p.stats.processing,
            p.stats.completed,
            p.stats.deadLetter,
            p.newestMessage ? `${age(p.newestMessage, now)} ago` : null,
          ]),
        ]),
      );
      if (!o.groups) return;
      const rows = q.partitions.flatMap((p) =>
        p.consumers.map((c) => [
          c.group,
          c.kind,
          p.name,
          c.nextOffset,
          c.lag,
          c.inFlight,
          c.leaseExpiresAt ? `in ${duration((Date.parse(c.leaseExpiresAt) - now) / 1000)}` : null,
        ]),
      );
      out('\n');
      out(
        rows.length === 0
          ? 'no consumer group has read this queue yet\n'
          : table([['GROUP', 'KIND', 'PARTITION', 'NEXT', 'LAG', 'IN FLIGHT', 'LEASE ENDS'], ...rows]),
      );
    });

  program
    .command('peek')
    .description('The newest messages of a queue with their status, without consuming them (nothing is leased).')
    .argument('<queue>')
    .option('-p, --partition <name>', 'only this partition')
    .addOption(new Option('-n, --limit <n>', 'how many messages').default(10).argParser(positive('limit')))
    .addOption(new Option('--status <status>', 'only messages in this status').choices(STATUSES))
    .addOption(durationOption('--since <duration>', 'only messages pushed this recently', { min: 1 }))
    .action(
      async (
        queue: string,
        o: { partition?: string; limit: number; status?: BrowseStatus; since?: number },
        cmd: Command,
      ) => {
        const b = browse(cmd);
        const q = await queueOrFail(b, queue);
        if (o.partition !== undefined && !q.partitions.some((p) => p.name === o.partition))
          throw partitionMissing(
            queue,
            o.partition,
            q.partitions.map((p) => p.name),
          );
        const now = Date.now();
        const { messages } = await b.messages({
          queue,
          partition: o.partition,
          status: o.status,
          // Everything stored unless --since narrows it (the API's own default is the last hour).
          from: new Date(o.since !== undefined ? now - o.since : 0),
          to: new Date(now + 60_000),
          limit: o.limit,
          payload: true,
        });
        if (json(cmd)) return printJson(messages);
        if (messages.length === 0) {
          io.stderr.write(
            `queue ${queue} has no messages${o.status ? ` in status ${o.status}` : ''}${o.since ? ' in that window' : ''}\n`,
          );
          return;
        }
        out(
          table([
            ['PARTITION', 'OFFSET', 'STATUS', 'AGE', 'TRANSACTION ID', 'DATA'],
            ...messages.map((m) => [
              m.partition,
              m.offset,
              m.status,
              age(m.createdAt, now),
              m.transactionId,
              brief(m.data, 60),
            ]),
          ]),
        );
      },
    );
}
