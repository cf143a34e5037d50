import { createHash, createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { apiUrlFromOutputs, localstackApiUrl, readOutputsFile, sluiceStackOutputs } from '../../lib/outputs.js';
import { deployedTarget, testPrefix } from '../support/deployed.js';
import { sigv4Signer } from '../support/sigv4.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/cdk-outputs.json', import.meta.url));

describe('deploy: endpoint discovery from stack outputs', () => {
  it('finds the one stack with an ApiUrl (the bootstrap stack is ignored)', () => {
    const outputs = readOutputsFile(FIXTURE);
    expect(sluiceStackOutputs(outputs).stack).toBe('Sluice');
    expect(apiUrlFromOutputs(outputs)).toBe('https://k3x9q2w1ab.execute-api.us-east-1.amazonaws.com');
    expect(apiUrlFromOutputs({ S: { ApiUrl: 'https://a1.execute-api.eu-west-1.amazonaws.com/' } })).toBe(
      'https://a1.execute-api.eu-west-1.amazonaws.com',
    );
  });

  it('rewrites the URL to LocalStack when given its edge endpoint', () => {
    const outputs = readOutputsFile(FIXTURE);
    expect(apiUrlFromOutputs(outputs, { localstackEdge: 'http://localhost:4566' })).toBe(
      'http://k3x9q2w1ab.execute-api.localhost.localstack.cloud:4566',
    );
    expect(
      localstackApiUrl(
        'https://k3x9q2w1ab.execute-api.us-east-1.amazonaws.com/',
        'https://localhost.localstack.cloud:4566',
      ),
    ).toBe('https://k3x9q2w1ab.execute-api.localhost.localstack.cloud:4566');
    expect(localstackApiUrl('http://k3x9q2w1ab.execute-api.localhost.localstack.cloud:4566/')).toBe(
      'http://k3x9q2w1ab.execute-api.localhost.localstack.cloud:4566',
    );
    expect(() => localstackApiUrl('https://example.com')).toThrow(/does not look like an API Gateway URL/);
  });

  it('says what is wrong with missing or ambiguous outputs', () => {
    expect(() => readOutputsFile('/nonexistent/cdk-outputs.json')).toThrow(/deploy with --outputs-file/);
    expect(() => sluiceStackOutputs({})).toThrow(/exactly one stack with an ApiUrl output, found 0/);
    expect(() => sluiceStackOutputs({ A: { ApiUrl: 'https://a' }, B: { ApiUrl: 'https://b' } })).toThrow(
      /found 2 \(A, B\).*SLUICE_STACK/,
    );
    expect(() => sluiceStackOutputs({ A: { ApiUrl: 'x' } }, 'B')).toThrow(/no stack B/);
  });
});

describe('deploy: the black-box target from the environment', () => {
  it('from a recorded outputs file on LocalStack: the rewritten URL, signed with SigV4 (AuthMode iam)', () => {
    const d = deployedTarget({
      SLUICE_OUTPUTS_FILE: FIXTURE,
      LOCALSTACK_ENDPOINT: 'http://localhost:4566',
      AWS_REGION: 'us-east-1',
    });
    expect(d.target.url).toBe('http://k3x9q2w1ab.execute-api.localhost.localstack.cloud:4566');
    expect(d.behindGateway).toBe(true);
    expect(d.target.sign).toBeTypeOf('function');
    expect(d.source).toContain('cdk-outputs.json');
  });

  it('from a base URL: bearer token, or nothing', () => {
    expect(
      deployedTarget({ SLUICE_BASE_URL: 'http://127.0.0.1:6632/', SLUICE_BEARER_TOKEN: 't'.repeat(20) }).target,
    ).toEqual({ url: 'http://127.0.0.1:6632', headers: { authorization: `Bearer ${'t'.repeat(20)}` } });
    expect(deployedTarget({ SLUICE_BASE_URL: 'http://127.0.0.1:6632' }).target).toEqual({
      url: 'http://127.0.0.1:6632',
    });
    expect(deployedTarget({ SLUICE_BASE_URL: 'http://x', SLUICE_BEHIND_GATEWAY: '1' }).behindGateway).toBe(true);
    expect(() => deployedTarget({ SLUICE_BASE_URL: 'http://x', SLUICE_AUTH: 'magic' })).toThrow(
      /sigv4, bearer or none/,
    );
  });

  it('queue prefixes are unique per run unless fixed', () => {
    expect(testPrefix({ SLUICE_TEST_PREFIX: 'ci-' })).toBe('ci-');
    expect(testPrefix({})).toMatch(/^t[a-z0-9]+-$/);
    expect(testPrefix({})).not.toBe(testPrefix({}));
  });

  it('signs the way API Gateway checks: host, date and body hash, for execute-api', async () => {
    const sign = sigv4Signer({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
      now: () => new Date('2026-11-01T12:00:00Z'),
    });
    const headers = await sign({
      method: 'POST',
      url: 'https://abc.execute-api.eu-west-1.amazonaws.com/api/v1/push?x=1',
      headers: { 'content-type': 'application/json' },
      body: '{"items":[]}',
    });
    expect(headers['x-amz-date']).toBe('20261101T120000Z');
    // Recomputed independently (the SigV4 steps, by hand) for the same request.
    const hex = (d: string): string => createHash('sha256').update(d).digest('hex');
    const bodyHash = hex('{"items":[]}');
    const canonical = [
      'POST',
      '/api/v1/push',
      'x=1',
      'content-type:application/json',
      'host:abc.execute-api.eu-west-1.amazonaws.com',
      `x-amz-content-sha256:${bodyHash}`,
      'x-amz-date:20261101T120000Z',
      '',
      'content-type;host;x-amz-content-sha256;x-amz-date',
      bodyHash,
    ].join('\n');
    const scope = '20261101/eu-west-1/execute-api/aws4_request';
    const toSign = ['AWS4-HMAC-SHA256', '20261101T120000Z', scope, hex(canonical)].join('\n');
    const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data).digest();
    const key = ['20261101', 'eu-west-1', 'execute-api', 'aws4_request'].reduce<Buffer | string>(
      (k, part) => hmac(k, part),
      'AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    );
    const signature = createHmac('sha256', key).update(toSign).digest('hex');
    expect(headers['authorization']).toBe(
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/${scope}, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=${signature}`,
    );
    expect(headers).not.toHaveProperty('host');
    // Deterministic: the same request signs the same.
    const again = await sign({
      method: 'POST',
      url: 'https://abc.execute-api.eu-west-1.amazonaws.com/api/v1/push?x=1',
      headers: { 'content-type': 'application/json' },
      body: '{"items":[]}',
    });
    expect(again['authorization']).toBe(headers['authorization']);
  });
});
