/**
 * The CDK app: `npx cdk synth`, `npx cdk deploy`, `npm run deploy:local`.
 *
 * Context (`-c key=value`), read by `stackOptionsFromContext` (lib/context.ts):
 * - `stackName` (default `Sluice`)
 * - `grantsFile`: a grants JSON file (docs/DEPLOYING.md#grants); default: every authenticated caller
 * - `auth`: `iam` (default), `jwt` (with `jwtIssuer` and `jwtAudience`, comma-separated) or
 *   `tokens` (bearer tokens stored in the deployment, checked by a Lambda authorizer)
 * - `removalPolicy`: `retain` (default) or `destroy` (tables, bucket and logs go with the stack)
 * - `memorySize` (MB, default 1024), `logRetentionDays` (default 30)
 * - `alarmEmail`, `alarmTopicArn`: who the alarms notify (default nobody)
 * - `kmsKeyArn`, or `kmsKey=create`: the key sealing `encryptionEnabled` queues
 * - `throttleRps`, `throttleBurst` (default 1000, 500), `maxBodyBytes` (default 1000000),
 *   `maxPushItems` (default 1000): request limits
 * - `maintenanceReservedConcurrency`: none by default (a new account's quota has no room)
 *
 * docs/DEPLOYING.md explains each one.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stackOptionsFromContext } from '../lib/context.js';
import { SluiceStack } from '../lib/sluice-stack.js';

const app = new App();
const ctx = (key: string): string | undefined => {
  const v: unknown = app.node.tryGetContext(key);
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- cdk.json may give an array (jwtAudience): String() joins it into the comma list read here
  return v === undefined || v === null || v === '' ? undefined : String(v);
};

const { stackName, props } = stackOptionsFromContext(ctx);
new SluiceStack(app, stackName, {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: 'Sluice: a serverless message queue (HTTP API, Lambda, DynamoDB, S3)',
  ...props,
});
// AwsSolutions best-practice checks: a finding without a recorded reason fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
