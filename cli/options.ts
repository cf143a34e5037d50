/**
 * Option definitions shared by commands, and the parsers for their values. One definition per
 * concept, so a flag is spelled, checked and described alike on every command that takes it;
 * a command passes only what differs (its description, its default).
 */
import { InvalidArgumentError, Option } from 'commander';
import { DEFAULT_ENDPOINT } from '../client/http.js';
import type { ClaimStart, QueueOptions } from '../client/types.js';
import type { TargetSettingsInput } from '../client/wire.js';
import { DURATION_HELP, durationArg } from './duration.js';

// ---------------------------------------------------------------- value parsers

/** A parser for an integer >= `min`; `what` names the value in the error. */
export const int =
  (what: string, min = 0) =>
  (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`${what} must be an integer >= ${min} (got ${JSON.stringify(v)})`);
    return n;
  };

/** A parser for an integer >= 1. */
export const positive = (what: string): ((v: string) => number) => int(what, 1);

/** A parser for any integer: for a setting whose range the server checks (and says, when it refuses one). */
export const integer =
  (what: string) =>
  (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isSafeInteger(n))
      throw new InvalidArgumentError(`${what} must be an integer (got ${JSON.stringify(v)})`);
    return n;
  };

/** Parses a rate in messages per second (> 0, fractions allowed). */
export function rate(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError(`rate must be a number of messages per second > 0 (got ${JSON.stringify(v)})`);
  return n;
}

/** Parses a claim-group start position: `earliest`, `latest`, an offset or an ISO-8601 instant. */
export function parseStart(v: string): ClaimStart {
  if (v === 'earliest' || v === 'latest') return v;
  const n = Number(v);
  if (Number.isInteger(n) && n >= 0) return { offset: n };
  // An instant is sent as written: the server checks it (range included) with every other instant.
  if (/^\d{4}-\d\d-\d\d/.test(v) && Number.isFinite(Date.parse(v))) return { at: v };
  throw new InvalidArgumentError(
    `start must be earliest, latest, an offset or an ISO-8601 instant such as 2026-05-01T12:00:00Z (got ${JSON.stringify(v)})`,
  );
}

/**
 * Parses a target's start position (`targets set --start`): `trim-horizon`, `latest` or an
 * ISO-8601 instant, as the settings' `startingPosition` (and `startingPositionTimestamp`, epoch ms).
 *
 * @example
 * ```ts
 * parseTargetStart('latest'); // { startingPosition: 'LATEST' }
 * parseTargetStart('2026-05-01T12:00:00Z'); // { startingPosition: 'AT_TIMESTAMP', startingPositionTimestamp: 1777636800000 }
 * ```
 */
export function parseTargetStart(v: string): TargetStart {
  if (v === 'trim-horizon') return { startingPosition: 'TRIM_HORIZON' };
  if (v === 'latest') return { startingPosition: 'LATEST' };
  const at = Date.parse(v);
  if (/^\d{4}-\d\d-\d\d/.test(v) && Number.isFinite(at))
    return { startingPosition: 'AT_TIMESTAMP', startingPositionTimestamp: at };
  throw new InvalidArgumentError(
    `start must be trim-horizon, latest or an ISO-8601 instant such as 2026-05-01T12:00:00Z (got ${JSON.stringify(v)})`,
  );
}

/** Where a target's group starts, as its settings say it. */
export type TargetStart = Pick<TargetSettingsInput, 'startingPosition' | 'startingPositionTimestamp'>;

/** Folds one repeatable `key=value` into the queue options so far; the value is JSON if it parses, else a string. */
export function parseOptionPair(v: string, prev: QueueOptions = {}): QueueOptions {
  const i = v.indexOf('=');
  if (i <= 0)
    throw new InvalidArgumentError(`--set takes key=value (got ${JSON.stringify(v)}), e.g. --set leaseTime=30`);
  const key = v.slice(0, i);
  const raw = v.slice(i + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // a bare string
  }
  return { ...prev, [key]: value };
}

/** The statuses an ack may carry. */
export const ACK_STATUSES = ['completed', 'failed', 'retry', 'dlq'];

// ---------------------------------------------------------------- global options

/** The options every command sees (`cmd.optsWithGlobals()`). */
export interface GlobalOpts {
  context?: string;
  endpoint?: string;
  token?: string;
  profile?: string;
  region?: string;
  auth?: 'none' | 'bearer' | 'sigv4';
  json?: boolean;
  timeout?: number;
}

/** The program-level options, in the order `sluice --help` lists them (fresh objects on each call). */
export function globalOptions(): Option[] {
  return [
    new Option('--context <name>', 'use this saved context (env SLUICE_CONTEXT; see `sluice context`)'),
    new Option('-e, --endpoint <url>', `API base URL (env SLUICE_ENDPOINT; default ${DEFAULT_ENDPOINT})`),
    new Option('-t, --token <token>', 'bearer token (env SLUICE_TOKEN)'),
    new Option('--profile <name>', 'AWS profile for SigV4 signing (implies --auth sigv4)'),
    new Option('--region <region>', 'AWS region for SigV4 (default: from the execute-api URL or AWS_REGION)'),
    new Option(
      '--auth <kind>',
      'none, bearer or sigv4 (default: bearer with a token; sigv4 for execute-api URLs or with --profile/--region)',
    ).choices(['none', 'bearer', 'sigv4']),
    new Option('--timeout <duration>', `per-request timeout (${DURATION_HELP})`).argParser(
      durationArg('timeout', { min: 1 }),
    ),
    new Option('--json', 'machine-readable JSON output'),
  ];
}

// ---------------------------------------------------------------- command options
// Factories rather than shared instances: Commander keeps per-command state on an Option.

/** `-p, --partition <name>`. */
export function partitionOption(description: string, defaultValue?: string): Option {
  return new Option('-p, --partition <name>', description).default(defaultValue);
}

/** `-g, --group <name>`: a partition-lease consumer group. */
export function groupOption(description: string): Option {
  return new Option('-g, --group <name>', description);
}

/** `-b, --batch <n>`: how many per request (messages per pop or push, records per poll, dead letters per call). */
export function batchOption(description: string, defaultValue: number): Option {
  return new Option('-b, --batch <n>', description).default(defaultValue).argParser(positive('batch'));
}

/** `-w, --wait <duration>`: how long to long-poll (0: answer at once). */
export function waitOption(description: string): Option {
  return new Option('-w, --wait <duration>', `${description} (${DURATION_HELP})`)
    .default(0)
    .argParser(durationArg('wait'));
}

/** A duration option other than `--wait` (`--idle`, `--visibility`, `--delay`, …), in milliseconds. */
export function durationOption(
  flags: string,
  description: string,
  opts: { min?: number; wholeSeconds?: boolean } = {},
): Option {
  const what = /--([\w-]+)/.exec(flags)?.[1] ?? 'duration';
  return new Option(flags, `${description} (${DURATION_HELP})`).argParser(durationArg(what, opts));
}

/** `--rate <n>`: at most this many per second. */
export function rateOption(description: string): Option {
  return new Option('--rate <n>', description).argParser(rate);
}

/** `--no-progress`: no progress on stderr. */
export function noProgressOption(description = 'no progress bar'): Option {
  return new Option('--no-progress', description);
}
