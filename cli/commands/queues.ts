/** Queue commands: `configure` (create a queue or replace its options; `--merge` changes only the given ones). */
import type { Command } from 'commander';
import type { QueueOptions } from '../../client/types.js';
import type { CommandContext } from '../command.js';
import { table } from '../format.js';
import { parseOptionPair } from '../options.js';

/** Registers `configure`. */
export function queueCommands(program: Command, ctx: CommandContext): void {
  const { out, printJson, json, client } = ctx;

  program
    .command('configure')
    .description(
      'Create a queue or replace its configuration (options not given go back to defaults); with --merge, change only the given options of an existing queue.',
    )
    .argument('<queue>')
    .option(
      '-s, --set <key=value>',
      'an option, e.g. --set leaseTime=30 --set retryLimit=5 (repeatable)',
      parseOptionPair,
      {},
    )
    .option('--merge', 'keep the options not given (PATCH); the queue must exist')
    .option('--namespace <namespace>', "the queue's namespace (pops by namespace select on it)")
    .option('--task <task>', "the queue's task (pops by task select on it)")
    .action(
      async (
        queue: string,
        o: { set: QueueOptions; merge?: boolean; namespace?: string; task?: string },
        cmd: Command,
      ) => {
        const ref = client(cmd).queue(queue);
        const r = o.merge
          ? await ref.update({
              options: o.set,
              ...(o.namespace !== undefined ? { namespace: o.namespace } : {}),
              ...(o.task !== undefined ? { task: o.task } : {}),
            })
          : await ref.config(o.set).create({
              ...(o.namespace !== undefined ? { namespace: o.namespace } : {}),
              ...(o.task !== undefined ? { task: o.task } : {}),
            });
        if (json(cmd)) return printJson(r);
        out(`configured ${r.queue}\n`);
        out(table([['OPTION', 'VALUE'], ...Object.entries(r.options).map(([k, v]) => [k, String(v)])]));
      },
    );
}
