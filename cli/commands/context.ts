/**
 * `sluice context add|use|list|remove`: named endpoints with their authentication, saved in the
 * CLI's config file (cli/config-file.ts), picked per run with `--context` (or SLUICE_CONTEXT) or
 * for every run with `context use`. How a context combines with flags and the environment:
 * cli/connection.ts.
 */
import type { Command } from 'commander';
import type { CommandContext } from '../command.js';
import { CONTEXT_NAME, readConfig, writeConfig, type SavedContext } from '../config-file.js';
import { clientOptions } from '../connection.js';
import { NotFoundError, UsageError } from '../errors.js';
import { table } from '../format.js';
import type { GlobalOpts } from '../options.js';

/** Registers `context` and its subcommands. */
export function contextCommands(program: Command, ctx: CommandContext): void {
  const { io, out, printJson, json } = ctx;
  const context = program
    .command('context')
    .description('Saved endpoints and credentials (~/.config/sluice/config.json), like `nats context`.');

  const checkName = (name: string): void => {
    if (!CONTEXT_NAME.test(name))
      throw new UsageError(`context name ${JSON.stringify(name)}: use 1-64 letters, digits, ".", "_" or "-"`);
  };
  const mustExist = (name: string, contexts: Record<string, SavedContext>): void => {
    if (!contexts[name])
      throw new NotFoundError(`no context ${JSON.stringify(name)} (sluice context list shows the saved ones)`);
  };

  context
    .command('add')
    .description(
      'Save (or replace) a context from the global flags given with it: --endpoint, --token, --auth, --profile, --region.',
    )
    .argument('<name>')
    .option('-d, --description <text>', 'what the context is for (shown by list)')
    .option('--use', 'make it the current context')
    .action((name: string, o: { description?: string; use?: boolean }, cmd: Command) => {
      checkName(name);
      const g = cmd.optsWithGlobals<GlobalOpts>();
      if (g.endpoint === undefined) throw new UsageError('context add needs --endpoint <url>');
      const saved: SavedContext = {
        endpoint: g.endpoint,
        ...(g.auth ? { auth: g.auth } : {}),
        ...(g.token ? { token: g.token } : {}),
        ...(g.profile ? { profile: g.profile } : {}),
        ...(g.region ? { region: g.region } : {}),
        ...(o.description ? { description: o.description } : {}),
      };
      clientOptions(saved, {}); // refuses what a run would refuse (a bad URL, a token with SigV4) now
      const cfg = readConfig(io.env);
      const replaced = cfg.contexts[name] !== undefined;
      cfg.contexts[name] = saved;
      if (o.use || cfg.current === undefined) cfg.current = name;
      const path = writeConfig(io.env, cfg);
      if (json(cmd)) return printJson({ name, ...redacted(saved), current: cfg.current === name, path });
      out(`${replaced ? 'replaced' : 'saved'} context ${name} in ${path}${cfg.current === name ? ' (current)' : ''}\n`);
    });

  context
    .command('use')
    .description('Make a context the current one (used when no --context, --endpoint or SLUICE_ENDPOINT is given).')
    .argument('<name>')
    .action((name: string, _o: unknown, cmd: Command) => {
      const cfg = readConfig(io.env);
      mustExist(name, cfg.contexts);
      cfg.current = name;
      writeConfig(io.env, cfg);
      if (json(cmd)) return printJson({ current: name });
      out(`current context: ${name} (${cfg.contexts[name]?.endpoint ?? '-'})\n`);
    });

  context
    .command('list')
    .description('The saved contexts; the current one is marked with *. Tokens are never printed.')
    .option('--names', 'names only, one a line (for scripts and shell completion)')
    .action((o: { names?: boolean }, cmd: Command) => {
      const cfg = readConfig(io.env);
      const names = Object.keys(cfg.contexts).sort();
      if (o.names) return out(names.map((n) => `${n}\n`).join(''));
      if (json(cmd))
        return printJson({
          current: cfg.current ?? null,
          contexts: names.map((n) => ({ name: n, ...redacted(cfg.contexts[n] ?? {}) })),
        });
      if (names.length === 0) {
        io.stderr.write('no contexts (save one with: sluice context add <name> --endpoint <url>)\n');
        return;
      }
      out(
        table([
          ['', 'NAME', 'ENDPOINT', 'AUTH', 'PROFILE', 'DESCRIPTION'],
          ...names.map((n) => {
            const c = cfg.contexts[n] ?? {};
            return [n === cfg.current ? '*' : '', n, c.endpoint, authOf(c), c.profile, c.description];
          }),
        ]),
      );
    });

  context
    .command('remove')
    .description('Delete a saved context (the current one too: then none is current).')
    .argument('<name>')
    .action((name: string, _o: unknown, cmd: Command) => {
      const cfg = readConfig(io.env);
      mustExist(name, cfg.contexts);
      delete cfg.contexts[name];
      const wasCurrent = cfg.current === name;
      if (wasCurrent) delete cfg.current;
      writeConfig(io.env, cfg);
      if (json(cmd)) return printJson({ removed: name, current: cfg.current ?? null });
      out(`removed context ${name}${wasCurrent ? ' (it was current; none is now)' : ''}\n`);
    });
}

/** A context as shown: whether it has a token, never the token. */
function redacted(c: SavedContext): Omit<SavedContext, 'token'> & { token: boolean } {
  const { token, ...rest } = c;
  return { ...rest, token: token !== undefined };
}

/** How a context authenticates, as the list shows it. */
function authOf(c: SavedContext): string {
  if (c.auth) return c.auth === 'bearer' && c.token === undefined ? 'bearer (SLUICE_TOKEN)' : c.auth;
  if (c.token !== undefined) return 'bearer';
  if (c.profile !== undefined || c.region !== undefined) return 'sigv4';
  return c.endpoint && /\.execute-api\./.test(c.endpoint) ? 'sigv4' : 'none';
}
