/**
 * The account setting API Gateway needs before a REST or WebSocket stage may log: the IAM role
 * it writes to CloudWatch Logs with (`AWS::ApiGateway::Account`). Without it, creating a stage
 * with access or execution logs fails ("CloudWatch Logs role ARN must be set in account settings
 * to enable logging") and the stack rolls back; HTTP APIs do not need it. It is one setting per
 * account and region, which every stack that sets it overwrites (CloudFormation User Guide,
 * `AWS::ApiGateway::Account`: "only have one … per region per account"; and deleting the stack
 * leaves the setting in place).
 *
 * So the role is kept when the stack is deleted: the setting may point at it after that, and
 * deleting it would break the logging of every REST and WebSocket API in the account. A second
 * Sluice stack in the account sets the account to its own role, which has the same single AWS
 * managed policy, so the first stack's stage keeps logging. An account whose setting someone
 * else manages passes `apiGatewayCloudWatchRole: false`: the stack then leaves it alone, and
 * its stage relies on it (docs/DEPLOYING.md, Prerequisites).
 *
 * @example
 * ```ts
 * const setting = ApiGatewayCloudWatchRole.of(this);   // one per stack
 * stage.node.addDependency(setting.account);
 * ```
 */
import { RemovalPolicy, Stack, Validations, type CfnResource } from 'aws-cdk-lib';
import { CfnAccount } from 'aws-cdk-lib/aws-apigateway';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct, type IConstruct } from 'constructs';
import { NAG_REASONS } from './nag.js';

/** The AWS managed policy API Gateway's logging role holds (API Gateway Developer Guide, "Set up CloudWatch logging"). */
export const PUSH_TO_CLOUDWATCH_POLICY = 'service-role/AmazonAPIGatewayPushToCloudWatchLogs';

/**
 * Metadata on a logging stage that relies on the account's own setting (no
 * `AWS::ApiGateway::Account` in the stack): what test/support/aws-limits.ts accepts instead of
 * a dependency on one.
 */
export const ACCOUNT_ROLE_ASSUMED_METADATA = 'sluice:apiGatewayCloudWatchRole';

export class ApiGatewayCloudWatchRole extends Construct {
  readonly role: iam.Role;
  readonly account: CfnAccount;

  /** The stack's one setting, created on first use: two Sluice constructs in a stack share it. */
  static of(scope: IConstruct): ApiGatewayCloudWatchRole {
    const stack = Stack.of(scope);
    const id = 'ApiGatewayCloudWatchRole';
    return (
      (stack.node.tryFindChild(id) as ApiGatewayCloudWatchRole | undefined) ?? new ApiGatewayCloudWatchRole(stack, id)
    );
  }

  private constructor(scope: Construct, id: string) {
    super(scope, id);
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('apigateway.amazonaws.com'),
      description:
        'API Gateway: writes REST and WebSocket API logs to CloudWatch Logs (account setting; kept on stack deletion)',
      managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName(PUSH_TO_CLOUDWATCH_POLICY)],
    });
    this.role.applyRemovalPolicy(RemovalPolicy.RETAIN);
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${PUSH_TO_CLOUDWATCH_POLICY}]`,
      reason: NAG_REASONS.apiGatewayLogsRole,
    });
    this.account = new CfnAccount(this, 'Account', { cloudWatchRoleArn: this.role.roleArn });
    this.account.applyRemovalPolicy(RemovalPolicy.RETAIN);
  }
}

/**
 * Makes a logging REST or WebSocket `stage` wait for the account setting this stack makes, or,
 * with `create: false`, records that it relies on the account's own.
 */
export function requireCloudWatchRole(stage: IConstruct, create: boolean): void {
  if (create) stage.node.addDependency(ApiGatewayCloudWatchRole.of(stage).account);
  else
    (stage.node.defaultChild as CfnResource).addMetadata(
      ACCOUNT_ROLE_ASSUMED_METADATA,
      'the account sets its API Gateway CloudWatch role itself (apiGatewayCloudWatchRole=false)',
    );
}
