/**
 * SigV4 request signing for black-box runs against a deployed API (IAM auth): the same
 * signature `curl --aws-sigv4 "aws:amz:REGION:execute-api"` makes, with credentials from the
 * SDK's default chain (env, profile, SSO, instance role).
 *
 * @example
 * ```ts
 * const target = { url: apiUrl, sign: sigv4Signer({ region: 'eu-west-1' }) };
 * await callTarget(target, 'POST', '/api/v1/push', { items: [] });
 * ```
 */
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { NodeSha256 } from '../../client/sha256.js';
import type { HttpTarget } from './http.js';

export interface SignerOptions {
  region: string;
  /** Defaults to the SDK's credential chain. */
  credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** Fixed signing time (tests). */
  now?: () => Date;
}

/** A {@link HttpTarget.sign} that signs for `execute-api` in `region`. */
export function sigv4Signer(opts: SignerOptions): NonNullable<HttpTarget['sign']> {
  const signer = new SignatureV4({
    service: 'execute-api',
    region: opts.region,
    credentials: opts.credentials ?? defaultProvider(),
    sha256: NodeSha256,
  });
  return async ({ method, url, headers, body }) => {
    const u = new URL(url);
    const query: Record<string, string> = {};
    for (const [k, v] of u.searchParams) query[k] = v;
    const signed = await signer.sign(
      {
        method,
        protocol: u.protocol,
        hostname: u.hostname,
        ...(u.port ? { port: Number(u.port) } : {}),
        path: u.pathname,
        query,
        headers: { ...headers, host: u.host },
        ...(body === undefined ? {} : { body }),
      },
      opts.now ? { signingDate: opts.now() } : {},
    );
    // fetch sets Host itself (and refuses to be told).
    const { host: _host, ...rest } = signed.headers;
    return rest;
  };
}
