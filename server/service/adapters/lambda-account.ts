/**
 * The account's unreserved Lambda concurrency (`lambda:GetAccountSettings`,
 * `AccountLimit.UnreservedConcurrentExecutions`): what the default wait cap is a share of
 * (`core/holds.ts`, {@link defaultMaxWaiters}). One signed GET, made with the SDK's own signer
 * and credential chain, so the bundles carry no Lambda client.
 *
 * @example
 * ```ts
 * const unreserved = await unreservedConcurrency({ region: 'eu-west-1' }); // 1000 on a default account
 * ```
 */
import { NodeSha256 } from '../../../client/sha256.js';

export interface AccountSettingsOptions {
  region: string;
  /** Another endpoint (LocalStack, tests); by default `AWS_ENDPOINT_URL_LAMBDA`, `AWS_ENDPOINT_URL` or Lambda's own. */
  endpoint?: string | undefined;
  /** Credentials; by default the SDK's provider chain (on Lambda, the function role's). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
  fetch?: typeof fetch;
  /** Gives up after this long (default 3 s): the caller falls back to a fixed cap. */
  timeoutMs?: number;
}

/** The API path of GetAccountSettings (Lambda's REST API, version 2016-08-19). */
export const ACCOUNT_SETTINGS_PATH = '/2016-08-19/account-settings/';

/**
 * Reads `AccountLimit.UnreservedConcurrentExecutions`. Throws on any failure (no permission,
 * no network, an answer without the number).
 */
export async function unreservedConcurrency(opts: AccountSettingsOptions): Promise<number> {
  const base =
    opts.endpoint ??
    process.env['AWS_ENDPOINT_URL_LAMBDA'] ??
    process.env['AWS_ENDPOINT_URL'] ??
    `https://lambda.${opts.region}.amazonaws.com`;
  const url = new URL(ACCOUNT_SETTINGS_PATH, base);
  const { SignatureV4 } = await import('@smithy/signature-v4');
  const credentials =
    opts.credentials ?? (await import('@aws-sdk/credential-provider-node')).defaultProvider({ timeout: 1000 });
  const signer = new SignatureV4({ service: 'lambda', region: opts.region, credentials, sha256: NodeSha256 });
  const signed = await signer.sign({
    method: 'GET',
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: url.pathname,
    query: {},
    headers: { host: url.host },
  });
  // fetch sets Host itself.
  const { host: _host, ...headers } = signed.headers;
  const res = await (opts.fetch ?? fetch)(url, {
    method: 'GET',
    headers,
    signal: AbortSignal.timeout(opts.timeoutMs ?? 3000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`GetAccountSettings answered ${res.status}: ${text.slice(0, 200)}`);
  const n = (JSON.parse(text) as { AccountLimit?: { UnreservedConcurrentExecutions?: unknown } }).AccountLimit
    ?.UnreservedConcurrentExecutions;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0)
    throw new Error('GetAccountSettings answered without AccountLimit.UnreservedConcurrentExecutions');
  return n;
}
