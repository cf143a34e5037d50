/**
 * The caller policies grant exactly the route table: for every deployed route, with sample
 * parameter values (plain ones, and ones that spell a method or a route's literal word, since
 * IAM's `*` crosses `/`), `execute-api:Invoke` on its ARN is allowed by a role's resolved
 * policy iff one of the route's actions is the role's, or the route is public. The policies are
 * prefixes, not one ARN per route, so this is what shows a prefix grants nothing extra.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { RouteDef } from '../../server/http/route.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { globsOverlap, invokeResources } from '../../lib/api-access.js';
import {
  callerPolicies,
  deployedRoute,
  ROLES,
  routeIsFor,
  samplePath,
  type CallerPolicies,
} from '../support/api-policies.js';
import { synthStack } from '../support/cdk.js';
import { isAllowed, type PolicyDocument } from '../support/iam/evaluate.js';

const PLAIN: Record<string, string> = {
  queue: 'orders',
  partition: 'eu',
  group: 'billing',
  partitionId: '0193f1a2-7b3c-7def-8123-456789abcdef',
  transactionId: 'tx-1',
  leaseId: 'lease-1',
  offset: '42',
  name: 'checkout',
};
/** Parameter values that try to look like another route's part (a method, a literal segment). */
const TRICKY = ['GET', 'POST', 'seek', 'redrive', 'ack', 'configure', 'dead-letters'];

let policies: CallerPolicies;
beforeAll(() => {
  policies = callerPolicies(synthStack(), { account: '111122223333', region: 'eu-west-1', partition: 'aws' });
});

const cases = (route: RouteDef): string[] => [
  samplePath(route, (p) => PLAIN[p] ?? `${p}-1`),
  ...TRICKY.map((word) => samplePath(route, () => word)),
];

describe('caller policies: Producer, Consumer and Admin against the route table', () => {
  it('every route, with sample parameters, is allowed exactly to the roles its actions name', () => {
    const wrong: string[] = [];
    for (const route of ALL_ROUTES)
      for (const path of cases(route))
        for (const role of ROLES) {
          const allowed = policies.allows(role, route.method, path);
          if (allowed !== routeIsFor(role, route))
            wrong.push(
              `${role} ${allowed ? 'may' : 'may not'} ${route.method} ${path} (${route.method} ${route.path})`,
            );
        }
    expect(wrong).toEqual([]);
  });

  it('the sample paths reach the route they were made from (so the proof covers every route)', () => {
    for (const route of ALL_ROUTES)
      expect(
        deployedRoute(
          route.method,
          samplePath(route, (p) => PLAIN[p] ?? `${p}-1`),
        ),
      ).toBe(route);
  });

  it('Admin is the whole API; Producer and Consumer are prefixes, a few ARNs rather than one per route', () => {
    expect(invokeResources('Admin', ALL_ROUTES)).toEqual({ allow: ['*/*'], deny: [] });
    const consumer = invokeResources('Consumer', ALL_ROUTES);
    expect(consumer.allow).toContain('$default/GET/*');
    // POST under /api/v1/queues/ mixes consume routes (poll, ack) with manage ones (seek, redrive).
    expect(consumer.allow).not.toContain('$default/POST/api/v1/queues/*');
    expect(consumer.allow.length).toBeLessThan(ALL_ROUTES.filter((r) => routeIsFor('Consumer', r)).length);
    // Today's table needs no Deny: every role's routes are told apart by their patterns alone.
    for (const role of ROLES) expect(invokeResources(role, ALL_ROUTES).deny).toEqual([]);
  });

  it('a route added later is covered: a manage route under consume ones narrows the prefix and is denied', () => {
    const base = ALL_ROUTES.find((r) => r.method === 'GET')!;
    const secret: RouteDef = { ...base, path: '/api/v1/status/queues/{queue}/secrets', access: { action: 'manage' } };
    const { allow, deny } = invokeResources('Consumer', [...ALL_ROUTES, secret]);
    const api = 'arn:aws:execute-api:eu-west-1:111122223333:abc1234567';
    const doc: PolicyDocument = {
      Statement: [
        { Effect: 'Allow', Action: 'execute-api:Invoke', Resource: allow.map((r) => `${api}/${r}`) },
        ...(deny.length
          ? [{ Effect: 'Deny' as const, Action: 'execute-api:Invoke', Resource: deny.map((r) => `${api}/${r}`) }]
          : []),
      ],
    };
    const allows = (path: string): boolean =>
      isAllowed([doc], { action: 'execute-api:Invoke', resource: `${api}/$default/GET${path}` });
    expect(allow).not.toContain('$default/GET/*');
    expect(allows('/api/v1/status/queues/orders/secrets')).toBe(false);
    expect(allows('/api/v1/status/queues/orders')).toBe(true);
    expect(allows('/api/v1/queues/orders')).toBe(true);
    expect(allows('/api/v1/pop/queue/orders')).toBe(true);
  });

  it('a route table IAM patterns cannot express stops the synth', () => {
    const base = ALL_ROUTES.find((r) => r.method === 'GET')!;
    const routes: RouteDef[] = [
      { ...base, path: '/x/{a}/y', access: { action: 'manage' } },
      { ...base, path: '/x/{a}', access: { action: 'consume' } },
      { ...base, path: '/x/{a}/{b}/y', access: { action: 'consume' } },
    ];
    expect(() => invokeResources('Consumer', routes)).toThrow(/cannot allow GET \/x\/\*\/\*\/y/);
  });
});

describe('globsOverlap: two IAM-style patterns (* crosses /) match a common string', () => {
  it.each([
    ['POST/api/v1/queues/*', 'POST/api/v1/queues/*/partitions/*/groups/*/seek', true],
    ['POST/api/v1/ack', 'POST/api/v1/ack/*', false],
    ['POST/api/v1/ack/*', 'POST/api/v1/ack/batch', true],
    ['GET/*', 'POST/api/v1/push', false],
    ['*/GET/*', '$default/POST/api/v1/queues/*/seek', true],
    ['POST/a/*/poll', 'POST/a/*/seek', false],
    ['a*b', '*c', false],
    ['a*', '*b', true],
  ])('%s ∩ %s: %s', (a, b, expected) => {
    expect(globsOverlap(a, b)).toBe(expected);
    expect(globsOverlap(b, a)).toBe(expected);
  });
});
