/**
 * `sluice token create|list|revoke`: bearer tokens of an `auth=tokens` deployment. These talk to
 * the deployment's token table with the operator's own AWS credentials (the API never hands out
 * or lists tokens), so rotating a token needs no deploy: create the new one, move the client,
 * revoke the old one (refused within the authorizer's cache time, 30 s).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Option, type Command } from 'commander';
import { principalProblem, tokenTable, type TokenStore } from '../../server/public/tokens.js';
import { readOutputsFile, sluiceStackOutputs } from '../../lib/outputs.js';
import type { CommandContext } from '../command.js';
import { EXIT, UsageError } from '../errors.js';
import { table } from '../format.js';

/** The stack output naming the token table (lib/sluice-stack.ts). */
const TOKEN_TABLE_OUTPUT = 'TokenTableName';

interface TableOpts {
  table?: string;
  outputs: string;
  stack?: string;
  /** Global options: the operator's AWS profile and region serve the table too. */
  profile?: string;
  region?: string;
}

/** Options every token command takes: where the token table is. */
function tableOptions(): Option[] {
  return [
    new Option('--table <name>', 'the token table (default: SLUICE_TOKEN_TABLE, else the stack outputs)'),
    new Option('--outputs <file>', 'stack outputs written by `npm run deploy`').default('cdk-outputs.json'),
    new Option('--stack <name>', 'which stack in the outputs file (when it holds several)'),
  ];
}

/** A token store over the deployment's table, with the operator's AWS credentials. */
function openStore(o: TableOpts, env: Record<string, string | undefined>): { store: TokenStore; close: () => void } {
  const name = o.table ?? env['SLUICE_TOKEN_TABLE'] ?? tableFromOutputs(o);
  const endpoint = env['AWS_ENDPOINT_URL_DYNAMODB'] ?? env['AWS_ENDPOINT_URL'];
  const region = o.region ?? env['AWS_REGION'] ?? env['AWS_DEFAULT_REGION'];
  const ddb = new DynamoDBClient({
    ...(endpoint ? { endpoint } : {}),
    ...(region ? { region } : {}),
    ...(o.profile ? { profile: o.profile } : {}),
  });
  return { store: tokenTable(ddb, name), close: () => ddb.destroy() };
}

function tableFromOutputs(o: TableOpts): string {
  let values: Record<string, string>;
  try {
    values = sluiceStackOutputs(readOutputsFile(o.outputs), o.stack).values;
  } catch (e) {
    throw new UsageError(`${e instanceof Error ? e.message : String(e)} (or name the table with --table)`);
  }
  const name = values[TOKEN_TABLE_OUTPUT];
  if (!name) throw new UsageError(`the stack has no ${TOKEN_TABLE_OUTPUT} output: deploy it with -c auth=tokens`);
  return name;
}

const when = (ms: number): string => new Date(ms).toISOString();

/** Registers `token create`, `token list` and `token revoke`. */
export function tokenCommands(program: Command, ctx: CommandContext): void {
  const { out, printJson, json, io, setExit } = ctx;
  const token = program
    .command('token')
    .description('Bearer tokens of an auth=tokens deployment (uses your AWS credentials on its token table).');

  const withStore = async <T>(o: TableOpts, fn: (s: TokenStore) => Promise<T>): Promise<T> => {
    const { store, close } = openStore(o, io.env);
    try {
      return await fn(store);
    } finally {
      close();
    }
  };

  const create = token
    .command('create')
    .description('Create a token for a principal; the token is printed once and never stored.')
    .argument('<principal>', 'who the token authenticates as (the name grants match)')
    .option('-d, --description <text>', 'what the token is for (shown by list)')
    .option('--secret <token>', 'store this secret instead of a new random one (e.g. moving a local token)');
  for (const opt of tableOptions()) create.addOption(opt);
  create.action(async (principal: string, local: { description?: string; secret?: string }, cmd: Command) => {
    const o = cmd.optsWithGlobals<TableOpts & { description?: string; secret?: string }>();
    const problem = principalProblem(principal);
    if (problem) throw new UsageError(`cannot create a token for ${JSON.stringify(principal)}: ${problem}`);
    const r = await withStore(o, (s) => s.create(principal, { description: local.description, token: local.secret }));
    if (json(cmd)) return printJson(r);
    out(`${r.token}\n`);
    io.stderr.write(`token ${r.id} for ${r.principal}: shown once, store it now\n`);
  });

  const list = token.command('list').description('List tokens (ids, principals, descriptions; never the secrets).');
  for (const opt of tableOptions()) list.addOption(opt);
  list.action(async (_local: unknown, cmd: Command) => {
    const o = cmd.optsWithGlobals<TableOpts>();
    const tokens = await withStore(o, (s) => s.list());
    if (json(cmd)) return printJson(tokens);
    if (tokens.length === 0) return out('no tokens\n');
    out(
      table([
        ['ID', 'PRINCIPAL', 'CREATED', 'DESCRIPTION'],
        ...tokens.map((t) => [t.id, t.principal, when(t.createdAt), t.description ?? '']),
      ]),
    );
  });

  const revoke = token
    .command('revoke')
    .description('Revoke a token by its id (refused by the API within 30 s).')
    .argument('<id>');
  for (const opt of tableOptions()) revoke.addOption(opt);
  revoke.action(async (id: string, _local: unknown, cmd: Command) => {
    const o = cmd.optsWithGlobals<TableOpts>();
    const revoked = await withStore(o, (s) => s.revoke(id));
    if (json(cmd)) return printJson({ id, revoked });
    if (!revoked) {
      io.stderr.write(`no token with id ${id}\n`);
      return setExit(EXIT.notFound);
    }
    out(`revoked ${id}\n`);
  });
}
