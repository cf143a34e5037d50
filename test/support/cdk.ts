import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { SluiceStack, type SluiceStackProps } from '../../lib/sluice-stack.js';
import type { Template as IamTemplate } from './iam/template.js';

/**
 * A synthesized Sluice stack for template assertions. Bundling is skipped (the bundle test
 * covers the bundles), which keeps a synth to about a second after aws-cdk-lib has loaded.
 */
export function synthStack(
  props: SluiceStackProps = {},
  id = 'Sluice',
): { app: App; stack: SluiceStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SluiceStack(app, id, { env: { account: '111122223333', region: 'eu-west-1' }, ...props });
  const template = Template.fromStack(stack);
  return { app, stack, template };
}

/** cdk-nag AwsSolutions findings left after the stack's acknowledgments. */
export function nagViolations(stack: SluiceStack): { rule: string; paths: string[] }[] {
  const report = new AwsSolutionsChecks().validateScope(stack);
  return report.violations.map((v) => ({
    rule: v.ruleName,
    paths: v.violatingResources.map((r) => r.constructPath ?? '?'),
  }));
}

type Json = Record<string, unknown>;

/** Resources of one type, by logical id. */
export function resourcesOf(template: Template, type: string): Record<string, Json & { Properties: Json }> {
  return template.findResources(type) as Record<string, Json & { Properties: Json }>;
}

/** The logical id a `{ "Fn::GetAtt": [id, "Arn"] }` or `{ "Ref": id }` points at. */
export function refId(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Json;
  if (Array.isArray(o['Fn::GetAtt'])) return String(o['Fn::GetAtt'][0]);
  if (typeof o['Ref'] === 'string') return o['Ref'];
  return undefined;
}

/**
 * A Sluice stack synthesized without an environment (bundling skipped), as CloudFormation gets
 * it: region, account and partition stay `AWS::…` references, so one synth can be resolved
 * for every region (`iam/template.ts`), e.g. to measure policies in the longest one.
 *
 * @example
 * ```ts
 * const raw = synthEnvAgnostic({ auth: { type: 'tokens' } });
 * resolveTemplate(raw, { account: '111122223333', region: 'us-gov-west-1', partition: 'aws-us-gov' });
 * ```
 */
export function synthEnvAgnostic(props: SluiceStackProps = {}, id = 'Sluice'): IamTemplate {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new SluiceStack(app, id, props);
  return Template.fromStack(stack).toJSON() as IamTemplate;
}
