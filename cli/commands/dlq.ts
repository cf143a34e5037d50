/**
 * Dead-letter commands for partition-lease groups: `dlq list`, `dlq retry` (one) and
 * `dlq redrive-all` (paced, with progress). Record-claim dead letters are under `claims`.
 */
import { Option, type Command } from 'commander';
import type { CommandContext } from '../command.js';
import { EXIT } from '../errors.js';
import { requireQueue } from '../exists.js';
import { brief, Progress, table } from '../format.js';
import { batchOption, groupOption, int, noProgressOption, positive, rateOption } from '../options.js';

/** Registers `dlq` and its subcommands. */
export function dlqCommands(program: Command, ctx: CommandContext): void {
  const { io, out, printJson, json, client, setExit } = ctx;

  const dlq = program.command('dlq').description('Dead-letter queue of a queue (partition-lease groups).');
  dlq
    .command('list')
    .description('List dead letters, newest first.')
    .argument('<queue>')
    .addOption(groupOption('only this consumer group'))
    .addOption(
      new Option(
        '-b, --batch <n>',
        'dead letters per request: the page (default 100; with --all, 500 per page)',
      ).argParser(positive('batch')),
    )
    // The old name of --batch here, kept so scripts keep working; not shown in --help.
    .addOption(new Option('--limit <n>').argParser(positive('limit')).hideHelp())
    .option('--offset <n>', 'rows to skip', int('offset'), 0)
    .option('--all', 'every page')
    .action(
      async (
        queue: string,
        o: { group?: string; batch?: number; limit?: number; offset: number; all?: boolean },
        cmd: Command,
      ) => {
        const sluice = client(cmd);
        let d = sluice.dlq(queue);
        if (o.group) d = d.group(o.group);
        const batch = o.batch ?? o.limit;
        const rows = [];
        if (o.all) for await (const e of d.all(batch ? { pageSize: batch } : {})) rows.push(e);
        else rows.push(...(await d.list({ limit: batch ?? 100, offset: o.offset })).messages);
        if (rows.length === 0) await requireQueue(sluice, queue);
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
    .addOption(groupOption("only this group's row"))
    .action(async (partitionId: string, transactionId: string, o: { group?: string }, cmd: Command) => {
      const r = await client(cmd).retryMessage(partitionId, transactionId, o.group ? { consumerGroup: o.group } : {});
      if (json(cmd)) return printJson(r);
      out(
        `replayed ${transactionId} as ${r.transactionId ?? '?'}${r.dlqRowRemoved ? '' : ' (the dead-letter row could not be removed; it is listed still)'}\n`,
      );
    });
  dlq
    .command('redrive-all')
    .description(
      'Replay every dead letter of a queue, in calls of --batch, at most --rate per second (progress on stderr).',
    )
    .argument('<queue>')
    .addOption(groupOption("only this group's dead letters"))
    .addOption(batchOption('dead letters per call (at most 500)', 100))
    .addOption(rateOption('messages per second at most'))
    .addOption(noProgressOption())
    .action(
      async (queue: string, o: { group?: string; batch: number; rate?: number; progress: boolean }, cmd: Command) => {
        const sluice = client(cmd);
        await requireQueue(sluice, queue);
        let d = sluice.dlq(queue);
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
              `redrove ${p.moved} dead letters of ${queue}` +
                `${p.failed ? `; ${p.failed} failed and stay listed` : ''}` +
                `${p.more ? ' (stopped early: run again to continue)' : ''}\n`,
            );
          if (p.failed > 0) setExit(EXIT.api);
        } finally {
          io.signal?.removeEventListener('abort', onAbort);
        }
      },
    );
}
