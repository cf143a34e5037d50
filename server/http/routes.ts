import { ackAndPopRoutes } from './handlers/ack-and-pop.js';
import { analyticsRoutes } from './handlers/analytics.js';
import { claimRoutes } from './handlers/claims.js';
import { healthRoutes } from './handlers/health.js';
import { leaseConsumerGroupRoutes } from './handlers/lease-consumer-groups.js';
import { leaseDeadLetterRoutes } from './handlers/lease-dead-letters.js';
import { leaseRoutes } from './handlers/leases.js';
import { messageBrowseRoutes } from './handlers/message-browse.js';
import { messageRoutes } from './handlers/messages.js';
import { metricsRoutes } from './handlers/metrics.js';
import { notificationRoutes } from './handlers/notifications.js';
import { openApiRoutes } from './handlers/openapi.js';
import { queueRoutes } from './handlers/queues.js';
import { resourceRoutes } from './handlers/resources.js';
import { statusRoutes } from './handlers/status.js';
import { systemRoutes } from './handlers/system.js';
import { targetRoutes } from './handlers/targets.js';
import type { FunctionGroup, RouteDef } from './route.js';

/** Every HTTP route Sluice deploys. The local server mounts them all; each Lambda its group. */
export const ALL_ROUTES: RouteDef[] = [
  ...queueRoutes,
  ...messageRoutes,
  ...healthRoutes,
  ...claimRoutes,
  ...leaseRoutes,
  ...ackAndPopRoutes,
  ...leaseDeadLetterRoutes,
  ...leaseConsumerGroupRoutes,
  ...notificationRoutes,
  ...resourceRoutes,
  ...statusRoutes,
  ...messageBrowseRoutes,
  ...analyticsRoutes,
  ...systemRoutes,
  ...openApiRoutes,
];

/** Routes only the local server serves (on AWS, CloudWatch holds the metrics): never deployed. */
export const LOCAL_ROUTES: RouteDef[] = [...metricsRoutes, ...targetRoutes];

/** What the local server mounts. */
export const SERVER_ROUTES: RouteDef[] = [...ALL_ROUTES, ...LOCAL_ROUTES];

export const routesOf = (group: FunctionGroup): RouteDef[] => ALL_ROUTES.filter((r) => r.group === group);
