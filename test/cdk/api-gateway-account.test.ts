/**
 * The account's API Gateway CloudWatch role (lib/api-gateway-account.ts), which the WebSocket
 * stage's access logs need: set by the stack and kept when it is deleted, one per stack, left
 * alone with `apiGatewayCloudWatchRole: false`, absent without the WebSocket API.
 */
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ACCOUNT_ROLE_ASSUMED_METADATA, PUSH_TO_CLOUDWATCH_POLICY } from '../../lib/api-gateway-account.js';
import { SluiceService } from '../../lib/sluice-service.js';
import { refId, resourcesOf, synthStack } from '../support/cdk.js';

const webSocketStages = (t: Template): Record<string, { DependsOn?: string[]; Metadata?: Record<string, unknown> }> => {
  const apis = resourcesOf(t, 'AWS::ApiGatewayV2::Api');
  type Stage = { Properties: { ApiId: unknown }; DependsOn?: string[]; Metadata?: Record<string, unknown> };
  return Object.fromEntries(
    Object.entries(t.findResources('AWS::ApiGatewayV2::Stage') as Record<string, Stage>).filter(
      ([, s]) => apis[refId(s.Properties.ApiId)!]?.Properties['ProtocolType'] === 'WEBSOCKET',
    ),
  );
};

describe("cdk: the account's API Gateway CloudWatch role", () => {
  it('the stack sets it to a role of its own, which API Gateway alone assumes, holding the AWS managed policy', () => {
    const { template } = synthStack();
    const accounts = template.findResources('AWS::ApiGateway::Account');
    expect(Object.keys(accounts)).toHaveLength(1);
    const [account] = Object.values(accounts) as {
      Properties: { CloudWatchRoleArn: unknown };
      DeletionPolicy: string;
    }[];
    const roleId = refId(account!.Properties.CloudWatchRoleArn)!;
    const role = resourcesOf(template, 'AWS::IAM::Role')[roleId]!;
    expect(JSON.stringify(role.Properties['ManagedPolicyArns'])).toContain(PUSH_TO_CLOUDWATCH_POLICY);
    expect(role.Properties['AssumeRolePolicyDocument']).toMatchObject({
      Statement: [{ Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'apigateway.amazonaws.com' } }],
    });
    expect(role.Properties['Policies']).toBeUndefined();
  });

  it('both are kept when the stack is deleted (the setting outlives it), whatever removalPolicy says', () => {
    for (const removalPolicy of [RemovalPolicy.RETAIN, RemovalPolicy.DESTROY]) {
      const { template } = synthStack({ removalPolicy }, `Removal${removalPolicy}`);
      const accounts = Object.values(template.findResources('AWS::ApiGateway::Account'));
      expect(accounts).toHaveLength(1);
      const account = accounts[0];
      expect(account).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
      const roleId = refId((account as { Properties: { CloudWatchRoleArn: unknown } }).Properties.CloudWatchRoleArn)!;
      expect((template.toJSON() as { Resources: Record<string, unknown> }).Resources[roleId]).toMatchObject({
        DeletionPolicy: 'Retain',
        UpdateReplacePolicy: 'Retain',
      });
    }
  });

  it('the WebSocket stage waits for it (CreateStage fails with logs and no role)', () => {
    const { template } = synthStack();
    const [accountId] = Object.keys(template.findResources('AWS::ApiGateway::Account'));
    const stages = Object.values(webSocketStages(template));
    expect(stages).toHaveLength(1);
    expect(stages[0]!.DependsOn).toContain(accountId);
  });

  it('two Sluice services in one stack share one setting', () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Two', {
      env: { account: '111122223333', region: 'eu-west-1' },
    });
    new SluiceService(stack, 'Staging');
    new SluiceService(stack, 'Prod');
    const t = Template.fromStack(stack);
    t.resourceCountIs('AWS::ApiGateway::Account', 1);
    const [accountId] = Object.keys(t.findResources('AWS::ApiGateway::Account'));
    for (const stage of Object.values(webSocketStages(t))) expect(stage.DependsOn).toContain(accountId);
  });

  it('apiGatewayCloudWatchRole: false leaves the setting alone; the stage says it relies on it', () => {
    const { template } = synthStack({ apiGatewayCloudWatchRole: false }, 'OwnRole');
    template.resourceCountIs('AWS::ApiGateway::Account', 0);
    expect(JSON.stringify(template.findResources('AWS::IAM::Role'))).not.toContain(PUSH_TO_CLOUDWATCH_POLICY);
    const stages = Object.values(webSocketStages(template));
    expect(stages[0]!.Metadata?.[ACCOUNT_ROLE_ASSUMED_METADATA]).toBeDefined();
  });

  it('without the WebSocket API (notifications: false) nothing needs it', () => {
    const { template } = synthStack({ notifications: false }, 'NoSocket');
    template.resourceCountIs('AWS::ApiGateway::Account', 0);
    expect(JSON.stringify(template.findResources('AWS::IAM::Role'))).not.toContain(PUSH_TO_CLOUDWATCH_POLICY);
  });
});
