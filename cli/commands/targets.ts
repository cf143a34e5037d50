/**
 * Target commands (`targets …`, docs/TARGETS.md): a consumer group Sluice delivers to an HTTPS
 * endpoint. Set, read, list, pause, resume and delete one; rotate its signing secret. A signing
 * secret is printed once, alone on stdout (so `$(sluice targets set …)` captures it), with the
 * warning that it will not be shown again on stderr. The settings' ranges are the server's to
 * check: a value it refuses comes back with its message (exit 1).
 */
import { Option, type Command } from 'commander';
import type { GetTargetAnswer, TargetSettingsInput } from '../../client/wire.js';
import type { CommandContext } from '../command.js';
import { brief, duration, table } from '../format.js';
import { durationOption, integer, parseTargetStart, type TargetStart } from '../options.js';

/** The flags of `targets set`, as Commander hands them over (durations in ms). */
interface SetFlags {
  url: string;
  mode: 'leases' | 'claims';
  batchSize?: number;
  window?: number;
  concurrency?: number;
  reportFailures?: boolean;
  bisect?: boolean;
  maxRetries?: number;
  maxAge?: number;
  deliveryTimeout?: number;
  start?: TargetStart;
}

/** Registers `targets` and its subcommands. */
export function targetCommands(program: Command, ctx: CommandContext): void {
  const { io, out, printJson, json, client } = ctx;

  const targets = program
    .command('targets')
    .description('Targets: consumer groups Sluice delivers to an HTTPS endpoint (the local server, for now).');
  // Every targets subcommand but list addresses one group on one queue.
  const targetArgs = (c: Command): Command => c.argument('<queue>').argument('<group>');

  targets
    .command('list')
    .description('Every target: mode, endpoint, state, last error and counts.')
    .action(async (_o: unknown, cmd: Command) => {
      const list = await client(cmd).targets.list();
      if (json(cmd)) return printJson(list);
      if (list.length === 0) {
        io.stderr.write('no targets (set one: sluice targets set <queue> <group> --url <url>)\n');
        return;
      }
      out(
        table([
          ['QUEUE', 'GROUP', 'MODE', 'ENDPOINT', 'STATE', 'LAST_ERROR', 'INVOCATIONS', 'ERRORS'],
          ...list.map((t) => [
            t.queue,
            t.group,
            t.settings.mode,
            endpointOf(t),
            t.state,
            t.lastError ? brief(t.lastError.message, 60).replace(/^"|"$/g, '') : '-', // a string: left-aligned
            t.stats.invocations,
            t.stats.errors,
          ]),
        ]),
      );
    });

  targetArgs(targets.command('get'))
    .description('One target: its settings, state, last error and counts (never its secret).')
    .action(async (queue: string, group: string, _o: unknown, cmd: Command) => {
      const t = await client(cmd).targets.get(queue, group);
      if (json(cmd)) return printJson(t);
      out(describe(t));
    });

  targetArgs(targets.command('set'))
    .description(
      "Set a consumer group's target: create it, or replace its settings (a flag not given goes back to its default).",
    )
    .requiredOption('--url <url>', 'the endpoint: https:// (http:// only to a loopback address, on the local server)')
    .addOption(
      new Option('--mode <mode>', 'the group consumes by partition leases or by record claims')
        .choices(['leases', 'claims'])
        .default('leases'),
    )
    .option('--batch-size <n>', 'most records per event, default 100', integer('batch-size'))
    .addOption(
      durationOption('--window <duration>', 'after a quiet spell, gather this long before the first event, default 0', {
        wholeSeconds: true,
      }),
    )
    .option('--concurrency <n>', 'events in flight at once, default 5', integer('concurrency'))
    .option('--report-failures', 'the answer may fail single records (ReportBatchItemFailures)')
    .option('--bisect', 'split a failing batch in halves until the record that fails alone is found')
    .option(
      '--max-retries <n>',
      "charged attempts before the group's dead letters, default the group's own limit",
      integer('max-retries'),
    )
    .addOption(
      durationOption('--max-age <duration>', 'older records go to dead letters unprocessed, default no limit', {
        wholeSeconds: true,
      }),
    )
    .addOption(
      durationOption('--delivery-timeout <duration>', 'how long one delivery may take, default 1m', {
        wholeSeconds: true,
      }),
    )
    .addOption(
      new Option(
        '--start <pos>',
        'where a new group starts: trim-horizon (default), latest, or an ISO-8601 instant',
      ).argParser(parseTargetStart),
    )
    .action(async (queue: string, group: string, o: SetFlags, cmd: Command) => {
      const t = await client(cmd).targets.set(queue, group, settingsOf(o));
      const secret = 'signingSecret' in t ? t.signingSecret : undefined;
      if (json(cmd)) return printJson(t);
      io.stderr.write(`target ${queue}/${group} set: ${t.settings.mode} to ${endpointOf(t)}, ${t.state}\n`);
      if (secret === undefined) {
        io.stderr.write('its signing secret is unchanged\n');
        return;
      }
      io.stderr.write(
        'signing secret on stdout: keep it to check the sluice-signature header; it will not be shown again\n',
      );
      out(`${secret}\n`);
    });

  targetArgs(targets.command('delete'))
    .description('Remove a target: deliveries stop; the group, its cursors and dead letters stay.')
    .action(async (queue: string, group: string, _o: unknown, cmd: Command) => {
      const r = await client(cmd).targets.delete(queue, group);
      if (json(cmd)) return printJson(r);
      out(`deleted target ${queue}/${group} (the group, its cursors and dead letters stay)\n`);
    });

  targetArgs(targets.command('pause'))
    .description('Pause a target: no new batch starts until it is resumed; records wait in the log.')
    .action(async (queue: string, group: string, _o: unknown, cmd: Command) => {
      const t = await client(cmd).targets.pause(queue, group);
      if (json(cmd)) return printJson(t);
      out(`target ${queue}/${group} ${t.state}: no new batch starts until it is resumed\n`);
    });

  targetArgs(targets.command('resume'))
    .description('Resume a paused target.')
    .action(async (queue: string, group: string, _o: unknown, cmd: Command) => {
      const t = await client(cmd).targets.resume(queue, group);
      if (json(cmd)) return printJson(t);
      out(`target ${queue}/${group} resumed (${t.state})\n`);
    });

  targetArgs(targets.command('rotate-secret'))
    .description('Make a new signing secret (printed once); the previous one keeps signing for 24 hours.')
    .action(async (queue: string, group: string, _o: unknown, cmd: Command) => {
      const r = await client(cmd).targets.rotateSecret(queue, group);
      if (json(cmd)) return printJson(r);
      io.stderr.write(
        `new signing secret for ${queue}/${group} on stdout: it will not be shown again; ` +
          `the previous one keeps signing until ${r.previousValidUntil}\n`,
      );
      out(`${r.signingSecret}\n`);
    });
}

/** The settings `targets set` sends: what its flags say, the rest left to the server's defaults. */
function settingsOf(o: SetFlags): TargetSettingsInput {
  const seconds = (ms: number): number => ms / 1000; // whole: the duration parser refused fractions
  return {
    endpoint: { kind: 'https', url: o.url },
    mode: o.mode,
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
    ...(o.window !== undefined ? { maximumBatchingWindowInSeconds: seconds(o.window) } : {}),
    ...(o.concurrency !== undefined ? { maximumConcurrency: o.concurrency } : {}),
    ...(o.reportFailures ? { functionResponseTypes: ['ReportBatchItemFailures' as const] } : {}),
    ...(o.bisect ? { bisectBatchOnFunctionError: true } : {}),
    ...(o.maxRetries !== undefined ? { maximumRetryAttempts: o.maxRetries } : {}),
    ...(o.maxAge !== undefined ? { maximumRecordAgeInSeconds: seconds(o.maxAge) } : {}),
    ...(o.deliveryTimeout !== undefined ? { timeoutSeconds: seconds(o.deliveryTimeout) } : {}),
    ...o.start,
  };
}

/** Where a target delivers: its URL, its function's ARN, or (a --target flag's) its module's path. */
function endpointOf(t: Pick<GetTargetAnswer, 'settings'>): string {
  const e = t.settings.endpoint;
  return e.kind === 'https' ? e.url : e.kind === 'lambda' ? e.functionArn : e.path;
}

/** One target as `targets get` prints it: a name and a value a line. */
function describe(t: GetTargetAnswer): string {
  const s = t.settings;
  const rows: [string, string | number | null | undefined][] = [
    ['target', `${t.queue}/${t.group}`],
    ['state', t.state],
    ['last error', t.lastError ? `${t.lastError.message} (${t.lastError.at})` : null],
    ['endpoint', endpointOf(t)],
    ['mode', s.mode],
    ['batchSize', s.batchSize],
    ['maximumBatchingWindowInSeconds', s.maximumBatchingWindowInSeconds],
    ['maximumConcurrency', s.maximumConcurrency],
    ['functionResponseTypes', s.functionResponseTypes.join(', ') || null],
    ['bisectBatchOnFunctionError', String(s.bisectBatchOnFunctionError)],
    ['maximumRetryAttempts', s.maximumRetryAttempts ?? "the group's own limit"],
    ['maximumRecordAgeInSeconds', s.maximumRecordAgeInSeconds === -1 ? 'no limit' : s.maximumRecordAgeInSeconds],
    ['timeoutSeconds', s.timeoutSeconds],
    [
      'startingPosition',
      s.startingPositionTimestamp !== undefined
        ? `${s.startingPosition} ${new Date(s.startingPositionTimestamp).toISOString()}`
        : s.startingPosition,
    ],
    ['signing secret made', t.signingSecretSetAt],
    ['created', t.createdAt],
    ['updated', t.updatedAt],
    ['invocations', t.stats.invocations],
    ['errors', t.stats.errors],
    ['throttles', t.stats.throttles],
    ['retries', t.stats.retries],
    ['dead-lettered', t.stats.deadLettered],
    ['in flight', t.stats.inFlight],
    [
      'oldest undelivered',
      t.stats.oldestUndeliveredAgeSeconds === null ? null : duration(t.stats.oldestUndeliveredAgeSeconds),
    ],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return (
    rows.map(([k, v]) => `${k.padEnd(width)}  ${v === null || v === undefined ? '-' : String(v)}`).join('\n') + '\n'
  );
}
