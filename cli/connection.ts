/**
 * Which API the CLI talks to and how it authenticates, from the global options and the
 * environment. Kept apart from the commands so new sources (a config file) change one place.
 */
import { isExecuteApiHost } from '../client/auth.js';
import { DEFAULT_ENDPOINT } from '../client/http.js';
import type { SluiceOptions } from '../client/sluice.js';
import { UsageError } from './errors.js';
import type { GlobalOpts } from './options.js';

/** The client for the global options: endpoint, and bearer, SigV4 or no auth. */
export function clientOptions(g: GlobalOpts, env: Record<string, string | undefined>): SluiceOptions {
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
