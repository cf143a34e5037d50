/** `sluice console`: the web console on localhost, its API calls signed here (cli/console-proxy.ts). */
import type { Command } from 'commander';
import { Option } from 'commander';
import { DEFAULT_ENDPOINT } from '../../client/http.js';
import { buildConsole } from '../../scripts/build-console.js';
import type { CommandContext } from '../command.js';
import { connectionFor } from '../connection.js';
import { UsageError } from '../errors.js';
import { startConsoleProxy } from '../console-proxy.js';
import { int, type GlobalOpts } from '../options.js';

/** The port `sluice console` listens on by default (the local server's is 6632). */
export const CONSOLE_PORT = 6633;

/** Registers `console`. */
export function consoleCommands(program: Command, ctx: CommandContext): void {
  program
    .command('console')
    .description(
      "Serve the web console on http://127.0.0.1:6633/console/ for --endpoint (or the context), signing its API calls with this user's credentials (SigV4 profile or token); Ctrl-C stops.",
    )
    .addOption(
      new Option('--port <port>', 'port on 127.0.0.1 (0: any free one)').argParser(int('port')).default(CONSOLE_PORT),
    )
    .action(async (opts: { port: number }, cmd: Command) => {
      const { options } = connectionFor(cmd.optsWithGlobals<GlobalOpts>(), ctx.io.env);
      const endpoint = options.endpoint ?? DEFAULT_ENDPOINT;
      const files = await buildConsole();
      const proxy = await startConsoleProxy({
        endpoint,
        auth: options.auth,
        files,
        port: opts.port,
        ...(ctx.io.fetch ? { fetch: ctx.io.fetch } : {}),
      }).catch((e: unknown) => {
        if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE')
          throw new UsageError(
            `cannot listen on 127.0.0.1:${opts.port}: the port is already in use; pick another with --port (${opts.port + 1}, or 0 for any free one)`,
          );
        throw e;
      });
      const how =
        options.auth?.type === 'sigv4'
          ? 'API calls signed here with SigV4'
          : options.auth?.type === 'bearer'
            ? "API calls sent with this CLI's bearer token"
            : 'API calls sent without authentication';
      ctx.out(`Sluice console for ${endpoint} (${how}): ${proxy.url}/console/\n`);
      const signal = ctx.io.signal;
      if (signal && !signal.aborted)
        await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      else if (!signal) await new Promise<void>(() => undefined); // no way to stop it but the process ending
      await proxy.close();
    });
}
