/**
 * What Sluice's invocations write to CloudWatch Logs, in bytes, for the cost model
 * (bench/cost-model.ts; docs/DEPLOYING.md, "Logs, and what they cost"): measured, not guessed.
 *
 * - **What the function writes**: everything a call writes to stdout and stderr (Powertools
 *   Logger lines, the EMF metrics line), captured while it runs ({@link captureOutput}).
 * - **Lambda's platform lines**: in the text format, START, END and REPORT per invocation, in
 *   their documented form ({@link platformLines}); in the JSON format with system logs at WARN
 *   (lib/function-logging.ts) none: `platform.start` and `platform.report` are INFO.
 * - **The HTTP API's access log line**: the stage's format, read from the synthesized template
 *   ({@link accessLogFormat}), filled in with the request's route, status and response size.
 *
 * Bytes are the UTF-8 size of each log event's message, as CloudWatch's `IncomingBytes` counts
 * them (uncompressed).
 */
import { App } from 'aws-cdk-lib';
import { SluiceStack } from '../lib/sluice-stack.js';

/** How the functions log: `text` is Lambda's default (system logs at INFO); `json` is this stack's. */
export type LogSetup = 'text' | 'json';
export const LOG_SETUPS: readonly LogSetup[] = ['text', 'json'];

/** Bytes of CloudWatch Logs ingestion, by setup. */
export type LogBytes = Record<LogSetup, number>;
export const noLogBytes = (): LogBytes => ({ text: 0, json: 0 });

/** Lambda request ids are UUIDs: every platform line carries one. */
const REQUEST_ID = '8f507cfc-2b1e-4697-b07a-ac58fc914c95';
/** A warm Node 22 function's peak memory (three digits, as most REPORT lines show). */
const MAX_MEMORY_USED_MB = 118;

/**
 * Lambda's platform lines for one invocation of `ms` at `memoryMb`, in the text format (the
 * Lambda Developer Guide's "Using CloudWatch Logs with Lambda" shows them); none in the JSON
 * format at system log level WARN. A cold start's REPORT also has `Init Duration`: left out,
 * the rows are warm.
 *
 * @example
 * ```ts
 * platformLines('text', 12.3, 1024); // ['START RequestId: … Version: $LATEST\n', 'END …', 'REPORT …']
 * platformLines('json', 12.3, 1024); // []
 * ```
 */
export function platformLines(setup: LogSetup, ms: number, memoryMb: number): string[] {
  if (setup === 'json') return [];
  return [
    `START RequestId: ${REQUEST_ID} Version: $LATEST\n`,
    `END RequestId: ${REQUEST_ID}\n`,
    `REPORT RequestId: ${REQUEST_ID}\tDuration: ${ms.toFixed(2)} ms\tBilled Duration: ${Math.max(1, Math.ceil(ms))} ms\t` +
      `Memory Size: ${memoryMb} MB\tMax Memory Used: ${MAX_MEMORY_USED_MB} MB\t\n`,
  ];
}

/** UTF-8 bytes of some log lines. */
export const bytesOf = (lines: readonly string[]): number => lines.reduce((n, l) => n + Buffer.byteLength(l), 0);

let format: string | undefined;
/**
 * The HTTP API stage's access log format, from the default stack as `cdk synth` builds it (no
 * bundling: only the template is read). Synthesized once per process, ~2 s.
 */
export function accessLogFormat(): string {
  if (format !== undefined) return format;
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SluiceStack(app, 'SluiceLogBytes', { env: { account: '111122223333', region: 'us-east-1' } });
  const template = app.synth().getStackArtifact(stack.artifactId).template as { Resources: unknown };
  const resources = template.Resources as Record<
    string,
    { Type: string; Properties: { StageName?: string; AccessLogSettings?: { Format?: string } } }
  >;
  const stage = Object.values(resources).find(
    (r) => r.Type === 'AWS::ApiGatewayV2::Stage' && r.Properties.StageName === '$default',
  );
  const f = stage?.Properties.AccessLogSettings?.Format;
  if (!f) throw new Error('log bytes: the HTTP API stage has no access log format');
  format = f;
  return f;
}

/**
 * Example values of the `$context` variables, as API Gateway fills them for an IAM-signed call
 * (an assumed role's ARN is what callers on EC2, ECS or Lambda present). Variables with no value
 * are logged as `-`.
 */
const EXAMPLE_CONTEXT: Record<string, string> = {
  requestId: 'cRd5zh2KoAMEbHg=',
  requestTime: '03/Dec/2026:08:22:14 +0000',
  'identity.sourceIp': '203.0.113.27',
  'identity.userArn': 'arn:aws:sts::111122223333:assumed-role/orders-worker/i-0b22a22eec53b9321',
  'authorizer.claims.sub': '5f3a4b2c-9d8e-4f01-a2b3-c4d5e6f70819',
  'authorizer.principal': 'orders-worker',
};

/** One request as its access log line shows it. */
export interface AccessLogRequest {
  method: string;
  /** The route's path template, e.g. `/api/v1/push`. */
  route: string;
  status: number;
  responseBytes: number;
  latencyMs: number;
}

/**
 * The access log line API Gateway writes for `r`, in `format` (a JSON template of `$context`
 * variables).
 *
 * @example
 * ```ts
 * accessLogLine(accessLogFormat(), { method: 'POST', route: '/api/v1/push', status: 201, responseBytes: 120, latencyMs: 18 });
 * // '{"requestId":"cRd5zh2KoAMEbHg=","time":"03/Dec/2026:08:22:14 +0000",…}\n'
 * ```
 */
export function accessLogLine(format: string, r: AccessLogRequest): string {
  const values: Record<string, string> = {
    ...EXAMPLE_CONTEXT,
    httpMethod: r.method,
    path: r.route.replace(/\{[^}]+\}/g, 'orders'),
    routeKey: `${r.method} ${r.route}`,
    status: String(r.status),
    responseLength: String(r.responseBytes),
    responseLatency: String(Math.round(r.latencyMs)),
  };
  const template = JSON.parse(format) as Record<string, string>;
  const line = Object.fromEntries(
    Object.entries(template).map(([k, v]) => [
      k,
      v.replace(/\$context\.([\w.]+)/g, (_, name: string) => values[name] ?? '-'),
    ]),
  );
  return `${JSON.stringify(line)}\n`;
}

/**
 * Runs `fn` with stdout and stderr captured (not printed): what the code logged, chunk by chunk.
 * Powertools writes each log line and EMF line in one write.
 */
export async function captureOutput<T>(fn: () => Promise<T>): Promise<{ out: T; lines: string[] }> {
  const lines: string[] = [];
  const streams = [process.stdout, process.stderr] as const;
  // Kept and put back as they are: bound would differ from what the streams had.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const writes = streams.map((s) => s.write);
  const tap = (chunk: string | Uint8Array): boolean => {
    lines.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  };
  for (const s of streams) s.write = tap;
  try {
    const out = await fn();
    // Node's own warnings (the SDK's Node 20 notice) are this machine's, not Lambda's.
    return { out, lines: lines.filter((l) => !/^\(node:\d+\)/.test(l)) };
  } finally {
    streams.forEach((s, i) => (s.write = writes[i]!));
  }
}
