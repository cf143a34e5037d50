import { makeHandler } from '../http/handler.js';
import { routesOf } from '../http/routes.js';

/** Lambda entry for the 'admin' routes (API Gateway HTTP API, payload format 2.0). */
export const handler = makeHandler(routesOf('admin'));
