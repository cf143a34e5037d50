/**
 * The CDK app: `npx cdk synth`, `npx cdk deploy`, `npm run deploy:local`.
 *
 * Context (`-c key=value`):
 * - `stackName` (default `Sluice`)
 * - `grantsFile`: a grants JSON file (docs/DEPLOYING.md#grants); default: every authenticated caller
 * - `auth`: `iam` (default) or `jwt`, with `jwtIssuer` and `jwtAudience` (comma-separated)
 * - `removalPolicy`: `retain` (default) or `destroy` (tables, bucket and logs go with the stack)
 * - `memorySize` (MB, default 1024), `logRetentionDays` (default 30)
 */
import { App, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { readGrantsFile } from '../lambdas/http/grants.js';
import { SluiceStack, type SluiceStackProps } from '../lib/sluice-stack.js';

const app = new App();
const ctx = (key: string): string | undefined => {
  const v: unknown = app.node.tryGetContext(key);
  return v === undefined || v === null || v === '' ? undefined : String(v);
};

function props(): SluiceStackProps {
  const p: SluiceStackProps = {
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
    description: 'Sluice: a serverless message queue (HTTP API, Lambda, DynamoDB, S3)',
  };
  const grantsFile = ctx('grantsFile');
  if (grantsFile) p.grants = readGrantsFile(grantsFile).grants;
  const auth = ctx('auth') ?? 'iam';
  if (auth === 'jwt') {
    const issuer = ctx('jwtIssuer');
    const audience = ctx('jwtAudience')?.split(',').map((s) => s.trim()).filter(Boolean) ?? [];
    if (!issuer || audience.length === 0) throw new Error('auth=jwt needs -c jwtIssuer=https://... and -c jwtAudience=aud1[,aud2]');
    p.auth = { type: 'jwt', issuer, audience };
  } else if (auth !== 'iam') {
    throw new Error(`auth must be iam or jwt (got ${auth})`);
  }
  const removal = ctx('removalPolicy') ?? 'retain';
  if (removal !== 'retain' && removal !== 'destroy') throw new Error(`removalPolicy must be retain or destroy (got ${removal})`);
  p.removalPolicy = removal === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
  const memory = ctx('memorySize');
  if (memory) p.memorySize = Number(memory);
  const days = ctx('logRetentionDays');
  if (days) {
    const retention = Object.values(RetentionDays).find((v) => v === Number(days));
    if (retention === undefined) throw new Error(`logRetentionDays must be one CloudWatch accepts (1, 3, 5, 7, 14, 30, 60, 90, ...); got ${days}`);
    p.logRetention = retention as RetentionDays;
  }
  return p;
}

new SluiceStack(app, ctx('stackName') ?? 'Sluice', props());
// AwsSolutions best-practice checks: a finding without a recorded reason fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
