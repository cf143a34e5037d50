/**
 * Named contexts (like `nats context`): endpoints and how to authenticate to them, saved in
 * `$XDG_CONFIG_HOME/sluice/config.json` (by default `~/.config/sluice/config.json`), so
 * `sluice --context prod groups` or a `sluice context use prod` replaces a set of flags. The
 * file may hold bearer tokens, so it is written with mode 0600.
 *
 * @example
 * ```json
 * { "current": "local",
 *   "contexts": { "local": { "endpoint": "http://127.0.0.1:6632" },
 *                 "prod": { "endpoint": "https://abc.execute-api.eu-west-1.amazonaws.com", "auth": "sigv4", "profile": "prod" } } }
 * ```
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { UsageError } from './errors.js';

const ContextSchema = z
  .object({
    endpoint: z.string().optional(),
    auth: z.enum(['none', 'bearer', 'sigv4']).optional(),
    token: z.string().optional(),
    profile: z.string().optional(),
    region: z.string().optional(),
    description: z.string().optional(),
  })
  .strict();
export type SavedContext = z.infer<typeof ContextSchema>;

const ConfigSchema = z
  .object({
    current: z.string().optional(),
    contexts: z.record(z.string(), ContextSchema).default({}),
  })
  .strict();
export type CliConfig = z.infer<typeof ConfigSchema>;

/** Context names: letters, digits, `.`, `_`, `-` (they appear in shell completion and on the command line). */
export const CONTEXT_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Where the file lives: `$XDG_CONFIG_HOME/sluice/config.json`, else `$HOME/.config/sluice/config.json`. */
export function configPath(env: Record<string, string | undefined>): string {
  const base = env['XDG_CONFIG_HOME'] || join(env['HOME'] || homedir(), '.config');
  return join(base, 'sluice', 'config.json');
}

/** The saved contexts; none when the file does not exist. A file that does not parse is a usage error naming it. */
export function readConfig(env: Record<string, string | undefined>): CliConfig {
  const path = configPath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { contexts: {} };
    throw new UsageError(`cannot read ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${path} is not valid JSON (${(e as Error).message}); fix or remove it`);
  }
  const r = ConfigSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new UsageError(`${path}: ${issue?.path.join('.') || 'the file'}: ${issue?.message ?? 'invalid'}`);
  }
  return r.data;
}

/** Writes the contexts (whole file, replaced atomically, mode 0600). */
export function writeConfig(env: Record<string, string | undefined>, cfg: CliConfig): string {
  const path = configPath(env);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(cfg, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
  return path;
}
