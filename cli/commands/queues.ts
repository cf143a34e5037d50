/** Queue commands: `configure` (create a queue or replace its options). */
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
    .description('Create a queue or replace its configuration (options not given go back to defaults).')
    .argument('<queue>')
    .option(
      '-s, --set <key=value>',
      'an option, e.g. --set leaseTime=30 --set retryLimit=5 (repeatable)',
      parseOptionPair,
      {},
    )
    .action(async (queue: string, o: { set: QueueOptions }, cmd: Command) => {
      const r = await client(cmd).queue(queue).config(o.set).create();
      if (json(cmd)) return printJson(r);
      out(`configured ${r.queue}\n`);
      out(table([['OPTION', 'VALUE'], ...Object.entries(r.options).map(([k, v]) => [k, String(v)])]));
    });
}
