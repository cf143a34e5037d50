import { z } from 'zod';
import { MAX_TICKET_QUEUES } from '../../core/notifications.js';
import { defineRoute, type RouteDef } from '../route.js';
import { iso, nameSchema } from '../schemas.js';

/**
 * `POST /api/v1/notifications/ticket`: a one-use ticket for the WebSocket channel idle
 * consumers wait on (docs/DEPLOYING.md, "Idle consumers"). It is an HTTPS route of the API, so
 * it takes the stack's auth whatever the mode (IAM, JWT, tokens) and its grants: `consume` on
 * every queue named. Without a channel (the local server) it answers `{available: false}` and
 * consumers long-poll.
 */
const TicketBody = z
  .object({
    queues: z
      .array(nameSchema('queue'))
      .min(1, 'queues must name at least one queue')
      .max(MAX_TICKET_QUEUES, `queues may name at most ${MAX_TICKET_QUEUES} queues`),
  })
  .strict();

export const notificationTicket = defineRoute({
  method: 'POST',
  path: '/api/v1/notifications/ticket',
  group: 'leases',
  summary:
    'A one-use ticket (valid for a minute) to open the WebSocket idle consumers wait on, for queues the caller may consume; {available: false} without one.',
  body: TicketBody,
  access: { action: 'consume', queues: ({ body }) => body.queues },
  async run({ principal, body, services }) {
    const answer = await services.notifications.issueTicket(principal, body.queues);
    return {
      statusCode: 200,
      body: answer.available ? { ...answer, expiresAt: iso(answer.expiresAt) } : answer,
    };
  },
});

export const notificationRoutes: RouteDef[] = [notificationTicket];
