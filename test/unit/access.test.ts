import { describe, expect, it } from 'vitest';
import { Grants } from '../../server/http/grants.js';
import { seesGroupsOn, seesMetricsOf, type Allowed } from '../../server/http/access.js';

const allowedFor =
  (grants: Grants, principal: string): Allowed =>
  (queue, action = 'consume') =>
    action === 'public' || grants.allows(principal, action, queue);

describe('access rules for what a caller may see of queues it did not name', () => {
  const grants = Grants.from({
    grants: [
      { principal: 'reader', actions: ['consume'], queues: ['orders-*'] },
      { principal: 'ops', actions: ['manage'], queues: ['orders-*'] },
      { principal: 'producer', actions: ['push'], queues: ['*'] },
    ],
  });

  it('groups on a queue: visible to who may consume or manage it', () => {
    expect(seesGroupsOn(allowedFor(grants, 'reader'))('orders-a')).toBe(true);
    expect(seesGroupsOn(allowedFor(grants, 'ops'))('orders-a')).toBe(true);
    expect(seesGroupsOn(allowedFor(grants, 'reader'))('payroll')).toBe(false);
    expect(seesGroupsOn(allowedFor(grants, 'producer'))('orders-a')).toBe(false);
  });

  it('metrics labelled by queue or group: public on the open server, manage with grants', () => {
    expect(seesMetricsOf(allowedFor(Grants.open(), 'anonymous'))('anything')).toBe(true);
    expect(seesMetricsOf(allowedFor(grants, 'ops'))('orders-a')).toBe(true);
    expect(seesMetricsOf(allowedFor(grants, 'reader'))('orders-a')).toBe(false);
    expect(seesMetricsOf(allowedFor(grants, 'anonymous'))('orders-a')).toBe(false);
  });
});
