/**
 * How requests authenticate: nothing (the local server on loopback), a bearer token (the
 * local server's grants file, or a JWT authorizer), or AWS SigV4 (an IAM-protected
 * deployment). SigV4 uses `@smithy/signature-v4` (the AWS SDK's own signer) with credentials
 * from the standard provider chain (`@aws-sdk/credential-provider-node`: environment,
 * profile, SSO, web identity, container and instance roles); both are loaded only when
 * SigV4 is used.
 */
import { NodeSha256 } from './sha256.js';

/** AWS credentials, as the SDK's providers return them. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
  expiration?: Date | undefined;
}

export interface SigV4Auth {
  type: 'sigv4';
  /** Region of the API. Default: from an `*.execute-api.REGION.amazonaws.com` endpoint, else AWS_REGION / AWS_DEFAULT_REGION. */
  region?: string | undefined;
  /** Profile for the default provider chain (else AWS_PROFILE, else `default`). */
  profile?: string | undefined;
  /** Fixed credentials or a provider; default: the standard chain. */
  credentials?: AwsCredentials | (() => Promise<AwsCredentials>) | undefined;
  /** Signing service; `execute-api` for API Gateway. */
  service?: string | undefined;
}

export type Auth = { type: 'none' } | { type: 'bearer'; token: string | (() => string | Promise<string>) } | SigV4Auth;

/** What a signer needs to know about a request. */
export interface RequestToSign {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string | undefined;
}

/** Adds authentication headers to a request. */
export type Authenticator = (req: RequestToSign) => Promise<Record<string, string>>;

/** `abc.execute-api.eu-west-1.amazonaws.com` → `eu-west-1`. */
export function regionFromHost(host: string): string | undefined {
  return /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/i.exec(host)?.[1];
}

/** Whether an endpoint is an API Gateway URL (where SigV4 is the deployment's default). */
export function isExecuteApiHost(host: string): boolean {
  return regionFromHost(host) !== undefined;
}

/**
 * The authenticator for an {@link Auth}. `now` fixes the signing clock (tests).
 *
 * @example
 * ```ts
 * const auth = authenticator({ type: 'sigv4', region: 'eu-west-1' }, new URL(endpoint));
 * const headers = await auth({ method: 'GET', url: new URL(endpoint + '/health'), headers: {} });
 * ```
 */
export function authenticator(
  auth: Auth,
  endpoint: URL,
  opts: { now?: () => Date; env?: Record<string, string | undefined> } = {},
): Authenticator {
  if (auth.type === 'none') return (req) => Promise.resolve(req.headers);
  if (auth.type === 'bearer') {
    const t = auth.token;
    return async (req) => ({ ...req.headers, authorization: `Bearer ${typeof t === 'function' ? await t() : t}` });
  }
  const env = opts.env ?? process.env;
  const region = auth.region ?? regionFromHost(endpoint.hostname) ?? env['AWS_REGION'] ?? env['AWS_DEFAULT_REGION'];
  if (!region) {
    throw new TypeError(
      `SigV4 needs a region: pass region (or --region), set AWS_REGION, or use the API's execute-api URL (${endpoint.host} does not name one)`,
    );
  }
  let signerPromise:
    | Promise<{ sign(req: unknown, o?: { signingDate?: Date }): Promise<{ headers: Record<string, string> }> }>
    | undefined;
  const signer = () =>
    (signerPromise ??= (async () => {
      const { SignatureV4 } = await import('@smithy/signature-v4');
      let credentials: AwsCredentials | (() => Promise<AwsCredentials>);
      if (auth.credentials) credentials = auth.credentials;
      else {
        const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
        credentials = defaultProvider(auth.profile ? { profile: auth.profile } : {});
      }
      return new SignatureV4({ service: auth.service ?? 'execute-api', region, credentials, sha256: NodeSha256 });
    })());
  return async (req) => {
    const s = await signer();
    const query: Record<string, string | string[]> = {};
    for (const [k, v] of req.url.searchParams) {
      const prev = query[k];
      query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    const signed = await s.sign(
      {
        method: req.method,
        protocol: req.url.protocol,
        hostname: req.url.hostname,
        ...(req.url.port ? { port: Number(req.url.port) } : {}),
        // The path as sent (percent-encoded); the signer encodes it once more, as API Gateway expects.
        path: req.url.pathname,
        query,
        headers: { ...req.headers, host: req.url.host },
        ...(req.body === undefined ? {} : { body: req.body }),
      },
      opts.now ? { signingDate: opts.now() } : {},
    );
    // fetch sets Host itself (and refuses to be told).
    const { host: _host, ...rest } = signed.headers;
    return rest;
  };
}
