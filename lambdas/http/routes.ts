import { claimRoutes } from './handlers/claims.js';
import { healthRoutes } from './handlers/health.js';
import { leaseConsumerGroupRoutes } from './handlers/lease-consumer-groups.js';
import { leaseDeadLetterRoutes } from './handlers/lease-dead-letters.js';
import { leaseRoutes } from './handlers/leases.js';
import { messageRoutes } from './handlers/messages.js';
import { queueRoutes } from './handlers/queues.js';
import type { FunctionGroup, RouteDef } from './route.js';

/** Every HTTP route Sluice serves. The local server mounts them all; each Lambda its group. */
export const ALL_ROUTES: RouteDef[] = [
  ...queueRoutes,
  ...messageRoutes,
  ...healthRoutes,
  ...claimRoutes,
  ...leaseRoutes,
  ...leaseDeadLetterRoutes,
  ...leaseConsumerGroupRoutes,
];

export const routesOf = (group: FunctionGroup): RouteDef[] => ALL_ROUTES.filter((r) => r.group === group);
