// Options that make a deployment work on a fresh account and reachable by its operators
// (issue 14): concurrency reservations, payload keys, alarm notifications, request limits,
// bearer-token auth. Each is checked on the synthesized template, default and opted in.
import { Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { FUNCTIONS, type FunctionName } from '../../lib/access.js';
import { resourcesOf, synthStack } from '../support/cdk.js';

type Synth = ReturnType<typeof synthStack>;
const logicalId = (c: IConstruct): string => Stack.of(c).getLogicalId(c.node.defaultChild as never);
/** A function's properties in the template. */
const fnProps = ({ stack, template }: Synth, name: FunctionName) =>
  resourcesOf(template, 'AWS::Lambda::Function')[logicalId(stack.service.functions[name])]!.Properties;

describe('cdk: maintenance concurrency', () => {
  it('reserves no concurrency anywhere by default (a fresh account refuses any reservation)', () => {
    const { template } = synthStack();
    for (const [id, f] of Object.entries(resourcesOf(template, 'AWS::Lambda::Function')))
      expect(f.Properties['ReservedConcurrentExecutions'], id).toBeUndefined();
  });

  it('reserves executions for maintenance only when asked, and only there', () => {
    const reserved = synthStack({ maintenanceReservedConcurrency: 2 }, 'Reserved');
    expect(fnProps(reserved, 'maintenance')['ReservedConcurrentExecutions']).toBe(2);
    for (const f of FUNCTIONS.filter((n) => n !== 'maintenance'))
      expect(fnProps(reserved, f)['ReservedConcurrentExecutions'], f).toBeUndefined();
    expect(() => synthStack({ maintenanceReservedConcurrency: 0 }, 'ReservedZero')).toThrow(
      /maintenanceReservedConcurrency must be a whole number from 1 to 10 \(got 0\)/,
    );
  });
});
