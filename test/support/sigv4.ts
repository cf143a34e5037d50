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
import { createHash, createHmac } from 'node:crypto';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider, Checksum, SourceData } from '@smithy/types';
import type { HttpTarget } from './http.js';

/** SHA-256 (HMAC when given a secret) over Node's crypto, as the signer wants it. */
class NodeSha256 implements Checksum {
  private readonly h;
  constructor(secret?: SourceData) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(secret));
  }
  update(data: Uint8Array): void {
    this.h.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.h.digest());
  }
  reset(): void {
    throw new Error('not supported');
  }
}

function toBuffer(d: SourceData): Buffer {
  if (typeof d === 'string') return Buffer.from(d, 'utf8');
  if (ArrayBuffer.isView(d)) return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return Buffer.from(d);
}

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
