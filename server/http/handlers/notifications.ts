import * as notificationsApi from '../../../contract/routes/notifications.js';
import { implement, type RouteDef } from '../route.js';
import { iso } from '../iso.js';

export const notificationTicket = implement(
  notificationsApi.notificationTicket,
  ['notifications'],
  async ({ principal, body, services }) => {
    const answer = await services.notifications.issueTicket(principal, body.queues);
    return {
      statusCode: 200,
      body: answer.available ? { ...answer, expiresAt: iso(answer.expiresAt) } : answer,
    };
  },
);

export const notificationRoutes: RouteDef[] = [notificationTicket];
