/**
 * The offline IAM evaluator (`test/support/iam/evaluate.ts`) against the evaluation rules and
 * examples of AWS's IAM User Guide: "Policy evaluation logic", "IAM JSON policy elements:
 * Resource" (wildcards in ARNs), "Condition operators" and "Conditions with multiple context
 * keys or values". Every IAM proof in the suite rests on these.
 */
import { describe, expect, it } from 'vitest';
import { evaluate, isAllowed, resourceMatches, type PolicyDocument } from '../support/iam/evaluate.js';

const allow = (s: object): PolicyDocument => ({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', ...s }] });

describe('iam evaluator: decisions', () => {
  it('denies by default, allows on a matching Allow, and an explicit Deny overrides any Allow', () => {
    const read = allow({ Action: 's3:GetObject', Resource: 'arn:aws:s3:::amzn-s3-demo-bucket/*' });
    const req = { action: 's3:GetObject', resource: 'arn:aws:s3:::amzn-s3-demo-bucket/a.txt' };
    expect(evaluate([], req).decision).toBe('implicitDeny');
    expect(evaluate([read], req).decision).toBe('allow');
    const deny: PolicyDocument = { Statement: { Effect: 'Deny', Action: 's3:*', Resource: '*' } };
    expect(evaluate([read, deny], req).decision).toBe('explicitDeny');
  });

  it('matches actions case-insensitively with wildcards, and NotAction as its complement', () => {
    const p = allow({ Action: ['dynamodb:Get*', 'S3:LIST?ucket'], Resource: '*' });
    expect(isAllowed([p], { action: 'dynamodb:GetItem', resource: 'x' })).toBe(true);
    expect(isAllowed([p], { action: 's3:ListBucket', resource: 'x' })).toBe(true);
    expect(isAllowed([p], { action: 'dynamodb:UpdateItem', resource: 'x' })).toBe(false);
    // The guide's "deny everything but IAM" example: Deny with NotAction iam:*.
    const notIam: PolicyDocument = { Statement: [{ Effect: 'Deny', NotAction: 'iam:*', Resource: '*' }] };
    const all = allow({ Action: '*', Resource: '*' });
    expect(evaluate([all, notIam], { action: 'iam:ListUsers', resource: '*' }).decision).toBe('allow');
    expect(evaluate([all, notIam], { action: 'ec2:RunInstances', resource: '*' }).decision).toBe('explicitDeny');
  });

  it('NotResource allows everything but the named resources', () => {
    const p = allow({ Action: 's3:*', NotResource: 'arn:aws:s3:::secret/*' });
    expect(isAllowed([p], { action: 's3:GetObject', resource: 'arn:aws:s3:::public/a' })).toBe(true);
    expect(isAllowed([p], { action: 's3:GetObject', resource: 'arn:aws:s3:::secret/a' })).toBe(false);
  });

  it('refuses what it cannot evaluate rather than guessing', () => {
    const variable = allow({ Action: 's3:*', Resource: 'arn:aws:s3:::b/${aws:username}/*' });
    expect(() => evaluate([variable], { action: 's3:GetObject', resource: 'arn:aws:s3:::b/x' })).toThrow(/variables/);
    const date = allow({ Action: 's3:*', Resource: '*', Condition: { DateLessThan: { 'aws:CurrentTime': 'x' } } });
    expect(() => evaluate([date], { action: 's3:GetObject', resource: '*' })).toThrow(/DateLessThan/);
  });
});

describe('iam evaluator: resources (wildcards in ARNs)', () => {
  it('the guide examples: a path prefix, every object of a bucket, slashes crossed by *', () => {
    expect(
      resourceMatches('arn:aws:iam::123456789012:user/accounting/*', 'arn:aws:iam::123456789012:user/accounting/bob'),
    ).toBe(true);
    expect(
      resourceMatches('arn:aws:iam::123456789012:user/accounting/*', 'arn:aws:iam::123456789012:user/eng/bob'),
    ).toBe(false);
    expect(resourceMatches('arn:aws:s3:::amzn-s3-demo-bucket/*', 'arn:aws:s3:::amzn-s3-demo-bucket/a/b/c.txt')).toBe(
      true,
    );
    expect(resourceMatches('arn:aws:s3:::amzn-s3-demo-bucket/*', 'arn:aws:s3:::amzn-s3-demo-bucket')).toBe(false);
    expect(
      resourceMatches(
        'arn:aws:s3:::amzn-s3-demo-bucket/*/test/*',
        'arn:aws:s3:::amzn-s3-demo-bucket/1/test/object.jpg',
      ),
    ).toBe(true);
  });

  it('a wildcard inside a segment stays in it; one that ends a segment may run past the colons', () => {
    const t = 'arn:aws:dynamodb:us-east-1:111122223333:table/t';
    expect(resourceMatches('arn:aws:dynamodb:us-*-1:111122223333:table/t', t)).toBe(true);
    expect(resourceMatches('arn:aws:dynamodb:u?-east-1:*:table/t', t)).toBe(true);
    expect(resourceMatches('arn:aws:dynamodb:*', t)).toBe(true);
    // `us-*1` must not swallow ":111122223333" (the * is inside its segment, not at its end).
    expect(resourceMatches('arn:aws:dynamodb:us-*3:table/t', t)).toBe(false);
    expect(resourceMatches('arn:aws:dynamodb:us-east-1:111122223333:table/t', t.toUpperCase())).toBe(false);
    expect(resourceMatches('*', t)).toBe(true);
  });

  it('execute-api ARNs: a stage and method wildcard, and * across the path', () => {
    const arn = 'arn:aws:execute-api:eu-west-1:111122223333:a1b2c3d4e5/$default/POST/api/v1/push';
    expect(resourceMatches('arn:aws:execute-api:eu-west-1:111122223333:a1b2c3d4e5/*/POST/api/v1/push', arn)).toBe(true);
    expect(resourceMatches('arn:aws:execute-api:eu-west-1:111122223333:a1b2c3d4e5/*/*', arn)).toBe(true);
    expect(resourceMatches('arn:aws:execute-api:eu-west-1:111122223333:a1b2c3d4e5/*/GET/*', arn)).toBe(false);
  });
});

describe('iam evaluator: conditions', () => {
  const s3List = (
    prefix: string[] | undefined,
  ): { action: string; resource: string; context: Record<string, string> } => ({
    action: 's3:ListBucket',
    resource: 'arn:aws:s3:::amzn-s3-demo-bucket',
    context: prefix ? { 's3:prefix': prefix[0]! } : {},
  });

  it('StringLike with several values ORs them; a key absent from the request fails the condition', () => {
    const p = allow({
      Action: 's3:ListBucket',
      Resource: 'arn:aws:s3:::amzn-s3-demo-bucket',
      Condition: { StringLike: { 's3:prefix': ['segments/*', 'dlq/*'] } },
    });
    expect(isAllowed([p], s3List(['dlq/x']))).toBe(true);
    expect(isAllowed([p], s3List(['other/x']))).toBe(false);
    expect(isAllowed([p], s3List(undefined))).toBe(false);
  });

  it('a negated operator NORs its values and is true when the key is absent', () => {
    const p = allow({
      Action: 's3:GetObject',
      Resource: '*',
      Condition: { StringNotEquals: { 'aws:PrincipalTag/department': ['finance', 'hr'] } },
    });
    const req = (dept?: string): object => ({
      action: 's3:GetObject',
      resource: '*',
      context: dept ? { 'aws:PrincipalTag/department': dept } : {},
    });
    expect(isAllowed([p], req('legal') as never)).toBe(true);
    expect(isAllowed([p], req('hr') as never)).toBe(false);
    expect(isAllowed([p], req() as never)).toBe(true);
  });

  it('operators and keys AND together; key names are case-insensitive', () => {
    const p = allow({
      Action: 'ec2:*',
      Resource: '*',
      Condition: {
        StringEquals: { 'aws:PrincipalTag/Team': 'a', 'ec2:InstanceType': 't3.micro' },
        Bool: { 'aws:SecureTransport': 'true' },
      },
    });
    const ctx = { 'aws:principaltag/team': 'a', 'ec2:InstanceType': 't3.micro', 'aws:SecureTransport': true };
    expect(isAllowed([p], { action: 'ec2:RunInstances', resource: '*', context: ctx })).toBe(true);
    expect(
      isAllowed([p], { action: 'ec2:RunInstances', resource: '*', context: { ...ctx, 'aws:SecureTransport': false } }),
    ).toBe(false);
  });

  it('…IfExists holds when the key is absent and is checked when present', () => {
    const p = allow({
      Action: 'ec2:RunInstances',
      Resource: '*',
      Condition: { StringLikeIfExists: { 'ec2:InstanceType': ['t1.*', 't2.*', 'm3.*'] } },
    });
    expect(isAllowed([p], { action: 'ec2:RunInstances', resource: '*' })).toBe(true);
    expect(
      isAllowed([p], { action: 'ec2:RunInstances', resource: '*', context: { 'ec2:InstanceType': 't2.micro' } }),
    ).toBe(true);
    expect(
      isAllowed([p], { action: 'ec2:RunInstances', resource: '*', context: { 'ec2:InstanceType': 'c5.large' } }),
    ).toBe(false);
  });

  it('Null tests presence', () => {
    const p = allow({ Action: 'sts:*', Resource: '*', Condition: { Null: { 'aws:TokenIssueTime': 'true' } } });
    expect(isAllowed([p], { action: 'sts:GetCallerIdentity', resource: '*' })).toBe(true);
    expect(
      isAllowed([p], { action: 'sts:GetCallerIdentity', resource: '*', context: { 'aws:TokenIssueTime': 'x' } }),
    ).toBe(false);
  });

  it('ForAllValues: every request value in the set (and true when the key is absent); ForAnyValue: at least one', () => {
    const tags = (op: string): PolicyDocument =>
      allow({
        Action: 'ec2:CreateTags',
        Resource: '*',
        Condition: { [op]: { 'aws:TagKeys': ['environment', 'cost-center'] } },
      });
    const req = (keys?: string[]): { action: string; resource: string; context: Record<string, string[]> } => ({
      action: 'ec2:CreateTags',
      resource: '*',
      context: keys ? { 'aws:TagKeys': keys } : {},
    });
    expect(isAllowed([tags('ForAllValues:StringEquals')], req(['environment']))).toBe(true);
    expect(isAllowed([tags('ForAllValues:StringEquals')], req(['environment', 'dept']))).toBe(false);
    expect(isAllowed([tags('ForAllValues:StringEquals')], req())).toBe(true);
    expect(isAllowed([tags('ForAnyValue:StringEquals')], req(['dept', 'cost-center']))).toBe(true);
    expect(isAllowed([tags('ForAnyValue:StringEquals')], req(['dept']))).toBe(false);
    expect(isAllowed([tags('ForAnyValue:StringEquals')], req())).toBe(false);
  });

  it('DynamoDB fine-grained access: ForAllValues:StringLike on dynamodb:LeadingKeys', () => {
    const p = allow({
      Action: 'dynamodb:UpdateItem',
      Resource: 'arn:aws:dynamodb:eu-west-1:111122223333:table/log',
      Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['SEQ#*'] } },
    });
    const req = (pk: string): object => ({
      action: 'dynamodb:UpdateItem',
      resource: 'arn:aws:dynamodb:eu-west-1:111122223333:table/log',
      context: { 'dynamodb:LeadingKeys': [pk] },
    });
    expect(isAllowed([p], req('SEQ#p1') as never)).toBe(true);
    expect(isAllowed([p], req('SEG#p1') as never)).toBe(false);
  });
});
