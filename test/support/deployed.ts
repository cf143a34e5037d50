/**
 * The target of a black-box run against something already running: a base URL given by env
 * (`SLUICE_BASE_URL`), or an API discovered from a deployment's stack outputs
 * (`SLUICE_OUTPUTS_FILE`, default `cdk-outputs.json`; on LocalStack with `LOCALSTACK_ENDPOINT`).
 *
 * | variable | meaning |
 * |---|---|
 * | `SLUICE_BASE_URL` | base URL to test (skips discovery) |
 * | `SLUICE_OUTPUTS_FILE` | outputs file written by `cdk deploy --outputs-file` |
 * | `SLUICE_STACK` | which stack in it (when it holds more than one) |
 * | `LOCALSTACK_ENDPOINT` | LocalStack edge URL, e.g. `http://localhost:4566` |
 * | `SLUICE_AUTH` | `sigv4`, `bearer` or `none` (default: the stack's AuthMode output, else none) |
 * | `SLUICE_BEARER_TOKEN` | token for `Authorization: Bearer` (local grants file or a JWT) |
 * | `AWS_REGION` | signing region for SigV4 (default us-east-1) |
 * | `SLUICE_BEHIND_GATEWAY` | `1` when a base URL is an API Gateway (set automatically after discovery) |
 * | `SLUICE_TEST_PREFIX` | queue-name prefix (default: unique per run) |
 * | `SLUICE_MAX_BODY_BYTES`, `SLUICE_MAX_MESSAGE_BYTES` | the target's limits, when not the defaults (`npm run test:localstack`) |
 *
 * @example
 * ```ts
 * const d = deployedTarget({ SLUICE_BASE_URL: 'http://127.0.0.1:6632' });
 * await callTarget(d.target, 'GET', '/health');
 * ```
 */
import { randomBytes } from 'node:crypto';
import { apiUrlFromOutputs, readOutputsFile, sluiceStackOutputs } from '../../lib/outputs.js';
import type { HttpTarget } from './http.js';
import { sigv4Signer } from './sigv4.js';

export interface DeployedTarget {
  target: HttpTarget;
  /** Where the URL came from, for test titles and errors. */
  source: string;
  behindGateway: boolean;
}

/** The queue-name prefix of this run: `SLUICE_TEST_PREFIX`, else unique per process. */
export function testPrefix(env: Record<string, string | undefined> = process.env): string {
  return env['SLUICE_TEST_PREFIX'] ?? `t${Date.now().toString(36)}${randomBytes(2).toString('hex')}-`;
}

export function deployedTarget(env: Record<string, string | undefined> = process.env): DeployedTarget {
  let url: string;
  let source: string;
  let behindGateway: boolean;
  let authMode: string | undefined;
  if (env['SLUICE_BASE_URL']) {
    url = env['SLUICE_BASE_URL'].replace(/\/+$/, '');
    source = `SLUICE_BASE_URL=${url}`;
    behindGateway = env['SLUICE_BEHIND_GATEWAY'] === '1';
  } else {
    const file = env['SLUICE_OUTPUTS_FILE'] ?? 'cdk-outputs.json';
    const outputs = readOutputsFile(file);
    const stackName = env['SLUICE_STACK'] || undefined;
    url = apiUrlFromOutputs(outputs, {
      ...(stackName ? { stackName } : {}),
      ...(env['LOCALSTACK_ENDPOINT'] ? { localstackEdge: env['LOCALSTACK_ENDPOINT'] } : {}),
    });
    authMode = sluiceStackOutputs(outputs, stackName).values['AuthMode'];
    source = `${file} -> ${url}`;
    behindGateway = true;
  }
  const auth = env['SLUICE_AUTH'] ?? (env['SLUICE_BEARER_TOKEN'] ? 'bearer' : authMode === 'iam' ? 'sigv4' : 'none');
  const target: HttpTarget = { url };
  if (auth === 'bearer') {
    if (!env['SLUICE_BEARER_TOKEN']) throw new Error('SLUICE_AUTH=bearer needs SLUICE_BEARER_TOKEN');
    target.headers = { authorization: `Bearer ${env['SLUICE_BEARER_TOKEN']}` };
  } else if (auth === 'sigv4') {
    target.sign = sigv4Signer({ region: env['AWS_REGION'] ?? env['AWS_DEFAULT_REGION'] ?? 'us-east-1' });
  } else if (auth !== 'none') {
    throw new Error(`SLUICE_AUTH must be sigv4, bearer or none (got ${auth})`);
  }
  return { target, source, behindGateway };
}
