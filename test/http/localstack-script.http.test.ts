/**
 * `npm run test:localstack` itself — the npm script, `vitest.localstack.config.ts` and
 * `test/localstack/api.localstack.ts` — run as a user runs it, pointed with SLUICE_BASE_URL at
 * `npm start` on the AWS backend (DynamoDB Local + S3 on moto_server) instead of a LocalStack
 * deployment. CI has no Docker, so this is how the script's plumbing stays tested; endpoint
 * discovery from stack outputs is covered by test/cdk/outputs.test.ts.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBucket, ensureTables } from '../../server/storage/aws/index.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { emulatorClients, emulatorEnv } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { startServerProcess, type ServerProcess } from '../support/process.js';

let server: ServerProcess;
/** Smaller than the defaults, so the over-the-limit cases stay quick; the script is told them. */
const LIMITS = { SLUICE_MAX_BODY_BYTES: String(64 * 1024), SLUICE_MAX_MESSAGE_BYTES: String(8 * 1024) };

beforeAll(async () => {
  const endpoints = awsEndpoints();
  const suffix = randomBytes(4).toString('hex');
  const tables = Object.fromEntries(TABLES.map((t) => [t, `ls-${suffix}-${t}`])) as Record<TableName, string>;
  const bucket = `ls-${suffix}`;
  const { dynamodb, s3 } = emulatorClients(endpoints);
  await Promise.all([ensureTables(dynamodb, tables), ensureBucket(s3, bucket)]);
  dynamodb.destroy();
  s3.destroy();
  const env: Record<string, string> = {
    ...emulatorEnv(endpoints),
    SLUICE_BUCKET: bucket,
  };
  for (const t of TABLES) env[`SLUICE_TABLE_${t.toUpperCase()}`] = tables[t];
  server = await startServerProcess({ ...env, ...LIMITS });
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

/** Runs an npm script with `env` on top of a copy of this environment minus vitest's own markers. */
function npmRun(
  script: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'SLUICE_TEST_JSON'),
  );
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', script, '--', ...args], {
      env: { ...base, ...env, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`npm run ${script} did not finish within ${timeoutMs} ms:\n${output.slice(-4000)}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('npm run test:localstack (the script CI does not call)', () => {
  it('runs the black-box suites against the base URL it is given, and passes', async () => {
    const r = await npmRun(
      'test:localstack',
      ['--reporter=verbose'],
      {
        SLUICE_BASE_URL: `${server.url}/`,
        SLUICE_AUTH: 'none',
        ...LIMITS,
        SLUICE_TEST_PREFIX: `lsx${randomBytes(2).toString('hex')}-`,
      },
      240_000,
    );
    expect(r.code, `npm run test:localstack failed:\n${r.output.slice(-4000)}`).toBe(0);
    expect(r.output).toContain(`deployed API: SLUICE_BASE_URL=${server.url}`);
    expect(r.output).toMatch(/Test Files\s+1 passed \(1\)/);
    const passed = /Tests\s+(\d+) passed/.exec(r.output);
    expect(Number(passed?.[1])).toBeGreaterThanOrEqual(10);
  }, 300_000);
});
