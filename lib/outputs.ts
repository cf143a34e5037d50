/**
 * Endpoint discovery: the API base URL from a deployment's stack outputs
 * (`cdk deploy --outputs-file cdk-outputs.json`), on AWS or on LocalStack.
 */
import { readFileSync } from 'node:fs';

export type StackOutputs = Record<string, Record<string, string>>;

/** Reads an outputs file as `cdk deploy --outputs-file` writes it: `{ StackName: { Key: value } }`. */
export function readOutputsFile(path: string): StackOutputs {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(
      `cannot read stack outputs ${path} (deploy with --outputs-file ${path} first): ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  const json: unknown = JSON.parse(text);
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error(`${path} is not a CDK outputs file: expected { "StackName": { "ApiUrl": "..." } }`);
  return json as StackOutputs;
}

/** The outputs of the one Sluice stack in `outputs` (the one named `stackName`, when given). */
export function sluiceStackOutputs(
  outputs: StackOutputs,
  stackName?: string,
): { stack: string; values: Record<string, string> } {
  if (stackName) {
    const values = outputs[stackName];
    if (!values)
      throw new Error(`no stack ${stackName} in the outputs (stacks: ${Object.keys(outputs).join(', ') || 'none'})`);
    return { stack: stackName, values };
  }
  const candidates = Object.entries(outputs).filter(
    ([, v]) => typeof v === 'object' && v !== null && typeof v['ApiUrl'] === 'string',
  );
  if (candidates.length !== 1) {
    throw new Error(
      `expected exactly one stack with an ApiUrl output, found ${candidates.length} ` +
        `(${candidates.map(([k]) => k).join(', ') || 'none'}): name one with SLUICE_STACK`,
    );
  }
  const [stack, values] = candidates[0] as [string, Record<string, string>];
  return { stack, values };
}

/**
 * The API URL as LocalStack serves it: `https://ID.execute-api.REGION.amazonaws.com` becomes
 * `http://ID.execute-api.localhost.localstack.cloud:4566` (scheme and port from `edge`). URLs
 * already on LocalStack's domain are kept.
 */
export function localstackApiUrl(apiUrl: string, edge = 'http://localhost:4566'): string {
  const u = new URL(apiUrl);
  const e = new URL(edge);
  const m = /^([a-z0-9]+)\.execute-api\.[^.]+\.amazonaws\.com(\.cn)?$/.exec(u.hostname);
  if (m)
    return `${e.protocol}//${m[1]}.execute-api.localhost.localstack.cloud:${e.port || (e.protocol === 'https:' ? '443' : '80')}`;
  if (u.hostname.endsWith('.localhost.localstack.cloud')) return trimSlash(apiUrl);
  throw new Error(`${apiUrl} does not look like an API Gateway URL (ID.execute-api.REGION.amazonaws.com)`);
}

/**
 * The base URL clients use (no trailing slash) from a deployment's outputs.
 *
 * @example
 * ```ts
 * apiUrlFromOutputs(readOutputsFile('cdk-outputs.json'));                         // AWS
 * apiUrlFromOutputs(outputs, { localstackEdge: 'http://localhost:4566' });         // LocalStack
 * ```
 */
export function apiUrlFromOutputs(
  outputs: StackOutputs,
  opts: { stackName?: string; localstackEdge?: string } = {},
): string {
  const { stack, values } = sluiceStackOutputs(outputs, opts.stackName);
  const url = values['ApiUrl'];
  if (!url) throw new Error(`stack ${stack} has no ApiUrl output`);
  return opts.localstackEdge ? localstackApiUrl(url, opts.localstackEdge) : trimSlash(url);
}

const trimSlash = (s: string): string => s.replace(/\/+$/, '');
