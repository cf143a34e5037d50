/** `sluice completion bash|zsh|fish`: prints a shell completion script (cli/completion.ts). */
import { Argument, type Command } from 'commander';
import type { CommandContext } from '../command.js';
import { completionScript, SHELLS, type Shell } from '../completion.js';

/** Registers `completion`. */
export function completionCommands(program: Command, ctx: CommandContext): void {
  program
    .command('completion')
    .description(
      'Print a shell completion script: source <(sluice completion bash) (or zsh); sluice completion fish | source.',
    )
    .addArgument(new Argument('<shell>', 'the shell to complete for').choices(SHELLS))
    .action((shell: Shell) => ctx.out(completionScript(program, shell)));
}
