import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { SluiceService, type SluiceServiceProps } from './sluice-service.js';

export type SluiceStackProps = StackProps & SluiceServiceProps;

/** Stack output keys (`cdk-outputs.json` and `aws cloudformation describe-stacks` use them). */
export const OUTPUTS = {
  apiUrl: 'ApiUrl',
  authMode: 'AuthMode',
  producerPolicy: 'ProducerPolicyArn',
  consumerPolicy: 'ConsumerPolicyArn',
  adminPolicy: 'AdminPolicyArn',
  dashboard: 'DashboardName',
  grants: 'Grants',
  payloadKey: 'PayloadKeyArn',
  alarmTopic: 'AlarmTopicArn',
  tokenTable: 'TokenTableName',
} as const;

/**
 * The deployable stack: one {@link SluiceService} and its outputs — the API URL, the IAM
 * policies to attach to callers (IAM auth), the dashboard and the grants in force.
 */
export class SluiceStack extends Stack {
  readonly service: SluiceService;

  constructor(scope: Construct, id: string, props: SluiceStackProps = {}) {
    super(scope, id, props);
    this.service = new SluiceService(this, 'Sluice', props);

    new CfnOutput(this, OUTPUTS.apiUrl, {
      value: this.service.apiUrl,
      description: 'Base URL of the Sluice API (clients append /api/v1/...)',
    });
    new CfnOutput(this, OUTPUTS.authMode, {
      value: props.auth?.type ?? 'iam',
      description: 'How callers authenticate: iam (SigV4), jwt or tokens (both Authorization: Bearer)',
    });
    if (props.auth?.type === 'tokens')
      new CfnOutput(this, OUTPUTS.tokenTable, {
        value: this.service.tables.meta.tableName,
        description: 'DynamoDB table holding the bearer tokens (sluice token create|list|revoke)',
      });
    const { Producer, Consumer, Admin } = this.service.policies;
    if (Producer)
      new CfnOutput(this, OUTPUTS.producerPolicy, {
        value: Producer.managedPolicyArn,
        description: 'Attach to roles that push',
      });
    if (Consumer)
      new CfnOutput(this, OUTPUTS.consumerPolicy, {
        value: Consumer.managedPolicyArn,
        description: 'Attach to roles that pop, ack, claim and read',
      });
    if (Admin)
      new CfnOutput(this, OUTPUTS.adminPolicy, {
        value: Admin.managedPolicyArn,
        description: 'Attach to roles that configure and manage queues and groups (and push and consume)',
      });
    new CfnOutput(this, OUTPUTS.dashboard, {
      value: this.service.dashboard.dashboardName,
      description: 'CloudWatch dashboard',
    });
    if (this.service.payloadKey)
      new CfnOutput(this, OUTPUTS.payloadKey, {
        value: this.service.payloadKey.keyArn,
        description: 'KMS key sealing payloads of queues with encryptionEnabled',
      });
    if (this.service.alarmTopic)
      new CfnOutput(this, OUTPUTS.alarmTopic, {
        value: this.service.alarmTopic.topicArn,
        description: 'SNS topic the alarms notify',
      });
    const summary = (props.grants ?? [])
      .map((g) => `${g.principal}: ${g.actions.join('+')} on ${g.queues.join(', ')}`)
      .join('; ');
    const grants = props.grants
      ? summary.length > 1000
        ? `${summary.slice(0, 999)}…`
        : summary || 'none: only /health'
      : 'default: every authenticated caller may do everything (IAM policies decide)';
    new CfnOutput(this, OUTPUTS.grants, {
      value: grants,
      description: 'Per-queue grants in force (docs/DEPLOYING.md#grants)',
    });
  }
}
