/**
 * What a command group is and what it gets to work with. Each `cli/commands/*.ts` module exports
 * one CommandGroup; cli/main.ts lists them, so a new group is a new file plus one line there.
 */
import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { Sluice } from '../client/sluice.js';
import { connectionFor } from './connection.js';
import type { Out } from './format.js';
import type { GlobalOpts } from './options.js';

/** Where the CLI reads and writes; tests pass their own. */
export interface Io {
  stdout: Out;
  stderr: Out;
  stdin: Readable;
  /** The size of stdin when it is a regular file (`< orders.jsonl`): `push` shows its progress against it. */
  stdinBytes?: number;
  env: Record<string, string | undefined>;
  /** Injected into the client (tests). */
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Aborted to stop `tail` (the shim wires SIGINT/SIGTERM). */
  signal?: AbortSignal;
}

/** Handed to every command group: the I/O of this run and the helpers its actions share. */
export interface CommandContext {
  readonly io: Io;
  /** Writes to stdout. */
  readonly out: (s: string) => void;
  /** Writes a value as indented JSON to stdout (the `--json` answer). */
  readonly printJson: (v: unknown) => void;
  /** Whether `--json` was given. */
  readonly json: (cmd: Command) => boolean;
  /** A client for this invocation's global options (context, endpoint, auth, timeout). */
  readonly client: (cmd: Command) => Sluice;
  /** Sets the exit code of a command that ran to the end but partly failed (e.g. some pushes failed). */
  readonly setExit: (code: number) => void;
}

/** Registers one group of commands on the program. */
export type CommandGroup = (program: Command, ctx: CommandContext) => void;

/** The context for one run of the CLI. */
export function createContext(io: Io, setExit: (code: number) => void): CommandContext {
  const globals = (cmd: Command): GlobalOpts => cmd.optsWithGlobals<GlobalOpts>();
  const out = (s: string): void => void io.stdout.write(s);
  return {
    io,
    out,
    printJson: (v) => out(`${JSON.stringify(v, null, 2)}\n`),
    json: (cmd) => globals(cmd).json === true,
    client: (cmd) =>
      new Sluice({
        ...connectionFor(globals(cmd), io.env).options,
        ...(io.fetch ? { fetch: io.fetch } : {}),
        ...(io.sleep ? { sleep: io.sleep } : {}),
      }),
    setExit,
  };
}
