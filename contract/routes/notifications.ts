/**
 * Notifications: a one-use ticket for the WebSocket channel idle consumers wait on
 * (docs/DEPLOYING.md, "Idle consumers"). An HTTPS route of the API, so it takes the stack's
 * auth whatever the mode (IAM, JWT, tokens) and its grants: `consume` on every queue named.
 * Without a channel (the local server) it answers `{available: false}` and consumers long-poll.
 */
import { z } from 'zod';
import { MAX_TICKET_QUEUES } from '../limits.js';
import { route } from '../route.js';
import { isoTime, nameSchema } from '../schemas.js';

const TicketBody = z
  .object({
    queues: z
      .array(nameSchema('queue'))
      .min(1, 'queues must name at least one queue')
      .max(MAX_TICKET_QUEUES, `queues may name at most ${MAX_TICKET_QUEUES} queues`),
  })
  .strict();

export const notificationTicket = route({
  method: 'POST',
  path: '/api/v1/notifications/ticket',
  group: 'leases',
  summary:
    'A one-use ticket (valid for a minute) to open the WebSocket idle consumers wait on, for queues the caller may consume; {available: false} without one.',
  body: TicketBody,
  access: { action: 'consume', queues: ({ body }) => body.queues },
  response: {
    200: z.union([
      z.object({ available: z.literal(false) }).strict(),
      z
        .object({
          available: z.literal(true),
          url: z.string().describe('The WebSocket to open, with the ticket.'),
          ticket: z.string(),
          expiresAt: isoTime,
          queues: z.array(z.string()),
        })
        .strict(),
    ]),
  },
});
