/**
 * `sluice`: the command line for a Sluice API (see docs/CLI.md).
 *
 *   sluice push orders --partition eu --file orders.jsonl
 *   sluice tail orders --group audit --json
 *   sluice groups
 *   sluice queues && sluice partitions orders && sluice peek orders -n 5
 *   sluice dlq redrive-all orders --rate 200
 *   sluice claims poll jobs p0 workers --batch 10
 *   sluice targets set orders billing --url https://billing.example.com/sluice --report-failures
 *   sluice console --endpoint https://abc.execute-api.eu-west-1.amazonaws.com --profile prod
 *   sluice cost --stack prod --since 7d
 *   sluice context add prod --endpoint https://abc.execute-api.eu-west-1.amazonaws.com --profile prod
 *   source <(sluice completion bash)
 *
 * Exit codes: 0 ok; 1 the API refused or failed (its message is printed); 2 usage or bad
 * input; 3 not found; 4 not authenticated or not allowed; 5 the API could not be reached.
 */
import { Command, CommanderError } from 'commander';
import { VERSION } from '../server/public/version.js';
import { createContext, type CommandGroup, type Io } from './command.js';
import { browseCommands } from './commands/browse.js';
import { endpointFor } from './connection.js';
import { claimCommands } from './commands/claims.js';
import { completionCommands } from './commands/completion.js';
import { consoleCommands } from './commands/console.js';
import { contextCommands } from './commands/context.js';
import { costCommands } from './commands/cost.js';
import { dlqCommands } from './commands/dlq.js';
import { groupCommands } from './commands/groups.js';
import { messageCommands } from './commands/messages.js';
import { queueCommands } from './commands/queues.js';
import { targetCommands } from './commands/targets.js';
import { tokenCommands } from './commands/tokens.js';
import { describeFailure, EXIT } from './errors.js';
import { globalOptions, type GlobalOpts } from './options.js';

/** The command groups, in the order `sluice --help` lists them. A new group is a cli/commands/ module plus a line here. */
const GROUPS: readonly CommandGroup[] = [
  messageCommands,
  groupCommands,
  queueCommands,
  browseCommands,
  dlqCommands,
  claimCommands,
  targetCommands,
  tokenCommands,
  costCommands,
  contextCommands,
  consoleCommands,
  completionCommands,
];

/** The whole program; `run` parses and maps failures to exit codes. */
export function buildProgram(io: Io, setExit: (code: number) => void): Command {
  const program = new Command('sluice')
    .description('Command line for a Sluice message queue API.')
    .version(VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .exitOverride();
  for (const option of globalOptions()) program.addOption(option);
  const ctx = createContext(io, setExit);
  for (const register of GROUPS) register(program, ctx);
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
    const f = describeFailure(e, endpointFor(program.opts<GlobalOpts>(), io.env));
    const asJson = argv.includes('--json');
    io.stderr.write(asJson ? `${JSON.stringify(f.json)}\n` : `sluice: ${f.message}\n`);
    return f.code;
  }
}
