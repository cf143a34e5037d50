/**
 * Which API the CLI talks to and how it authenticates: the global options, a saved context
 * (cli/config-file.ts) and the environment, in one place.
 *
 * Where the settings come from, first match wins:
 * 1. `--context` or SLUICE_CONTEXT names a context: its settings, any flag given overriding one.
 * 2. Else `--endpoint` or SLUICE_ENDPOINT: the flags and the environment (SLUICE_TOKEN,
 *    SLUICE_AUTH); the current context is not used (its credentials belong to its endpoint).
 * 3. Else the current context (`sluice context use`), flags overriding; SLUICE_TOKEN fills a
 *    token the context has not got.
 * 4. Else the defaults: the local server, no authentication.
 */
import { isExecuteApiHost } from '../client/auth.js';
import { DEFAULT_ENDPOINT } from '../client/http.js';
import type { SluiceOptions } from '../client/sluice.js';
import { readConfig, type SavedContext } from './config-file.js';
import { NotFoundError, UsageError } from './errors.js';
import type { GlobalOpts } from './options.js';

type Env = Record<string, string | undefined>;

/** The client for this run, and where its endpoint came from (for messages). */
export function connectionFor(g: GlobalOpts, env: Env): { options: SluiceOptions; context?: string } {
  const explicit = g.context ?? (env['SLUICE_CONTEXT'] || undefined);
  const implicit = !explicit && g.endpoint === undefined && !env['SLUICE_ENDPOINT'];
  if (!explicit && !implicit) return { options: clientOptions(g, env) };
  const cfg = readConfig(env);
  const name = explicit ?? cfg.current;
  if (name === undefined) return { options: clientOptions(g, env) };
  const ctx = cfg.contexts[name];
  if (!ctx)
    throw new NotFoundError(
      explicit
        ? `no context ${JSON.stringify(name)} (sluice context list shows the saved ones)`
        : `the current context ${JSON.stringify(name)} no longer exists: pick one with sluice context use <name>`,
    );
  return { options: clientOptions(withContext(g, ctx), contextEnv(env, explicit !== undefined)), context: name };
}

/** The flags, with the context's settings for those not given. */
function withContext(g: GlobalOpts, ctx: SavedContext): GlobalOpts {
  return {
    ...g,
    endpoint: g.endpoint ?? ctx.endpoint,
    token: g.token ?? ctx.token,
    profile: g.profile ?? ctx.profile,
    region: g.region ?? ctx.region,
    auth: g.auth ?? ctx.auth,
  };
}

/** The environment a context run sees: no endpoint or auth of its own; a token only for an implicit context. */
function contextEnv(env: Env, explicit: boolean): Env {
  return {
    ...env,
    SLUICE_ENDPOINT: undefined,
    SLUICE_AUTH: undefined,
    SLUICE_TOKEN: explicit ? undefined : env['SLUICE_TOKEN'],
  };
}

/** The endpoint this run talks to, for messages; never throws. */
export function endpointFor(g: GlobalOpts, env: Env): string {
  try {
    return connectionFor(g, env).options.endpoint ?? DEFAULT_ENDPOINT;
  } catch {
    return g.endpoint ?? env['SLUICE_ENDPOINT'] ?? DEFAULT_ENDPOINT;
  }
}

/** The client for the global options: endpoint, and bearer, SigV4 or no auth. */
export function clientOptions(g: GlobalOpts, env: Env): SluiceOptions {
  const endpoint = g.endpoint ?? env['SLUICE_ENDPOINT'] ?? DEFAULT_ENDPOINT;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new UsageError(
      `--endpoint ${JSON.stringify(endpoint)} is not a URL (e.g. ${DEFAULT_ENDPOINT} or https://abc123.execute-api.eu-west-1.amazonaws.com)`,
    );
  }
  const token = g.token ?? env['SLUICE_TOKEN'];
  const wantsSigv4 =
    g.auth === 'sigv4' ||
    (g.auth === undefined &&
      (g.profile !== undefined ||
        g.region !== undefined ||
        env['SLUICE_AUTH'] === 'sigv4' ||
        (!token && isExecuteApiHost(url.hostname))));
  const opts: SluiceOptions = { endpoint, ...(g.timeout !== undefined ? { timeoutMs: g.timeout } : {}) };
  if (g.auth === 'none') return opts;
  if (wantsSigv4) {
    if (g.token !== undefined)
      throw new UsageError(
        '--token and SigV4 (--auth sigv4, --profile, --region) cannot be combined: pick one way to authenticate',
      );
    return {
      ...opts,
      auth: { type: 'sigv4', ...(g.region ? { region: g.region } : {}), ...(g.profile ? { profile: g.profile } : {}) },
    };
  }
  if (g.auth === 'bearer' && !token) throw new UsageError('--auth bearer needs --token or SLUICE_TOKEN');
  if (token) return { ...opts, auth: { type: 'bearer', token } };
  return opts;
}
